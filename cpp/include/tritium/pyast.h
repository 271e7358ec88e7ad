// tritium/pyast.h: a Python 3 lexer and parser into a compact arena AST.
//
// The grammar is CPython 3.12's (PEP 701 f-strings, type parameters, match, walrus, ...). Nodes
// live in one vector and link to their children (first_child / next_sibling); each child carries
// the role it plays in its parent (the field name in CPython's ast), so a visitor asks for
// "the decorators of this def" without knowing child positions. Spans follow CPython: 1-based
// lines, 0-based columns in UTF-8 bytes, end exclusive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tritium::pyast {

/// Node kinds: CPython's ast class names, plus the helper nodes it uses (arguments, arg, ...).
enum class Kind : std::uint8_t {
  // mod
  Module,
  // statements
  FunctionDef,
  AsyncFunctionDef,
  ClassDef,
  Return,
  Delete,
  Assign,
  TypeAlias,
  AugAssign,
  AnnAssign,
  For,
  AsyncFor,
  While,
  If,
  With,
  AsyncWith,
  Match,
  Raise,
  Try,
  TryStar,
  Assert,
  Import,
  ImportFrom,
  Global,
  Nonlocal,
  Expr,
  Pass,
  Break,
  Continue,
  // expressions
  BoolOp,
  NamedExpr,
  BinOp,
  UnaryOp,
  Lambda,
  IfExp,
  Dict,
  Set,
  ListComp,
  SetComp,
  DictComp,
  GeneratorExp,
  Await,
  Yield,
  YieldFrom,
  Compare,
  Call,
  FormattedValue,
  JoinedStr,
  Constant,
  Attribute,
  Subscript,
  Starred,
  Name,
  List,
  Tuple,
  Slice,
  // helpers
  arguments,
  arg,
  keyword,
  alias,
  withitem,
  ExceptHandler,
  comprehension,
  match_case,
  TypeVar,
  ParamSpec,
  TypeVarTuple,
  DictItem,
  // patterns
  MatchValue,
  MatchSingleton,
  MatchSequence,
  MatchMapping,
  MatchClass,
  MatchStar,
  MatchAs,
  MatchOr,
};

/// What a child is to its parent (CPython's field names).
enum class Role : std::uint8_t {
  none,
  body,
  orelse,
  finalbody,
  handler,
  decorator,
  args,
  returns,
  type_param,
  base,
  keyword,
  target,
  value,
  annotation,
  test,
  iter,
  item,
  context,
  vars,
  type,
  cause,
  msg,
  name,
  names,
  func,
  arg,
  slice,
  lower,
  upper,
  step,
  left,
  right,
  operand,
  elt,
  key,
  generator,
  ifs,
  subject,
  cases,
  pattern,
  guard,
  format_spec,
  posonly,
  vararg,
  kwonly,
  kw_default,
  kwarg,
  default_,
  cls,
  kwd_pattern,
  bound,
  comparator,
  asname,
};

const char* kind_name(Kind kind);
const char* role_name(Role role);
bool is_statement(Kind kind);

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;

/// Source position: lines from 1, columns from 0 in UTF-8 bytes (as CPython's ast).
struct Span {
  std::uint32_t line = 0, col = 0, end_line = 0, end_col = 0;
};

struct Node {
  Kind kind;
  Role role = Role::none;
  // Operator or flag: BinOp/AugAssign/UnaryOp/BoolOp/Compare operator codes (see op_name),
  // Constant's ConstKind, ImportFrom's level, FormattedValue's conversion char, Starred/Name ctx.
  std::uint16_t op = 0;
  Span span;
  std::uint32_t text = UINT32_MAX;  // identifier, attribute, module, or a literal's source text
  NodeId first_child = kNoNode;
  NodeId last_child = kNoNode;
  NodeId next_sibling = kNoNode;
};

/// What a Constant holds (Node::op of a Constant).
enum class ConstKind : std::uint16_t { None, True, False, Ellipsis, Int, Float, Complex, Str, Bytes };

/// A parsed module: an arena of nodes and their strings.
class Tree {
 public:
  NodeId root() const { return nodes_.empty() ? kNoNode : 0; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  // text() and child() are inline: the verifier's rules call them for nearly every node.
  /// The node's text (identifier, attribute name, module, literal source), or "".
  std::string_view text(NodeId id) const {
    const auto t = nodes_[id].text;
    if (t == UINT32_MAX) return {};
    return {chars_.data() + texts_[t].first, texts_[t].second};
  }
  /// The first child playing `role`, or kNoNode.
  NodeId child(NodeId id, Role role) const {
    for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling)
      if (nodes_[c].role == role) return c;
    return kNoNode;
  }
  /// Every child playing `role`, in order.
  std::vector<NodeId> children(NodeId id, Role role) const;
  std::vector<NodeId> children(NodeId id) const;

  // Building (the parser's side).
  void reserve(std::size_t nodes, std::size_t chars) {
    nodes_.reserve(nodes);
    texts_.reserve(nodes / 2);
    chars_.reserve(chars);
  }
  // Inline, and field by field into the new slot: out of line, the span arrived in two registers,
  // went through the stack and was reloaded as one 16-byte word, stalling every node on store
  // forwarding.
  NodeId add(Kind kind, Span span, std::uint16_t op = 0) {
    Node& n = nodes_.emplace_back();
    n.kind = kind;
    n.op = op;
    n.span = span;
    return static_cast<NodeId>(nodes_.size() - 1);
  }
  void set_text(NodeId id, std::string_view text);
  /// Starts the text arena with the module's source (call first): a text that is a slice of the
  /// source is then recorded by its offsets (set_source_text), with no copy.
  void set_source(std::string_view source) { chars_.assign(source.data(), source.size()); }
  void set_source_text(NodeId id, std::uint32_t begin, std::uint32_t size) {
    texts_.emplace_back(begin, size);
    nodes_[id].text = static_cast<std::uint32_t>(texts_.size() - 1);
  }
  void append(NodeId parent, NodeId child, Role role) {  // inline: once per node
    Node& p = nodes_[parent];
    nodes_[child].role = role;
    nodes_[child].next_sibling = kNoNode;
    if (p.last_child == kNoNode)
      p.first_child = child;
    else
      nodes_[p.last_child].next_sibling = child;
    p.last_child = child;
  }
  Node& mutable_node(NodeId id) { return nodes_[id]; }

 private:
  std::vector<Node> nodes_;
  // Every text lives in one arena: texts_ holds (offset, length) into chars_.
  std::string chars_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> texts_;
};

struct SyntaxError {
  std::uint32_t line = 0, col = 0;  // where, as in CPython (col 0-based bytes)
  std::string message;
};

/// A parse: the tree when the source is valid Python 3.12, else the first syntax error.
struct Parsed {
  Tree tree;
  std::optional<SyntaxError> error;
  bool ok() const { return !error.has_value(); }
};

/// Parses a module. `source` is UTF-8 (a BOM is skipped; a PEP 263 latin-1 cookie is honoured).
Parsed parse(std::string_view source);

/// The facts the verifier relies on, one per line, for differential testing against CPython
/// (docs/pyast.md gives the format; python/tests/pyast_facts.py is the same in Python).
std::vector<std::string> facts(const Tree& tree);

/// The dotted rendering of an expression used by facts and rules: `torch.nn.functional.relu`,
/// `k[]` for a subscript, `f()` for a call result, `<Kind>` otherwise.
std::string render(const Tree& tree, NodeId expr);

/// An indented dump of the tree (kind, role, span, text), for `tritium parse --dump`.
std::string dump(const Tree& tree);

}  // namespace tritium::pyast
