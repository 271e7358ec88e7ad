"""gate_replay.py: a scale run's reservations replayed under another room or order (no GPU)."""

import heapq
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python" / "benchmarks"))
import gate_replay  # noqa: E402 - the benchmark's own tool


def _items(t0: float = 1e6) -> list[dict]:
    """One task: its reference 10 GiB for 1 s, its timing 10 GiB for 1 s, two jobs 30 GiB for 2 s
    each (the stamps are ms since the epoch, as the engine writes them)."""
    shared = {
        "reference.engine_admitted_at": t0,
        "reference.engine_released_at": t0 + 1000,
        "reference.mem.reserved_mib": 10 * 1024,
        "reference_timing.engine_admitted_at": t0 + 1000,
        "reference_timing.engine_released_at": t0 + 2000,
        "reference_timing.mem.reserved_mib": 10 * 1024,
    }
    job = {"mem.job_reserved_mib": 30 * 1024, "engine.admitted_at": t0 + 5000, "engine.released_at": t0 + 7000}
    return [{"task": "t", "phases_ms": {**shared, **job}} for _ in range(2)]


def test_holds_keep_their_sizes_and_durations_and_each_reference_and_timing_is_once():
    refs, timings, jobs = gate_replay.holds_of(_items())
    assert refs == {"t": gate_replay.Hold(10.0, 1.0)} and timings == {"t": gate_replay.Hold(10.0, 1.0)}
    assert jobs == [("t", gate_replay.Hold(30.0, 2.0))] * 2


def test_with_room_for_all_the_timing_and_both_jobs_run_together_after_the_reference():
    assert gate_replay.replay(_items(), room=70.0) == 3.0  # the reference 0-1, the rest 1-3


def test_with_less_room_the_second_job_waits_for_room_first_come_first_served():
    # 65 GiB: the reference 0-1; its timing (in line first) and the first job, 40 GiB, 1-2 and 1-3;
    # the second job fits once the timing leaves (60 GiB) and runs 2-4.
    assert gate_replay.replay(_items(), room=65.0) == 4.0
    # 50 GiB: it fits only once the first job leaves, and runs 3-5.
    assert gate_replay.replay(_items(), room=50.0) == 5.0


def test_timings_first_lets_a_timing_in_ahead_of_a_job_that_came_before_it():
    """A 40-GiB job holds 50 GiB of room for 2 s; a 30-GiB job, then a 10-GiB timing, come in line."""
    admitted = {}
    for order in ("fcfs", "timings-first"):
        gate = gate_replay.Replay({}, {}, room=50.0, order=order)
        gate.hold("job", gate_replay.Hold(40.0, 2.0), lambda: None)
        gate.hold("job", gate_replay.Hold(30.0, 1.0), lambda: None)
        gate.hold("timing", gate_replay.Hold(10.0, 1.0), lambda g=gate, o=order: admitted.setdefault(o, g.now - 1.0))
        while gate.events:
            gate.now, _, fn = heapq.heappop(gate.events)
            fn()
    assert admitted == {"fcfs": 2.0, "timings-first": 0.0}


def test_a_request_larger_than_the_room_is_admitted_alone():
    assert gate_replay.replay(_items(), room=20.0) == 1.0 + 1.0 + 2.0 + 2.0  # one after another
