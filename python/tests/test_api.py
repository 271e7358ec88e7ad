"""`import tritium`: the same C++ calls as the CLI, through the nanobind extension."""

import pytest
from conftest import FIXTURES

import tritium


def test_version_comes_from_the_core():
    from tritium import _core

    assert tritium.__version__ == _core.version() == tritium.version()


def test_load_suite_returns_tasks_and_problems():
    suite = tritium.load_suite(FIXTURES / "suites" / "mixed.jsonl", with_source=True)
    assert [t["id"] for t in suite["tasks"]] == ["neg", "plain"]
    assert "class Model" in suite["tasks"][0]["source"]
    assert len(suite["problems"]) == 5


def test_load_suite_raises_value_error_on_a_bad_path():
    with pytest.raises(ValueError, match="no such file or directory"):
        tritium.load_suite("/no/such/suite")


def test_check_suite_runs_the_references():
    report = tritium.check_suite(FIXTURES / "suites" / "tree")
    assert report["summary"]["ok"] == 3 and report["summary"]["failed"] == 0


def test_check_suite_raises_when_no_runner_can_start():
    with pytest.raises(RuntimeError, match="TRITIUM_PYTHON"):
        tritium.check_suite(FIXTURES / "suites" / "tree", python="/no/such/python")
