"""GPU timing by the evaluation protocol, shared by the reference and the candidate side.

Each timed call: flush L2 (write a buffer larger than it), record a start event, call, synchronize
the whole device (work hidden on side streams is counted), record the end event. Every call gets
inputs it has never seen; spot-check calls, at positions drawn by the engine, get inputs whose
reference outputs are known, and their outputs are kept for the engine to compare.
"""

import contextlib
import fcntl
import statistics

import torch

L2_FLUSH_BYTES = 256 << 20  # H200 L2 is 50 MB; twice over covers every current GPU
WARMUP_CALLS = 3
MIN_CALLS, MAX_CALLS = 20, 100
TARGET_TIMED_MS = 1000.0


@contextlib.contextmanager
def exclusive(lock_path: str | None):
    """Holds the device's timing lock: one timed workload per GPU at a time."""
    if not lock_path:
        yield
        return
    with open(lock_path) as lock:  # read-only: a sandboxed uid may not write it; flock needs no more
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Timer:
    def __init__(self, device: str):
        self.device = device
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def call(self, fn, inputs: list) -> tuple[object, float]:
        self.flush_buffer.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn(*inputs)
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return out, start.elapsed_time(end)


def stats(times: list[float]) -> dict:
    ordered = sorted(times)
    q = statistics.quantiles(ordered, n=4) if len(ordered) >= 2 else [ordered[0]] * 3
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered),
        "min_ms": ordered[0],
        "p25_ms": q[0],
        "p75_ms": q[2],
        "max_ms": ordered[-1],
        "std_ms": statistics.pstdev(ordered),
    }


def planned_calls(ms_per_call: float) -> int:
    """Timed calls for about TARGET_TIMED_MS of work, within [MIN_CALLS, MAX_CALLS]."""
    return int(min(MAX_CALLS, max(MIN_CALLS, TARGET_TIMED_MS / max(ms_per_call, 1e-3))))


def measure(fn, fresh_inputs, device: str, spot: dict[int, list] | None = None, calls: int | None = None) -> dict:
    """Times `fn` on fresh inputs (fresh_inputs(j) gives call j's); `spot` maps call positions to
    input sets whose outputs are returned under "spot_outputs" as {position: output}."""
    spot = spot or {}
    timer = Timer(device)
    estimate = []
    for j in range(WARMUP_CALLS):
        estimate.append(timer.call(fn, fresh_inputs(-1 - j))[1])
    if calls is None:
        calls = planned_calls(min(estimate))
    times, spot_outputs = [], {}
    for j in range(calls):
        inputs = spot[j] if j in spot else fresh_inputs(j)
        out, ms = timer.call(fn, inputs)
        times.append(ms)
        if j in spot:
            spot_outputs[j] = out
    return {"stats": stats(times), "spot_outputs": spot_outputs}


def kernel_coverage(fn, inputs: list, kernel_names: set[str], calls: int = 3) -> dict:
    """Share of the CUDA time of `calls` forwards spent in the named (the candidate's) kernels."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
    total = own = 0.0
    others: dict[str, float] = {}
    for event in prof.events():
        if event.device_type != DeviceType.CUDA:
            continue
        us = event.time_range.elapsed_us()
        total += us
        if any(event.name.startswith(name) for name in kernel_names):
            own += us
        else:
            others[event.name] = others.get(event.name, 0.0) + us
    top = sorted(others.items(), key=lambda kv: -kv[1])[:3]
    return {
        "coverage": own / total if total else None,
        "cuda_us_per_call": total / calls,
        "other_kernels": [{"name": name[:120], "us_per_call": us / calls} for name, us in top],
    }
