"""Differential tests of Tritium's C++ Python parser against CPython's `ast`.

Corpus: every .py of the standard library of this Python (no one here wrote it), plus the
examples. Accept/reject must agree on at least 99.9% of files; for every file both accept, the
verifier's facts (pyast_facts.py) must be equal.
"""

import ast
import collections
import pathlib
import sysconfig
import warnings

import pytest
from conftest import ROOT
from pyast_facts import facts as reference_facts

from tritium import _core

STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])


def corpus() -> list[pathlib.Path]:
    files = [p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts]
    files += sorted((ROOT / "examples").rglob("*.py"))
    return sorted(files)


def cpython(source: bytes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError):
            return None


@pytest.fixture(scope="module")
def results():
    out = []
    for path in corpus():
        source = path.read_bytes()
        tree = cpython(source)
        ours = _core.parse_python(source, with_facts=tree is not None)
        out.append((path, tree, ours))
    return out


def test_the_corpus_is_the_real_stdlib(results):
    # Debian and Ubuntu ship the stdlib without its tests: about 570 files; with them, about 1,800.
    assert len(results) > 500, f"expected the standard library under {STDLIB}"


def test_accept_reject_agrees_on_at_least_999_per_mille(results):
    disagreements = [
        f"{path}: cpython {'accepts' if tree else 'rejects'}, ours "
        f"{'accepts' if ours['ok'] else 'rejects'} "
        f"{ours.get('line', '')}:{ours.get('col', '')} {ours.get('message', '')}"
        for path, tree, ours in results
        if (tree is not None) != ours["ok"]
    ]
    agreement = 1 - len(disagreements) / len(results)
    assert agreement >= 0.999, f"{agreement:.4%} agreement; disagreements:\n" + "\n".join(disagreements[:40])


def test_facts_equal_cpython_on_every_file_both_accept(results):
    mismatches = []
    for path, tree, ours in results:
        if tree is None or not ours["ok"]:
            continue
        expected = collections.Counter(reference_facts(tree))
        actual = collections.Counter(ours["facts"])
        if expected != actual:
            missing = list((expected - actual).elements())[:3]
            extra = list((actual - expected).elements())[:3]
            mismatches.append(f"{path}: missing {missing} extra {extra}")
    assert not mismatches, f"{len(mismatches)} files differ:\n" + "\n".join(mismatches[:30])
