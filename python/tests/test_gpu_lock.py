"""The GPU lock (runner/timing.py) across real processes: timing excludes every other GPU user,
a waiting timer is not starved by new sharers, and two sharers upgrading do not deadlock."""

import fcntl
import multiprocessing as mp
import time

import pytest

from tritium.runner.timing import GpuLock

CTX = mp.get_context("fork")


@pytest.fixture
def lock_path(tmp_path):
    path = tmp_path / "gpu-0.lock"
    path.touch()
    (tmp_path / "gpu-0.lock.gate").touch()
    return str(path)


def _hold(lock_path, kind, seconds, log, name, start_after=0.0, **options):
    time.sleep(start_after)
    gpu = GpuLock(lock_path, **options)
    with getattr(gpu, kind)():
        log.put((name, "in", time.monotonic()))
        time.sleep(seconds)
        log.put((name, "out", time.monotonic()))


def _upgrade(lock_path, log, name):
    gpu = GpuLock(lock_path)
    with gpu.shared():
        time.sleep(0.2)
        with gpu.exclusive():
            log.put((name, "in", time.monotonic()))
            time.sleep(0.2)
            log.put((name, "out", time.monotonic()))
        log.put((name, "shared again", time.monotonic()))


def _with_log(fn, args: list, log) -> tuple:
    """Inserts the log queue where fn takes it (after lock_path, kind, seconds for _hold)."""
    at = 3 if fn is _hold else 1
    return (*args[:at], log, *args[at:])


def _run(*procs, timeout=10.0) -> dict:
    """Each proc is (fn, *args) or (fn, *args, {keyword options})."""
    log = CTX.Queue()
    procs = [(p[0], list(p[1:-1]), p[-1]) if isinstance(p[-1], dict) else (p[0], list(p[1:]), {}) for p in procs]
    started = [CTX.Process(target=fn, args=_with_log(fn, args, log), kwargs=options) for fn, args, options in procs]
    for p in started:
        p.start()
    for p in started:
        p.join(timeout)
        assert p.exitcode == 0, "a lock holder hung or failed"
    events = {}
    while not log.empty():
        name, what, at = log.get()
        events[(name, what)] = at
    return events


def test_timing_waits_for_a_sharer_and_excludes_it(lock_path):
    events = _run((_hold, lock_path, "shared", 0.5, "trial"), (_hold, lock_path, "exclusive", 0.1, "timing", 0.1))
    assert events[("timing", "in")] >= events[("trial", "out")]


def test_a_waiting_timer_closes_the_gate_to_new_sharers(lock_path):
    events = _run(
        (_hold, lock_path, "shared", 0.6, "first"),
        (_hold, lock_path, "exclusive", 0.3, "timing", 0.1),
        (_hold, lock_path, "shared", 0.1, "late", 0.3),
    )
    assert events[("timing", "in")] >= events[("first", "out")]
    assert events[("late", "in")] >= events[("timing", "out")], "a new sharer overtook the waiting timer"


def test_timers_queued_together_all_time_before_any_new_sharer(lock_path):
    """One drain of the sharers serves every timer that queues before the last has timed: a sharer
    waiting since before timer b arrived (during timer a's timed calls) gets the GPU after both."""
    events = _run(
        (_hold, lock_path, "shared", 0.4, "first"),
        (_hold, lock_path, "exclusive", 0.4, "timer a", 0.1),
        (_hold, lock_path, "shared", 0.1, "late", 0.2),
        (_hold, lock_path, "exclusive", 0.2, "timer b", 0.6),
    )
    assert events[("timer a", "in")] >= events[("first", "out")]
    assert events[("late", "in")] >= events[("timer b", "out")], f"a new sharer got in between the timers: {events}"


def test_two_sharers_upgrading_both_get_the_lock_in_turn(lock_path):
    events = _run((_upgrade, lock_path, "a"), (_upgrade, lock_path, "b"))
    first, second = sorted("ab", key=lambda n: events[(n, "in")])
    assert events[(second, "in")] >= events[(first, "out")]


def _compile_in_between(lock_path, log, name):
    """A sharer that lets go of its share for CPU-only work (compiling) between two GPU steps."""
    gpu = GpuLock(lock_path)
    with gpu.shared():
        time.sleep(0.1)
        with gpu.released():
            log.put((name, "compiling", time.monotonic()))
            time.sleep(0.8)
            log.put((name, "compiled", time.monotonic()))
        log.put((name, "shared again", time.monotonic()))
        time.sleep(0.1)


def test_a_timer_does_not_wait_for_a_sharer_that_let_go_and_excludes_it_after(lock_path):
    events = _run((_compile_in_between, lock_path, "candidate"), (_hold, lock_path, "exclusive", 0.3, "timing", 0.3))
    assert events[("timing", "in")] < events[("candidate", "compiled")], "the timer waited out the compile"
    assert events[("candidate", "shared again")] >= events[("timing", "out")], "the share came back mid-timing"


def _steps_yielding(lock_path, log, name):
    """A long share of GPU steps that yields to queued timers between them (a reference's trial)."""
    gpu = GpuLock(lock_path)
    with gpu.shared():
        for step in range(6):
            time.sleep(0.15)
            log.put((name, f"step {step}", time.monotonic()))
            gpu.yield_to_timers()
    log.put((name, "out", time.monotonic()))


def test_a_long_share_yields_to_a_queued_timer_between_its_steps(lock_path):
    events = _run((_steps_yielding, lock_path, "reference"), (_hold, lock_path, "exclusive", 0.2, "timing", 0.2))
    assert events[("timing", "in")] < events[("reference", "step 3")], "the timer waited out the whole share"
    # The step the timer arrived in ended first; the next step came after the timed calls.
    after = [k for k in range(6) if events[("reference", f"step {k}")] > events[("timing", "in")]]
    assert after and events[("reference", f"step {after[0]}")] >= events[("timing", "out")] + 0.1


def test_without_a_queued_timer_yielding_keeps_the_share(lock_path):
    gpu = GpuLock(lock_path)
    with gpu.shared():
        gpu.yield_to_timers()
        assert gpu.sharing and gpu.record["holds"] == 0  # never let go: no hold ended
    assert gpu.record["holds"] == 1


def test_the_compile_hooks_let_go_of_the_share_and_take_it_back(lock_path):
    """The wiring of candidate.py's Triton hooks (the interpreter never compiles, so they are
    called here as Triton's JIT calls them, around a compile)."""
    import triton

    from tritium.runner.candidate import _let_go_while_compiling

    runtime = triton.knobs.runtime
    saved = runtime.jit_cache_hook, runtime.jit_post_compile_hook
    gpu, phases = GpuLock(lock_path), {}
    try:
        with gpu.shared():
            _let_go_while_compiling(gpu, phases)
            assert (
                runtime.jit_cache_hook(
                    key="k", repr="kernel", fn=None, compile={}, is_manual_warmup=False, already_compiled=False
                )
                is False
            )  # Triton then compiles
            assert not gpu.sharing
            with GpuLock(lock_path, wait_s=0.5).exclusive() as exclusive:
                assert exclusive, "a timer could not get the GPU while the candidate compiled"
            runtime.jit_post_compile_hook(
                key="k", repr="kernel", fn=None, compile={}, is_manual_warmup=False, already_compiled=False
            )
            assert gpu.sharing and phases["compile"] >= 0
    finally:
        runtime.jit_cache_hook, runtime.jit_post_compile_hook = saved


def test_without_a_path_it_does_nothing():
    gpu = GpuLock(None)
    with gpu.shared(), gpu.exclusive(), gpu.released():
        pass


def _hang_shared(lock_path, seconds):
    with GpuLock(lock_path).shared():
        time.sleep(seconds)


def test_a_timer_stops_waiting_for_a_hung_sharer_and_says_so(lock_path):
    hung = CTX.Process(target=_hang_shared, args=(lock_path, 5.0))
    hung.start()
    time.sleep(0.3)  # the hung candidate holds its share
    try:
        start = time.monotonic()
        with GpuLock(lock_path, wait_s=0.5).exclusive() as exclusive:
            waited = time.monotonic() - start
        assert exclusive is False and 0.5 <= waited < 5.0
        # The gate is open again: a new sharer is not blocked by the timer that gave up.
        start = time.monotonic()
        with GpuLock(lock_path).shared():
            assert time.monotonic() - start < 5.0
    finally:
        hung.kill()
        hung.join()
    with GpuLock(lock_path, wait_s=0.5).exclusive() as exclusive:
        assert exclusive is True  # the holder is gone


def test_a_timer_gives_up_waiting_in_time_for_its_own_limit(lock_path):
    """A candidate near its time limit stops waiting for a hung neighbour's share at `give_up_at`,
    however long `wait_s` would let it wait, and times without exclusivity."""
    hung = CTX.Process(target=_hang_shared, args=(lock_path, 5.0))
    hung.start()
    time.sleep(0.3)
    try:
        start = time.monotonic()
        with GpuLock(lock_path, wait_s=4.0, give_up_at=start + 0.5).exclusive() as exclusive:
            waited = time.monotonic() - start
        assert exclusive is False and 0.5 <= waited < 2.0, waited
        with GpuLock(lock_path, wait_s=4.0, give_up_at=start - 1.0).exclusive() as exclusive:
            assert exclusive is False  # already past: one try, no wait
    finally:
        hung.kill()
        hung.join()


def test_a_sharer_stops_waiting_at_a_gate_kept_closed_by_a_timer_waiting_on_a_hung_sharer(lock_path):
    """A timer waits out a hung neighbour's share for up to its wait_s, with the gate closed; a
    new candidate gets its share after gate_wait_s instead of stalling (or timing out) behind it."""
    events = _run(
        (_hold, lock_path, "shared", 3.0, "hung"),
        (_hold, lock_path, "exclusive", 0.1, "timer", 0.1, {"wait_s": 2.5}),
        (_hold, lock_path, "shared", 0.1, "late", 0.3, {"gate_wait_s": 0.4}),
    )
    assert events[("late", "in")] < events[("timer", "in")], f"the new sharer waited for the timer: {events}"
    assert events[("late", "in")] < events[("hung", "out")]


def test_a_compile_during_the_timed_calls_keeps_the_hold_exclusive(lock_path):
    """Triton's compile hooks let go of the share and take it back; while timing, neither may turn
    the exclusive hold into a share that lets a neighbour onto the GPU."""
    gpu, neighbour = GpuLock(lock_path), GpuLock(lock_path, wait_s=0.3, gate_wait_s=0.3)
    with gpu.shared():
        with gpu.exclusive() as exclusive:
            assert exclusive
            gpu.let_go()  # as the hooks around a compile do
            gpu.hold()
            with neighbour.shared():
                assert not neighbour.sharing, "a neighbour got a share during the timed calls"
        assert gpu.sharing  # the share is back after timing
    with neighbour.shared():
        assert neighbour.sharing


def test_a_sharer_waits_at_the_gate_for_its_gate_wait_in_all(lock_path):
    """A candidate takes its share back several times (after each compile, after timing): behind a
    timer stuck on a hung neighbour, the waits at the gate together stay within gate_wait_s."""
    hung = CTX.Process(target=_hang_shared, args=(lock_path, 6.0))
    timer = CTX.Process(target=_hold, args=(lock_path, "exclusive", 0.1, CTX.Queue(), "timer"), kwargs={"wait_s": 5.0})
    hung.start()
    time.sleep(0.2)
    timer.start()
    time.sleep(0.2)  # the timer has closed the gate and waits for the hung share
    try:
        gpu = GpuLock(lock_path, gate_wait_s=0.5)
        start = time.monotonic()
        with gpu.shared():
            for _ in range(3):
                with gpu.released():  # e.g. three compiles
                    pass
        assert time.monotonic() - start < 1.5, "each share waited its own gate_wait_s"
    finally:
        for p in (hung, timer):
            p.kill()
            p.join()


def _busy_sharer(lock_path, log, name, seconds, start_after=0.0, hold_s=0.25):
    """A neighbour that keeps the GPU busy: shares of hold_s, 10 ms apart, for `seconds`."""
    time.sleep(start_after)
    gpu, end, k = GpuLock(lock_path), time.monotonic() + seconds, 0
    with gpu.shared():
        while time.monotonic() < end:
            log.put((f"{name}{k}", "in", time.monotonic()))
            time.sleep(hold_s)
            log.put((f"{name}{k}", "out", time.monotonic()))
            k += 1
            with gpu.released():
                time.sleep(0.01)


def _shares_inside(events: dict, begin: float, end: float) -> list:
    return [key for key, at in events.items() if key[0].startswith("share") and key[1] == "in" and begin < at < end]


def test_timers_ready_within_the_gather_window_time_after_one_drain(lock_path):
    """Two neighbours keep a share on the GPU at every instant. The first timer waits, holding
    nothing (the neighbours go on), until its window ends; the second, ready meanwhile, joins its
    round: both time after one drain, and no share comes between them."""
    started = time.monotonic()
    events = _run(
        (_busy_sharer, lock_path, "share-a", 3.0),
        # One long share: with two short ones, a loaded host can let both go at one instant, and a
        # GPU free of sharers rightly ends the gathering.
        (_busy_sharer, lock_path, "share-b", 1.5, 0.12, 1.5),
        (_hold, lock_path, "exclusive", 0.1, "early", 0.3, {"gather_s": 0.8}),
        (_hold, lock_path, "exclusive", 0.1, "late", 0.7, {"gather_s": 0.8}),
    )
    first, second = sorted(("early", "late"), key=lambda n: events[(n, "in")])
    assert events[(first, "in")] - started > 1.0, "the first timer closed the gate before gathering"
    assert _shares_inside(events, started + 0.4, started + 1.0), "the neighbours were held back meanwhile"
    between = _shares_inside(events, events[(first, "in")], events[(second, "out")])
    assert not between, f"a share came between the two timers of one round: {between}"


def _stall_in_the_gate(lock_path, log, name, start_after, stall_s):
    """A sharer descheduled while it passes through the gate: it holds the gate exclusively."""
    time.sleep(start_after)
    with open(lock_path + ".gate") as gate, open(lock_path) as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        log.put((name, "in", time.monotonic()))
        time.sleep(stall_s)
        fcntl.flock(lock, fcntl.LOCK_SH)
        fcntl.flock(gate, fcntl.LOCK_UN)
        log.put((name, "out", time.monotonic()))


def _gathered_s(lock_path, log, name, start_after, gather_s):
    time.sleep(start_after)
    gpu = GpuLock(lock_path, gather_s=gather_s)
    with gpu.exclusive():
        pass
    log.put((name, "gathered", (gpu.record["queued_at"] - gpu.record["ready_at"]) / 1000))


def test_a_sharer_passing_through_the_gate_does_not_end_the_gathering(lock_path):
    """Only a timer's closed gate ends a round's gathering early: a sharer found in the gate (held
    exclusively, for as long as the host deschedules it there) is not a round under way."""
    events = _run(
        (_hold, lock_path, "shared", 1.2, "trial"),
        (_stall_in_the_gate, lock_path, "passing", 0.2, 0.3),
        (_gathered_s, lock_path, "timer", 0.1, 0.8),
    )
    assert events[("passing", "in")] < events[("passing", "out")]
    assert events[("timer", "gathered")] > 0.7, "a sharer in the gate was taken for a timer's round"


def test_a_timer_gathers_nothing_on_a_gpu_without_sharers(lock_path):
    gpu = GpuLock(lock_path, gather_s=3.0)
    start = time.monotonic()
    with gpu.exclusive() as exclusive:
        assert exclusive
    assert time.monotonic() - start < 0.5


def test_a_timer_joins_a_round_already_under_way_at_once(lock_path):
    """A gate closed by another timer ends the gathering: the late timer times in that round."""
    events = _run(
        (_hold, lock_path, "shared", 1.0, "trial"),
        (_hold, lock_path, "exclusive", 0.1, "first", 0.1),
        (_hold, lock_path, "exclusive", 0.1, "joining", 0.3, {"gather_s": 3.0}),
    )
    assert events[("joining", "in")] - events[("first", "out")] < 0.5


def test_the_lock_reports_its_holds_and_the_timers_moments(lock_path):
    gpu, phases = GpuLock(lock_path), {}
    with gpu.shared():
        time.sleep(0.05)
        with gpu.exclusive():
            pass
    gpu.report(phases)
    assert phases["gpu.holds"] == 2 and phases["gpu.hold_max_ms"] >= 50
    assert phases["gpu.ready_at"] <= phases["gpu.queued_at"] <= phases["gpu.held_at"] <= phases["gpu.released_at"]
    GpuLock(None).report(phases := {})
    assert phases == {}


def test_a_timer_never_gathers_past_its_own_wait(lock_path):
    """Gathering counts against the timer's wait for the lock (wait_s, give_up_at): a window longer
    than the candidate's limit allows still ends in time, so the engine need not bound it."""
    hung = CTX.Process(target=_hang_shared, args=(lock_path, 3.0))
    hung.start()
    time.sleep(0.3)
    try:
        start = time.monotonic()
        with GpuLock(lock_path, wait_s=0.5, gather_s=60.0).exclusive() as exclusive:
            assert not exclusive
        assert time.monotonic() - start < 1.0
    finally:
        hung.kill()
        hung.join()


def test_a_cuda_context_is_made_under_a_share_of_the_lock(lock_path, monkeypatch):
    """A context made beside a timer's exclusive hold slowed its calls on the H200, so making one
    holds a share: while it is made, no timer can hold the GPU (this machine has no GPU, so the
    two calls that make it are stood in for, and each tries the lock exclusively)."""
    import fcntl

    import torch

    from tritium.runner import tasks, worker

    probe = open(lock_path)  # noqa: SIM115 - another process's view of the lock, closed below
    during = []

    def exclusive_refused(*_args, **_kwargs):
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            during.append(True)
            return
        fcntl.flock(probe, fcntl.LOCK_UN)
        during.append(False)

    monkeypatch.setattr(worker, "_before_exit", [])  # the context's end, registered below: not this process's
    monkeypatch.setattr(worker, "_in_worker", True)
    monkeypatch.setattr(torch.cuda, "set_device", exclusive_refused)
    monkeypatch.setattr(torch, "empty", exclusive_refused)
    window = tasks.make_context("cuda:0", GpuLock(lock_path))
    assert during == [True, True]
    assert window["gpu.context_at"] <= window["gpu.context_end_at"]
    assert len(worker._before_exit) == 1  # the worker ends its context under a share before it exits
    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # let go once made
    probe.close()


def test_a_processs_last_share_waits_at_most_its_time_then_goes_on_without(lock_path):
    """A worker ending its context takes a share, so no timer's exclusive hold sees it; behind a
    timer that holds on, it waits at most the seconds it was given, and nothing is synchronized
    when it lets go (the context that would run it is gone)."""
    holder = CTX.Process(target=_hold, args=(lock_path, "exclusive", 3.0, CTX.Queue(), "timer"))
    holder.start()
    time.sleep(0.5)
    synced = []
    gpu = GpuLock(lock_path, sync=lambda: synced.append(1))
    began = time.monotonic()
    with gpu.last_share(0.6) as shared:
        waited = time.monotonic() - began
    holder.join(10)
    assert shared is False and 0.25 < waited < 1.5
    with gpu.last_share(5.0) as shared:  # the timer gone: held at once
        probe = open(lock_path)  # noqa: SIM115 - closed below
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        probe.close()
    assert shared is True and synced == []
