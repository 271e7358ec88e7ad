"""The `tritium` command as a user runs it: the installed executable, real runner processes."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS, FIXTURES

import tritium

# TRITIUM_BIN: a build's own executable (a worktree's build/), instead of the installed one.
TRITIUM = (
    os.environ.get("TRITIUM_BIN")
    or shutil.which("tritium", path=os.path.dirname(sys.executable))
    or shutil.which("tritium")
)


def run(*args, timeout=300):
    assert TRITIUM, "the tritium command is installed beside this Python (make setup)"
    return subprocess.run([TRITIUM, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_version():
    from tritium import __version__

    assert run("--version").stdout.strip() == f"tritium {__version__}"
    assert json.loads(run("version", "--json").stdout) == {"tritium": __version__}


def test_help_lists_the_commands():
    out = run("help").stdout
    assert "tasks" in out and "version" in out
    commands = {c["name"] for c in json.loads(run("help", "--json").stdout)["commands"]}
    assert {"help", "version", "tasks"} <= commands
    assert "--check" in run("tasks", "--help").stdout
    assert "--check" in run("help", "tasks").stdout


def test_an_unknown_flag_is_a_usage_error_in_one_line():
    result = run("tasks", str(EXAMPLE_TASKS), "--frobnicate")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tritium: error:") and "tritium tasks --help" in lines[0]


def test_an_unknown_command_is_a_usage_error():
    assert run("frobnicate").returncode == 2
    assert run("help", "frobnicate").returncode == 2


def test_a_missing_suite_names_the_path_and_the_fix():
    result = run("tasks", "/no/such/suite")
    assert result.returncode == 2
    assert "/no/such/suite: no such file or directory; pass a task .py file" in result.stderr


def test_a_bad_device_is_refused():
    assert run("tasks", EXAMPLE_TASKS, "--check", "--device", "tpu").returncode == 2


@pytest.mark.parametrize(
    "flags",
    [
        ("--device", "banana"),
        ("--device", "gpu"),
        ("--device", "cuda:x"),
        ("--jobs", "-3"),
        ("--profile", "loose"),
        ("--trials", "2"),
    ],
)
def test_evals_bad_engine_options_are_usage_errors_before_any_work(flags):
    task, solution = EXAMPLE_TASKS / "level1" / "01_relu.py", EXAMPLE_SOLUTIONS / "level1" / "01_relu.py"
    result = run("eval", task, solution, *flags)
    assert result.returncode == 2, (flags, result.stderr)
    assert result.stderr.startswith("tritium: error:") and flags[1] in result.stderr


def test_an_empty_suite_or_candidates_directory_is_a_usage_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("eval", "--tasks", empty, "--candidates", EXAMPLE_SOLUTIONS)
    assert result.returncode == 2 and f"{empty}: no tasks" in result.stderr
    result = run("eval", "--tasks", EXAMPLE_TASKS, "--candidates", empty)
    assert result.returncode == 2 and f"{empty}: no candidates" in result.stderr


def test_listing_a_suite_in_text_and_json():
    text = run("tasks", EXAMPLE_TASKS)
    assert text.returncode == 0
    listed = json.loads(run("tasks", EXAMPLE_TASKS, "--json").stdout)
    assert len(listed["tasks"]) >= 16
    assert all(t["level"] in (1, 2) for t in listed["tasks"])
    assert f"{len(listed['tasks'])} tasks, 0 problems" in text.stdout


def test_listing_a_jsonl_suite_reports_bad_lines_and_exits_1():
    result = run("tasks", FIXTURES / "suites" / "mixed.jsonl")
    assert result.returncode == 1
    assert result.stdout.count("FAIL") == 5


def test_checking_the_broken_fixtures_reports_each_in_one_line_and_checks_the_rest():
    result = run("tasks", FIXTURES / "broken_tasks", "--check", "--timeout", "4")
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    fails = {line.split()[1]: line for line in lines if line.startswith("FAIL")}
    oks = [line.split()[1] for line in lines if line.startswith("  ok")]
    assert set(fails) == {
        "syntax_error",
        "missing_get_inputs",
        "raises_in_forward",
        "non_tensor_output",
        "hangs",
        "exits_process",
    }
    assert oks == ["ok_square", "ok_two_outputs"]
    assert "broken_tasks/hangs.py: timed out" in fails["hangs"]
    assert lines[-1].startswith("8 tasks: 2 ok, 6 failed")


def test_check_json_is_one_document_with_a_summary():
    result = run("tasks", FIXTURES / "broken_tasks" / "ok_two_outputs.py", "--check", "--json")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["summary"] == {**doc["summary"], "total": 1, "ok": 1, "failed": 0}
    (task,) = doc["tasks"]
    assert task["outputs"] == [{"shape": [2, 3], "dtype": "float32"}] * 2


def test_the_task_linter_names_each_degenerate_task_and_passes_an_honest_one():
    result = run("tasks", FIXTURES / "degenerate_tasks", "--check", "--json")
    assert result.returncode == 0, result.stderr
    warnings = {t["id"]: t["warnings"] for t in json.loads(result.stdout)["tasks"]}
    assert any("is constant" in w for w in warnings["zero_output"])
    assert any("equals input 0" in w for w in warnings["identity_output"])
    assert [w.split(":")[0] for w in warnings["ill_conditioned"]] == ["ill-conditioned"]
    flagged = {t["id"] for t in json.loads(result.stdout)["tasks"] if t["ill_conditioned"]}
    assert flagged == {"ill_conditioned"}
    honest = json.loads(run("tasks", EXAMPLE_TASKS / "level2", "--check", "--json").stdout)
    assert all(t["warnings"] == [] for t in honest["tasks"]), honest["tasks"]


def test_a_runner_that_cannot_start_is_an_environment_error():
    result = run("tasks", EXAMPLE_TASKS, "--check", "--python", "/no/such/python")
    assert result.returncode == 3
    assert "TRITIUM_PYTHON" in result.stderr


@pytest.mark.slow
def test_every_example_task_checks():
    result = run("tasks", EXAMPLE_TASKS, "--check", "--json")
    doc = json.loads(result.stdout)
    assert result.returncode == 0, [t["error"] for t in doc["tasks"] if not t["ok"]]
    assert doc["summary"]["failed"] == 0 and doc["summary"]["total"] >= 16


def test_parse_reports_ok_or_file_line_col(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n    pass\n")
    good = EXAMPLE_TASKS / "level1" / "01_relu.py"
    result = run("parse", good, bad)
    assert result.returncode == 1
    assert f"{good}: ok" in result.stdout
    assert f"{bad}:1:" in result.stdout
    doc = json.loads(run("parse", bad, "--json").stdout)
    assert doc["failed"] == 1 and doc["files"][0]["line"] == 1


def test_verify_files_and_a_jsonl_of_responses(tmp_path):
    solution = (EXAMPLE_TASKS.parent / "solutions" / "level1" / "01_relu.py").read_text()
    cheat = FIXTURES / "verify" / "cheats" / "delegate_01_torch_matmul.py"
    result = run("verify", EXAMPLE_TASKS.parent / "solutions" / "level1" / "01_relu.py", cheat)
    assert result.returncode == 1
    assert "valid    " in result.stdout and "invalid_functionality" in result.stdout
    lines = [
        json.dumps({"task_id": "a", "response": f"<think>plan</think>\n```python\n{solution}```"}),
        json.dumps({"task_id": "b", "code": cheat.read_text()}),
        "{not json",
        json.dumps({"task_id": "d", "code": solution, "response": solution}),  # the server's rule: exactly one
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    doc = json.loads(run("verify", "--responses", batch, "--json").stdout)
    statuses = [v["status"] for v in doc["verdicts"]]
    assert statuses == ["valid", "invalid_functionality", "error", "error"]
    assert 'exactly one of "code" or "response"' in doc["verdicts"][3]["error"]
    assert doc["total"] == 4 and doc["valid"] == 1
    with pytest.raises(ValueError, match='exactly one of "code" or "response"'):
        tritium.verify(solution, response=solution)
