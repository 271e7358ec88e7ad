// The parser on what the stdlib corpus (Python 3.11 here) cannot show: 3.12 syntax, soft
// keywords, error positions, and the facts the verifier reads.
#include <gtest/gtest.h>

#include <algorithm>

#include "tritium/pyast.h"

namespace tritium::pyast {
namespace {

bool accepts(std::string_view src) {
  const Parsed p = parse(src);
  if (p.error) ADD_FAILURE() << p.error->line << ":" << p.error->col << ": " << p.error->message << "\n" << src;
  return p.ok();
}

SyntaxError rejects(std::string_view src) {
  const Parsed p = parse(src);
  EXPECT_FALSE(p.ok()) << "accepted:\n" << src;
  return p.error.value_or(SyntaxError{});
}

bool has_fact(std::string_view src, const std::string& fact) {
  const Parsed p = parse(src);
  if (!p.ok()) return false;
  const auto f = facts(p.tree);
  return std::find(f.begin(), f.end(), fact) != f.end();
}

TEST(Grammar312, TypeParametersAndTypeAliases) {
  EXPECT_TRUE(accepts("def f[T, *Ts, **P](x: T) -> T: return x\n"));
  EXPECT_TRUE(accepts("class C[T: int](Base): pass\n"));
  EXPECT_TRUE(accepts("type Pair[T] = tuple[T, T]\ntype X = int\n"));
  EXPECT_TRUE(accepts("type = 5\ntype(x)\ntype.x = 1\n"));  // `type` stays a name
}

TEST(Grammar312, FStringsNestQuotesAndFields) {
  EXPECT_TRUE(accepts("d = {}\nx = f\"{d[\"k\"]} {f'{1}'}\"\n"));
  EXPECT_TRUE(accepts("w, p, x = 8, 2, 3.0\ns = f'{x:{w}.{p}f} {x!r:>10} {x=} {x = !s}'\n"));
  EXPECT_TRUE(accepts("s = f'''{\n  1 +\n  2\n}'''\n"));
  EXPECT_TRUE(accepts("s = f'{{literal}} {\"\\n\".join([])}'\n"));
  EXPECT_TRUE(accepts("s = rf'\\d{1}' fR\"{2}\"\nb = Rb'\\x'\n"));
}

TEST(Grammar312, CallsInsideFStringsAreFactsWithTheirLine) {
  EXPECT_TRUE(has_fact("x = 1\ns = f'a {g(x)} b'\n", "call\t2\tg"));
  EXPECT_TRUE(has_fact("s = f'''\n{h(1)}'''\n", "call\t2\th"));
}

TEST(Grammar, MatchStatementsAndMatchAsAName) {
  EXPECT_TRUE(accepts(
      "match cmd:\n"
      "    case [\"go\", *rest] if rest: pass\n"
      "    case {\"k\": 1, **kw}: pass\n"
      "    case Point(x=0, y=_) | Point(1, 2) as p: pass\n"
      "    case -1 | 1+2j | None | 'a' 'b' | mod.CONST: pass\n"
      "    case (a, b,) | [a, b]: pass\n"
      "    case _: pass\n"));
  EXPECT_TRUE(accepts("match = 1\nmatch(x)\nmatch[0] = 2\nmatch.y, z = 1, 2\n"));
}

TEST(Grammar, StatementsOfEveryKind) {
  EXPECT_TRUE(accepts(
      "import a.b as c, d\nfrom .. import (e as f, g,)\nfrom .m import *\n"
      "@dec.orator(1)\n@(lambda f: f)\nasync def h(a, /, b=1, *args, c, d=2, **kw):\n"
      "    async with x as (y, z), w: pass\n"
      "    async for i in j: await k\n"
      "    global q\n"
      "    return (yield)\n"
      "with (open(a) as b, open(c) as d,): pass\n"
      "with (a, b): pass\n"
      "try: pass\nexcept* (A, B) as e: pass\n"
      "try: pass\nexcept A: pass\nelse: pass\nfinally: pass\n"
      "while (n := n - 1) > 0: break\nelse: pass\n"
      "for x, *y in z: continue\n"
      "del a[0], b.c, (d, e)\nassert x, 'm'\nraise E from None\n"
      "x: int = 1\ny.z: 'T'\na = b = *c, d\nn **= 2\n"
      "lambda *a, k=1, **kw: (a, k, kw)\n"
      "[i for i in range(3) if i for j in k]\n{k: v for k, v in d}\n{*a, *b}\n{**a, 'b': 1}\n"
      "x = a if b else c\nnot a in b is not c\n"
      "print(*args, sep='', **kw)\nf(x for x in y)\nm[1:2, ::3, ...]\n"));
}

TEST(Lexer, NumbersStringsUnicodeAndLineJoining) {
  EXPECT_TRUE(accepts("n = 0x_FF + 0o17 + 0b1_0 + 1_000 + 1e-3 + .5 + 5. + 3j + 00 + 0.0e0J\n"));
  EXPECT_TRUE(accepts("b = b'\\x00' B\"x\" br'\\d'\nu = u'x'\nt = '''a\nb'''\n"));
  EXPECT_TRUE(accepts("größe = 1\nπ = 3.14\n变量 = größe + π\n"));
  EXPECT_TRUE(accepts("x = (1 +\n     2)\ny = 1 + \\\n    2\nif x:\n\tpass\n"));
  EXPECT_TRUE(accepts("\xEF\xBB\xBFx = 1\r\ny = 2\r\n"));
  EXPECT_TRUE(accepts("x = 1if y else 2\n"));
}

TEST(Errors, CarryLineColumnAndMessage) {
  auto e = rejects("x = 1\ny = 'abc\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.col, 4u);
  EXPECT_NE(e.message.find("unterminated string literal"), std::string::npos);

  e = rejects("def f():\n  x = 1\n y = 2\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(e.message.find("unindent does not match"), std::string::npos);

  e = rejects("f() = 1\n");
  EXPECT_EQ(e.message, "cannot assign to function call");

  e = rejects("x = (1,\n");
  EXPECT_EQ(e.message, "'(' was never closed");
  EXPECT_EQ(e.line, 1u);
  EXPECT_EQ(e.col, 4u);
}

TEST(Errors, WhatCPythonRejects) {
  rejects("print 'hello'\n");
  rejects("x = b'a' 'b'\n");
  rejects("x = 012\n");
  rejects("def f(a=1, b): pass\n");
  rejects("f(a=1, b)\n");
  rejects("f(**k, *a)\n");
  rejects("f(x for x in y, 1)\n");
  rejects("*a = 1\n");
  rejects("a + 1 += 2\n");
  rejects("x = f'{}'\n");
  rejects("x = f'{a'\n");
  rejects("x = 0b12\n");
  rejects("x = 1__0\n");
  rejects("def f(*): pass\n");
  rejects("if x:\npass\n");
  rejects("  x = 1\n");
  rejects("x = $\n");
  rejects("b'\xc3\xa9'\n");
  rejects("try:\n  pass\n");
  rejects("x = [1, 2)\n");
  rejects("# coding: nonsense-42\nx = 1\n");
}

TEST(Facts, SubscriptedLaunchesDecoratorsAndImports) {
  const char* src =
      "import triton\nimport triton.language as tl\nfrom torch import matmul as mm\n"
      "@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    pass\n"
      "class ModelNew(nn.Module):\n    def forward(self, x):\n        k[(1,)](x, B=4)\n        self.w.data = x\n";
  EXPECT_TRUE(has_fact(src, "def\t5\tk\t0\ttriton.jit"));
  EXPECT_TRUE(has_fact(src, "call\t9\tk[]"));
  EXPECT_TRUE(has_fact(src, "import\t2\ttriton.language\ttl"));
  EXPECT_TRUE(has_fact(src, "from\t3\t0\ttorch\tmatmul\tmm"));
  EXPECT_TRUE(has_fact(src, "class\t7\tModelNew\tnn.Module\t"));
  EXPECT_TRUE(has_fact(src, "attrassign\t10\tself.w.data"));
}

TEST(Facts, IdentifiersAreNfkcNormalisedLikeCPython) {
  // A fullwidth or mathematical-letter spelling of `torch` is `torch` to Python.
  EXPECT_TRUE(has_fact("import torch\n\xEF\xBD\x94\xEF\xBD\x8F\xEF\xBD\x92\xEF\xBD\x83\xEF\xBD\x88.matmul(a, b)\n",
                       "call\t2\ttorch.matmul"));
  EXPECT_TRUE(has_fact("\xF0\x9D\x90\xAD\xF0\x9D\x90\xA8rch.mm(a, b)\n", "call\t1\ttorch.mm"));
}

TEST(Tree, RolesNameTheFieldsAndSpansFollowCPython) {
  const Parsed p = parse("y = obj.method(1, k=2)\n");
  ASSERT_TRUE(p.ok());
  const Tree& t = p.tree;
  const NodeId assign = t.child(t.root(), Role::body);
  ASSERT_EQ(t.node(assign).kind, Kind::Assign);
  const NodeId call = t.child(assign, Role::value);
  ASSERT_EQ(t.node(call).kind, Kind::Call);
  EXPECT_EQ(render(t, t.child(call, Role::func)), "obj.method");
  EXPECT_EQ(t.children(call, Role::arg).size(), 1u);
  EXPECT_EQ(t.text(t.child(call, Role::keyword)), "k");
  const Span s = t.node(call).span;
  EXPECT_EQ(s.line, 1u);
  EXPECT_EQ(s.col, 4u);
  EXPECT_EQ(s.end_col, 22u);
}

}  // namespace
}  // namespace tritium::pyast
