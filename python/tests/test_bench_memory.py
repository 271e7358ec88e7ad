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


def test_memory_time_counts_each_reservation_once_and_how_full_the_gate_was():
    """Two jobs of one task (its reference and timing copied into both verdicts), laid out in time
    from the engine's stamps (ms since the epoch): a 10-GiB reference for 2 s, then a 20-GiB timing
    for 1 s beside a 30-GiB job for 2 s, then another 30-GiB job for 1 s, in a 50-GiB gate."""
    t0 = 1_000_000.0
    shared = {
        "reference.engine_admitted_at": t0,
        "reference.engine_released_at": t0 + 2000,
        "reference.mem.reserved_mib": 10 * 1024,
        "reference_timing.engine_admitted_at": t0 + 2000,
        "reference_timing.engine_released_at": t0 + 3000,
        "reference_timing.mem.reserved_mib": 20 * 1024,
        "reference_timing.compile": 600.0,
        "reference_timing.exclusive": 400.0,
    }
    job = {"mem.job_reserved_mib": 30 * 1024, "compile": 500.0, "checked": 1000.0}
    verdicts = [
        {"phases_ms": {**shared, **job, "engine.admitted_at": t0 + 2000, "engine.released_at": t0 + 4000}},
        {"phases_ms": {**shared, **job, "engine.admitted_at": t0 + 4000, "engine.released_at": t0 + 5000}},
        {"phases_ms": None},  # judged before any job ran
    ]
    m = engine_bench.memory_time(verdicts, t0, budget_gib=50.0)
    assert m["gib_s"] == {"references": 20, "timings": 20, "jobs": 90}
    assert m["total_gib_s"] == 130 and m["packed_s"] == 2.6
    # Another task's reference admitted at the same moment, 1 GiB for 1 s: counted too.
    other = {"reference.engine_admitted_at": t0, "reference.engine_released_at": t0 + 1000}
    verdicts.append({"phases_ms": {**other, "reference.mem.reserved_mib": 1024}})
    assert engine_bench.memory_time(verdicts, t0, budget_gib=50.0)["gib_s"]["references"] == 21
    assert m["held_s"] == 5.0 and m["peak_reserved_gib"] == 50.0
    assert m["over_80pct_s"] == 1.0  # 50 GiB of 50 from 2 to 3 s; 30 of 50 after
    assert m["job_phases_gib_s"]["compile"] == 30 and m["job_phases_gib_s"]["checked"] == 60
    assert m["timing_phases_gib_s"] == {"compile": 12, "lock_wait": 0, "exclusive": 8}
