"""The untrusted side: a candidate's ModelNew on the engine's inputs, inside the sandbox.

Runs in a sandboxed worker (sandbox.py) that never sees the reference model's outputs: it makes
each trial's inputs from the task's get_inputs() and the engine's plan (inputs.trial_values, on
the device), reads the perturbed parameters from the candidate's directory, and ships each set of
outputs through the channel (channel.py) to the trusted comparer (compare.py), waiting for it
before the next: one set at a time, in memory. This side reports what it observed (launches,
PyTorch compute, threads, output types, inputs changed in place, timings).
"""

import contextlib
import functools
import os
import random
import threading
import time

import torch

from . import inputs as trial_inputs
from . import rootfs, triton_driver
from .channel import ChannelError
from .monitor import Monitor, install_launch_hook, recording
from .phases import add_since, phase
from .reference import spot_spec
from .tasks import load_module, make_context, note_peak, release_cached, source_line, synchronize
from .tensorfile import read_tensors
from .timing import GpuLock

CPU_SHAPED_CALLS = 8  # on the CPU nothing is timed, but the calls a timing loop makes are checked
# What a candidate needs after waiting for exclusive use of the GPU: its timed calls, the
# profiler's set-up for the coverage (up to 3.9 s in a fresh process on the H200) and its outputs.
# A timer stops waiting for a neighbour that hangs on to the GPU this long before the candidate's
# own limit; one that only gets to time after that point skips the coverage (it is left null).
AFTER_LOCK_WAIT_S = 8.0


class Failure(Exception):
    def __init__(self, stage: str, message: str, line: int | None = None, **extra):
        super().__init__(message)
        self.stage, self.line, self.extra = stage, line, extra


def _classify(exc: BaseException, filename: str, what: str) -> Failure:
    """compile_error for Triton's compiler, runtime_error otherwise; interpreter limits marked
    (the engine then cannot judge the candidate on this machine: status error, nobody's fault)."""
    text = f"{type(exc).__name__}: {exc}"
    names = {cls.__name__ for cls in type(exc).__mro__}
    stage = "compile" if names & {"CompilationError", "CompileTimeAssertionFailure"} else "runtime"
    limit = interpreter_limit(exc)
    message = f"{what}: {text[:2000]}" + (f" [{limit}]" if limit else "")
    return Failure(stage, message, source_line(exc, filename), interpreter_limit=limit is not None)


def interpreter_limit(exc: BaseException) -> str | None:
    """The known limit of Triton's CPU interpreter (TRITON_INTERPRET=1) that made `exc`, or None.

    Each is recognised by where Triton raised it and why, never by the message alone: a kernel
    that is wrong raises the same messages (`arange's arguments must be of type tl.constexpr` for
    tl.arange(0, n) over a runtime n) and must keep its runtime_error.
    - No driver: Triton asked for a GPU driver (its autotuner benchmarks each config on one) and
      raised from triton/runtime/driver.py; the CPU has none.
    - A constexpr the interpreter misreads: it takes a parameter as constexpr only when the
      annotation's text is `tl.constexpr` or `constexpr`, so `tl_alias.constexpr`,
      `language.constexpr` or `triton.language.constexpr` (tl.constexpr all the same) arrive as
      runtime tensors, and whatever needs a constexpr fails. Compiled on a GPU, they are constexprs.
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if not frames:
        return None
    last = frames[-1].f_code
    if (
        isinstance(exc, RuntimeError)
        and "active drivers" in str(exc)
        and last.co_name == "_create_driver"
        and _in_triton(last.co_filename, "runtime", "driver.py")
    ):
        return (
            "interpreter limit: Triton asked for a GPU driver (its autotuner benchmarks the configs on one) "
            "and the CPU has none"
        )
    for frame in frames:
        code = frame.f_code
        if code.co_name != "__call__" or not _in_triton(code.co_filename, "runtime", "interpreter.py"):
            continue
        executor = frame.f_locals.get("self")
        if type(executor).__name__ != "GridExecutor":
            continue
        misread = _misread_constexprs(executor)
        if misread:
            return (
                "interpreter limit: Triton's interpreter reads a parameter as constexpr only when annotated "
                f"`tl.constexpr` or `constexpr`, and took {', '.join(misread)} for runtime values"
            )
    return None


def _in_triton(filename: str, *parts: str) -> bool:
    return filename.replace(os.sep, "/").endswith("/triton/" + "/".join(parts))


def _misread_constexprs(executor) -> list[str]:
    """The kernel's parameters annotated with a spelling of tl.constexpr that the interpreter did
    not take for one (its rewritten function keeps each annotation as the source text)."""
    import triton.language as tl

    fn = getattr(executor, "fn", None)
    annotations = getattr(fn, "__annotations__", None) or {}
    known = set(getattr(executor, "constexprs", ()))
    misread = []
    for name in getattr(executor, "arg_names", ()):
        text = annotations.get(name)
        if name in known or not isinstance(text, str):
            continue
        parts = text.strip().split(".")
        if not all(p.isidentifier() for p in parts):
            continue
        value = getattr(fn, "__globals__", {}).get(parts[0])
        for part in parts[1:]:
            value = getattr(value, part, None)
        if value is tl.constexpr:
            misread.append(f"`{name}: {text.strip()}`")
    return misread


def _poison_free_memory(device: str, nbytes: int) -> None:
    """Fills the caching allocator's free blocks with NaN bytes: an output that is never written
    (a stale buffer) then reads as NaN instead of whatever an earlier computation left there."""
    if device.startswith("cuda"):
        scratch = torch.empty(max(nbytes, 64 << 20), dtype=torch.uint8, device=device)
        scratch.fill_(0xFF)
        del scratch


def _outputs(out, device: str) -> list[torch.Tensor]:
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise Failure("output", f"output {i} is {type(item).__name__}, not a tensor")
        if type(item) is not torch.Tensor or item.layout != torch.strided or item.is_nested:
            raise Failure(
                "hack",
                f"output {i} is a {type(item).__name__} ({item.layout}); only plain dense "
                "torch.Tensor outputs are accepted",
                rule="runtime.output_not_plain",
            )
        if item.device.type != torch.device(device).type:
            raise Failure("output", f"output {i} is on {item.device}, expected {device}")
    if not items:
        raise Failure("output", "forward returned no tensor")
    return items


def _params(model: torch.nn.Module, path: str, expected: list[dict]) -> None:
    """Copies the reference's perturbed parameters in, matched by order and shape."""
    ours = list(model.parameters())
    theirs, _ = read_tensors(path)
    shapes = [tuple(p.shape) for p in ours]
    wanted = [tuple(e["shape"]) for e in expected]
    if shapes != wanted:
        raise Failure(
            "params",
            f"ModelNew has parameters {shapes}, the reference has {wanted}; they must match by "
            "order and shape (register the same nn.Parameters as Model)",
            rule="eval.param_mismatch",
        )
    with torch.no_grad():
        for i, p in enumerate(ours):
            p.copy_(theirs[f"p{i}"].to(device=p.device, dtype=p.dtype))


def _let_go_while_compiling(gpu: GpuLock, phases: dict) -> None:
    """Triton compiles a kernel at its first launch: CPU work (seconds, with a private cache)
    during which this process's share of the GPU would keep every waiting timer waiting, and the
    gate that timer closed every new candidate. Triton versions without the hooks keep the share."""
    try:
        import triton
    except ImportError:
        return
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime, "jit_post_compile_hook"):
        return
    started = []

    def before(*_, **__):
        gpu.let_go()
        started.append(time.perf_counter())
        return False  # not found in a cache of ours: Triton compiles

    def after(*_, **__):
        if started:
            add_since(phases, "compile", started.pop())
        gpu.hold()
        return False

    runtime.jit_cache_hook, runtime.jit_post_compile_hook = before, after


def _call(model, values: list, device: str, monitor: Monitor, filename: str) -> tuple[list, dict]:
    threads = threading.active_count()
    try:
        with recording(monitor), torch.no_grad():
            out = model(*values)
            synchronize(device)
    except Failure:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit included: sys.exit costs a verdict
        raise _classify(exc, filename, "forward raised") from None
    seen = {
        "launches": list(monitor.launches),
        "torch_ops": dict(monitor.torch_ops),
        "threads_left": max(0, threading.active_count() - threads),
    }
    return _outputs(out, device), seen


def _mutated(values: list, task, spec: dict, seed: int, device: str) -> int | None:
    """The first input that forward changed in place, found against the same inputs made again."""
    again = trial_inputs.trial_values(task, spec, seed, device)
    for j, (before, after) in enumerate(zip(again, values)):
        if isinstance(after, torch.Tensor) and not trial_inputs.identical(before, after):
            return j
    return None


def _ship(channel, gpu: GpuLock, what: dict, outputs: list, deadline: float | None) -> bool:
    """Hands a set of outputs to the comparer without a share of the GPU: the comparer holds one
    for the set, copies included, and a timer queued meanwhile would otherwise keep the two
    waiting on each other until the timer's own wait ran out. True unless the set was wrong."""
    gpu.let_go()
    try:
        return channel.ship(what, outputs, deadline)
    except (ChannelError, OSError) as exc:
        raise Failure("channel", f"the outputs did not reach the comparer: {exc}") from None
    finally:
        gpu.hold()


def _checked_trials(
    model, task, request: dict, monitor: Monitor, filename: str, gpu: GpuLock, phases: dict
) -> tuple[list[dict], str]:
    """The planned trials, one set at a time; phases "trial.*" say where their time went. Also
    what failed them, if anything did (a set the comparer found wrong, an input changed)."""
    device, seed, channel = request["device"], int(request["seed"]), request["channel_end"]
    report, failed = [], ""
    for trial in request["trials"]:
        with phase(phases, "trial.hold"):
            gpu.hold()  # a compile that raised and was caught never handed the share back
        spec = trial_inputs.planned(trial)
        with phase(phases, "trial.inputs"):
            values = trial_inputs.trial_values(task, spec, seed, device)
        with phase(phases, "trial.yield"):  # a queued timer's drain waits out a step, not the trial
            gpu.yield_to_timers()
        with phase(phases, "trial.poison"):
            _poison_free_memory(device, int(trial.get("output_bytes", 0)) * 2)
        getattr(model, trial["mode"])()
        with phase(phases, "trial.call"):
            outputs, seen = _call(model, values, device, monitor, filename)
        with phase(phases, "trial.yield"):
            gpu.yield_to_timers()
        with phase(phases, "trial.mutation"):
            seen["input_mutated"] = _mutated(values, task, spec, seed, device)
        del values
        with phase(phases, "trial.release"):
            release_cached(device)  # the inputs' blocks: the comparer makes its own while the outputs cross
        with phase(phases, "trial.ship"):
            matched = _ship(channel, gpu, {"kind": "trial", "index": spec["index"]}, outputs, request.get("deadline"))
        del outputs
        if not failed and (not matched or seen["input_mutated"] is not None):
            failed = f"trial {trial['index']}: " + ("wrong outputs" if not matched else "an input changed in place")
        report.append({"index": trial["index"], "mode": trial["mode"], **seen})
    return report, failed


def _timed_phase(model, request: dict, monitor: Monitor, filename: str, gpu: GpuLock, phases: dict) -> dict:
    """Fresh inputs every call; the spot sets at engine-seeded positions, the last always one."""
    device, task = request["device"], request["task_module"]
    seed = int(request["seed"])

    def spot_inputs(k: int) -> list:  # made at its call, like every timed call's inputs
        return trial_inputs.trial_values(task, spot_spec(k), seed, device)

    fresh = trial_inputs.fresh_source(task, seed, "fresh-candidate", device)
    chooser = random.Random(trial_inputs.trial_seed(seed, 0, "spots"))

    threads_before = threading.active_count()
    model.eval()

    def call(*values):  # unmonitored: the dispatch mode would slow the timed calls
        try:
            with torch.no_grad():
                return model(*values)
        except BaseException as exc:  # noqa: BLE001
            raise _classify(exc, filename, "forward raised during the timed calls") from None

    timing = request.get("timing") or {}
    if device.startswith("cuda") and timing.get("enabled", True):
        from .timing import Timer, kernel_coverage, measure, warm_up_calls

        waiting = time.perf_counter()
        with gpu.exclusive() as exclusive:
            add_since(phases, "lock_wait", waiting)
            with phase(phases, "timed"):
                timer = Timer(device)
                kept = max(0, request["spots"] - 1)  # spot outputs held beside a call's: the last is the last call's
                calls = warm_up_calls(timer, call, fresh, keep=kept)
                spot_map = _spot_map(request["spots"], spot_inputs, chooser, calls)
                result = measure(call, fresh, device, spot=spot_map, calls=calls, timer=timer)
        stats = {**result["stats"], "exclusive": exclusive}
        # Shares of this process's own CUDA time: neighbours do not skew them, so no exclusive hold.
        if gpu.give_up_at is None or time.monotonic() < gpu.give_up_at:
            with phase(phases, "coverage"):
                coverage = kernel_coverage(call, spot_inputs(0), set(request["kernels"]), gpu)
        else:
            coverage = None  # too close to the candidate's limit for the profiler's set-up
    else:
        spot_map = _spot_map(request["spots"], spot_inputs, chooser, CPU_SHAPED_CALLS)
        result = {"spot_outputs": {}}
        for j in range(CPU_SHAPED_CALLS):
            out = call(*(spot_map[j]() if j in spot_map else fresh(j)))
            if j in spot_map:
                result["spot_outputs"][j] = out
        stats, coverage = None, None
    threads_left = max(0, threading.active_count() - threads_before)
    positions = sorted(result["spot_outputs"])
    release_cached(device)
    with phase(phases, "ship_spots"):
        for k, j in enumerate(positions):
            outputs = _outputs(result["spot_outputs"].pop(j), device)
            _ship(request["channel_end"], gpu, {"kind": "spot", "index": k}, outputs, request.get("deadline"))
            del outputs
    return {"stats": stats, "spot_positions": positions, "coverage": coverage, "threads_left": threads_left}


def _spot_map(spots: int, spot_inputs, chooser: random.Random, calls: int) -> dict:
    """Call position -> a function making the inputs of the spot set checked there: spot set k at a
    random position, the last one at the last call."""
    positions = chooser.sample(range(calls - 1), spots - 1) + [calls - 1]
    return {pos: functools.partial(spot_inputs, k) for k, pos in enumerate(sorted(positions))}


def warm_up() -> None:
    """Imports, in the runner before it forks, what the first checked call would import lazily in
    every worker (a dispatch mode pulls in torch._dynamo: seconds)."""
    import torch._dynamo  # noqa: F401

    with recording(Monitor("<warm-up>")):
        torch.empty_like(torch.empty(4)).copy_(torch.zeros(4))


def evaluate(request: dict) -> dict:
    """Loads the candidate, runs the checked trials and the timed phase; reports what it saw."""
    started = time.monotonic()
    filename = request["filename"]
    device = request.get("device", "cpu")
    answer = {"ok": False, "sandbox": request.get("sandbox_report"), "trials": [], "phases_ms": {}}
    monitor = Monitor(filename)
    timing = request.get("timing") or {}
    limit = request.get("timeout_s")
    give_up_at = started + float(limit) - AFTER_LOCK_WAIT_S if limit else None
    gpu = GpuLock.for_device(
        device, timing.get("lock_path"), timing.get("lock_wait_s"), give_up_at, timing.get("gather_s")
    )
    request["deadline"] = started + float(limit) if limit else None
    if "forked_at" in request:  # fork, sandbox
        add_since(answer["phases_ms"], "startup", request["forked_at"])
    try:
        if device.startswith("cuda"):
            with phase(answer["phases_ms"], "cuda_init"):
                answer["phases_ms"].update(make_context(device, gpu))
            with phase(answer["phases_ms"], "triton_driver"):  # host work, outside the share
                triton_driver.make_driver()
        waiting = time.perf_counter()
        with gpu.shared():
            add_since(answer["phases_ms"], "lock_wait", waiting)
            _evaluate(request, filename, device, monitor, gpu, answer)
    except Failure as failure:
        answer.update(stage=failure.stage, error=str(failure), **failure.extra)
        if failure.line:
            answer["line"] = failure.line
    finally:
        _done(request.get("channel_end"))
        gpu.report(answer["phases_ms"])
        if (answer["sandbox"] or {}).get("scratch_bytes"):  # its tmpfs was mounted
            used = rootfs.scratch_used_mib(os.path.dirname(filename))
            if used is not None:
                answer["phases_ms"]["scratch.used_mib"] = used
    return answer


def _done(channel) -> None:
    """Tells the comparer that no more sets come (it would otherwise wait for the engine)."""
    if channel is not None:
        with contextlib.suppress(OSError):
            channel.send({"done": True})


def _evaluate(request: dict, filename: str, device: str, monitor: Monitor, gpu: GpuLock, answer: dict) -> None:
    """evaluate()'s steps; on the GPU they hold its lock shared, the timed phase exclusively. A
    candidate whose checked trials failed is not timed: its verdict is made, and on a GPU-size
    task the timed calls and the rounds they queue in cost seconds of everyone's time."""
    phases = answer["phases_ms"]
    if device.startswith("cuda"):
        _let_go_while_compiling(gpu, phases)
        triton_driver.unshared_launchers(gpu)
        with phase(phases, "pin"):
            answer["channel_pinned"] = request["channel_end"].pin()
    install_launch_hook(monitor)
    with phase(phases, "load"):
        request["task_module"] = _task(request)
        model, kernels = _load(request, filename, device)
    answer["kernels"] = kernels
    with phase(phases, "checked"):
        answer["trials"], failed = _checked_trials(
            model, request["task_module"], request, monitor, filename, gpu, phases
        )
    release_cached(device)
    note_peak(phases, "checked", device)
    request["kernels"] = kernels
    if failed:  # incorrect already: timing it would only hold the GPU (the judge checks the claim)
        answer["timed"] = {"skipped": failed}
    else:
        answer["timed"] = _timed_phase(model, request, monitor, filename, gpu, phases)
        note_peak(phases, "timed", device)
    answer["ok"] = True


def _task(request: dict):
    """The task's module, loaded before the candidate's: its get_inputs() makes the trials' inputs."""
    try:
        return load_module(request["task"], request.get("task_filename", "<task>"))
    except Exception as exc:  # noqa: BLE001 - it loaded in the reference: this runtime differs
        raise Failure("engine", f"the task did not load in the candidate's worker: {exc}") from None


def _load(request: dict, filename: str, device: str) -> tuple[torch.nn.Module, list[str]]:
    """The candidate's ModelNew, built from the task's init inputs, with the reference's
    perturbed parameters; and the names of its Triton kernels."""
    try:
        with open(filename, encoding="utf-8") as f:
            module = load_module(f.read(), filename, name="tritium_candidate")
    except Exception as exc:  # noqa: BLE001
        raise Failure("load", str(exc), getattr(exc, "line", None)) from None
    model_cls = getattr(module, "ModelNew", None)
    if not isinstance(model_cls, type):
        raise Failure("load", "the candidate defines no class ModelNew")
    kernels = sorted({name for name, v in vars(module).items() if hasattr(v, "fn") and hasattr(v, "run")})
    torch.manual_seed(int(request.get("seed", 0)))
    try:
        model = model_cls(*request.get("init_inputs", [])).to(device)
    except BaseException as exc:  # noqa: BLE001
        raise _classify(exc, filename, "ModelNew(*get_init_inputs()) raised") from None
    _params(model, os.path.join(request["dir"], "params.tt"), request.get("params", []))
    return model, kernels
