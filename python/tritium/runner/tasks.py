"""Running a KernelBench-format task's reference: Model(*get_init_inputs())(*get_inputs())."""

import contextlib
import ctypes
import functools
import statistics
import time
import traceback
import types

import torch

from . import worker

TIMED_RUNS = 3


class TaskFailure(Exception):
    """A task that cannot run, with the stage that failed and the line in the task file."""

    def __init__(self, stage: str, message: str, line: int | None = None):
        super().__init__(message)
        self.stage = stage
        self.line = line


def source_line(exc: BaseException, filename: str) -> int | None:
    """The innermost line of the task file in the exception's traceback."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def _fail(stage: str, what: str, exc: BaseException, filename: str) -> TaskFailure:
    message = f"{what}: {type(exc).__name__}: {exc}".rstrip(": ")
    if isinstance(exc, SyntaxError):
        message = f"{what}: SyntaxError: {exc.msg}"
    return TaskFailure(stage, message, source_line(exc, filename))


def load_module(source: str, filename: str, name: str = "tritium_task") -> types.ModuleType:
    """Executes a task source as a fresh module (never via sys.modules: tasks share names)."""
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise _fail("load", "does not parse", exc, filename) from None
    module = types.ModuleType(name)
    module.__file__ = filename
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - a task may raise anything, SystemExit included
        raise _fail("load", "failed at import", exc, filename) from None
    return module


def require(module: types.ModuleType, name: str, what: str):
    value = getattr(module, name, None)
    if not callable(value):
        raise TaskFailure(
            "load", f"missing {what}; a KernelBench task defines Model, get_inputs() and get_init_inputs()"
        )
    return value


def _to_device(values, device: str):
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def describe(tensors) -> list[dict]:
    return [{"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")} for t in tensors]


def flatten_outputs(out) -> list[torch.Tensor]:
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            where = "forward returned" if len(items) == 1 and not isinstance(out, (tuple, list)) else f"output {i} is"
            raise TaskFailure("output", f"{where} {type(item).__name__}; expected a tensor or a tuple of tensors")
    if not items:
        raise TaskFailure("output", "forward returned an empty sequence; expected at least one tensor")
    return items


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def make_context(device: str, gpu=None) -> dict:
    """Makes this process's CUDA context now, under a share of `gpu` (the device's GpuLock), and
    returns when: {"gpu.context_at", "gpu.context_end_at"} in ms since the epoch ({} on the CPU).
    The share costs a timer's drain up to the creation's second, but a context made beside a
    timer's exclusive hold slowed its calls: on the H200 (2026-12-05), three honest kernels whose
    holds saw 2-6 contexts made, outside any share then, timed 22-40% over do_bench's timing."""
    if not device.startswith("cuda"):
        return {}
    with gpu.shared() if gpu is not None else contextlib.nullcontext():
        began = time.time() * 1000
        torch.cuda.set_device(torch.device(device))
        torch.empty(1, device=device)
        worker.before_exit(functools.partial(end_context, gpu))
        return {"gpu.context_at": began, "gpu.context_end_at": time.time() * 1000}


def end_context(gpu, seconds: float) -> dict:
    """Ends this process's CUDA context, and with it every byte it holds on the device, under a share
    of `gpu` (taken within `seconds`), before the process exits; the phases it took. Left to the
    exit, it would happen outside any share: on an H100 (2026-12-07, teardown_bench.py) processes
    that filled 24 GiB and exited beside a timed 6.4 GB multiply slowed 7.2% of its calls by over 5%,
    and processes that only made a context and exited 4.1%; and an engine's batch ends about 70."""
    began = time.time() * 1000
    with gpu.last_share(seconds) if gpu is not None else contextlib.nullcontext(True) as shared:
        held = time.time() * 1000
        with contextlib.suppress(Exception):  # a fault stuck to the context: reset it all the same
            torch.cuda.synchronize()
        libcuda = ctypes.CDLL("libcuda.so.1")  # loaded already by torch: no file is opened
        device = ctypes.c_int()
        status = libcuda.cuDeviceGet(ctypes.byref(device), torch.cuda.current_device())
        status = status or libcuda.cuDevicePrimaryCtxReset(device)
        ended = time.time() * 1000
    phases = {"gpu.teardown_at": held, "gpu.teardown_end_at": ended, "teardown_wait": held - began}
    phases["teardown"] = ended - held
    if not shared:
        phases["teardown_unshared"] = 1
    if status:
        phases["teardown_cuda_error"] = status
    return phases


def release_cached(device: str) -> None:
    """Hands the blocks the caching allocator keeps but no tensor uses back to the device: the
    engine admits jobs by what each phase holds (job_memory in engine.cc), not their union."""
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


_reserved_peak = 0  # the most the allocator reserved since the last note, kept across allocation_above()


def note_peak(phases: dict, name: str, device: str) -> None:
    """phases["mem.<name>_mib"]: the most device memory this process's allocator held since the last
    note (its CUDA context and memory mapped outside torch not counted), then a fresh count. What the
    engine reserves for a job or reference (engine.cc) is checked against these."""
    global _reserved_peak
    if device.startswith("cuda"):
        phases[f"mem.{name}_mib"] = max(_reserved_peak, torch.cuda.max_memory_reserved()) / 2**20
        _reserved_peak = 0
        torch.cuda.reset_peak_memory_stats()


def allocation_above(device: str, fn, *args) -> tuple[object, int]:
    """(fn(*args), the most bytes allocated at once during the call beyond those allocated before it):
    what a forward needs for its outputs and temporaries. 0 off the GPU."""
    global _reserved_peak
    if not device.startswith("cuda"):
        return fn(*args), 0
    _reserved_peak = max(_reserved_peak, torch.cuda.max_memory_reserved())
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = fn(*args)
    peak = torch.cuda.max_memory_allocated() - before
    _reserved_peak = max(_reserved_peak, torch.cuda.max_memory_reserved())
    return result, peak


def _timed_forward(model, inputs, device: str) -> tuple[object, float]:
    """One warm-up call, then the median of TIMED_RUNS calls, in milliseconds."""
    out = model(*inputs)
    synchronize(device)
    times = []
    for _ in range(TIMED_RUNS):
        start = time.perf_counter()
        model(*inputs)
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
    return out, statistics.median(times)


def run_stage(stage: str, what: str, filename: str, fn, *args):
    try:
        return fn(*args)
    except TaskFailure:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise _fail(stage, what, exc, filename) from None


def check_task(request: dict) -> dict:
    """Builds the model, runs forward on the task's inputs, and describes what went in and out."""
    filename = request.get("filename") or request.get("id", "<task>")
    device = request.get("device", "cpu")
    torch.manual_seed(int(request.get("seed", 0)))
    try:
        module = load_module(request["source"], filename)
        model_cls = require(module, "Model", "class Model")
        get_inputs = require(module, "get_inputs", "get_inputs()")
        get_init_inputs = require(module, "get_init_inputs", "get_init_inputs()")

        start = time.perf_counter()
        init_inputs = run_stage("init", "get_init_inputs() raised", filename, get_init_inputs)
        model = run_stage(
            "init", "Model(*get_init_inputs()) raised", filename, lambda: model_cls(*init_inputs).to(device)
        )
        init_ms = (time.perf_counter() - start) * 1e3

        inputs = run_stage("inputs", "get_inputs() raised", filename, get_inputs)
        if not isinstance(inputs, (list, tuple)):
            raise TaskFailure("inputs", f"get_inputs() returned {type(inputs).__name__}; expected a list of inputs")
        inputs = _to_device(inputs, device)

        with torch.no_grad():
            out, forward_ms = run_stage("forward", "forward raised", filename, _timed_forward, model, inputs, device)
        outputs = flatten_outputs(out)
        from .reference import lint

        warnings, ill_conditioned = run_stage(
            "forward", "forward raised", filename, lint, module, model, device, int(request.get("seed", 0))
        )
    except TaskFailure as failure:
        return {
            "ok": False,
            "stage": failure.stage,
            "error": str(failure),
            **({"line": failure.line} if failure.line else {}),
        }
    return {
        "ok": True,
        "inputs": describe([x for x in inputs if isinstance(x, torch.Tensor)]),
        "outputs": describe(outputs),
        "init_ms": init_ms,
        "forward_ms": forward_ms,
        "warnings": warnings,
        "ill_conditioned": ill_conditioned,
    }
