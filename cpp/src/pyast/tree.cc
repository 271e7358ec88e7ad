#include <string>

#include "tritium/pyast.h"

namespace tritium::pyast {
namespace {

constexpr const char* kKindNames[] = {
    "Module", "FunctionDef", "AsyncFunctionDef", "ClassDef", "Return", "Delete", "Assign", "TypeAlias", "AugAssign",
    "AnnAssign", "For", "AsyncFor", "While", "If", "With", "AsyncWith", "Match", "Raise", "Try", "TryStar", "Assert",
    "Import", "ImportFrom", "Global", "Nonlocal", "Expr", "Pass", "Break", "Continue", "BoolOp", "NamedExpr", "BinOp",
    "UnaryOp", "Lambda", "IfExp", "Dict", "Set", "ListComp", "SetComp", "DictComp", "GeneratorExp", "Await", "Yield",
    "YieldFrom", "Compare", "Call", "FormattedValue", "JoinedStr", "Constant", "Attribute", "Subscript", "Starred",
    "Name", "List", "Tuple", "Slice", "arguments", "arg", "keyword", "alias", "withitem", "ExceptHandler",
    "comprehension", "match_case", "TypeVar", "ParamSpec", "TypeVarTuple", "DictItem", "MatchValue",
    "MatchSingleton", "MatchSequence", "MatchMapping", "MatchClass", "MatchStar", "MatchAs", "MatchOr"};

constexpr const char* kRoleNames[] = {
    "", "body", "orelse", "finalbody", "handler", "decorator", "args", "returns", "type_param", "base", "keyword",
    "target", "value", "annotation", "test", "iter", "item", "context", "vars", "type", "cause", "msg", "name",
    "names", "func", "arg", "slice", "lower", "upper", "step", "left", "right", "operand", "elt", "key", "generator",
    "ifs", "subject", "cases", "pattern", "guard", "format_spec", "posonly", "vararg", "kwonly", "kw_default",
    "kwarg", "default", "cls", "kwd_pattern", "bound", "comparator", "asname"};

static_assert(std::size(kKindNames) == static_cast<std::size_t>(Kind::MatchOr) + 1);
static_assert(std::size(kRoleNames) == static_cast<std::size_t>(Role::asname) + 1);

void dump_node(const Tree& tree, NodeId id, int depth, std::string& out) {
  const Node& n = tree.node(id);
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  if (n.role != Role::none) out += std::string(role_name(n.role)) + ": ";
  out += kind_name(n.kind);
  out += " " + std::to_string(n.span.line) + ":" + std::to_string(n.span.col) + "-" + std::to_string(n.span.end_line) +
         ":" + std::to_string(n.span.end_col);
  if (!tree.text(id).empty()) out += " '" + std::string(tree.text(id)) + "'";
  if (n.op) out += " op=" + std::to_string(n.op);
  out += "\n";
  for (NodeId c = n.first_child; c != kNoNode; c = tree.node(c).next_sibling) dump_node(tree, c, depth + 1, out);
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
  if (expr == kNoNode) return "";
  const Node& n = tree.node(expr);
  switch (n.kind) {
    case Kind::Name:
      return std::string(tree.text(expr));
    case Kind::Attribute:
      return render(tree, tree.child(expr, Role::value)) + "." + std::string(tree.text(expr));
    case Kind::Call:
      return render(tree, tree.child(expr, Role::func)) + "()";
    case Kind::Subscript:
      return render(tree, tree.child(expr, Role::value)) + "[]";
    default:
      return std::string("<") + kind_name(n.kind) + ">";
  }
}

std::string dump(const Tree& tree) {
  std::string out;
  if (tree.root() != kNoNode) dump_node(tree, tree.root(), 0, out);
  return out;
}

}  // namespace tritium::pyast
