"""Deep nesting (issue 23): `tritium.verify` answers a `syntax.parse` finding, never a crash.

Each input is generated here (100-800 KB; no such file is committed). What Tritium refuses, CPython
refuses too (a SyntaxError, or the MemoryError of its parser's stack); the long left-associative
chains that Tritium builds in loops it accepts, and the rules then walk their deep trees.
"""

import ast

import pytest
from conftest import EXAMPLE_SOLUTIONS

import tritium

N = 100_000
TOO_COMPLEX = "Parser stack overflowed - Python source too complex to parse"
BRACKETS = "too many nested parentheses"

REFUSED = {
    "parentheses": ("x = " + "(" * N + "1" + ")" * N, BRACKETS),
    "lists": ("x = " + "[" * N + "]" * N, BRACKETS),
    "dicts": ("x = " + "{1: " * N + "1" + "}" * N, BRACKETS),
    "calls": ("f(" * N + ")" * N, BRACKETS),
    "subscripts": ("a[" * N + "0" + "]" * N, BRACKETS),
    "awaits": ("async def f():\n    " + "await (" * N + "x" + ")" * N, BRACKETS),
    "invert": ("x = " + "~" * N + "1", TOO_COMPLEX),
    "negate": ("x = " + "-" * N + "1", TOO_COMPLEX),
    "not": ("x = " + "not " * N + "y", TOO_COMPLEX),
    "power": ("x = " + "2 ** " * N + "2", TOO_COMPLEX),
    "lambdas": ("f = " + "lambda: " * N + "1", TOO_COMPLEX),
    "conditionals": ("x = " + "1 if y else " * N + "1", TOO_COMPLEX),
    "elif": ("if x: pass\n" + "elif x: pass\n" * (N // 8), TOO_COMPLEX),
    "blocks": ("".join(" " * k + "if x:\n" for k in range(600)) + " " * 600 + "pass", "too many levels of indentation"),
    "f-strings": ("x = " + 'f"{' * (N // 5) + "1" + '}"' * (N // 5), "too many nested f-strings"),
    "format specs": ("x = f'{a:" + "{b:" * N + "'", "f-string: expressions nested too deeply"),
}

CHAINS = {
    "sum": "x = " + "a + " * N + "a",
    "product": "x = " + "a * " * N + "a",
    "attributes": "x = a" + ".b" * N,
    "subscripts": "x = a" + "[0]" * N,
    "calls": "x = a" + "()" * N,
    "methods": "x = a" + ".b()[0]" * (N // 3),
    "and": "x = " + "a and " * N + "a",
    "comparisons": "x = " + "a < " * N + "a",
    "strings": "x = " + "'s' " * N + "'s'",
    "f-string pieces": "x = " + "f'{a}' " * (N // 4) + "''",
    "attribute target": "a" + ".b" * N + " = 1",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_deep_nesting_is_one_syntax_parse_finding(name):
    source, message = REFUSED[name]
    verdict = tritium.verify(source + "\n")
    assert verdict["status"] == "invalid_syntax"
    [finding] = verdict["findings"]
    assert finding["rule"] == "syntax.parse"
    assert finding["message"] == message
    assert finding["line"] >= 1


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_cpython_refuses_the_same_inputs(name):
    with pytest.raises((SyntaxError, MemoryError, RecursionError)):
        ast.parse(REFUSED[name][0] + "\n")


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_long_chains_parse_and_the_rules_walk_them(name):
    verdict = tritium.verify(CHAINS[name] + "\n")
    assert [f for f in verdict["findings"] if f["rule"] == "syntax.parse"] == []


def test_a_long_chain_in_forward_keeps_an_honest_solution_valid():
    honest = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()
    anchor = "        x = x.contiguous()\n"
    assert anchor in honest
    chains = "".join(f"        _ = {CHAINS[k].removeprefix('x = ')}\n" for k in ("sum", "attributes", "calls"))
    verdict = tritium.verify(honest.replace(anchor, anchor + chains))
    assert verdict["status"] == "valid", verdict["findings"]
