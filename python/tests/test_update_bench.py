"""update_bench on the CPU with the tiny model: each setting in its own process, the same loss
whatever the rollouts a pass, and the peaks and ratios printed."""

import json
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "update_bench.py"


def test_settings_run_apart_and_give_the_same_loss_with_their_passes_and_peaks(tmp_path):
    out = tmp_path / "update.json"
    args = ["--model", "tiny", "--device", "cpu", "--prompt", "6", "--lengths", "24,5,9,5"]
    done = subprocess.run(
        [sys.executable, str(BENCH), *args, "--micro", "0,1,3", "--repeats", "1", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.read_text())
    assert [(r["micro"], r["passes"]) for r in results] == [(0, 1), (1, 4), (3, 2)]
    assert all(r["loss"] == pytest.approx(results[0]["loss"], rel=1e-5, abs=1e-7) for r in results)
    assert all(r["peak_rss_gb"] > 0 and r["update_s"] > 0 and r["behaviour_s"] > 0 for r in results)
    lines = done.stdout.splitlines()
    assert "4 rollouts of 24,5,9,5 tokens after 6 prompt tokens" in lines[0]
    assert lines[2].startswith("update_micro_batch 1 (4 passes)") and "peak_rss_gb" in lines[2] and "x)" in lines[2]


def test_a_failing_setting_stops_the_run_with_its_error():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--model", "no/such/model", "--device", "cpu", "--micro", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "update_micro_batch 0 failed" in done.stderr
