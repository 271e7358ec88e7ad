"""`tritium synth` end to end: synthesized tasks load as a suite and every reference runs (the
runner executes each task's Model on its inputs), and the coverage statistics come out uniform."""

import json
import os
import shutil
import subprocess
import sys

import pytest

TRITIUM = shutil.which("tritium", path=os.path.dirname(sys.executable)) or shutil.which("tritium")
CPU_MAX_EST_MS = 20.0  # the cpu size profile's estimated-time ceiling (cpp/src/synth/sampler.cc)


def run(*args, check=True, timeout=900):
    out = subprocess.run(
        [TRITIUM, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TRITIUM_PYTHON": sys.executable},
    )
    if check:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def test_a_thousand_cpu_tasks_of_difficulty_1_to_8_all_run(tmp_path):
    suite = tmp_path / "synth.jsonl"
    out = run(
        "synth",
        "--count",
        "1000",
        "--difficulty",
        "1-8",
        "--seed",
        "11",
        "--size",
        "cpu",
        "--out",
        str(suite),
        "--validate",
        "--json",
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["validated"] == 1000 and report["failed"] == 0
    lines = [json.loads(line) for line in suite.read_text().splitlines()]
    # Ill-conditioned tasks (the task linter's warning) are dropped, not written.
    assert len(lines) == 1000 - report["ill_conditioned"] and report["ill_conditioned"] <= 20  # 2 of 300 here
    # The size profile's guarantee is on the cost model, which is deterministic; the measured
    # forward times (report["slowest_forward_ms"]) depend on the machine's load and belong in a
    # benchmark, not in a test.
    assert max(line["meta"]["est_ms"] for line in lines) <= CPU_MAX_EST_MS
    assert len({line["meta"]["hash"] for line in lines}) == len(lines)
    assert {line["meta"]["difficulty"] for line in lines} == set(range(1, 9))


def test_stats_report_uniform_coverage_of_a_category_selection(tmp_path):
    suite = tmp_path / "s.jsonl"
    run("synth", "--count", "3000", "--difficulty", "1-3", "--ops", "unary,reduction,softmax", "--out", str(suite))
    stats = json.loads(run("synth", "stats", str(suite), "--ops", "unary,reduction,softmax", "--json").stdout)
    assert stats["tasks"] == 3000 and stats["ops_missing"] == 0 and stats["ops_outside_selection"] == 0
    assert stats["chi_square"]["uniform_at_0.01"], stats["chi_square"]


def test_directory_output_and_bad_options(tmp_path):
    run("synth", "--count", "3", "--seed", "2", "--out", str(tmp_path / "dir"))
    assert len(list((tmp_path / "dir").glob("*.py"))) == 3
    assert len((tmp_path / "dir" / "meta.jsonl").read_text().splitlines()) == 3
    bad = run("synth", "--count", "3", "--ops", "nonsense", check=False)
    assert bad.returncode == 2 and "unknown operator category 'nonsense'" in bad.stderr
    bad = run("synth", "--count", "3", "--difficulty", "9-2", check=False)
    assert bad.returncode == 2 and "difficulty 9-2 is not a range" in bad.stderr


def test_the_binding_gives_what_the_cli_gives(tmp_path):
    import tritium

    suite = tmp_path / "s.jsonl"
    run("synth", "--count", "40", "--difficulty", "2-4", "--ops", "unary,reduction", "--seed", "3", "--out", str(suite))
    cli = [json.loads(line) for line in suite.read_text().splitlines()]
    ours = tritium.synthesize(count=40, difficulty=(2, 4), ops=["unary", "reduction"], seed=3, threads=2)
    assert [t["source"] for t in ours] == [t["source"] for t in cli]
    assert [t["meta"] for t in ours] == [t["meta"] for t in cli]
    assert tritium.synth_stats(ours, "unary,reduction")["tasks"] == 40
    try:
        tritium.synthesize(count=3, difficulty=(5, 2))
    except ValueError as exc:
        assert "--difficulty" in str(exc) or "range" in str(exc)
    else:
        raise AssertionError("a reversed difficulty range must raise")


def test_the_size_profiles_order_their_tasks_tensors(tmp_path):
    """mid sits between cpu and gpu: the CLI and the binding both take it, and its tasks' bytes lie
    between the two profiles' (each drawn from the same seed and options)."""
    import tritium

    run(
        "synth",
        "--count",
        "30",
        "--difficulty",
        "1-3",
        "--size",
        "mid",
        "--seed",
        "4",
        "--out",
        str(tmp_path / "m.jsonl"),
    )
    cli = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    medians = {}
    for size in ("cpu", "mid", "gpu"):
        tasks = tritium.synthesize(count=30, difficulty=(1, 3), seed=4, size=size)
        assert {t["meta"]["size"] for t in tasks} == {size}
        medians[size] = sorted(t["meta"]["bytes"] for t in tasks)[15]
        if size == "mid":
            assert [t["source"] for t in tasks] == [t["source"] for t in cli]
            assert max(t["meta"]["bytes"] for t in tasks) < 2**30
    assert medians["cpu"] < medians["mid"] < medians["gpu"], medians
    result = subprocess.run([TRITIUM, "synth", "--size", "huge"], capture_output=True, text=True)
    assert result.returncode != 0 and "mid" in result.stderr


def test_twins_are_the_same_graphs_at_another_size_and_change_nothing_else():
    """twin_size: each task's graph with its shapes solved again for another profile (RL's GPU-timed
    tasks on the graphs SFT trained on); the tasks themselves are those the seed gives without it."""
    from tritium import api

    drawn = {"count": 30, "seed": 0, "difficulty": "1-4", "ops": "unary,binary,scalar,reduction,softmax,norm"}
    plain = api.make_suite(**drawn)["tasks"]
    tasks = api.make_suite(**drawn, twin_size="mid")["tasks"]
    assert [t["source"] for t in tasks] == [t["source"] for t in plain]
    twins = [(t, t["meta"]["twin"]) for t in tasks if t["meta"]["twin"]]
    assert 5 <= len(twins) < len(tasks), len(twins)  # a graph whose ranks cannot reach the band has none
    for task, twin in twins:
        assert twin["id"] == task["id"] + "_mid" and twin["meta"]["twin_of"] == task["id"]
        assert twin["meta"]["ops"] == task["meta"]["ops"] and twin["meta"]["size"] == "mid"
        assert 0.03 <= twin["meta"]["est_ms"] <= 2.0 and twin["meta"]["bytes"] > task["meta"]["bytes"]
        assert twin["source"] != task["source"]
    with pytest.raises(ValueError, match="twin_size"):
        api.make_suite(**drawn, twin_size="huge")


def test_reference_solutions_are_correct_under_the_engine(tmp_path):
    suite = tmp_path / "sol.jsonl"
    out = run(
        "synth",
        "--count",
        "16",
        "--difficulty",
        "1-3",
        "--seed",
        "21",
        "--with-solutions",
        "--ops",
        "unary,binary,scalar,select,reduction,softmax,linalg,shape",
        "--out",
        str(suite),
        "--validate",
        "--json",
    )
    (report,) = [json.loads(line) for line in out.stdout.strip().splitlines()]  # one document
    assert report["validated"] == 16 and report["failed"] == 0
    assert report["solutions"] == {"count": 16, "correct": 16, "of_tasks": 16, "failures": [], "device": "cpu"}
    plans = [json.loads(line)["meta"]["plan"] for line in suite.read_text().splitlines()]
    assert all(plan.startswith("1. `_") and "kernel" in plan for plan in plans)


def test_solutions_with_fused_matmul_epilogues_are_correct_under_the_engine(tmp_path):
    suite = tmp_path / "mm.jsonl"
    out = run(
        "synth",
        "--count",
        "6",
        "--difficulty",
        "2-3",
        "--seed",
        "5",
        "--with-solutions",
        "--ops",
        "linalg,binary,scalar",
        "--out",
        str(suite),
        "--validate",
        "--json",
    )
    (report,) = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert report["solutions"] == {"count": 6, "correct": 6, "of_tasks": 6, "failures": [], "device": "cpu"}
    plans = [json.loads(line)["meta"]["plan"] for line in suite.read_text().splitlines()]
    fused = [plan for plan in plans if "fused into the epilogue" in plan]
    assert len(fused) >= 3 and any("broadcast strides), so" in plan for plan in fused), plans


def test_a_solution_that_fails_is_listed_with_its_reason(tmp_path):
    # Too short a limit for the interpreter: each solution times out, and the report says which.
    out = run(
        "synth",
        "--count",
        "2",
        "--difficulty",
        "1",
        "--seed",
        "21",
        "--with-solutions",
        "--ops",
        "unary",
        "--out",
        str(tmp_path / "s.jsonl"),
        "--validate",
        "--json",
        "--timeout",
        "0.05",
        check=False,
    )
    assert out.returncode == 1
    (report,) = [json.loads(line) for line in out.stdout.strip().splitlines()]
    solutions = report["solutions"]
    assert solutions["count"] == 2 and solutions["correct"] == 0
    assert [f["status"] for f in solutions["failures"]] == ["timeout", "timeout"]
    ids = {json.loads(line)["id"] for line in (tmp_path / "s.jsonl").read_text().splitlines()}
    assert {f["task_id"] for f in solutions["failures"]} == ids and all(f["message"] for f in solutions["failures"])


def test_without_out_stdout_holds_only_the_tasks_and_reports_go_to_stderr():
    out = run(
        "synth",
        "--count",
        "3",
        "--difficulty",
        "1",
        "--seed",
        "4",
        "--with-solutions",
        "--ops",
        "unary",
        "--validate",
        "--json",
    )
    lines = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert len(lines) == 3 and all("source" in line and "id" in line for line in lines)
    (report,) = [json.loads(line) for line in out.stderr.splitlines() if line.startswith("{")]
    assert report["validated"] == 3 and report["solutions"]["correct"] == 3
