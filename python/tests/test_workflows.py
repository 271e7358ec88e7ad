"""Each workflow is one library call with two faces, the CLI and Python: the same options give the
same files and the same document from both (tritium.make_suite, sft_data, bench, distill, report)."""

import json

import pytest
from test_cli import run

import tritium

SYNTH = {"count": 3, "difficulty": "1", "ops": "unary,binary", "seed": 5, "with_solutions": True}
SYNTH_FLAGS = ["--count", 3, "--difficulty", "1", "--ops", "unary,binary", "--seed", 5, "--with-solutions"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The same suite written by both faces."""
    where = tmp_path_factory.mktemp("suite")
    cli, py = where / "cli.jsonl", where / "py.jsonl"
    r = run("synth", *SYNTH_FLAGS, "--out", cli)
    assert r.returncode == 0, r.stderr
    made = tritium.make_suite(out=py, **SYNTH)
    return cli, py, made


def test_a_suite_written_from_python_is_the_cli_s_byte_for_byte(suite):
    cli, py, made = suite
    assert cli.read_bytes() == py.read_bytes()
    assert made["ok"] and made["report"]["tasks"] == 3 and made["report"]["out"] == str(py)
    assert [t["id"] for t in made["tasks"]] == [t["id"] for t in tritium.load_suite(py)["tasks"]]


def test_a_validated_suite_reports_the_same_counts_from_both_faces(tmp_path):
    r = run("synth", *SYNTH_FLAGS, "--out", tmp_path / "cli.jsonl", "--validate", "--json")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    py = tritium.make_suite(out=tmp_path / "py.jsonl", validate=True, **SYNTH)["report"]
    for key in ("tasks", "validated", "failed", "ill_conditioned", "device"):
        assert cli[key] == py[key], key
    assert cli["solutions"]["correct"] == py["solutions"]["correct"] == py["solutions"]["count"]


def test_bad_workflow_options_are_refused_naming_the_option(tmp_path):
    with pytest.raises(ValueError, match='unknown option "cuont"'):
        tritium.make_suite(cuont=3)
    with pytest.raises(ValueError, match="difficulty '1-x'"):
        tritium.make_suite(difficulty="1-x")
    with pytest.raises(ValueError, match="trials 2 is too few"):
        tritium.sft_data(tmp_path / "t.jsonl", tmp_path / "o.jsonl", trials=2)
    with pytest.raises(ValueError, match='unknown option "frobnicate"'):
        tritium.Engine(frobnicate=1)
    with pytest.raises(ValueError, match='"samples" and "concurrency" must be at least 1'):
        tritium.bench(tmp_path / "t.jsonl", "emitter", tmp_path / "b", samples=0)


def test_sft_data_from_python_keeps_what_the_cli_keeps(suite, tmp_path):
    cli_tasks, py_tasks, _ = suite
    r = run("data", "sft", "--tasks", cli_tasks, "--out", tmp_path / "cli.jsonl", "--no-evaluate", "--json")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    py = tritium.sft_data(py_tasks, tmp_path / "py.jsonl", evaluate=False)
    assert {k: v for k, v in cli.items() if k != "out"} == {k: v for k, v in py.items() if k != "out"}
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "py.jsonl").read_bytes()


def test_bench_and_report_from_python_agree_with_the_cli(suite, tmp_path):
    cli_tasks, py_tasks, _ = suite
    flags = ["--samples", 2, "--device", "cpu", "--seed", 1, "--json"]
    r = run("bench", "--tasks", cli_tasks, "--model", "emitter", "--out", tmp_path / "cli", *flags)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    py = tritium.bench(py_tasks, "emitter", tmp_path / "py", samples=2, engine={"device": "cpu", "seed": 1})
    assert py["metrics"]["overall"]["stages"] == cli["metrics"]["overall"]["stages"]
    assert py["metrics"]["overall"]["pass"] == cli["metrics"]["overall"]["pass"]
    assert py["sampled_now"] == 3 and py["tasks_failed"] == 0
    # Run again: every task is done, so nothing is sampled and the report stays the same.
    again = tritium.bench(py_tasks, "emitter", tmp_path / "py", samples=2, engine={"device": "cpu", "seed": 1})
    assert again["sampled_now"] == 0 and again["metrics"] == py["metrics"]

    verdicts = [tmp_path / "cli" / "verdicts.jsonl", tmp_path / "py" / "verdicts.jsonl"]
    r = run("report", verdicts[0], "--compare", verdicts[1], "--out", tmp_path / "cli-report", "--json")
    assert r.returncode == 0, r.stderr
    document = tritium.report(verdicts, tmp_path / "py-report")
    assert document == json.loads(r.stdout)
    assert (tmp_path / "cli-report" / "report.md").read_text() == (tmp_path / "py-report" / "report.md").read_text()
    with pytest.raises(ValueError, match="no verdicts"):
        (tmp_path / "empty.jsonl").write_text("")
        tritium.report([tmp_path / "empty.jsonl"], tmp_path / "r")


def test_distill_from_python_keeps_one_trace_per_task(suite, tmp_path):
    _, py_tasks, _ = suite
    stats = tritium.distill(py_tasks, "emitter", tmp_path / "sft.jsonl", samples=2, engine={"device": "cpu"})
    assert stats["kept"] == 3 and stats["dropped"] == {"duplicate": 3} and stats["teacher"] == "emitter"
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 3
