"""`tritium report`: the three files from real verdict files, and the HTML in a real headless browser."""

import json
import shutil
import subprocess

import pytest
from conftest import ROOT
from test_cli import run

CPU_DEMO = ROOT / "examples" / "verdicts" / "cpu-demo.jsonl"
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")


@pytest.fixture
def two_runs(tmp_path):
    """The CPU demo's verdicts, and a copy in which every correct kernel was timed 2x faster."""
    timed = tmp_path / "timed.jsonl"
    lines = []
    for line in CPU_DEMO.read_text().splitlines():
        v = json.loads(line)
        if v["status"] == "correct":
            v.update(speedup_eager=2.0, speedup_compile=0.8, runtime_ms=1.0, device="cuda")
        lines.append(json.dumps(v))
    timed.write_text("\n".join(lines) + "\n{not json\n")
    return timed


def test_report_writes_markdown_json_and_html(tmp_path, two_runs):
    out = tmp_path / "report"
    r = run("report", str(CPU_DEMO), "--compare", str(two_runs), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "1 unreadable lines skipped" in r.stderr
    md = (out / "report.md").read_text()
    assert "| metric | cpu-demo | timed |" in md and "## Level 1" in md and "## Level 2" in md
    assert "| fast_1@1 (eager) | - | " in md  # the CPU run has no timing, the other has
    doc = json.loads((out / "report.json").read_text())
    cpu, timed = doc["runs"]
    assert cpu["metrics"]["overall"]["samples"] == 27 and cpu["metrics"]["overall"]["stages"]["correct"] == 20
    assert timed["problems"] == 1 and timed["metrics"]["overall"]["speedup"]["correct_eager"]["geomean"] == 2.0
    assert cpu["metrics"]["overall"]["fast_eager"]["fast_1@1"] is None
    # The same kernels judged the same: pass@1 did not move, and its paired interval says so.
    assert "## Change from the run before" in md and "| timed | cpu-demo | pass@1 |" in md
    (change,) = [c["change"] for c in doc["changes"] if c["change"]["metric"] == "pass@1"]
    assert change["tasks"] == cpu["metrics"]["overall"]["tasks"] and change["delta"] == 0
    assert change["interval"] == [0, 0] and change["beyond"] is False
    low, high = cpu["metrics"]["overall"]["intervals"]["pass"]["pass@1"]
    assert low < cpu["metrics"]["overall"]["pass"]["pass@1"] < high
    html = (out / "report.html").read_text()
    # Stages, fast_p, speedups vs eager and vs torch.compile; pass@k needs 2+ samples a task.
    assert html.count("<svg") == 4 and "<script" not in html
    assert "<h2>Per task</h2>" in html and "## Per task" in md


def test_bad_inputs_are_usage_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    r = run("report", str(empty), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "no verdicts" in r.stderr
    r = run("report", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    r = run("report", str(CPU_DEMO), "--out", str(tmp_path / "o"), "--k", "0")
    assert r.returncode == 2 and "at least 1" in r.stderr


@pytest.mark.skipif(BROWSER is None, reason="no headless chromium here (apt-get install chromium-headless-shell)")
def test_the_html_renders_in_headless_chromium(tmp_path, two_runs):
    out = tmp_path / "report"
    assert run("report", str(CPU_DEMO), "--compare", str(two_runs), "--out", str(out)).returncode == 0
    page = (out / "report.html").as_uri()
    flags = ["--no-sandbox", "--disable-gpu", "--headless"]
    dom = subprocess.run([BROWSER, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<svg") == 4 and dom.count("<rect") > 20 and "Level 2" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(
        [BROWSER, *flags, f"--screenshot={shot}", "--window-size=1100,1600", page], capture_output=True, timeout=120
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000  # a blank page compresses to a few KB
