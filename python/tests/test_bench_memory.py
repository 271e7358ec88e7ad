"""engine_bench.memory_use: what the scale benchmark reports of each verdict's device memory, the
engine's reservations against its processes' measured peaks (docs/engine.md, "Measured peaks")."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python" / "benchmarks"))
import engine_bench  # noqa: E402 - the benchmark's own reporting


def test_reservations_and_peaks_come_out_in_gib_per_verdict():
    phases = {
        "mem.job_reserved_mib": 34304.0,
        "mem.checked_mib": 24576.0,
        "mem.timed_mib": 30924.8,
        "compare.mem.peak_mib": 19968.0,
        "reference.mem.reserved_mib": 50176.0,
        "reference.mem.peak_mib": 47616.0,
        "reference_timing.mem.peak_mib": 18534.4,
        "trial.call": 1200.0,  # a time, not memory: left out
    }
    (row,) = engine_bench.memory_use([{"candidate_id": "solutions/01_relu.py", "phases_ms": phases}])
    assert row == {
        "id": "solutions/01_relu.py",
        "mem.job_reserved": 33.5,
        "mem.checked": 24.0,
        "mem.timed": 30.2,
        "compare.mem.peak": 19.5,
        "reference.mem.reserved": 49.0,
        "reference.mem.peak": 46.5,
        "reference_timing.mem.peak": 18.1,
    }


def test_verdicts_without_a_job_are_left_out():
    verdicts = [
        {"candidate_id": "static", "phases_ms": None},  # judged before any job ran
        {"candidate_id": "cpu", "phases_ms": {"trial.call": 5.0}},
    ]
    assert engine_bench.memory_use(verdicts) == []
