"""engine_bench.lock_timeline: the GPU lock's rounds, drains and holds that the scale benchmark
reports, from the gpu.* moments verdicts carry (docs/engine.md, "The lock's timeline")."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python" / "benchmarks"))
import engine_bench  # noqa: E402 - the benchmark's own reporting


def _moments(prefix: str, ready: float, queued: float, held: float, released: float) -> dict:
    return {
        prefix + "ready_at": ready,
        prefix + "queued_at": queued,
        prefix + "held_at": held,
        prefix + "released_at": released,
    }


def _verdicts(origin: float) -> list[dict]:
    """Two rounds: a candidate and its task's reference timing (copied into both of the task's
    verdicts) after one drain; later, a second candidate alone."""
    reference = {**_moments("reference_timing.gpu.", 0.5, 1.0, 3.0, 4.0), "reference.gpu.hold_ms": 900.0}
    reference["reference.gpu.hold_max_ms"] = 700.0
    first = {**_moments("gpu.", 0.0, 1.0, 2.0, 3.0), **reference, "gpu.hold_ms": 50.0, "gpu.hold_max_ms": 20.0}
    second = {**_moments("gpu.", 9.0, 10.0, 10.5, 11.0), **reference, "gpu.hold_ms": 60.0, "gpu.hold_max_ms": 30.0}
    shifted = [{k: v + origin if k.endswith("_at") else v for k, v in p.items()} for p in (first, second)]
    return [{"candidate_id": "a", "phases_ms": shifted[0]}, {"candidate_id": "b", "phases_ms": shifted[1]}]


def test_rounds_drains_and_holds_count_a_tasks_reference_once():
    t = engine_bench.lock_timeline(_verdicts(0.0), 0.0)
    assert (t["timers"], t["rounds"]) == (3, 2)
    assert t["gather_s"] * 1000 == 1.0 + 0.5 + 1.0
    assert t["drains_s"] * 1000 == 1.0 + 0.5  # each round's first queueing to its first hold
    assert t["gate_closed_s"] * 1000 == 3.0 + 1.0
    assert t["held_s"] * 1000 == 1.0 + 1.0 + 0.5
    assert [s["who"] for s in t["longest_shares"]] == ["reference.a", "worker.b", "worker.a"]


def test_the_timeline_does_not_depend_on_where_its_clock_starts():
    """Moments are wall-clock ms since the epoch; any origin, even one after the first timer, gives the same."""
    at_zero = engine_bench.lock_timeline(_verdicts(0.0), 0.0)
    assert engine_bench.lock_timeline(_verdicts(1.8e12), 1.8e12 + 5.0) == at_zero


def test_contexts_made_during_an_exclusive_hold_are_counted_per_hold():
    """A comparer's context made while candidate a timed (its window overlaps a's hold, 2.0-3.0),
    and one worker's made between the rounds: one hold beside a context, each process once."""
    verdicts = _verdicts(0.0)
    verdicts[0]["phases_ms"].update({"compare.gpu.context_at": 2.5, "compare.gpu.context_end_at": 2.8})
    verdicts[1]["phases_ms"].update({"gpu.context_at": 5.0, "gpu.context_end_at": 6.0})
    for v in verdicts:  # the task's reference made its context before anything was timed
        v["phases_ms"].update({"reference.gpu.context_at": -2.0, "reference.gpu.context_end_at": -1.0})
    t = engine_bench.lock_timeline(verdicts, 0.0)
    assert t["contexts"] == 3
    assert t["holds_beside_contexts"] == 1  # a's (held 2.0-3.0); the reference timing's is 3.0-4.0
    assert t["contexts_during_hold"] == {"a": 1}


def test_contexts_ended_during_an_exclusive_hold_are_counted_too():
    """A worker that ended its context (before exiting) while candidate b timed (held 3.5-4.0 in
    _verdicts) shows beside b's hold; one ended without a share is counted as such, a task's reference
    once (its phases are in each of its verdicts)."""
    verdicts = _verdicts(0.0)
    verdicts[0]["phases_ms"].update({"gpu.teardown_at": 10.6, "gpu.teardown_end_at": 10.7, "teardown_unshared": 1})
    for v in verdicts:
        v["phases_ms"].update({"reference.gpu.teardown_at": 0.1, "reference.gpu.teardown_end_at": 0.2})
        v["phases_ms"]["reference.teardown_unshared"] = 1
    t = engine_bench.lock_timeline(verdicts, 0.0)
    assert t["context_ends"] == 2 and t["context_ends_unshared"] == 2
    assert t["contexts_during_hold"] == {"b": 1}


def test_a_disagreement_says_how_many_contexts_were_made_during_its_hold():
    item = {
        "id": "a",
        "kind": "honest",
        "runtime_ms": 7.1,
        "do_bench_ms": 3.3,
        "naive_runtime_ms": 3.4,
        "below_timing_floor": False,
        "runtime_stats": {"exclusive": True},
    }
    (line,) = engine_bench._disagreements([item], {"a": 2})
    assert "2 CUDA context(s) made during its exclusive hold" in line


def test_the_engine_is_checked_against_do_bench_not_the_harness_that_times_each_launch():
    # The harness's loop synchronizes after each call, so its time carries the host's launch: 2.663 ms
    # against the engine's 2.508 for a 2.5-ms sum on the H200. do_bench, which does not, is the check.
    item = {"id": "sum", "kind": "honest", "runtime_ms": 2.508, "naive_runtime_ms": 2.663, "below_timing_floor": False}
    assert engine_bench._disagreements([{**item, "do_bench_ms": 2.52}]) == []
    (line,) = engine_bench._disagreements([{**item, "do_bench_ms": 2.75}])
    assert "do_bench's 2.750 ms" in line and "own loop 2.663 ms" in line
    assert engine_bench._disagreements([{**item, "do_bench_ms": None}]) == []  # not timed: nothing to check


def test_a_kernel_timed_with_a_head_start_is_checked_against_do_bench_cudagraph():
    # An honest LayerNorm whose every launch outlasted the flush: the engine timed the GPU's work
    # (0.295 ms) where do_bench's time carried the host's launch too (0.430 ms on one H100 machine).
    item = {
        "id": "ln",
        "kind": "honest",
        "runtime_ms": 0.295,
        "naive_runtime_ms": 0.45,
        "do_bench_ms": 0.430,
        "below_timing_floor": False,
    }
    head_start = {"host_bound_share": 1.0, "head_start_ms": 0.52, "host_wait_ms": 0.0}
    assert engine_bench._disagreements([{**item, "runtime_stats": head_start, "do_bench_graph_ms": 0.29}]) == []
    (line,) = engine_bench._disagreements([{**item, "runtime_stats": head_start, "do_bench_graph_ms": 0.25}])
    assert "do_bench_cudagraph's 0.250 ms" in line
    # without a head start, or with no graph timing (a kernel that cannot be captured), do_bench stands
    (line,) = engine_bench._disagreements([{**item, "runtime_stats": {}, "do_bench_graph_ms": 0.29}])
    assert "do_bench's 0.430 ms" in line
    (line,) = engine_bench._disagreements([{**item, "runtime_stats": head_start, "do_bench_graph_ms": None}])
    assert "do_bench's 0.430 ms" in line


def test_engine_spread_holds_honest_kernels_over_the_floor_to_the_cv_over_five_engines():
    batch = [{"id": "honest", "kind": "honest"}, {"id": "cheat", "kind": "cheat"}, {"id": "tiny", "kind": "honest"}]

    def run(speedup, tiny_floor=False):
        return {
            "verdicts": [
                {"speedup_eager": speedup, "runtime_ms": 2.0, "below_timing_floor": False},
                {"speedup_eager": 9.0, "runtime_ms": 2.0},  # a cheat's speedup is never held to anything
                {"speedup_eager": speedup * 3, "runtime_ms": 0.01, "below_timing_floor": tiny_floor},
            ]
        }

    steady = [run(1.0 + 0.01 * (i % 2)) for i in range(5)]
    spread, missed = engine_bench.engine_spread(batch, steady)
    assert list(spread) == ["honest"] and missed == []  # the cheat and the kernel under 0.1 ms are left out
    assert spread["honest"]["cv"] < 0.01

    unsteady = [run(s) for s in (1.0, 1.0, 1.0, 1.0, 1.3)]
    _, (line,) = engine_bench.engine_spread(batch, unsteady)
    assert line.startswith("honest: speedup CV") and "over 5 engines" in line
    assert engine_bench.engine_spread(batch, unsteady[:4])[1] == []  # reported, but the target is set over five engines
    assert engine_bench.engine_spread(batch, unsteady[:1]) == ({}, [])  # one engine: no spread to speak of


def test_placement_times_groups_a_timings_calls_by_where_their_tensors_lay():
    mib = 2**20
    per_call = {
        "ms": [4.30, 5.01, 4.31, 5.00, 5.02],
        "placement": [0, 1, 0, 1, 1],
        "placements": [[100 * mib, 200 * mib], [100 * mib, 40 * mib]],
    }
    line = engine_bench.placement_times(per_call)
    assert line == "out-in +100 MiB: 4.305 ms x2; out-in -60 MiB: 5.010 ms x3"
    assert engine_bench.placement_times(None) == "no calls recorded"
    unknown = engine_bench.placement_times({"ms": [1.0], "placement": [0], "placements": [[None, 5]]})
    assert unknown == "out-in ?: 1.000 ms x1"
