// Recursive descent over CPython 3.12's grammar (Grammar/python.gram), building the arena tree.
// Errors are thrown internally as ParseFail and become the Parsed::error of `parse`.
//
// Input drives the recursion, so its depth is bounded (docs/pyast.md, "Limits"): the lexer
// refuses more than 200 open brackets and 100 indentation levels, and every construct that can
// nest without them (unary operators, `not`, `**`, lambda, the else of a conditional, elif,
// f-strings) passes through a Nest guard, which refuses the source past kMaxDepth levels as
// CPython's parser does past its own stack. Left-associative chains (a + b + ..., a.b.c, f()(),
// x[0][0]) are built in loops and may be as long as the source: their trees are that deep, so
// no walk over an expression tree may recurse.
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "fstring.h"
#include "lexer.h"
#include "tritium/pyast.h"

namespace tritium::pyast {
namespace {

struct ParseFail {
  SyntaxError error;
};

// Operator codes kept in Node::op (also used by op_name in tree.cc).
constexpr std::string_view kBinOps[] = {"+", "-", "*", "@", "/", "%", "**", "<<", ">>", "|", "^", "&", "//"};
constexpr std::string_view kAugOps[] = {
    "+=", "-=", "*=", "@=", "/=", "%=", "**=", "<<=", ">>=", "|=", "^=", "&=", "//="};

std::uint16_t bin_op_code(std::string_view op) {
  for (std::uint16_t i = 0; i < std::size(kBinOps); ++i)
    if (kBinOps[i] == op) return i;
  return UINT16_MAX;
}

// How deep the guarded constructs may nest. CPython 3.11 accepts `~` * 2988 + `1` and refuses
// 2989 (the stdlib has nothing within a factor of ten of it); here that is depth 2990. The stack
// it takes stays under a megabyte in a release build (at most about three frames a level).
constexpr int kMaxDepth = 3000;

// The lowest address this thread's stack may reach while parsing, with a margin for what runs
// after a refusal. A backstop behind kMaxDepth for builds whose frames are many times a release
// build's (sanitizers, -O0) and for small thread stacks: there the source is refused as too
// deep rather than overflowing the stack. Null where the stack's bounds are unknown.
const char* stack_floor() {
  thread_local const char* floor = [] {
    const char* low = nullptr;
#if defined(__linux__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr)
        low = static_cast<const char*>(addr) + std::min<std::size_t>(size / 4, 256 * 1024);
      pthread_attr_destroy(&attr);
    }
#endif
    return low;
  }();
  return floor;
}

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks, Tree& tree, std::vector<std::uint32_t>& line_starts,
         int depth = 0)
      : s_(src), t_(std::move(toks)), tree_(tree), line_starts_(line_starts), depth_(depth), floor_(stack_floor()) {}

  void module() {
    const NodeId mod = tree_.add(Kind::Module, {1, 0, 1, 0});
    while (!at(Tok::End)) statement(mod, Role::body);
  }

  // One expression for an f-string field: (yield_expr | star_expressions), then the end.
  NodeId field_expression() {
    NodeId e = is_kw("yield") ? yield_expr() : star_expressions();
    if (!at(Tok::End)) fail("f-string: expecting '}'");
    return e;
  }

 private:
  // ---- tokens ----
  // These are forced inline: the parser calls them with literal operators and keywords, whose
  // pack() then folds to a constant (out of line, it ran a loop on every test of every token).
  [[gnu::always_inline]] const Token& tok(std::size_t ahead = 0) const {
    return t_[std::min(i_ + ahead, t_.size() - 1)];
  }
  std::string_view text(const Token& t) const { return s_.substr(t.begin, t.end - t.begin); }
  [[gnu::always_inline]] bool at(Tok kind, std::size_t ahead = 0) const { return tok(ahead).kind == kind; }
  [[gnu::always_inline]] bool is_op(std::string_view op, std::size_t ahead = 0) const {
    const Token& t = tok(ahead);
    return t.kind == Tok::Op && t.code == pack(op);
  }
  [[gnu::always_inline]] bool is_kw(std::string_view kw, std::size_t ahead = 0) const {
    const Token& t = tok(ahead);
    return t.kind == Tok::Name && t.code == pack(kw);
  }
  [[gnu::always_inline]] bool is_name(std::size_t ahead = 0) const {
    return at(Tok::Name, ahead) && !tok(ahead).keyword;
  }
  [[gnu::always_inline]] const Token& next() {
    const Token& t = tok();
    if (i_ < t_.size() - 1) ++i_;
    last_end_ = {t.span.end_line, t.span.end_col};
    return t;
  }
  [[gnu::always_inline]] bool accept_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  [[gnu::always_inline]] bool accept_kw(std::string_view kw) {
    if (!is_kw(kw)) return false;
    next();
    return true;
  }
  // Out of line, and taking the message as a view: a std::string built from a literal at each
  // call site took stack in every recursive frame (ASan's redzones multiplied it).
  [[noreturn, gnu::noinline]] void fail(std::string_view message) const { fail_at(message, tok()); }
  [[noreturn, gnu::noinline]] void fail_at(std::string_view message, const Token& t) const {
    throw ParseFail{{t.span.line, t.span.col, std::string(message)}};
  }
  [[noreturn, gnu::noinline]] void fail_node(std::string_view message, NodeId n) const {
    throw ParseFail{{tree_.node(n).span.line, tree_.node(n).span.col, std::string(message)}};
  }
  [[noreturn]] void invalid() const {
    if (at(Tok::Indent)) fail("unexpected indent");
    if (at(Tok::Dedent)) fail("unindent does not match any outer indentation level");
    fail("invalid syntax");
  }
  [[gnu::always_inline]] void expect_op(std::string_view op) {
    if (!accept_op(op)) fail_expected(op);
  }
  [[gnu::always_inline]] void expect_kw(std::string_view kw) {
    if (!accept_kw(kw)) fail_expected(kw);
  }
  [[noreturn, gnu::noinline]] void fail_expected(std::string_view what) const {
    fail(std::string("expected '") + std::string(what) + "'");
  }
  // Identifiers are NFKC-normalised, as CPython does: `ｔｏｒｃｈ` is `torch`.
  std::string ident(const Token& t) const { return normalize_identifier(text(t)); }
  // The node's text is the token's, a slice of the source the tree holds (no copy).
  void set_token_text(NodeId n, const Token& t) { tree_.set_source_text(n, t.begin, t.end - t.begin); }
  // The node's text is the identifier: ASCII names (nearly all) are the token's text. A name of
  // up to 8 bytes is ASCII when its packed code has no high bit set.
  void set_ident(NodeId n, const Token& t) {
    const std::string_view w = text(t);
    const bool ascii = t.code != kLongText ? (t.code & 0x8080808080808080ull) == 0
                                           : std::all_of(w.begin(), w.end(),
                                                         [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii)
      set_token_text(n, t);
    else
      tree_.set_text(n, normalize_identifier(w));
  }
  const Token& expect_name() {
    if (!is_name()) invalid();
    return next();
  }

  // ---- nesting ----
  // One level of a construct that recurses; the source is refused past kMaxDepth levels.
  // The count is checked before it is raised, so a refusal leaves it balanced for the callers
  // that catch a ParseFail and try another reading (with, match).
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) {
      if (p_.depth_ >= kMaxDepth || static_cast<const char*>(__builtin_frame_address(0)) < p_.floor_) p_.too_deep();
      ++p_.depth_;
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };
  [[noreturn, gnu::noinline]] void too_deep() const {
    // CPython's words, which it raises as a MemoryError.
    fail("Parser stack overflowed - Python source too complex to parse");
  }

  // ---- nodes ----
  NodeId start(Kind kind, const Token& first, std::uint16_t op = 0) {
    return tree_.add(kind, {first.span.line, first.span.col, first.span.line, first.span.col}, op);
  }
  NodeId start_at(Kind kind, NodeId first, std::uint16_t op = 0) {
    const Span s = tree_.node(first).span;
    return tree_.add(kind, {s.line, s.col, s.line, s.col}, op);
  }
  NodeId finish(NodeId n) {
    Span& s = tree_.mutable_node(n).span;
    s.end_line = last_end_.first;
    s.end_col = last_end_.second;
    return n;
  }
  void add(NodeId parent, NodeId child, Role role) { tree_.append(parent, child, role); }
  Kind kind(NodeId n) const { return tree_.node(n).kind; }
  void mark_parens(NodeId n) {
    if (parens_.size() <= n) parens_.resize(n + 1, false);
    parens_[n] = true;
  }
  bool parenthesized(NodeId n) const { return n < parens_.size() && parens_[n]; }

  // ---- statements ----
  void statement(NodeId parent, Role role) {
    const Nest nest(*this);  // blocks nest (at most 100 deep, by indentation)
    if (at(Tok::Indent)) fail("unexpected indent");
    if (at(Tok::Dedent)) invalid();
    if (compound(parent, role)) return;
    simple_statements(parent, role);
  }

  void simple_statements(NodeId parent, Role role) {
    while (true) {
      add(parent, simple_statement(), role);
      if (!accept_op(";")) break;
      if (at(Tok::Newline)) break;
    }
    if (!at(Tok::Newline)) invalid();
    next();
  }

  // A suite after ':'.
  void block(NodeId parent, Role role) {
    if (at(Tok::Newline)) {
      next();
      if (!at(Tok::Indent)) fail("expected an indented block");
      next();
      while (!at(Tok::Dedent) && !at(Tok::End)) statement(parent, role);
      if (at(Tok::Dedent)) next();
      return;
    }
    simple_statements(parent, role);
  }

  bool compound(NodeId parent, Role role) {
    if (at(Tok::Op) && is_op("@")) return add(parent, decorated(), role), true;
    // Every compound statement starts with a hard keyword, but for the soft `match`.
    if (!at(Tok::Name) || (!tok().keyword && tok().code != pack("match"))) return false;
    const std::string_view w = text(tok());
    if (w == "def") return add(parent, function_def({}, false), role), true;
    if (w == "class") return add(parent, class_def({}), role), true;
    if (w == "if") return add(parent, if_stmt(), role), true;
    if (w == "while") return add(parent, while_stmt(), role), true;
    if (w == "for") return add(parent, for_stmt(false), role), true;
    if (w == "try") return add(parent, try_stmt(), role), true;
    if (w == "with") return add(parent, with_stmt(false), role), true;
    if (w == "async") {
      if (is_kw("def", 1)) return add(parent, function_def({}, true), role), true;
      if (is_kw("for", 1)) return add(parent, for_stmt(true), role), true;
      if (is_kw("with", 1)) return add(parent, with_stmt(true), role), true;
      invalid();
    }
    if (w == "match") {
      const std::size_t save = i_;
      if (auto m = try_match()) return add(parent, *m, role), true;
      i_ = save;
    }
    return false;
  }

  NodeId decorated() {
    std::vector<NodeId> decorators;
    while (accept_op("@")) {
      decorators.push_back(named_expression());
      if (!at(Tok::Newline)) invalid();
      next();
    }
    if (is_kw("def")) return function_def(decorators, false);
    if (is_kw("async") && is_kw("def", 1)) return function_def(decorators, true);
    if (is_kw("class")) return class_def(decorators);
    invalid();
  }

  NodeId function_def(const std::vector<NodeId>& decorators, bool is_async) {
    const Token& first = tok();
    if (is_async) next();
    expect_kw("def");
    const NodeId fn = start(is_async ? Kind::AsyncFunctionDef : Kind::FunctionDef, first);
    set_ident(fn, expect_name());
    for (NodeId d : decorators) add(fn, d, Role::decorator);
    if (is_op("[")) type_params(fn);
    expect_op("(");
    add(fn, parameters(")", true), Role::args);
    expect_op(")");
    if (accept_op("->")) add(fn, expression(), Role::returns);
    expect_op(":");
    block(fn, Role::body);
    return finish(fn);
  }

  NodeId class_def(const std::vector<NodeId>& decorators) {
    const NodeId cls = start(Kind::ClassDef, next());
    set_ident(cls, expect_name());
    for (NodeId d : decorators) add(cls, d, Role::decorator);
    if (is_op("[")) type_params(cls);
    if (accept_op("(")) {
      call_arguments(cls, Role::base);
      expect_op(")");
    }
    expect_op(":");
    block(cls, Role::body);
    return finish(cls);
  }

  void type_params(NodeId owner) {
    expect_op("[");
    do {
      if (is_op("]")) break;
      const Token& first = tok();
      if (accept_op("*")) {
        const NodeId p = start(Kind::TypeVarTuple, first);
        set_ident(p, expect_name());
        add(owner, finish(p), Role::type_param);
      } else if (accept_op("**")) {
        const NodeId p = start(Kind::ParamSpec, first);
        set_ident(p, expect_name());
        add(owner, finish(p), Role::type_param);
      } else {
        const NodeId p = start(Kind::TypeVar, first);
        set_ident(p, expect_name());
        if (accept_op(":")) add(p, expression(), Role::bound);
        add(owner, finish(p), Role::type_param);
      }
    } while (accept_op(","));
    expect_op("]");
  }

  // Parameters of a def (annotations allowed) or a lambda (ending at ':').
  NodeId parameters(std::string_view end, bool annotations) {
    // A lambda's defaults nest lambdas in its parameters (CPython refuses about 750 of those).
    const Nest nest(*this);
    const NodeId args = start(Kind::arguments, tok());
    bool seen_default = false, seen_star = false, seen_slash = false, seen_kwargs = false, any = false;
    while (!is_op(end)) {
      if (seen_kwargs) fail("arguments cannot follow var-keyword argument");
      if (accept_op("/")) {
        if (!any) fail("at least one argument must precede /");
        if (seen_slash) fail("/ may appear only once");
        if (seen_star) fail("/ must be ahead of *");
        seen_slash = true;
        // Every parameter so far is positional-only (before '/', all are in the `args` role).
        for (NodeId p = tree_.node(args).first_child; p != kNoNode; p = tree_.node(p).next_sibling)
          if (tree_.node(p).role == Role::args) tree_.mutable_node(p).role = Role::posonly;
      } else if (is_op("*")) {
        const Token& star = next();
        if (seen_star) fail("* argument may appear only once");
        seen_star = true;
        if (is_name()) {
          add(args, param(annotations, /*star_annotation=*/true), Role::vararg);
        } else if (!is_op(",") || is_op(end, 1) || is_op("**", 1)) {
          fail_at("named arguments must follow bare *", star);
        }
      } else if (accept_op("**")) {
        add(args, param(annotations, false), Role::kwarg);
        seen_kwargs = true;
      } else {
        const NodeId p = param(annotations, false);
        if (accept_op("=")) {
          add(args, p, seen_star ? Role::kwonly : Role::args);
          add(args, expression(), seen_star ? Role::kw_default : Role::default_);
          if (!seen_star) seen_default = true;
        } else {
          if (!seen_star && seen_default) fail_node("parameter without a default follows parameter with a default", p);
          add(args, p, seen_star ? Role::kwonly : Role::args);
        }
      }
      any = true;
      if (!accept_op(",")) break;
    }
    return finish(args);
  }

  NodeId param(bool annotations, bool star_annotation) {
    const Token& name = expect_name();
    const NodeId a = start(Kind::arg, name);
    set_ident(a, name);
    if (annotations && accept_op(":")) add(a, star_annotation ? star_expression() : expression(), Role::annotation);
    return finish(a);
  }

  NodeId if_stmt() {
    // An elif is an If nested in the orelse of the one before: a level each, so that a chain of
    // them (which nests statements without indentation) is bounded, as CPython bounds it.
    const Nest nest(*this);
    const NodeId n = start(Kind::If, next());  // 'if' or 'elif'
    add(n, named_expression(), Role::test);
    expect_op(":");
    block(n, Role::body);
    if (is_kw("elif")) {
      add(n, if_stmt(), Role::orelse);
    } else if (accept_kw("else")) {
      expect_op(":");
      block(n, Role::orelse);
    }
    return finish(n);
  }

  NodeId while_stmt() {
    const NodeId n = start(Kind::While, next());
    add(n, named_expression(), Role::test);
    expect_op(":");
    block(n, Role::body);
    else_block(n);
    return finish(n);
  }

  void else_block(NodeId n) {
    if (accept_kw("else")) {
      expect_op(":");
      block(n, Role::orelse);
    }
  }

  NodeId for_stmt(bool is_async) {
    const Token& first = tok();
    if (is_async) next();
    expect_kw("for");
    const NodeId n = start(is_async ? Kind::AsyncFor : Kind::For, first);
    add(n, targets(), Role::target);
    expect_kw("in");
    add(n, star_expressions(), Role::iter);
    expect_op(":");
    block(n, Role::body);
    else_block(n);
    return finish(n);
  }

  NodeId try_stmt() {
    const NodeId n = start(Kind::Try, next());
    expect_op(":");
    block(n, Role::body);
    bool handlers = false, star = false;
    while (is_kw("except")) {
      const NodeId h = start(Kind::ExceptHandler, next());
      const bool this_star = accept_op("*");
      if (handlers && this_star != star) fail("cannot have both 'except' and 'except*' on the same 'try'");
      star = this_star;
      if (!is_op(":")) {
        const NodeId type = expression();
        if (is_op(",")) fail("multiple exception types must be parenthesized");
        add(h, type, Role::type);
        if (accept_kw("as")) set_ident(h, expect_name());
      } else if (star) {
        fail("expected one or more exception types");
      }
      expect_op(":");
      block(h, Role::body);
      add(n, finish(h), Role::handler);
      handlers = true;
    }
    if (star) tree_.mutable_node(n).kind = Kind::TryStar;
    if (handlers) else_block(n);
    if (accept_kw("finally")) {
      expect_op(":");
      block(n, Role::finalbody);
    } else if (!handlers) {
      fail("expected 'except' or 'finally' block");
    }
    return finish(n);
  }

  NodeId with_stmt(bool is_async) {
    const Token& first = tok();
    if (is_async) next();
    expect_kw("with");
    const NodeId n = start(is_async ? Kind::AsyncWith : Kind::With, first);
    // `with (a as b, c):` is a parenthesized item list; `with (a, b) as c:` is not. Try the first.
    bool done = false;
    if (is_op("(")) {
      const std::size_t save = i_;
      const auto saved_end = last_end_;
      try {
        next();
        std::vector<NodeId> items;
        do {
          if (is_op(")")) break;
          items.push_back(with_item());
        } while (accept_op(","));
        expect_op(")");
        if (!is_op(":")) throw ParseFail{};
        for (NodeId it : items) add(n, it, Role::item);
        done = true;
      } catch (const ParseFail&) {
        i_ = save;
        last_end_ = saved_end;
      }
    }
    if (!done) {
      do add(n, with_item(), Role::item);
      while (accept_op(","));
    }
    expect_op(":");
    block(n, Role::body);
    return finish(n);
  }

  NodeId with_item() {
    const NodeId ctx = expression();
    const NodeId item = start_at(Kind::withitem, ctx);
    add(item, ctx, Role::context);
    if (accept_kw("as")) {
      const NodeId target = single_target_for_as();
      add(item, target, Role::vars);
    }
    return finish(item);
  }

  NodeId single_target_for_as() {
    const NodeId t = target_atom();
    check_target(t, "assign to");
    return t;
  }

  // ---- match ----
  // `match` is a soft keyword: only `match SUBJECT: NEWLINE INDENT case` makes a match statement.
  std::optional<NodeId> try_match() {
    const auto saved_end = last_end_;
    NodeId n;
    try {
      n = start(Kind::Match, next());
      NodeId subject;
      {
        const NodeId first = is_op("*") ? star_named_expression() : named_expression();
        if (is_op(",")) {
          subject = start_at(Kind::Tuple, first);
          add(subject, first, Role::elt);
          while (accept_op(",")) {
            if (is_op(":")) break;
            add(subject, star_named_expression(), Role::elt);
          }
          finish(subject);
        } else {
          subject = first;
        }
      }
      add(n, subject, Role::subject);
      if (!is_op(":") || !at(Tok::Newline, 1) || !at(Tok::Indent, 2)) throw ParseFail{};
    } catch (const ParseFail&) {
      last_end_ = saved_end;
      return std::nullopt;
    }
    next();
    next();
    next();
    if (!is_kw("case")) fail("expected 'case'");
    while (is_kw("case")) add(n, match_case(), Role::cases);
    if (at(Tok::Dedent)) next();
    return finish(n);
  }

  NodeId match_case() {
    const NodeId c = start(Kind::match_case, next());
    add(c, patterns(), Role::pattern);
    if (accept_kw("if")) add(c, named_expression(), Role::guard);
    expect_op(":");
    block(c, Role::body);
    return finish(c);
  }

  NodeId patterns() {
    const NodeId first = as_pattern();
    if (!is_op(",")) return first;
    const NodeId seq = start_at(Kind::MatchSequence, first);
    add(seq, first, Role::pattern);
    while (accept_op(",")) {
      if (is_op(":") || is_kw("if")) break;
      add(seq, as_pattern(), Role::pattern);
    }
    return finish(seq);
  }

  NodeId as_pattern() {
    const NodeId p = or_pattern();
    if (!accept_kw("as")) return p;
    const Token& name = expect_name();
    if (text(name) == "_") fail_at("cannot use '_' as a target", name);
    const NodeId as = start_at(Kind::MatchAs, p);
    add(as, p, Role::pattern);
    set_ident(as, name);
    return finish(as);
  }

  NodeId or_pattern() {
    const NodeId first = closed_pattern();
    if (!is_op("|")) return first;
    const NodeId o = start_at(Kind::MatchOr, first);
    add(o, first, Role::pattern);
    while (accept_op("|")) add(o, closed_pattern(), Role::pattern);
    return finish(o);
  }

  NodeId closed_pattern() {
    const Nest nest(*this);  // patterns nest in brackets
    const Token& first = tok();
    if (accept_op("*")) {
      const NodeId s = start(Kind::MatchStar, first);
      set_ident(s, expect_name());
      return finish(s);
    }
    if (is_op("(") || is_op("[")) {
      const bool paren = is_op("(");
      next();
      const std::string_view close = paren ? ")" : "]";
      const NodeId seq = start(Kind::MatchSequence, first);
      if (accept_op(close)) return finish(seq);
      const NodeId p = as_pattern();
      if (paren && accept_op(")")) return p;  // a group
      add(seq, p, Role::pattern);
      while (accept_op(",")) {
        if (is_op(close)) break;
        add(seq, as_pattern(), Role::pattern);
      }
      expect_op(close);
      return finish(seq);
    }
    if (accept_op("{")) return mapping_pattern(first);
    if (is_kw("None") || is_kw("True") || is_kw("False")) {
      const NodeId s = start(Kind::MatchSingleton, next());
      return finish(s);
    }
    if (at(Tok::Number) || at(Tok::String) || is_op("-")) {
      const NodeId v = start(Kind::MatchValue, first);
      add(v, literal_value(), Role::value);
      return finish(v);
    }
    if (is_name()) {
      NodeId value = name_node(next());
      const bool dotted = is_op(".");
      while (accept_op(".")) value = attribute(value, expect_name());
      if (is_op("(")) return class_pattern(value);
      if (dotted) {
        const NodeId v = start_at(Kind::MatchValue, value);
        add(v, value, Role::value);
        return finish(v);
      }
      const NodeId as = start_at(Kind::MatchAs, value);
      if (tree_.text(value) != "_") tree_.set_text(as, tree_.text(value));
      return finish(as);
    }
    invalid();
  }

  // Numbers (signed, complex: -1, 1+2j), strings.
  NodeId literal_value() {
    if (at(Tok::String)) return strings();
    const Token& first = tok();
    NodeId v;
    if (accept_op("-")) {
      v = start(Kind::UnaryOp, first, 1);
      if (!at(Tok::Number)) invalid();
      add(v, atom(), Role::operand);
      finish(v);
    } else {
      if (!at(Tok::Number)) invalid();
      v = atom();
    }
    if (is_op("+") || is_op("-")) {
      const Token& op = next();
      const NodeId b = start_at(Kind::BinOp, v, bin_op_code(text(op)));
      add(b, v, Role::left);
      if (!at(Tok::Number)) invalid();
      add(b, atom(), Role::right);
      return finish(b);
    }
    return v;
  }

  NodeId mapping_pattern(const Token& first) {
    const NodeId m = start(Kind::MatchMapping, first);
    while (!is_op("}")) {
      if (accept_op("**")) {
        set_ident(m, expect_name());
      } else {
        NodeId key;
        if (is_name()) {
          key = name_node(next());
          while (accept_op(".")) key = attribute(key, expect_name());
        } else if (is_kw("None") || is_kw("True") || is_kw("False")) {
          key = atom();
        } else {
          key = literal_value();
        }
        add(m, key, Role::key);
        expect_op(":");
        add(m, as_pattern(), Role::pattern);
      }
      if (!accept_op(",")) break;
    }
    expect_op("}");
    return finish(m);
  }

  NodeId class_pattern(NodeId cls) {
    const NodeId c = start_at(Kind::MatchClass, cls);
    add(c, cls, Role::cls);
    expect_op("(");
    bool keywords = false;
    while (!is_op(")")) {
      if (is_name() && is_op("=", 1)) {
        const Token& name = next();
        next();
        const NodeId k = start(Kind::keyword, name);
        set_ident(k, name);
        add(k, as_pattern(), Role::value);
        add(c, finish(k), Role::kwd_pattern);
        keywords = true;
      } else {
        if (keywords) fail("positional patterns follow keyword patterns");
        add(c, as_pattern(), Role::pattern);
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
    return finish(c);
  }

  // ---- simple statements ----
  NodeId simple_statement() {
    const Token& first = tok();
    if (at(Tok::Name) && (first.keyword || first.code == pack("type"))) {  // `type` is soft
      const std::string_view w = text(first);
      if (w == "pass") return finish(start(Kind::Pass, next()));
      if (w == "break") return finish(start(Kind::Break, next()));
      if (w == "continue") return finish(start(Kind::Continue, next()));
      if (w == "return") {
        const NodeId n = start(Kind::Return, next());
        if (!at_statement_end()) add(n, star_expressions(), Role::value);
        return finish(n);
      }
      if (w == "raise") {
        const NodeId n = start(Kind::Raise, next());
        if (!at_statement_end()) {
          add(n, expression(), Role::value);
          if (accept_kw("from")) add(n, expression(), Role::cause);
        }
        return finish(n);
      }
      if (w == "global" || w == "nonlocal") {
        const NodeId n = start(w == "global" ? Kind::Global : Kind::Nonlocal, next());
        do {
          const Token& name = expect_name();
          const NodeId id = name_node(name);
          add(n, id, Role::names);
        } while (accept_op(","));
        return finish(n);
      }
      if (w == "del") return del_statement();
      if (w == "assert") {
        const NodeId n = start(Kind::Assert, next());
        add(n, expression(), Role::test);
        if (accept_op(",")) add(n, expression(), Role::msg);
        return finish(n);
      }
      if (w == "import") return import_statement();
      if (w == "from") return from_import();
      if (w == "type" && is_name(1) && (is_op("=", 2) || is_op("[", 2))) return type_alias();
    }
    return expression_statement();
  }

  bool at_statement_end() const { return at(Tok::Newline) || is_op(";"); }

  NodeId del_statement() {
    const NodeId n = start(Kind::Delete, next());
    do {
      if (at_statement_end()) break;
      const NodeId t = target_atom();
      check_target(t, "delete");
      add(n, t, Role::target);
    } while (accept_op(","));
    if (tree_.node(n).first_child == kNoNode) invalid();
    return finish(n);
  }

  NodeId type_alias() {
    const NodeId n = start(Kind::TypeAlias, next());
    add(n, name_node(next()), Role::name);
    if (is_op("[")) type_params(n);
    expect_op("=");
    add(n, expression(), Role::value);
    return finish(n);
  }

  std::string dotted_name() {
    std::string name = ident(expect_name());
    while (accept_op(".")) name += "." + ident(expect_name());
    return name;
  }

  NodeId alias(std::string name, const Token& first) {
    const NodeId a = start(Kind::alias, first);
    tree_.set_text(a, name);
    if (accept_kw("as")) add(a, name_node(expect_name()), Role::asname);
    return finish(a);
  }

  NodeId import_statement() {
    const NodeId n = start(Kind::Import, next());
    do {
      const Token& first = tok();
      add(n, alias(dotted_name(), first), Role::names);
    } while (accept_op(","));
    return finish(n);
  }

  NodeId from_import() {
    const NodeId n = start(Kind::ImportFrom, next());
    std::uint16_t level = 0;
    while (is_op(".") || is_op("...")) level += static_cast<std::uint16_t>(text(next()).size());
    tree_.mutable_node(n).op = level;
    if (!is_kw("import"))
      tree_.set_text(n, dotted_name());
    else if (level == 0)
      invalid();
    expect_kw("import");
    if (is_op("*")) {
      const Token& star = next();
      add(n, finish(alias("*", star)), Role::names);
      return finish(n);
    }
    const bool paren = accept_op("(");
    do {
      if (paren && is_op(")")) break;
      const Token& first = expect_name();
      add(n, alias(ident(first), first), Role::names);
    } while (accept_op(","));
    if (paren)
      expect_op(")");
    else if (text(t_[i_ - 1]) == ",")
      fail("trailing comma not allowed without surrounding parentheses");
    return finish(n);
  }

  NodeId expression_statement() {
    const NodeId first = is_kw("yield") ? yield_expr() : star_expressions();
    if (is_op(":")) return annotated(first);
    if (at(Tok::Op)) {
      const std::string_view op = text(tok());
      for (std::uint16_t k = 0; k < std::size(kAugOps); ++k) {
        if (kAugOps[k] != op) continue;
        next();
        check_aug_target(first);
        const NodeId n = start_at(Kind::AugAssign, first, k);
        add(n, first, Role::target);
        add(n, is_kw("yield") ? yield_expr() : star_expressions(), Role::value);
        return finish(n);
      }
    }
    if (is_op("=")) {
      // One vector for every assignment (expressions hold no statements, so it is never in use twice).
      std::vector<NodeId>& parts = assign_parts_;
      parts.assign(1, first);
      while (accept_op("=")) parts.push_back(is_kw("yield") ? yield_expr() : star_expressions());
      const NodeId n = start_at(Kind::Assign, first);
      for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
        check_target(parts[k], "assign to");
        add(n, parts[k], Role::target);
      }
      add(n, parts.back(), Role::value);
      return finish(n);
    }
    if (kind(first) == Kind::Starred && !parenthesized(first)) fail_node("can't use starred expression here", first);
    if (is_op(":=")) fail("invalid syntax");
    const NodeId n = start_at(Kind::Expr, first);
    add(n, first, Role::value);
    return finish(n);
  }

  NodeId annotated(NodeId target) {
    const Kind k = kind(target);
    if (k == Kind::Tuple) fail_node("only single target (not tuple) can be annotated", target);
    if (k == Kind::List) fail_node("only single target (not list) can be annotated", target);
    if (k != Kind::Name && k != Kind::Attribute && k != Kind::Subscript)
      fail_node("illegal target for annotation", target);
    next();  // ':'
    const NodeId n = start_at(Kind::AnnAssign, target, k == Kind::Name && !parenthesized(target) ? 1 : 0);
    add(n, target, Role::target);
    add(n, expression(), Role::annotation);
    if (accept_op("=")) add(n, is_kw("yield") ? yield_expr() : star_expressions(), Role::value);
    return finish(n);
  }

  static const char* describe(Kind k) {
    switch (k) {
      case Kind::Call:
        return "function call";
      case Kind::Constant:
        return "literal";
      case Kind::JoinedStr:
        return "f-string expression";
      case Kind::BinOp:
      case Kind::UnaryOp:
      case Kind::BoolOp:
        return "expression";
      case Kind::Compare:
        return "comparison";
      case Kind::Lambda:
        return "lambda";
      case Kind::IfExp:
        return "conditional expression";
      case Kind::NamedExpr:
        return "named expression";
      case Kind::Await:
        return "await expression";
      case Kind::Yield:
      case Kind::YieldFrom:
        return "yield expression";
      case Kind::Dict:
        return "dict literal";
      case Kind::Set:
        return "set display";
      case Kind::ListComp:
        return "list comprehension";
      case Kind::SetComp:
        return "set comprehension";
      case Kind::DictComp:
        return "dict comprehension";
      case Kind::GeneratorExp:
        return "generator expression";
      default:
        return "expression";
    }
  }

  void check_target(NodeId t, const char* verb) {
    const Kind k = kind(t);
    if (k == Kind::Name || k == Kind::Attribute || k == Kind::Subscript) return;
    if (k == Kind::Tuple || k == Kind::List) {
      bool starred = false;
      for (NodeId e : tree_.children(t)) {
        if (kind(e) == Kind::Starred) {
          if (std::strcmp(verb, "delete") == 0) fail_node("cannot delete starred", e);
          if (starred) fail_node("multiple starred expressions in assignment", e);
          starred = true;
          check_target(tree_.child(e, Role::value), verb);
        } else {
          check_target(e, verb);
        }
      }
      return;
    }
    if (k == Kind::Starred) fail_node("starred assignment target must be in a list or tuple", t);
    fail_target(verb, t);
  }

  [[noreturn, gnu::noinline]] void fail_target(const char* verb, NodeId t) const {
    fail_node(std::string("cannot ") + verb + " " + describe(kind(t)), t);
  }
  [[noreturn, gnu::noinline]] void fail_walrus(NodeId e) const {
    fail_node(std::string("cannot use assignment expressions with ") + describe(kind(e)), e);
  }

  void check_aug_target(NodeId t) {
    const Kind k = kind(t);
    if (k == Kind::Name || k == Kind::Attribute || k == Kind::Subscript) return;
    fail_node(std::string("'") + describe(k) + "' is an illegal expression for augmented assignment", t);
  }

  // Targets of for-loops and comprehensions: no operators, so `in` ends them.
  NodeId targets() {
    const NodeId first = star_target();
    if (!is_op(",")) {
      check_target(first, "assign to");
      return first;
    }
    const NodeId tuple = start_at(Kind::Tuple, first);
    add(tuple, first, Role::elt);
    while (accept_op(",")) {
      if (is_kw("in") || is_op("=")) break;
      add(tuple, star_target(), Role::elt);
    }
    finish(tuple);
    check_target(tuple, "assign to");
    return tuple;
  }

  NodeId star_target() {
    const Token& first = tok();
    if (accept_op("*")) {
      const NodeId s = start(Kind::Starred, first);
      add(s, target_atom(), Role::value);
      return finish(s);
    }
    return target_atom();
  }

  // A target: a primary (name, attribute, subscript, or a parenthesized/bracketed list);
  // check_target decides whether it can be assigned.
  NodeId target_atom() { return primary(); }

  // ---- expressions ----
  NodeId star_expressions() {
    const NodeId first = star_expression();
    if (!is_op(",")) return first;
    const NodeId tuple = start_at(Kind::Tuple, first);
    add(tuple, first, Role::elt);
    while (accept_op(",")) {
      if (!starts_expression()) break;
      add(tuple, star_expression(), Role::elt);
    }
    return finish(tuple);
  }

  bool starts_expression() const {
    const Token& t = tok();
    if (t.kind == Tok::Name) {
      const std::string_view w = text(t);
      return !t.keyword || w == "None" || w == "True" || w == "False" || w == "not" || w == "lambda" || w == "await" ||
             w == "yield";
    }
    if (t.kind == Tok::Number || t.kind == Tok::String) return true;
    if (t.kind != Tok::Op) return false;
    const std::string_view o = text(t);
    return o == "(" || o == "[" || o == "{" || o == "-" || o == "+" || o == "~" || o == "*" || o == "...";
  }

  NodeId star_expression() {
    if (is_op("*")) {
      const NodeId s = start(Kind::Starred, next());
      add(s, bitwise_or(), Role::value);
      return finish(s);
    }
    return expression();
  }

  NodeId star_named_expression() {
    if (is_op("*")) {
      const NodeId s = start(Kind::Starred, next());
      add(s, bitwise_or(), Role::value);
      return finish(s);
    }
    return named_expression();
  }

  NodeId named_expression() {
    if (is_name() && is_op(":=", 1)) {
      const NodeId target = name_node(next());
      next();
      const NodeId n = start_at(Kind::NamedExpr, target);
      add(n, target, Role::target);
      add(n, expression(), Role::value);
      return finish(n);
    }
    const NodeId e = expression();
    if (is_op(":=")) fail_walrus(e);
    return e;
  }

  // Most expressions are a lone primary (a name, a call, an attribute): parse it first and skip
  // the operator levels when nothing follows that continues an expression.
  bool starts_primary() const {
    const Token& t = tok();
    if (t.kind == Tok::Name)
      return !t.keyword || t.code == pack("None") || t.code == pack("True") || t.code == pack("False");
    if (t.kind == Tok::Number || t.kind == Tok::String) return true;
    return t.kind == Tok::Op &&
           (t.code == pack("(") || t.code == pack("[") || t.code == pack("{") || t.code == pack("..."));
  }

  bool continues_expression() const {
    const Token& t = tok();
    if (t.kind == Tok::Op) {
      switch (t.code) {
        case pack("**"):
        case pack("=="):
        case pack("!="):
        case pack("<"):
        case pack("<="):
        case pack(">"):
        case pack(">="):
          return true;
        default:
          return precedence(t.code) > 0;
      }
    }
    if (t.kind != Tok::Name) return false;
    switch (t.code) {
      case pack("if"):
      case pack("and"):
      case pack("or"):
      case pack("not"):
      case pack("in"):
      case pack("is"):
        return true;
      default:
        return false;
    }
  }

  NodeId expression() {
    const Nest nest(*this);  // lambda bodies and defaults, else branches, and every bracket
    if (is_kw("lambda")) return lambda();
    NodeId pre = kNoNode;
    if (starts_primary()) {
      pre = primary();
      if (!continues_expression()) return pre;
    }
    const NodeId body = bool_op(true, pre);
    if (!is_kw("if")) return body;
    next();
    const NodeId n = start_at(Kind::IfExp, body);
    add(n, disjunction(), Role::test);
    if (!accept_kw("else")) fail("expected 'else' after 'if' expression");
    add(n, body, Role::body);
    add(n, expression(), Role::orelse);
    return finish(n);
  }

  NodeId lambda() {
    const NodeId n = start(Kind::Lambda, next());
    add(n, parameters(":", false), Role::args);
    expect_op(":");
    add(n, expression(), Role::body);
    return finish(n);
  }

  NodeId yield_expr() {
    const Token& first = next();
    if (accept_kw("from")) {
      const NodeId n = start(Kind::YieldFrom, first);
      add(n, expression(), Role::value);
      return finish(n);
    }
    const NodeId n = start(Kind::Yield, first);
    if (starts_expression()) add(n, star_expressions(), Role::value);
    return finish(n);
  }

  // `pre`, where given, is the first primary, already parsed (see expression()).
  NodeId bool_op(bool is_or, NodeId pre = kNoNode) {
    const NodeId first = is_or ? bool_op(false, pre) : inversion(pre);
    const char* word = is_or ? "or" : "and";
    if (!is_kw(word)) return first;
    const NodeId n = start_at(Kind::BoolOp, first, is_or ? 1 : 0);
    add(n, first, Role::value);
    while (accept_kw(word)) add(n, is_or ? bool_op(false) : inversion(), Role::value);
    return finish(n);
  }
  NodeId disjunction() { return bool_op(true); }

  NodeId inversion(NodeId pre = kNoNode) {
    if (pre == kNoNode && is_kw("not")) {
      const Nest nest(*this);
      const NodeId n = start(Kind::UnaryOp, next(), 3);
      add(n, inversion(), Role::operand);
      return finish(n);
    }
    return comparison(pre);
  }

  // Compare operator codes: == != < <= > >= is, is not, in, not in.
  int compare_op() {
    if (at(Tok::Op)) {
      static constexpr std::string_view ops[] = {"==", "!=", "<", "<=", ">", ">="};
      for (int k = 0; k < 6; ++k)
        if (is_op(ops[k])) return next(), k;
      return -1;
    }
    if (is_kw("is")) {
      next();
      return accept_kw("not") ? 7 : 6;
    }
    if (is_kw("in")) return next(), 8;
    if (is_kw("not") && is_kw("in", 1)) return next(), next(), 9;
    return -1;
  }

  NodeId comparison(NodeId pre = kNoNode) {
    const NodeId first = binary(1, pre);
    NodeId n = kNoNode;
    while (true) {
      const int op = compare_op();
      if (op < 0) break;
      if (n == kNoNode) {
        n = start_at(Kind::Compare, first);
        add(n, first, Role::left);
      }
      if (tree_.node(n).first_child == tree_.node(n).last_child)
        tree_.mutable_node(n).op = static_cast<std::uint16_t>(op);
      add(n, bitwise_or(), Role::comparator);
    }
    return n == kNoNode ? first : finish(n);
  }

  // Binary operators by precedence climbing: | ^ & (<< >>) (+ -) (* / // % @), loosest first.
  static int precedence(std::uint64_t code) {
    switch (code) {
      case pack("|"):
        return 1;
      case pack("^"):
        return 2;
      case pack("&"):
        return 3;
      case pack("<<"):
      case pack(">>"):
        return 4;
      case pack("+"):
      case pack("-"):
        return 5;
      case pack("*"):
      case pack("/"):
      case pack("//"):
      case pack("%"):
      case pack("@"):
        return 6;
      default:
        return 0;
    }
  }

  NodeId binary(int min_precedence, NodeId pre = kNoNode) {
    NodeId left = factor(pre);
    while (at(Tok::Op)) {
      const int prec = precedence(tok().code);
      if (prec == 0 || prec < min_precedence) break;
      const std::uint16_t code = bin_op_code(text(next()));
      const NodeId right = binary(prec + 1);  // left-associative
      const NodeId n = start_at(Kind::BinOp, left, code);
      add(n, left, Role::left);
      add(n, right, Role::right);
      left = finish(n);
    }
    return left;
  }
  NodeId bitwise_or() { return binary(1); }

  NodeId factor(NodeId pre = kNoNode) {
    if (pre == kNoNode && (is_op("+") || is_op("-") || is_op("~"))) {
      const Nest nest(*this);
      const Token& op = next();
      const std::uint16_t code = text(op) == "+" ? 0 : text(op) == "-" ? 1 : 2;
      const NodeId n = start(Kind::UnaryOp, op, code);
      add(n, factor(), Role::operand);
      return finish(n);
    }
    return power(pre);
  }

  NodeId power(NodeId pre = kNoNode) {
    NodeId base = pre;
    if (base == kNoNode && is_kw("await")) {
      base = start(Kind::Await, next());
      add(base, primary(), Role::value);
      finish(base);
    } else if (base == kNoNode) {
      base = primary();
    }
    if (!is_op("**")) return base;
    const Nest nest(*this);  // right-associative: the right side recurses
    next();
    const NodeId n = start_at(Kind::BinOp, base, bin_op_code("**"));
    add(n, base, Role::left);
    add(n, factor(), Role::right);
    return finish(n);
  }

  NodeId primary() {
    const Token& first = tok();
    NodeId e = atom();
    const Span start_span{first.span.line, first.span.col, first.span.line, first.span.col};
    while (at(Tok::Op)) {
      if (is_op(".")) {
        next();
        const Token& name = expect_name();
        const NodeId a = tree_.add(Kind::Attribute, start_span);
        add(a, e, Role::value);
        set_ident(a, name);
        e = finish(a);
      } else if (is_op("(")) {
        next();
        const NodeId c = tree_.add(Kind::Call, start_span);
        add(c, e, Role::func);
        call_arguments(c, Role::arg);
        expect_op(")");
        e = finish(c);
      } else if (is_op("[")) {
        next();
        const NodeId s = tree_.add(Kind::Subscript, start_span);
        add(s, e, Role::value);
        add(s, slices(), Role::slice);
        expect_op("]");
        e = finish(s);
      } else {
        break;
      }
    }
    return e;
  }

  NodeId attribute(NodeId value, const Token& name) {
    const NodeId a = start_at(Kind::Attribute, value);
    add(a, value, Role::value);
    set_ident(a, name);
    return finish(a);
  }

  // Arguments of a call or a class's bases: positional (role), *args, name=value, **kwargs.
  void call_arguments(NodeId call, Role positional_role) {
    bool keyword_seen = false, kwargs_seen = false;
    int count = 0;
    while (!is_op(")")) {
      const Token& first = tok();
      if (accept_op("*")) {
        if (kwargs_seen) fail_at("iterable argument unpacking follows keyword argument unpacking", first);
        const NodeId s = start(Kind::Starred, first);
        add(s, expression(), Role::value);
        add(call, finish(s), positional_role);
      } else if (accept_op("**")) {
        const NodeId k = start(Kind::keyword, first);
        add(k, expression(), Role::value);
        add(call, finish(k), Role::keyword);
        kwargs_seen = true;
      } else if (is_name() && is_op("=", 1)) {
        next();
        next();
        const NodeId k = start(Kind::keyword, first);
        set_ident(k, first);
        add(k, expression(), Role::value);
        add(call, finish(k), Role::keyword);
        keyword_seen = true;
      } else {
        NodeId e = named_expression();
        if (is_op("=")) fail_node("expression cannot contain assignment, perhaps you meant \"==\"?", e);
        if (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
          e = finish(comprehension(Kind::GeneratorExp, e, kNoNode, first));
          if (count > 0 || !is_op(")")) fail_node("Generator expression must be parenthesized", e);
        }
        if (kwargs_seen) fail_node("positional argument follows keyword argument unpacking", e);
        if (keyword_seen) fail_node("positional argument follows keyword argument", e);
        add(call, e, positional_role);
      }
      ++count;
      if (!accept_op(",")) break;
    }
  }

  NodeId slices() {
    const NodeId first = slice();
    if (!is_op(",")) return first;
    const NodeId tuple = start_at(Kind::Tuple, first);
    add(tuple, first, Role::elt);
    while (accept_op(",")) {
      if (is_op("]")) break;
      add(tuple, slice(), Role::elt);
    }
    return finish(tuple);
  }

  NodeId slice() {
    const Token& first = tok();
    if (is_op("*")) return star_named_expression();
    NodeId lower = kNoNode;
    if (!is_op(":")) {
      lower = named_expression();
      if (!is_op(":")) return lower;
    }
    const NodeId s = lower == kNoNode ? start(Kind::Slice, first) : start_at(Kind::Slice, lower);
    if (lower != kNoNode) add(s, lower, Role::lower);
    next();  // ':'
    if (!is_op(":") && !is_op(",") && !is_op("]")) add(s, expression(), Role::upper);
    if (accept_op(":") && !is_op(",") && !is_op("]")) add(s, expression(), Role::step);
    return finish(s);
  }

  NodeId name_node(const Token& t) {
    const NodeId n = start(Kind::Name, t);
    set_ident(n, t);
    Span& s = tree_.mutable_node(n).span;
    s.end_line = t.span.end_line;
    s.end_col = t.span.end_col;
    return n;
  }

  NodeId atom() {
    const Token& t = tok();
    switch (t.kind) {
      case Tok::Name: {
        const std::string_view w = text(t);
        if (!t.keyword) {
          next();
          return name_node(t);
        }
        if (w == "None" || w == "True" || w == "False") {
          next();
          const auto k = w == "None" ? ConstKind::None : w == "True" ? ConstKind::True : ConstKind::False;
          const NodeId c = start(Kind::Constant, t, static_cast<std::uint16_t>(k));
          set_token_text(c, t);
          return finish(c);
        }
        invalid();
      }
      case Tok::Number: {
        next();
        const std::string_view w = text(t);
        ConstKind k = ConstKind::Int;
        if (w.back() == 'j' || w.back() == 'J')
          k = ConstKind::Complex;
        else if (w.size() > 1 &&
                 (w[1] == 'x' || w[1] == 'X' || w[1] == 'o' || w[1] == 'O' || w[1] == 'b' || w[1] == 'B'))
          k = ConstKind::Int;
        else if (w.find_first_of(".eE") != std::string_view::npos)
          k = ConstKind::Float;
        const NodeId c = start(Kind::Constant, t, static_cast<std::uint16_t>(k));
        set_token_text(c, t);
        return finish(c);
      }
      case Tok::String:
        return strings();
      case Tok::Op:
        break;
      default:
        invalid();
    }
    if (is_op("...")) {
      next();
      const NodeId c = start(Kind::Constant, t, static_cast<std::uint16_t>(ConstKind::Ellipsis));
      set_token_text(c, t);  // "..."
      return finish(c);
    }
    if (is_op("(")) return paren_atom();
    if (is_op("[")) return list_atom();
    if (is_op("{")) return brace_atom();
    invalid();
  }

  NodeId paren_atom() {
    const Token& open = next();
    if (accept_op(")")) return finish(start(Kind::Tuple, open));
    if (is_kw("yield")) {
      const NodeId y = yield_expr();
      expect_op(")");
      mark_parens(y);
      return y;
    }
    const NodeId first = star_named_expression();
    if (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
      const NodeId g = comprehension(Kind::GeneratorExp, first, kNoNode, open);
      expect_op(")");
      return finish(g);
    }
    if (accept_op(")")) {
      if (kind(first) == Kind::Starred) fail_node("cannot use starred expression here", first);
      mark_parens(first);
      return first;
    }
    const NodeId tuple = start(Kind::Tuple, open);
    add(tuple, first, Role::elt);
    while (accept_op(",")) {
      if (is_op(")")) break;
      add(tuple, star_named_expression(), Role::elt);
    }
    expect_op(")");
    mark_parens(tuple);
    return finish(tuple);
  }

  NodeId list_atom() {
    const Token& open = next();
    const NodeId list = start(Kind::List, open);
    if (accept_op("]")) return finish(list);
    const NodeId first = star_named_expression();
    if (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
      const NodeId c = comprehension(Kind::ListComp, first, kNoNode, open);
      expect_op("]");
      return finish(c);
    }
    add(list, first, Role::elt);
    while (accept_op(",")) {
      if (is_op("]")) break;
      add(list, star_named_expression(), Role::elt);
    }
    expect_op("]");
    return finish(list);
  }

  NodeId brace_atom() {
    const Token& open = next();
    if (accept_op("}")) return finish(start(Kind::Dict, open));
    // A dict if the first item is `**x` or `k: v`; else a set.
    NodeId first_key = kNoNode, first_value;
    if (accept_op("**")) {
      first_value = bitwise_or();
    } else {
      const NodeId e = star_named_expression();
      if (!is_op(":")) return set_rest(open, e);
      next();
      first_key = e;
      first_value = expression();
      if (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
        const NodeId c = comprehension(Kind::DictComp, first_key, first_value, open);
        expect_op("}");
        return finish(c);
      }
    }
    const NodeId dict = start(Kind::Dict, open);
    dict_item(dict, first_key, first_value);
    while (accept_op(",")) {
      if (is_op("}")) break;
      if (accept_op("**")) {
        dict_item(dict, kNoNode, bitwise_or());
      } else {
        const NodeId k = expression();
        expect_op(":");
        dict_item(dict, k, expression());
      }
    }
    expect_op("}");
    return finish(dict);
  }

  void dict_item(NodeId dict, NodeId key, NodeId value) {
    const NodeId item = start_at(Kind::DictItem, key == kNoNode ? value : key);
    if (key != kNoNode) add(item, key, Role::key);
    add(item, value, Role::value);
    add(dict, finish(item), Role::item);
  }

  NodeId set_rest(const Token& open, NodeId first) {
    if (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
      const NodeId c = comprehension(Kind::SetComp, first, kNoNode, open);
      expect_op("}");
      return finish(c);
    }
    const NodeId set = start(Kind::Set, open);
    add(set, first, Role::elt);
    while (accept_op(",")) {
      if (is_op("}")) break;
      add(set, star_named_expression(), Role::elt);
    }
    expect_op("}");
    return finish(set);
  }

  NodeId comprehension(Kind k, NodeId elt, NodeId value, const Token& open) {
    if (kind(elt) == Kind::Starred) fail_node("iterable unpacking cannot be used in comprehension", elt);
    const NodeId c = start(k, open);
    add(c, elt, k == Kind::DictComp ? Role::key : Role::elt);
    if (value != kNoNode) add(c, value, Role::value);
    while (is_kw("for") || (is_kw("async") && is_kw("for", 1))) {
      const Token& first = tok();
      const bool is_async = accept_kw("async");
      next();  // 'for'
      const NodeId g = start(Kind::comprehension, first, is_async ? 1 : 0);
      add(g, targets(), Role::target);
      expect_kw("in");
      add(g, disjunction(), Role::iter);
      while (accept_kw("if")) add(g, disjunction(), Role::ifs);
      add(c, finish(g), Role::generator);
    }
    return c;
  }

  // ---- strings ----
  NodeId strings() {
    // The literals are the tokens [first_index, i_) once read (a String is never the last token).
    const std::size_t first_index = i_;
    const Token& first = tok();
    bool any_f = false, any_bytes = false, any_str = false;
    while (at(Tok::String)) {
      const Token& t = next();
      const Prefix p = read_prefix(s_, t.begin);
      any_f = any_f || p.fstring;
      (p.bytes ? any_bytes : any_str) = true;
    }
    if (any_bytes && any_str) fail_at("cannot mix bytes and nonbytes literals", first);
    if (!any_f) {
      const NodeId c =
          start(Kind::Constant, first, static_cast<std::uint16_t>(any_bytes ? ConstKind::Bytes : ConstKind::Str));
      tree_.set_source_text(c, first.begin, t_[i_ - 1].end - first.begin);
      return finish(c);
    }
    const NodeId j = start(Kind::JoinedStr, first);
    for (std::size_t k = first_index; k < i_; ++k) {
      const Token& t = t_[k];
      const Prefix p = read_prefix(s_, t.begin);
      if (!p.fstring) continue;
      StringResult r = scan_string(s_, t.begin);
      fstring_pieces(j, r.pieces, t.brackets);
    }
    return finish(j);
  }

  // `brackets`: those open around the pieces; a field's brace is one more (as in CPython 3.12).
  // The recursion is into format specs, which nest at most twice (fstring.cc).
  void fstring_pieces(NodeId parent, const std::vector<FPiece>& pieces, std::uint32_t brackets) {
    for (const FPiece& piece : pieces) {
      if (!piece.is_field) continue;  // literal text carries no facts
      const FField& f = piece.field;
      const NodeId fv = tree_.add(Kind::FormattedValue, position(f.begin), static_cast<std::uint16_t>(f.conversion));
      add(fv, field_value(f, brackets + 1), Role::value);
      if (f.has_spec) {
        const NodeId spec = tree_.add(Kind::JoinedStr, position(f.begin));
        fstring_pieces(spec, f.spec, brackets + 1);
        add(fv, spec, Role::format_spec);
      }
      add(parent, fv, Role::value);
    }
  }

  Span position(std::uint32_t offset) {
    std::uint32_t line = 1, line_start = 0;
    line_of(offset, line, line_start);
    return {line, offset - line_start, line, offset - line_start};
  }

  void line_of(std::uint32_t offset, std::uint32_t& line, std::uint32_t& line_start) {
    if (line_starts_.empty()) {
      line_starts_.push_back(0);
      for (std::uint32_t k = 0; k < s_.size(); ++k)
        if (s_[k] == '\n' || (s_[k] == '\r' && (k + 1 >= s_.size() || s_[k + 1] != '\n')))
          line_starts_.push_back(k + 1);
    }
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    line = static_cast<std::uint32_t>(it - line_starts_.begin()) + 1;
    line_start = *it;
  }

  // The field's expression, by a parser of its own that nests on from this one's depth.
  NodeId field_value(const FField& f, std::uint32_t brackets) {
    if (brackets > kMaxBrackets) {
      const Span at = position(f.begin);
      throw ParseFail{{at.line, at.col, "too many nested parentheses"}};
    }
    const Nest nest(*this);
    LexStart start;
    start.begin = f.expr_begin;
    start.end = f.expr_end;
    line_of(f.expr_begin, start.line, start.line_start);
    start.in_brackets = true;
    start.brackets = brackets;
    Lexed lexed = tokenize(s_, start);
    if (lexed.error) throw ParseFail{*lexed.error};
    if (lexed.tokens.size() <= 1)
      throw ParseFail{
          {position(f.begin).line, position(f.begin).col, "f-string: valid expression required before '}'"}};
    Parser inner(s_, std::move(lexed.tokens), tree_, line_starts_, depth_);
    return inner.field_expression();
  }

  std::string_view s_;
  std::vector<Token> t_;
  Tree& tree_;
  std::vector<std::uint32_t>& line_starts_;  // offsets where lines start; empty until an f-string asks
  std::size_t i_ = 0;
  std::pair<std::uint32_t, std::uint32_t> last_end_{1, 0};
  std::vector<bool> parens_;
  std::vector<NodeId> assign_parts_;  // the targets and value of the assignment being parsed
  int depth_;                         // Nest levels open, this parser's and its outer ones'
  const char* floor_;                 // stack_floor()
};

// PEP 263: an encoding cookie on line 1, or on line 2 after a comment or blank line 1.
std::string cookie(std::string_view source) {
  std::size_t pos = 0;
  for (int n = 0; n < 2 && pos < source.size(); ++n) {
    auto nl = source.find('\n', pos);
    if (nl == std::string_view::npos) nl = source.size();
    const std::string_view line = source.substr(pos, nl - pos);
    pos = nl + 1;
    const auto first = line.find_first_not_of(" \t\f\r");
    if (first == std::string_view::npos) continue;
    if (line[first] != '#') return "";
    const auto at = line.find("coding", first);
    if (at == std::string_view::npos || at + 6 >= line.size() || (line[at + 6] != ':' && line[at + 6] != '=')) continue;
    std::size_t k = at + 7;
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
    std::string name;
    while (k < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[k])) || line[k] == '-' || line[k] == '_' || line[k] == '.'))
      name += line[k++];
    if (!name.empty()) return name;
  }
  return "";
}

std::string normal_encoding(std::string name) {
  for (char& c : name) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool is_utf8_name(const std::string& n) { return n == "utf-8" || n == "utf8" || n == "u8" || n.starts_with("utf-8-"); }

// Encodings whose bytes below 0x80 are ASCII; their text is recoded byte-wise, which keeps the
// structure (names, operators, lines) exact. Multi-byte East Asian encodings are accepted the same way.
bool is_known_encoding(const std::string& n) {
  static constexpr std::string_view known[] = {"ascii",     "us-ascii", "latin-1", "latin1",    "l1",     "iso-latin-1",
                                               "koi8-r",    "koi8-u",   "euc-jp",  "shift-jis", "sjis",   "cp932",
                                               "gbk",       "gb2312",   "gb18030", "big5",      "euc-kr", "cp949",
                                               "mac-roman", "macroman", "mbcs",    "utf-16"};
  for (auto k : known)
    if (n == k) return true;
  return n.starts_with("iso-8859-") || n.starts_with("iso8859-") || n.starts_with("cp") || n.starts_with("windows-") ||
         n.starts_with("latin-") || n.starts_with("iso-latin-");
}

// The source as UTF-8: the input itself (less a BOM), or a recoded copy for a legacy encoding.
struct Decoded {
  std::string_view text;  // a view of the input, unless recoded
  std::string recoded;
  bool is_recoded = false;
  std::optional<SyntaxError> error;
  std::string_view utf8() const { return is_recoded ? std::string_view(recoded) : text; }
};

Decoded decode_source(std::string_view source) {
  const bool bom = source.starts_with("\xEF\xBB\xBF");
  if (bom) source.remove_prefix(3);
  const std::string raw = cookie(source);
  const std::string name = normal_encoding(raw);
  if (raw.empty() || is_utf8_name(name)) {
    // With a BOM, CPython insists on the exact spelling "utf-8".
    if (bom && !raw.empty() && name != "utf-8" && !name.starts_with("utf-8-"))
      return {{}, {}, false, SyntaxError{1, 0, "encoding problem: " + raw + " with BOM"}};
    return {source, {}, false, std::nullopt};
  }
  if (bom) return {{}, {}, false, SyntaxError{1, 0, "encoding problem: " + raw + " with BOM"}};
  if (!is_known_encoding(name)) return {{}, {}, false, SyntaxError{1, 0, "unknown encoding: " + raw}};
  std::string out;
  for (unsigned char c : source) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return {{}, std::move(out), true, std::nullopt};
}

bool valid_utf8(std::string_view s, std::size_t& bad) {
  for (std::size_t i = 0; i < s.size();) {
    // Source is nearly all ASCII: skip it eight bytes at a time.
    if (i + 8 <= s.size()) {
      std::uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return bad = i, false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return bad = i, false;
    i += n;
  }
  return true;
}

}  // namespace

Parsed parse(std::string_view raw) {
  Parsed out;
  Decoded decoded = decode_source(raw);
  if (decoded.error) {
    out.error = decoded.error;
    return out;
  }
  const std::string_view source = decoded.utf8();
  std::size_t bad = 0;
  if (!valid_utf8(source, bad)) {
    std::uint32_t line = 1;
    for (std::size_t k = 0; k < bad; ++k) line += source[k] == '\n';
    out.error = SyntaxError{line, 0, "source is not valid UTF-8"};
    return out;
  }
  if (source.find('\0') != std::string_view::npos) {
    out.error = SyntaxError{1, 0, "source code cannot contain null bytes"};
    return out;
  }
  Lexed lexed = tokenize(source);
  if (lexed.error) {
    out.error = lexed.error;
    return out;
  }
  std::vector<std::uint32_t> line_starts;  // filled by the first f-string field that needs it
  out.tree.reserve(lexed.tokens.size() * 3 / 2 + 16, source.size() + 64);
  out.tree.set_source(source);
  try {
    Parser parser(source, std::move(lexed.tokens), out.tree, line_starts);
    parser.module();
  } catch (const ParseFail& f) {
    out.error = f.error;
    if (out.error->message.empty()) out.error->message = "invalid syntax";
  }
  return out;
}

}  // namespace tritium::pyast
