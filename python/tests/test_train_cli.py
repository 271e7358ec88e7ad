"""`tritium train --config`: every stage of a small config on the CPU, from synthesis to the report."""

import json

import pytest
from test_cli import run

from tritium.train.evaluate import stage_change

MINI = """
out = "{out}"
seed = 1
stages = ["data", "sft", "rl", "eval"]
[data]
count = 10
difficulty = "1"
ops = "unary,binary,scalar"
heldout = 2
device = "cpu"
[sft]
steps = 8
batch_size = 2
lr = 3e-3
max_len = 1536
log_every = 4
[rl]
steps = 1
prompts_per_step = 1
group_size = 2
max_new_tokens = 16
engine_device = "cpu"
engine_timeout_s = 300
[eval]
samples = 1
max_new_tokens = 32
engine_device = "cpu"
engine_timeout_s = 300
engine_jobs = 2
"""


def test_every_stage_runs_and_the_report_compares_the_models(tmp_path):
    config = tmp_path / "mini.toml"
    config.write_text(MINI.format(out=tmp_path / "run"))
    r = run("train", "--config", str(config), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "run"
    assert len((out / "heldout.jsonl").read_text().splitlines()) == 2
    assert (out / "sft.jsonl").read_text().strip()  # verified traces from the synthesized solutions
    assert (out / "sft" / "checkpoint-8").is_dir() and (out / "rl" / "checkpoint-1").is_dir()
    for name in ("sft", "rl"):
        verdicts = [json.loads(line) for line in (out / "eval" / name / "verdicts.jsonl").read_text().splitlines()]
        assert len(verdicts) == 2 and all(v["status"] for v in verdicts)
        assert all(v["level"] == 1 for v in verdicts)  # the tasks' difficulty: the report's levels
    report = json.loads((out / "report" / "report.json").read_text())
    assert [run["name"] for run in report["runs"]] == ["sft/verdicts", "rl/verdicts"]
    assert set(report["runs"][0]["metrics"]["overall"]["pass"]) == {"pass@1"}  # one sample: no pass@5
    line = stage_change(out / "eval" / "sft" / "verdicts.jsonl", out / "eval" / "rl" / "verdicts.jsonl")
    assert line.startswith("rl against sft on 2 held-out tasks: correct samples ") and " of 2; " in line

    # Eval alone (a run stopped after RL): the latest model, RL's, beside SFT's eval in the report.
    (out / "eval" / "rl" / "verdicts.jsonl").unlink()
    (out / "report" / "report.json").unlink()
    alone = MINI.format(out=out).replace('stages = ["data", "sft", "rl", "eval"]', 'stages = ["eval"]')
    config.write_text(alone.replace("[eval]\n", '[eval]\ndtype = "bfloat16"\ngreedy = true\n'))
    r = run("train", "--config", str(config), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "eval: sampling from the model's parameters in bfloat16" in r.stdout
    assert "eval: 2 of 2 prompts x 1 + greedy in " in r.stdout and "eval: judging 4 samples on " in r.stdout
    greedy = [json.loads(line) for line in (out / "eval" / "rl" / "greedy" / "verdicts.jsonl").read_text().splitlines()]
    assert len(greedy) == 2 and all(v["candidate_id"].endswith("#0-greedy") for v in greedy)
    assert "eval: greedy: {" in r.stdout and "'pass@1': " in r.stdout.split("eval: greedy: ")[1]  # its own metrics
    assert "eval: rl (" in r.stdout and len((out / "eval" / "rl" / "verdicts.jsonl").read_text().splitlines()) == 2
    assert "eval: judging 4 samples on " in r.stdout  # progress
    assert "eval: judged 4 of 4 in " in r.stdout
    report = json.loads((out / "report" / "report.json").read_text())
    assert [run["name"] for run in report["runs"]] == ["sft/verdicts", "rl/verdicts"]

    # The same eval again (as after a run cut while judging): the saved answers are judged, not sampled anew.
    answers = (out / "eval" / "rl" / "answers.jsonl").read_text()
    (out / "eval" / "rl" / "verdicts.jsonl").unlink()
    r = run("train", "--config", str(config), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "eval: 4 answers of " in r.stdout and "sampled earlier with these settings" in r.stdout
    assert "sampling from the model's parameters" not in r.stdout and "prompts x 1 + greedy" not in r.stdout
    assert (out / "eval" / "rl" / "answers.jsonl").read_text() == answers
    assert len((out / "eval" / "rl" / "verdicts.jsonl").read_text().splitlines()) == 2

    # A run whose SFT call made no eval: RL's eval takes SFT's checkpoint with it, and the report has both.
    for name in ("sft", "rl"):
        (out / "eval" / name / "verdicts.jsonl").unlink()
    r = run("train", "--config", str(config), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"eval: sft ({out / 'sft' / 'checkpoint-8'})" in r.stdout and "eval: rl (" in r.stdout
    assert r.stdout.index("eval: sft (") < r.stdout.index("eval: rl (")
    for name in ("sft", "rl"):
        assert len((out / "eval" / name / "verdicts.jsonl").read_text().splitlines()) == 2
    report = json.loads((out / "report" / "report.json").read_text())
    assert [run["name"] for run in report["runs"]] == ["sft/verdicts", "rl/verdicts"]

    # SFT from a model directory (this run's SFT model) with `base = true`: the model before SFT is
    # evaluated too, and the report sets base and SFT side by side.
    again = tmp_path / "again"
    again.mkdir()
    for name in ("heldout.jsonl", "train_tasks.jsonl", "sft.jsonl"):
        (again / name).write_text((out / name).read_text())
    config.write_text(
        MINI.format(out=again)
        .replace('stages = ["data", "sft", "rl", "eval"]', 'stages = ["sft", "eval"]')
        .replace("steps = 8\n", f'steps = 1\nmodel = "{out / "sft" / "checkpoint-8"}"\n')
        .replace("[eval]\n", "[eval]\nbase = true\n")
    )
    # With --json: the logs on stderr, one document of what the run made on stdout.
    r = run("train", "--config", str(config), "--json", timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "eval: base (" in r.stderr
    summary = json.loads(r.stdout)
    assert summary["stages"] == ["sft", "eval"] and summary["out"] == str(again)
    assert summary["checkpoints"] == {"sft": str(again / "sft" / "checkpoint-1")}
    assert set(summary["eval"]) == {"base", "sft"} and summary["eval"]["sft"]["tasks"] == 2
    assert summary["report"] == str(again / "report")
    report = json.loads((again / "report" / "report.json").read_text())
    assert [run["name"] for run in report["runs"]] == ["base/verdicts", "sft/verdicts"]


def test_a_bad_config_is_a_usage_error(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('stages = ["sft", "dance"]\n')
    r = run("train", "--config", str(config))
    assert r.returncode == 2 and "dance" in r.stderr


def test_typos_wrong_types_and_broken_toml_are_refused_before_any_work(tmp_path):
    """Each names the file, the table and the key, and nothing is made (no run directory)."""
    out = tmp_path / "run"
    cases = {
        "typo.toml": ("[sft]\nstpes = 3\n", "[sft] stpes key: unknown; did you mean steps?"),
        "table.toml": ("[stf]\nsteps = 3\n", "[stf] table: unknown; did you mean [sft]?"),
        "type.toml": ('[rl]\ngroup_size = "4"\n', "[rl] group_size: expected int, got '4'"),
        "broken.toml": ("[sft\nsteps = 3\n", "not valid TOML"),
    }
    for name, (body, message) in cases.items():
        config = tmp_path / name
        config.write_text(f'out = "{out}"\n' + body)
        r = run("train", "--config", str(config))
        assert r.returncode == 2, (name, r.stderr)
        assert f"{config}: " in r.stderr and message in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr and not out.exists()


def test_stage_change_counts_the_tasks_that_gained_lost_or_kept_correct_samples(tmp_path):
    def verdicts(name, statuses):
        path = tmp_path / f"{name}.jsonl"
        lines = [json.dumps({"task_id": t, "status": s}) for t, ss in statuses.items() for s in ss]
        path.write_text("\n".join(lines) + "\n")
        return path

    ok, bad = "correct", "incorrect"
    before = verdicts("sft", {"a": [ok, bad], "b": [ok, ok], "c": [bad, bad], "d": [ok, bad], "gone": [ok]})
    after = verdicts("rl", {"a": [ok, ok], "b": [ok, bad], "c": [bad, bad], "d": [bad, ok], "new": [ok]})
    assert stage_change(before, after) == (
        "rl against sft on 4 held-out tasks: correct samples 4 -> 4 of 8; tasks that gained correct samples 1, "
        "lost some 1, kept their count 2; correct only part of the time under sft: 2"
    )


def test_rl_size_gpu_gives_rl_the_training_graphs_at_gpu_size_and_a_bad_size_stops_before_any_work(tmp_path):
    import pytest

    from tritium.train.__main__ import data_stage, rl_tasks

    data = {"count": 12, "difficulty": "1-2", "ops": "unary,reduction", "heldout": 2, "device": "cpu"}
    with pytest.raises(ValueError, match="rl_size must be one of cpu, mid, gpu"):
        data_stage({**data, "rl_size": "huge"}, tmp_path, seed=3)
    with pytest.raises(ValueError, match="heldout = 12: it must be at least 0 and leave some of the 12 tasks"):
        data_stage({**data, "heldout": 12}, tmp_path, seed=3)
    assert not (tmp_path / "tasks.jsonl").exists()
    assert rl_tasks(tmp_path) == tmp_path / "train_tasks.jsonl"

    data_stage({**data, "rl_size": "gpu"}, tmp_path, seed=3)
    assert rl_tasks(tmp_path) == tmp_path / "rl_tasks.jsonl"
    gpu = [json.loads(line) for line in (tmp_path / "rl_tasks.jsonl").read_text().splitlines()]
    cpu = {t["id"]: t for t in map(json.loads, (tmp_path / "train_tasks.jsonl").read_text().splitlines())}
    assert 1 <= len(gpu) <= len(cpu) == 10  # a graph whose shapes cannot reach the profile's band has no twin
    for task in gpu:  # SFT's own graphs (the model saw their solutions), at GPU size
        origin = cpu[task["meta"]["twin_of"]]
        assert task["meta"]["ops"] == origin["meta"]["ops"] and task["meta"]["size"] == "gpu"
        assert task["meta"]["bytes"] > origin["meta"]["bytes"] and task["id"] == origin["id"] + "_gpu"
    # Held out: the last graphs that have a twin, as their twins (the eval times at RL's size too);
    # new graphs to the model, and the tasks passed over on the way train.
    held_out = [json.loads(line) for line in (tmp_path / "heldout.jsonl").read_text().splitlines()]
    assert len(held_out) == 2 and all(t["meta"]["size"] == "gpu" and t["id"].endswith("_gpu") for t in held_out)
    assert not {t["meta"]["twin_of"] for t in held_out} & (set(cpu) | {t["meta"]["twin_of"] for t in gpu})
    with pytest.raises(ValueError, match="heldout = 11, but only .* tasks have a twin at RL's size"):
        data_stage({**data, "rl_size": "gpu", "heldout": 11}, tmp_path / "few", seed=3)

    data_stage(data, tmp_path, seed=3)  # the default again: an earlier run's GPU-size tasks are not RL's
    assert rl_tasks(tmp_path) == tmp_path / "train_tasks.jsonl" and not (tmp_path / "rl_tasks.jsonl").exists()


def test_saved_answers_serve_only_the_settings_and_model_files_they_were_sampled_with(tmp_path):
    from tritium.train import evaluate

    model = tmp_path / "model"
    model.mkdir()
    (model / "weights").write_bytes(b"1234")
    settings = {"model": str(model), "model_files": evaluate.model_files(str(model)), "samples": 4, "greedy": True}
    answers = [{"id": "t#0", "task_id": "t", "group": "t", "sample": 0, "response": "r"}]
    where = tmp_path / "eval"
    where.mkdir()
    assert evaluate._saved_answers(where, settings) is None  # nothing saved yet
    evaluate._save_answers(where, settings, answers)
    assert evaluate._saved_answers(where, settings) == answers
    assert evaluate._saved_answers(where, {**settings, "samples": 8}) is None
    (model / "weights").write_bytes(b"12345")  # SFT run again into the same checkpoint directory
    assert evaluate._saved_answers(where, {**settings, "model_files": evaluate.model_files(str(model))}) is None
    (where / "answers.jsonl").write_text('{"id": "t#0", "tru')  # cut mid-write by hand: unreadable
    assert evaluate._saved_answers(where, settings) is None
    assert not list(where.glob("*.partial"))


def test_models_evaluated_together_keep_the_verdicts_of_those_before_one_that_fails(tmp_path):
    from conftest import EXAMPLE_TASKS

    from tritium.train import models
    from tritium.train.evaluate import evaluate_models
    from tritium.train.rl import save_checkpoint

    source = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    tiny = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2}
    model, tokenizer = models.load("tiny", corpus=[source], tiny={**tiny, "intermediate_size": 64})
    save_checkpoint(model, tokenizer, tmp_path / "good")
    tasks = tmp_path / "heldout.jsonl"
    tasks.write_text(json.dumps({"id": "level1/01_relu", "source": source}) + "\n")
    runs = [(str(tmp_path / "good"), str(tmp_path / "a")), (str(tmp_path / "missing"), str(tmp_path / "b"))]
    settings = dict(samples=2, max_new_tokens=8, engine_device="cpu", engine_jobs=1, device="cpu", log=lambda _: None)
    with pytest.raises(Exception, match="missing"):
        evaluate_models(runs, str(tasks), **settings)
    # The first model's answers were judged while the second was loading, and kept.
    assert len((tmp_path / "a" / "verdicts.jsonl").read_text().splitlines()) == 2
    assert not (tmp_path / "b" / "verdicts.jsonl").exists()


def test_a_gpu_timing_engine_judges_each_model_before_the_next_samples_unless_the_sampler_yields(tmp_path, monkeypatch):
    from conftest import EXAMPLE_TASKS

    from tritium import api
    from tritium.train import evaluate, models
    from tritium.train.rl import save_checkpoint

    # A CPU engine never times, so its judging may go on beside the next model's sampling ...
    cpu = api.Engine(device="cpu", jobs=1, timing=True)
    assert evaluate.judges_beside_sampling(cpu.info(), "continuous")
    # ... one that times on a GPU may not beside a sampler that keeps the GPU between its steps, as
    # continuous batching does; the static batches let the timers in at each step.
    gpu = {**cpu.info(), "device": "cuda", "timing": True}
    assert not evaluate.judges_beside_sampling(gpu, "continuous")
    assert evaluate.judges_beside_sampling(gpu, "compiled") and evaluate.judges_beside_sampling(gpu, "auto")

    source = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    tiny = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2}
    model, tokenizer = models.load("tiny", corpus=[source], tiny={**tiny, "intermediate_size": 64})
    for name in ("one", "two"):
        save_checkpoint(model, tokenizer, tmp_path / name)
    tasks = tmp_path / "heldout.jsonl"
    tasks.write_text(json.dumps({"id": "level1/01_relu", "source": source}) + "\n")
    judged_before_sampling = []
    sample = evaluate._sample

    def recording_sample(model_dir, *args):
        judged_before_sampling.append((tmp_path / "a" / "verdicts.jsonl").exists())
        return sample(model_dir, *args)

    monkeypatch.setattr(evaluate, "_sample", recording_sample)
    monkeypatch.setattr(evaluate, "judges_beside_sampling", lambda info, generator: False)  # as continuous's
    runs = [(str(tmp_path / "one"), str(tmp_path / "a")), (str(tmp_path / "two"), str(tmp_path / "b"))]
    settings = dict(samples=2, max_new_tokens=8, engine_device="cpu", engine_jobs=1, device="cpu", log=lambda _: None)
    evaluate.evaluate_models(runs, str(tasks), **settings)
    assert judged_before_sampling == [False, True]
    assert len((tmp_path / "b" / "verdicts.jsonl").read_text().splitlines()) == 2
