#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tritium/pyast.h"

namespace tritium::pyast {
namespace {

constexpr const char* kKindNames[] = {"Module",
                                      "FunctionDef",
                                      "AsyncFunctionDef",
                                      "ClassDef",
                                      "Return",
                                      "Delete",
                                      "Assign",
                                      "TypeAlias",
                                      "AugAssign",
                                      "AnnAssign",
                                      "For",
                                      "AsyncFor",
                                      "While",
                                      "If",
                                      "With",
                                      "AsyncWith",
                                      "Match",
                                      "Raise",
                                      "Try",
                                      "TryStar",
                                      "Assert",
                                      "Import",
                                      "ImportFrom",
                                      "Global",
                                      "Nonlocal",
                                      "Expr",
                                      "Pass",
                                      "Break",
                                      "Continue",
                                      "BoolOp",
                                      "NamedExpr",
                                      "BinOp",
                                      "UnaryOp",
                                      "Lambda",
                                      "IfExp",
                                      "Dict",
                                      "Set",
                                      "ListComp",
                                      "SetComp",
                                      "DictComp",
                                      "GeneratorExp",
                                      "Await",
                                      "Yield",
                                      "YieldFrom",
                                      "Compare",
                                      "Call",
                                      "FormattedValue",
                                      "JoinedStr",
                                      "Constant",
                                      "Attribute",
                                      "Subscript",
                                      "Starred",
                                      "Name",
                                      "List",
                                      "Tuple",
                                      "Slice",
                                      "arguments",
                                      "arg",
                                      "keyword",
                                      "alias",
                                      "withitem",
                                      "ExceptHandler",
                                      "comprehension",
                                      "match_case",
                                      "TypeVar",
                                      "ParamSpec",
                                      "TypeVarTuple",
                                      "DictItem",
                                      "MatchValue",
                                      "MatchSingleton",
                                      "MatchSequence",
                                      "MatchMapping",
                                      "MatchClass",
                                      "MatchStar",
                                      "MatchAs",
                                      "MatchOr"};

constexpr const char* kRoleNames[] = {
    "",           "body",        "orelse",  "finalbody",  "handler", "decorator",  "args",  "returns",
    "type_param", "base",        "keyword", "target",     "value",   "annotation", "test",  "iter",
    "item",       "context",     "vars",    "type",       "cause",   "msg",        "name",  "names",
    "func",       "arg",         "slice",   "lower",      "upper",   "step",       "left",  "right",
    "operand",    "elt",         "key",     "generator",  "ifs",     "subject",    "cases", "pattern",
    "guard",      "format_spec", "posonly", "vararg",     "kwonly",  "kw_default", "kwarg", "default",
    "cls",        "kwd_pattern", "bound",   "comparator", "asname"};

static_assert(std::size(kKindNames) == static_cast<std::size_t>(Kind::MatchOr) + 1);
static_assert(std::size(kRoleNames) == static_cast<std::size_t>(Role::asname) + 1);

// One node's line (dump() walks the tree). Appended piece by piece: no temporaries.
void dump_node(const Tree& tree, NodeId id, std::size_t depth, std::string& out) {
  const Node& n = tree.node(id);
  out.append(depth * 2, ' ');
  if (n.role != Role::none) out.append(role_name(n.role)).append(": ");
  out.append(kind_name(n.kind)).append(" ");
  out.append(std::to_string(n.span.line)).append(":").append(std::to_string(n.span.col)).append("-");
  out.append(std::to_string(n.span.end_line)).append(":").append(std::to_string(n.span.end_col));
  if (!tree.text(id).empty()) out.append(" '").append(tree.text(id)).append("'");
  if (n.op) out.append(" op=").append(std::to_string(n.op));
  out += '\n';
}

}  // namespace

const char* kind_name(Kind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }
const char* role_name(Role role) { return kRoleNames[static_cast<std::size_t>(role)]; }
bool is_statement(Kind kind) { return kind >= Kind::FunctionDef && kind <= Kind::Continue; }

std::vector<NodeId> Tree::children(NodeId id, Role role) const {
  std::vector<NodeId> out;
  for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling)
    if (nodes_[c].role == role) out.push_back(c);
  return out;
}

std::vector<NodeId> Tree::children(NodeId id) const {
  std::vector<NodeId> out;
  for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling) out.push_back(c);
  return out;
}

void Tree::set_text(NodeId id, std::string_view text) {
  // `text` may view the arena itself (copying one node's text to another): no append needed.
  const char* base = chars_.data();
  if (text.data() >= base && text.data() + text.size() <= base + chars_.size() && !text.empty()) {
    texts_.emplace_back(static_cast<std::uint32_t>(text.data() - base), static_cast<std::uint32_t>(text.size()));
  } else {
    texts_.emplace_back(static_cast<std::uint32_t>(chars_.size()), static_cast<std::uint32_t>(text.size()));
    chars_.append(text);
  }
  nodes_[id].text = static_cast<std::uint32_t>(texts_.size() - 1);
}

std::string render(const Tree& tree, NodeId expr) {
  // Down the chain to its root (a.b()[0]: Subscript, Call, Attribute, then the Name a), then
  // back up: iterative, since a chain is as long as the source.
  std::vector<NodeId> chain;
  NodeId n = expr;
  while (n != kNoNode) {
    const Kind k = tree.node(n).kind;
    if (k != Kind::Attribute && k != Kind::Call && k != Kind::Subscript) break;
    chain.push_back(n);
    n = tree.child(n, k == Kind::Call ? Role::func : Role::value);
  }
  std::string out;
  if (n != kNoNode) {
    const Kind k = tree.node(n).kind;
    out = k == Kind::Name ? std::string(tree.text(n)) : std::string("<") + kind_name(k) + ">";
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    switch (tree.node(*it).kind) {
      case Kind::Attribute:
        out += '.';
        out += tree.text(*it);
        break;
      case Kind::Call:
        out += "()";
        break;
      default:
        out += "[]";
        break;
    }
  }
  return out;
}

std::string dump(const Tree& tree) {
  std::string out;
  if (tree.root() == kNoNode) return out;
  // Pre-order without recursion (deep trees come from long chains); `resume` holds the next
  // sibling of each open ancestor, with its depth.
  std::vector<std::pair<NodeId, std::size_t>> resume;
  NodeId n = tree.root();
  std::size_t depth = 0;
  while (true) {
    dump_node(tree, n, depth, out);
    const Node& node = tree.node(n);
    if (node.first_child != kNoNode) {
      if (node.next_sibling != kNoNode) resume.emplace_back(node.next_sibling, depth);
      n = node.first_child;
      ++depth;
    } else if (node.next_sibling != kNoNode) {
      n = node.next_sibling;
    } else if (!resume.empty()) {
      std::tie(n, depth) = resume.back();
      resume.pop_back();
    } else {
      break;
    }
  }
  return out;
}

}  // namespace tritium::pyast
