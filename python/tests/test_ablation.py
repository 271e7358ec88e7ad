"""`python -m tritium.train.ablation`: RL once per reward scheme from one SFT checkpoint, on the CPU
with the tiny model, then one report that sets SFT and the schemes side by side."""

import json
import shutil
import subprocess
import sys

from test_cli import run
from test_train_cli import MINI

from tritium.train.ablation import arm_config, change_line


def test_each_scheme_gets_its_own_rl_from_the_same_sft_and_one_report(tmp_path):
    out = tmp_path / "run"
    config = tmp_path / "mini.toml"
    config.write_text(MINI.format(out=out).replace('stages = ["data", "sft", "rl", "eval"]', 'stages = ["data"]'))
    ablate = [sys.executable, "-m", "tritium.train.ablation", "--config", str(config)]
    # Before SFT there is nothing to start RL from: refused before any work.
    early = subprocess.run(ablate, capture_output=True, text=True, timeout=120)
    assert early.returncode == 2 and "no SFT checkpoint" in early.stderr
    assert run("train", "--config", str(config), timeout=900).returncode == 0  # the data stage
    config.write_text(
        MINI.format(out=out)
        .replace('stages = ["data", "sft", "rl", "eval"]', 'stages = ["sft"]')
        .replace("[eval]\n", "[eval]\ngreedy = true\n")
    )
    r = run("train", "--config", str(config), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not (out / "eval").exists()  # SFT's eval is made with the arms'

    r = subprocess.run([*ablate, "--rewards", "hrd,blended"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    for scheme in ("hrd", "blended"):
        arm = out / "ablation" / scheme
        assert (arm / "sft").is_symlink() and (arm / "rl" / "checkpoint-1").is_dir()
        history = json.loads((arm / "rl" / "rl_history.json").read_text())
        assert len(history["steps"] if isinstance(history, dict) else history) == 1
        assert len((arm / "eval" / "rl" / "verdicts.jsonl").read_text().splitlines()) == 2
    report = json.loads((out / "ablation" / "report" / "report.json").read_text())
    assert [r["name"] for r in report["runs"]] == ["sft", "hrd", "blended"]
    pairs = {(c["run"], c["against"]) for c in report["changes"]}
    assert pairs == {("hrd", "sft"), ("blended", "hrd")}
    assert "ablation: hrd against sft, pass@1 on 2 tasks: " in r.stdout
    assert len((out / "eval" / "sft" / "verdicts.jsonl").read_text().splitlines()) == 2
    assert r.stdout.count("ablation: eval of ") == 3  # SFT's, then each arm's, in one engine
    greedy = json.loads((out / "ablation" / "report-greedy" / "report.json").read_text())  # [eval] greedy
    assert [r["name"] for r in greedy["runs"]] == ["sft", "hrd", "blended"]
    assert "ablation: greedy: hrd against sft, pass@1 on 2 tasks: " in r.stdout
    # The run's own directories are untouched: no RL there.
    assert not (out / "rl").exists()

    bad = subprocess.run([*ablate, "--rewards", "hrd,nonsense"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nonsense" in bad.stderr

    # One arm over two invocations (a GPU call holds its RL or its eval): RL alone starts the arm
    # over, so an earlier run's later checkpoint is not taken for this run's last; then its eval.
    arm = out / "ablation" / "blended"
    stale = arm / "rl" / "checkpoint-9"
    stale.mkdir()
    (stale / "config.json").write_text("{}")
    split = [*ablate, "--rewards", "blended", "--steps", "1"]
    r = subprocess.run([*split, "--stages", "rl"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not stale.exists() and (arm / "rl" / "checkpoint-1").is_dir()
    assert not (arm / "eval" / "rl").exists() and "the report waits for the eval of blended" in r.stdout
    r = subprocess.run([*split, "--stages", "eval"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len((arm / "eval" / "rl" / "verdicts.jsonl").read_text().splitlines()) == 2
    assert "ablation: blended against sft, pass@1 on 2 tasks: " in r.stdout
    # An eval with no RL to evaluate is refused before any work.
    shutil.rmtree(out / "ablation" / "hrd" / "rl")
    r = subprocess.run([*ablate, "--stages", "eval"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "the hrd arm has no RL checkpoint" in r.stderr


def test_an_arm_keeps_the_configs_reward_settings_and_sets_only_the_scheme():
    config = {"out": "runs/x", "stages": ["data", "sft", "rl", "eval"], "rl": {"reward": '{"alpha": 0.2}'}}
    arm = arm_config(config, "runs/x/ablation/blended", "blended")
    assert arm["stages"] == ["rl", "eval"] and arm["out"] == "runs/x/ablation/blended"
    assert json.loads(arm["rl"]["reward"]) == {"alpha": 0.2, "scheme": "blended"}
    assert config["rl"]["reward"] == '{"alpha": 0.2}'  # the run's config is not changed
    split = arm_config(config, "runs/x/ablation/hrd", "hrd", ["eval"], steps=5)
    assert split["stages"] == ["eval"] and split["rl"]["steps"] == 5


def test_a_change_line_says_whether_the_change_is_beyond_its_interval():
    entry = {
        "run": "hrd",
        "against": "sft",
        "change": {
            "metric": "pass@1",
            "tasks": 80,
            "before": 0.4,
            "after": 0.5,
            "delta": 0.1,
            "interval": [0.02, 0.18],
            "beyond": True,
        },
    }
    assert change_line(entry) == (
        "hrd against sft, pass@1 on 80 tasks: 40.0% -> 50.0% (+10.0 pts; 95% interval [+2.0, +18.0] pts, beyond it)"
    )
