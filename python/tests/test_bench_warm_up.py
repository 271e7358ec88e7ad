"""engine_bench's warm-up before the scale comparison: what both sides import, imported once in a
throwaway process, so that neither side pays for a cold file cache. A name that no longer imports
must fail the benchmark, not leave the comparison to depend on which side ran first."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import engine_bench  # noqa: E402 - the benchmark's own warm-up


def test_the_warm_up_imports_what_both_sides_import():
    assert engine_bench._warm_file_cache("cpu") > 0


def test_a_warm_up_that_cannot_import_fails_loudly(monkeypatch):
    monkeypatch.setattr(engine_bench, "WARM_IMPORTS", "import tritium.runner.no_such_module")
    with pytest.raises(RuntimeError, match="warming the file cache failed"):
        engine_bench._warm_file_cache("cpu")
