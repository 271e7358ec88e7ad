"""The reference's timed blocks (runner.reference._timed_blocks), with the timing itself replaced:
CUDA events do not run here, and what is tested is the plan around them (which blocks run, on
which inputs, what stands). The timing is exercised on the H200 by test_engine_gpu.py."""

import pytest

from tritium.runner import reference, timing
from tritium.runner.timing import GpuLock


def _run(monkeypatch, medians: dict, fails: tuple = (), device: str = "cpu", plans: list | None = None):
    """Times fns "eager" and "compile" whose k-th block's median is medians[name][k]; each block's
    measure() keywords go to `plans` as (name, keywords)."""
    calls, seen_inputs = {name: 0 for name in medians}, {name: [] for name in medians}

    def measure(fn, fresh_inputs, device, **planned):
        name = fn
        if name in fails:
            raise RuntimeError("boom")
        k = calls[name]
        calls[name] += 1
        seen_inputs[name].append({id(fresh_inputs(j)) for j in range(5)})  # one set for the whole block
        if plans is not None:
            plans.append((name, planned))
        return {"stats": {"median_ms": medians[name][k]}}

    monkeypatch.setattr(timing, "measure", measure)
    made = []

    def fresh(k):
        made.append(k)
        return [object()]

    errors, phases = {}, {}
    timed = reference._timed_blocks({n: n for n in medians}, fresh, device, GpuLock(None), errors, phases)
    return timed, calls, seen_inputs, errors, phases, made


def test_each_function_is_warmed_up_and_planned_once_then_timed_as_trusted_code(monkeypatch):
    """On a GPU: one Timer and one warm-up per function, every block of it with the same planned
    calls, stream times without the side-stream calibration (the reference is trusted)."""
    warmed = []
    monkeypatch.setattr(timing, "Timer", lambda device: f"timer-{len(warmed)}")
    monkeypatch.setattr(timing, "warm_up_calls", lambda timer, fn, inputs: warmed.append(fn) or 40 + len(warmed))
    plans = []
    _run(monkeypatch, {"eager": [1.0, 1.0, 1.0], "compile": [0.5, 0.7, 0.6]}, device="cuda", plans=plans)
    assert warmed == ["eager", "compile"]
    assert plans == [
        ("eager", {"calls": 41, "timer": "timer-0", "trusted": True}),
        ("compile", {"calls": 42, "timer": "timer-1", "trusted": True}),
        ("eager", {"calls": 41, "timer": "timer-0", "trusted": True}),
        ("compile", {"calls": 42, "timer": "timer-1", "trusted": True}),
        ("compile", {"calls": 42, "timer": "timer-1", "trusted": True}),
    ]


def test_two_agreeing_blocks_end_it_and_each_block_calls_on_one_input_set(monkeypatch):
    timed, calls, seen, errors, phases, made = _run(
        monkeypatch, {"eager": [1.00, 1.01, 9.0], "compile": [0.5, 0.7, 0.6]}
    )
    assert calls == {"eager": 2, "compile": 3}  # compile's first two disagree by 40%: a third decides
    assert made == [0, 0, 1, 1, 2]  # an input set per block, made before it
    assert timed["eager"]["median_ms"] == 1.00 and timed["eager"]["block_medians_ms"] == [1.00, 1.01]
    assert timed["compile"]["median_ms"] == 0.5 and timed["compile"]["block_medians_ms"] == [0.5, 0.7, 0.6]
    assert all(len(block) == 1 for runs in seen.values() for block in runs)
    assert timed["eager"]["exclusive"] is True and not errors
    assert set(phases) == {"lock_wait", "exclusive"}


def test_a_function_that_raises_gets_its_error_and_no_timing(monkeypatch):
    timed, calls, _, errors, _, _ = _run(monkeypatch, {"eager": [1.0, 1.0, 1.0], "compile": [1, 1, 1]}, ("compile",))
    assert "compile" not in timed and errors["compile"] == "RuntimeError: boom"
    assert timed["eager"]["block_medians_ms"] == [1.0, 1.0]


@pytest.mark.parametrize(("a", "b", "agree"), [(1.0, 1.019, True), (1.019, 1.0, True), (1.0, 1.03, False)])
def test_blocks_agree_within_two_percent_either_way(a, b, agree):
    assert reference._agree([{"median_ms": a}, {"median_ms": b}]) is agree


def _exclusive_free(lock) -> bool:
    """Whether a timer could take the lock now (flock is per open file: a fresh one contends)."""
    import fcntl

    with open(lock) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def test_torch_compile_lets_go_of_the_share_while_it_compiles_and_runs_its_code_under_it(tmp_path):
    import torch
    from torch._dynamo.callback import callback_handler

    lock = tmp_path / "gpu.lock"
    lock.touch()
    (tmp_path / "gpu.lock.gate").touch()
    gpu = GpuLock(str(lock))
    seen = []

    def backend(gm, _example_inputs):  # called while dynamo compiles: a timer may take the GPU now
        seen.append(("compiling", _exclusive_free(lock)))

        def run(*args):
            seen.append(("running", _exclusive_free(lock)))  # the compiled code's GPU work: shared
            return gm(*args)

        return run

    hooks = (len(callback_handler.start_callbacks), len(callback_handler.end_callbacks))
    torch._dynamo.reset()
    with gpu.shared(), reference.unshared_while_compiling(gpu):
        assert not _exclusive_free(lock)
        out = torch.compile(lambda x: torch.relu(x) * 2, backend=backend)(torch.tensor([-1.0, 2.0]))
    assert out.tolist() == [0.0, 4.0]
    assert seen == [("compiling", True), ("running", False)]
    assert (len(callback_handler.start_callbacks), len(callback_handler.end_callbacks)) == hooks
    assert _exclusive_free(lock)  # the scope's end lets go


def test_the_reference_takes_a_share_per_trial_and_lets_it_go_between_them(tmp_path, monkeypatch):
    from conftest import EXAMPLE_TASKS

    lock = tmp_path / "gpu.lock"
    lock.touch()
    (tmp_path / "gpu.lock.gate").touch()
    gpu = GpuLock(str(lock))
    request = {"source": (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text(), "device": "cpu", "seed": 3}
    filename, device, seed, _, _ = reference._start(request)
    module, model, _ = reference._build(request, filename, seed)
    held, trial = [], reference._trial

    def observed(*args):
        held.append(not _exclusive_free(lock))
        return trial(*args)

    monkeypatch.setattr(reference, "_trial", observed)
    lets_go = []
    monkeypatch.setattr(gpu, "let_go", lambda f=gpu.let_go: (lets_go.append(_exclusive_free(lock)), f())[1])
    with gpu.shared():
        trials, _ = reference._run_trials(module, model, {"trials": 3}, filename, device, seed, {}, gpu)
    assert len(trials) == len(held) >= 3 and all(held)  # every trial under a share
    assert len(lets_go) >= len(trials)  # ... let go after each one (and at the scope's end)
    assert _exclusive_free(lock)


def test_trusted_timings_take_the_stream_times_without_calibration_calls():
    """A trusted function's runtimes are its stream times, even where the device-wide end lags (no
    round trip is timed: that would take the GPU); host-bound shares and the floor still apply."""
    timer = object.__new__(timing.Timer)  # no CUDA here: runtimes() of trusted code needs none
    # (stream, device, host launching, flush) ms: the third call's host outlasted its flush by 0.3 ms
    calls = [(1.0, 1.5, 0.05, 0.08), (1.2, 1.9, 0.06, 0.08), (0.9, 1.4, 0.38, 0.08), (1.1, 1.6, 0.07, 0.08)]
    times, info = timer.runtimes(calls, trusted=True)
    assert times == [1.0, 1.2, 0.9, 1.1]
    assert info == {
        "host_bound_share": 0.25,
        "timed_to": "stream",
        "below_floor": False,
        "host_ms": pytest.approx(0.065),
        "flush_ms": 0.08,
    }
    _, quick = timer.runtimes([(0.01, 0.01, 0.0, 0.08)] * 3, trusted=True)
    assert quick["below_floor"] is True


class _SimulatedTimer(timing.Timer):
    """A Timer whose calls are simulated (no CUDA here): each takes `device_ms` of GPU work and
    `host_ms` of host launching, of which `lag_ms` comes after the last launch; the GPU waits for the
    launches past the flush unless a head start covers them."""

    def __init__(self, device_ms: float, host_ms: float, lag_ms: float, flush_ms: float = 0.08):
        self.device_ms, self.host_ms, self.lag_ms, self.flush_ms = device_ms, host_ms, lag_ms, flush_ms
        self.head_starts = []

    def call(self, fn, inputs, head_start_ms=0.0):
        waited = 0.0 if head_start_ms >= self.host_ms else max(0.0, self.host_ms - self.lag_ms - self.flush_ms)
        self.head_starts.append(head_start_ms)
        stream = waited + self.device_ms
        return fn(*inputs), stream, stream, self.host_ms, self.flush_ms

    def round_trip(self, ms):  # the device's end is the stream's here: no wake-up to calibrate
        return 0.0


@pytest.mark.parametrize(
    "device_ms, host_ms, lag_ms, host_bound",
    [
        (0.18, 0.15, 0.12, False),  # one launch, most of the host's time after it: the per-call test marks it
        (0.05, 0.30, 0.02, True),  # several launches the GPU waits for: host-bound
        (2.00, 0.10, 0.01, False),  # a long kernel: the per-call test passes it, nothing more is timed
        (0.20, 50.0, 0.0, True),  # a sleep in the forward: too long to cover, host-bound
    ],
)
def test_a_timing_the_per_call_test_marks_is_measured_again_with_a_head_start(device_ms, host_ms, lag_ms, host_bound):
    timer = _SimulatedTimer(device_ms, host_ms, lag_ms)
    made = []
    fresh = lambda j: made.append(j) or []  # noqa: E731
    result = timing.measure(lambda *_: None, fresh, "cuda", calls=20, timer=timer, trusted=True)
    info = result["stats"]
    assert info["below_floor"] is host_bound
    marked = host_ms - 0.08 > timing.HOST_WAIT_SHARE * (device_ms + max(0.0, host_ms - lag_ms - 0.08))
    if not marked:  # the per-call test's bound clears it: no head-start calls
        assert timer.head_starts == [0.0] * 20 and "host_wait_ms" not in info
    elif host_ms * 2 + timing.HEAD_START_EXTRA_MS > timing.HEAD_START_MAX_MS:
        assert "host_wait_ms" not in info and len(timer.head_starts) == 20
    else:
        assert timer.head_starts[20:] == [2 * host_ms + timing.HEAD_START_EXTRA_MS] * timing.HEAD_START_CALLS
        assert made[20:] == list(range(20, 20 + timing.HEAD_START_CALLS))  # fresh inputs of their own
        assert info["host_wait_ms"] == pytest.approx(max(0.0, host_ms - lag_ms - 0.08))
        assert info["host_bound"] is host_bound


def test_a_timing_whose_gpu_waited_for_the_host_reports_the_head_starts_times():
    # An honest LayerNorm of 0.29 ms whose three launches outlast the flush (H100, 2026-12-07): the
    # GPU waited 0.02 ms a call for the host, which a busier host made longer in one engine of five.
    timer = _SimulatedTimer(device_ms=0.29, host_ms=0.40, lag_ms=0.30)
    info = timing.measure(lambda *_: None, lambda j: [], "cuda", calls=20, timer=timer, trusted=True)["stats"]
    assert info["host_wait_ms"] == pytest.approx(0.02) and info["host_bound"] is False
    assert info["median_ms"] == pytest.approx(0.29) and info["n"] == timing.HEAD_START_CALLS  # the GPU's work
    assert info["timed_median_ms"] == pytest.approx(0.31) and info["below_floor"] is False


def test_a_host_bound_timing_keeps_its_timed_calls_slowdown():
    # 0.22 ms of waiting on a 0.05 ms kernel: below the floor, and the slowdown it measured stands
    timer = _SimulatedTimer(device_ms=0.05, host_ms=0.30, lag_ms=0.0)
    info = timing.measure(lambda *_: None, lambda j: [], "cuda", calls=20, timer=timer, trusted=True)["stats"]
    assert info["below_floor"] is True and info["median_ms"] == pytest.approx(0.27) and info["n"] == 20
    assert "timed_median_ms" not in info


def test_the_last_spot_set_moves_to_the_last_head_start_call():
    """No call after the spot checks goes unchecked: where the timing is measured again with a head
    start (whose times may then stand), the spot set of the last call is checked at the last
    head-start call instead, and the last timed call gets fresh inputs."""
    timer = _SimulatedTimer(device_ms=0.29, host_ms=0.40, lag_ms=0.30)
    made, spots = [], []
    spot = {3: lambda: spots.append(3) or ["spot 3"], 19: lambda: spots.append(19) or ["spot 19"]}
    result = timing.measure(
        lambda x: x, lambda j: made.append(j) or [f"fresh {j}"], "cuda", spot=spot, calls=20, timer=timer
    )
    assert spots == [3, 19] and set(result["spot_outputs"]) == {3, 19}
    assert result["spot_outputs"][19] == "spot 19" and result["spot_outputs"][3] == "spot 3"
    # the timed calls' fresh sets, the last among them; then all head-start calls but the last
    assert made == [j for j in range(20) if j != 3] + list(range(20, 20 + timing.HEAD_START_CALLS - 1))
    assert timer.head_starts[-1] > 0  # the spot set's call had the head start
    # a timing the per-call test passes keeps its spot set at its last call
    quick, spots[:] = _SimulatedTimer(device_ms=2.0, host_ms=0.10, lag_ms=0.01), []
    timing.measure(lambda x: x, lambda j: [j], "cuda", spot=spot, calls=20, timer=quick)
    assert spots == [3, 19] and quick.head_starts == [0.0] * 20


@pytest.mark.parametrize(
    "waited, timed_to, host_ms, stands",
    [
        pytest.param({"host_bound": False, "host_wait_ms": 0.02}, "stream", 0.40, True, id="stands"),
        pytest.param(
            {"host_bound": True, "host_wait_ms": 0.20}, "stream", 0.40, False, id="host-bound: slowdown stands"
        ),
        pytest.param(
            {"host_bound": False, "host_wait_ms": 0.02}, "device", 0.40, False, id="side streams: sleep hides"
        ),
        pytest.param({"host_bound": False, "host_wait_ms": 0.02}, "stream", 0.09, False, id="wait not explained"),
    ],
)
def test_head_start_times_stand_only_where_the_hosts_launching_explains_the_wait(waited, timed_to, host_ms, stands):
    calls = [(0.31, 0.31, host_ms, 0.08)] * 5
    assert timing._head_start_stands(waited, {"timed_to": timed_to}, calls) is stands


def test_the_timing_compiles_in_its_own_process_without_inductors_pool(monkeypatch):
    """torch.compile is called with Inductor's compile threads at 1: no pool of compile processes
    (one a core, each importing torch) for a short-lived timing worker to start and tear down."""
    import torch
    import torch._inductor.config as inductor_config
    from conftest import EXAMPLE_TASKS

    from tritium.runner.tasks import load_module

    monkeypatch.setattr(inductor_config, "compile_threads", 16)
    threads = []

    def compile_(model, **_):
        threads.append(inductor_config.compile_threads)
        return model

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(reference, "_timed_blocks", lambda fns, *_: dict.fromkeys(fns, {}))  # CUDA events: not here
    source = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    module = load_module(source, "relu.py")
    result = reference._time_references(module.Model(), module, "cpu", GpuLock(None), 0)
    assert threads == [1] and result["compile_error"] is None
