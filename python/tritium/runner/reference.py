"""The trusted side: a task's reference, its plan of trials, and its timing.

Runs only task code, never a candidate's. For one (task, seed) it writes into `dir` only
  params.tt          the model's parameters, perturbed away from their initial values
and answers the plan: each checked trial's seed index, mode, the input distribution it resolved
to (a fallback where the task's domain rejects one) and its tensors' shapes. No trial's tensors
are kept: the comparer (compare.py) and the candidate's worker make them again from the plan
(inputs.trial_values), on the device. On a GPU it also times the eager and the torch.compile
reference by the same protocol as candidates.
"""

import contextlib
import copy
import functools
import os
import time

import torch

from . import footprint as trial_footprint
from . import inputs as trial_inputs
from .lifetime import beside
from .phases import add_since, phase
from .tasks import (
    TaskFailure,
    allocation_above,
    describe,
    flatten_outputs,
    load_module,
    make_context,
    note_peak,
    release_cached,
    require,
    run_stage,
)
from .tensorfile import write_tensors
from .timing import GpuLock

CONDITION_MARGIN = 0.25  # the share of the tolerance the reference itself may use
SPOT_SETS = 3


def _perturb(model: torch.nn.Module, seed: int) -> None:
    """Moves every floating parameter by noise of half its RMS (0.1 for all-zero ones), so that a
    kernel that skips a bias or an affine scale (identities at initialisation) is caught."""
    generator = torch.Generator().manual_seed(trial_inputs.trial_seed(seed, 0, "params"))
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.numel():
                rms = p.detach().float().pow(2).mean().sqrt().item()
                noise = torch.randn(p.shape, generator=generator) * (0.5 * rms if rms > 0 else 0.1)
                p.add_(noise.to(device=p.device, dtype=p.dtype))


def _jsonable(value) -> bool:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return True
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    return False


def _split(values: list) -> tuple[list, dict]:
    """Tensors by position ("in0", ...) and the other inputs as JSON values."""
    tensors, others = [], {}
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            tensors.append((f"in{i}", v))
        elif _jsonable(v):
            others[f"in{i}"] = v
        else:
            raise TaskFailure("inputs", f"input {i} is {type(v).__name__}; inputs must be tensors or JSON values")
    return tensors, {"count": len(values), "values": others}


def _forward(model, values: list, mode: str, device: str) -> list[torch.Tensor]:
    getattr(model, mode)()
    with torch.no_grad():
        out = model(*[v.to(device) if isinstance(v, torch.Tensor) else v for v in values])
    return [t.detach() for t in flatten_outputs(out)]


def _finite(outputs) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())


def degenerate(outputs: list[torch.Tensor], values: list, atol: float) -> list[str]:
    """Why a `torch.zeros`-like or identity answer could pass this trial, if it could."""
    found = []
    for i, out in enumerate(outputs):
        if out.numel() == 0:
            continue
        flat = out.float()
        if out.numel() > 1 and bool((flat == flat.reshape(-1)[0]).all()):
            found.append(f"output {i} is constant")
        elif flat.abs().max().item() < atol:
            found.append(f"output {i} is below the tolerance in magnitude (max |x| < {atol:g})")
        for j, x in enumerate(values):
            if isinstance(x, torch.Tensor) and x.shape == out.shape and x.dtype == out.dtype:
                if torch.equal(x.to(out.device), out):
                    found.append(f"output {i} equals input {j}")
    return found


def _exact(model64, draw, mode: str, device: str, dtypes: list) -> list | None:
    """The float64 twin's outputs on the trial's inputs made again (`draw`), each rounded to float32
    unless the task's own output (`dtypes`) is float64; None for a model without float64 support.
    Made with nothing else of the trial alive: the float64 inputs from a draw beside them (3 x the
    inputs), then the twin's forward (2 x inputs, outputs and temporaries), where holding the
    trial's float32 tensors beside its float64 twins held 6 sets of a 6 GiB elementwise task (36.0
    GiB on an H100, 2026-12-07). Rounding to float32 errs by 2^-24 of a value, under 0.3% of the
    check's tolerance (CONDITION_MARGIN of it), and halves what waits for the float32 outputs."""
    release_cached(device)  # the forward's freed blocks: the twin's tensors are twice as large
    try:
        values64 = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in draw()]
        # The float32 draw's blocks, kept by the allocator, would stand beside the twin's outputs,
        # which do not fit in them: 31.5 GiB reserved for 24 allocated (H100, 2026-12-07).
        release_cached(device)
        exact = _forward(model64, values64, mode, device)
    except Exception as exc:  # noqa: BLE001 - a model without float64 support: nothing to compare with
        if out_of_memory(exc):  # beside other jobs: the engine runs the reference again alone
            raise
        return None
    del values64
    for i, dtype in zip(range(len(exact)), dtypes):
        if exact[i].dtype == torch.float64 and dtype != torch.float64:
            exact[i] = exact[i].float()  # no other name holds the float64 output: it goes here
    release_cached(device)  # the twin's blocks, before the trial is made again
    return exact


def _conditioning(exact: list | None, outputs: list, atol: float) -> tuple[bool, list]:
    """Whether the task's own dtype computes these inputs well within the tolerance, and its own
    error: the largest |float32 - float64| of each output (0.0 where not floating; [] without a
    float64 twin). Well within means its outputs agree with a float64 evaluation of the same model
    (`exact`: _exact) to CONDITION_MARGIN of the tolerance. A wide-range input to a long reduction
    can cancel terms far above the tolerance; and an honest kernel that sums in another order errs as
    much as the reference in another direction, so the reference alone must leave it most of the
    tolerance (seen: a tl.dot matmul 1.2x the tolerance away from torch's, on a trial where torch's
    own error was inside it)."""
    atol *= CONDITION_MARGIN
    if exact is None:
        return True, []
    # In chunks (compare.py): on a GPU-size output, allclose on float64 copies took 5x its bytes.
    from .compare import compare_tensor

    well, errors = True, []
    for a, b in zip(outputs, exact):
        if not a.is_floating_point() or a.shape != b.shape:
            well = well and a.shape == b.shape  # a twin that disagrees on a shape cannot vouch for it
            errors.append(0.0)
            continue
        c = compare_tensor(b, a, atol, atol)
        well = well and c["match"]
        errors.append(c["max_abs"])
    return well, errors


def out_of_memory(exc: BaseException) -> bool:
    """A device out of memory (torch's OutOfMemoryError, or the CUDA error's text): never a
    property of the task, so never taken for one (a conditioning check it cut short once let an
    ill-conditioned trial through, H200 2026-12-02)."""
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc)


def _buffers(model) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The model's buffers and a copy of each: the state a forward may change (a train-mode
    BatchNorm's running statistics)."""
    return [(b, b.detach().clone()) for b in model.buffers()]


def _restore(saved: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    with torch.no_grad():
        for buffer, copy_ in saved:
            buffer.copy_(copy_)


def _float64_twin(model):
    try:
        return copy.deepcopy(model).double()
    except Exception as exc:  # noqa: BLE001 - a model that cannot be copied or made float64
        if out_of_memory(exc):
            raise
        return None


def _trial(
    module,
    model,
    spec: dict,
    seed: int,
    device: str,
    model64=None,
    atol: float = 1e-4,
    check_task: bool = True,
    phases: dict | None = None,
    gpu: GpuLock | None = None,
) -> tuple:
    """Inputs, reference outputs, resolved distribution and the reference's own error of one trial,
    falling back to a distribution the task accepts: finite outputs, and (with a float64 twin)
    outputs its own dtype computes within tolerance. The task's own distribution, the last
    fallback, is taken however its dtype computes it; the reference's own error is then the
    largest |float32 - float64| of each output when that is past CONDITION_MARGIN of the tolerance
    (the comparer widens the tolerance by it, ILL_CONDITIONED_FACTOR), else None. `check_task`
    false: the task's own inputs are known to be well-conditioned (an earlier trial's: one float64
    pass of a GPU-size task fewer). `phases` gathers the time of the draws and forwards, and of
    the float64 checks. `gpu`: the caller's share, yielded to queued timers between the attempts and
    before the float64 check (each a GPU-size forward or two, which a timer's drain would wait out:
    a softmax reference's trial held one share for 4.3 s on the H200, 2026-12-04)."""
    phases = {} if phases is None else phases
    for attempt, distribution in enumerate(trial_inputs.fallbacks(spec["distribution"])):
        if attempt and gpu is not None:  # a queued timer's drain waits out one attempt, not three
            gpu.yield_to_timers()
        draw = functools.partial(
            trial_inputs.trial_values, module, {**spec, "distribution": distribution}, seed, device
        )
        task = distribution == "task"
        twin = model64 if check_task or not task else None
        state = _buffers(model) if twin is not None else []  # the trial made again below starts where this did
        with phase(phases, "forward"):
            values, drawn = allocation_above(device, draw)
            outputs, needed = allocation_above(device, _forward, model, values, spec["mode"], device)
            phases["draw_bytes"] = max(phases.get("draw_bytes", 0), drawn)
            phases["forward_bytes"] = max(phases.get("forward_bytes", 0), needed)
        if not task and not _finite(outputs):
            del values, outputs  # a GPU-size trial's tensors go before the next fallback's are drawn
            continue
        if twin is None:
            return values, outputs, distribution, None
        if gpu is not None:
            gpu.yield_to_timers()
        with phase(phases, "float64"):
            dtypes = [t.dtype for t in outputs]
            del values, outputs  # made again after the twin's: not alive beside its float64 tensors
            with phase(phases, "float64.twin"):
                exact = _exact(twin, draw, spec["mode"], device, dtypes)
            with phase(phases, "float64.again"):
                # Its buffers as the first forward found them: a train-mode BatchNorm then updates its
                # running statistics once a trial, as its float64 twin's and the comparer's do.
                _restore(state)
                values = draw()
                outputs = _forward(model, values, spec["mode"], device)
            with phase(phases, "float64.compare"):
                well, errors = _conditioning(exact, outputs, atol)
            del exact
        if task or well:
            return values, outputs, distribution, None if well else errors
        del values, outputs
    raise AssertionError("unreachable: the task distribution always returns")


def expected(module, model, spec: dict, seed: int, device: str) -> tuple[list, list[torch.Tensor]]:
    """A planned trial's (or spot set's) inputs and reference outputs, its distribution resolved."""
    values = trial_inputs.trial_values(module, spec, seed, device)
    return values, _forward(model, values, spec["mode"], device)


def lint(module, model, device: str, seed: int, atol: float = 1e-4) -> tuple[list[str], bool]:
    """Degenerate-task warnings under each of the engine's input distributions, in eval mode; and
    whether the task's own inputs, the trials' last fallback, are ill-conditioned (also a warning)."""
    warnings, ill_conditioned = [], False
    for i, distribution in enumerate(trial_inputs.DISTRIBUTIONS):
        spec = {"index": i, "distribution": distribution, "mode": "eval"}
        # The float64 twin only for the task's own inputs; the others fall back on non-finite outputs alone.
        twin = _float64_twin(model) if distribution == "task" else None
        values, outputs, used, own_error = _trial(module, model, spec, seed, device, twin, atol)
        warnings += [f"{w} ({used} inputs)" for w in degenerate(outputs, values, atol)]
        if own_error is not None:
            # Trials fall back to these inputs whatever the task's dtype makes of them: a kernel
            # that sums in another order than PyTorch then misses the tolerance by chance.
            ill_conditioned = True
            warnings.append(
                f"ill-conditioned: on its own inputs the task's float32 outputs are more than "
                f"{CONDITION_MARGIN:g} of the tolerance away from float64's"
            )
    return sorted(set(warnings)), ill_conditioned


# A reference is timed in blocks (eager and compiled interleaved, in one exclusive hold of the GPU),
# and the quickest block's statistics stand. Measured on an H200 (docs/gpu.md): the candidate's median repeated to
# 0.1% across engines while the eager reference's moved between 0.130 and 0.228 ms; interference
# only ever slows a block down, and every speedup of a task divides by this one time. Two blocks
# whose medians agree within BLOCKS_AGREE end it (each block of a GPU-size task holds the GPU
# alone for most of a second, and every other job waits that out); otherwise a third decides.
REFERENCE_BLOCKS = 3
BLOCKS_AGREE = 0.02


def _agree(runs: list) -> bool:
    medians = sorted(b["median_ms"] for b in runs[-2:])
    return len(medians) == 2 and medians[1] <= medians[0] * (1 + BLOCKS_AGREE)


@contextlib.contextmanager
def unshared_while_compiling(gpu: GpuLock):
    """Inside a `shared` scope: lets go of the share while torch.compile traces and generates code
    (host work, seconds, which a queued timer would otherwise wait out with every other job held at
    the gate) and takes it back before the compiled code runs. Runtime autotuning, which torch
    reports through the same hooks, is GPU work and keeps the share. Without the hooks (older torch)
    the share is kept throughout."""
    try:
        from torch._dynamo.callback import CallbackTrigger, callback_handler
    except ImportError:
        yield
        return

    def start(args) -> None:
        if getattr(args, "callback_trigger", None) == CallbackTrigger.DYNAMO:
            gpu.let_go()

    def end(_args) -> None:
        gpu.hold()

    callback_handler.register_start_callback(start)
    callback_handler.register_end_callback(end)
    try:
        yield
    finally:
        callback_handler.remove_start_callback(start)
        callback_handler.remove_end_callback(end)


def _one_set(inputs: list):
    return lambda _call: inputs


def _timed_blocks(fns: dict, fresh, device: str, gpu: GpuLock, errors: dict, phases: dict) -> dict:
    """Name -> the best of up to REFERENCE_BLOCKS timed blocks of that function (the block medians
    beside it), all in one exclusive hold, the functions' blocks interleaved: one drain of the
    GPU's sharers per task, not one per block (each drain held back every other job). Each block
    calls its function on one input set (made before the block, the L2 flushed before every call):
    the reference is trusted, so fresh inputs per call, which keep a candidate from reusing work,
    would only double a GPU-size task's hold with the making of its inputs. A function that raises
    gets its error in `errors` and no timing. A function is warmed up and its calls planned once,
    before its first block. Phases: the wait for the hold, the hold."""
    from .timing import Timer, measure, warm_up_calls

    blocks = {name: [] for name in fns}
    planned = {}  # name -> (its timer, its calls a block)
    waiting = time.perf_counter()
    with gpu.exclusive() as exclusive, phase(phases, "exclusive"):
        add_since(phases, "lock_wait", waiting)
        for k in range(REFERENCE_BLOCKS):
            for name, fn in fns.items():
                if name in errors or (k >= 2 and _agree(blocks[name])):
                    continue
                try:
                    inputs = None  # the last block's set goes before this one's is made: one set at a time
                    inputs = _one_set(fresh(k))
                    if name not in planned:
                        timer = Timer(device) if device.startswith("cuda") else None
                        planned[name] = (timer, warm_up_calls(timer, fn, inputs) if timer else None)
                    timer, calls = planned[name]
                    stats = measure(fn, inputs, device, calls=calls, timer=timer, trusted=True)["stats"]
                    blocks[name].append({**stats, "exclusive": exclusive})
                except Exception as exc:  # noqa: BLE001 - torch.compile may fail on a valid task
                    errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    timed = {}
    for name, runs in blocks.items():
        if runs and name not in errors:
            best = min(runs, key=lambda b: b["median_ms"])
            timed[name] = {**best, "block_medians_ms": [b["median_ms"] for b in runs]}
    return timed


def _time_references(model, module, device: str, gpu: GpuLock, seed: int) -> dict:
    """Eager and torch.compile timings on fresh draws of the task's inputs (as the candidate's)."""
    fresh = trial_inputs.fresh_source(module, seed, "fresh", device)

    model.eval()
    phases, errors = {}, {}
    result = {"eager": None, "compile": None, "compile_error": None, "phases_ms": phases}
    fns = {"eager": model}
    with torch.no_grad():
        try:
            # torch.compile compiles at the first call: host work, then GPU work (Inductor's
            # autotuning of its kernels, the call). The GPU work holds a share, so that none of it
            # runs into another process's timed calls: unlocked, an honest cumsum timed 2.4 ms in 12
            # of its 23 calls and up to 34 ms in the others (H200, 2026-12-03).
            with phase(phases, "compile"):
                # Outside the share: the first torch.compile() of a process imports Inductor (1.4-1.6 s
                # in a forked worker on the H200), host work that held every drain of the GPU's sharers.
                compile_in_process()
                compiled = torch.compile(model)
                with gpu.shared(), unshared_while_compiling(gpu):
                    compiled(*fresh(-100))
            fns["compile"] = compiled
        except Exception as exc:  # noqa: BLE001 - torch.compile may fail on a valid task
            errors["compile"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        result.update(_timed_blocks(fns, fresh, device, gpu, errors, phases))
    gpu.report(phases)
    if "eager" in errors:
        raise TaskFailure("timing", f"the reference raised while it was timed: {errors['eager']}")
    result["compile_error"] = errors.get("compile")
    return result


def _require_reproducible(module, spec: dict, values: list, seed: int, device: str) -> None:
    """The comparer and the candidate's worker make each trial's inputs again: the same seed must
    give the same inputs, in any process."""
    again = trial_inputs.trial_values(module, spec, seed, device)
    if len(again) != len(values) or not all(trial_inputs.identical(a, b) for a, b in zip(again, values)):
        raise TaskFailure(
            "inputs",
            "get_inputs() returned other inputs under the same seeds; the engine makes each "
            "trial's inputs again in every process that needs them, so they may come only from torch's, "
            "Python's `random` or NumPy's global generators (seeded by the engine)",
        )


def spot_spec(k: int) -> dict:
    """Spot set k of the timed calls: the task's own distribution, eval mode."""
    return {"index": 1000 + k, "distribution": "task", "mode": "eval", "variant": None}


def _run_trials(
    module, model, request: dict, filename: str, device: str, seed: int, phases: dict, gpu: GpuLock
) -> tuple:
    """The checked trials (plus a batch-size variant when the task has one), each one's
    distribution resolved and its tensors described; nothing is kept: whoever needs a trial's
    tensors makes them again from its spec (inputs.trial_values). A share of the GPU lock per
    trial (inside the caller's `shared` scope), not one for all: a timer queued meanwhile waits
    out one trial, not the task's six with their float64 twins. (trials, warnings)"""
    trials, warnings = [], []
    plan = trial_inputs.plan(int(request.get("trials", 5)))
    variant = trial_inputs.batch_variant(module)
    if variant:
        plan.append({"index": len(plan), "distribution": "normal", "mode": "eval", "variant": list(variant)})
    atol = float(request.get("atol", 1e-4))
    with phase(phases, "twin"):
        model64 = _float64_twin(model)
    task_checked = None  # the task's own inputs: unknown, well-conditioned (True) or not (False)
    for spec in plan:
        gpu.hold()
        try:
            values, outputs, used, own_error = run_stage(
                "forward",
                "forward raised",
                filename,
                _trial,
                module,
                model,
                spec,
                seed,
                device,
                model64,
                atol,
                task_checked is not True,
                phases,
                gpu,
            )
        except TaskFailure as failure:
            if spec.get("variant") and not out_of_memory(failure):  # the task does not scale with its batch size
                continue
            raise
        warnings += [f"{w} ({used} inputs)" for w in degenerate(outputs, values, atol)]
        if used == "task" and task_checked is None:
            task_checked = own_error is None
        if not trials:
            with phase(phases, "reproducible"):
                _require_reproducible(module, {**spec, "distribution": used}, values, seed, device)
        trials.append(
            {
                "index": spec["index"],
                "mode": spec["mode"],
                "distribution": used,
                "variant": f"{spec['variant'][0]}={spec['variant'][1]}" if spec.get("variant") else None,
                "variant_spec": spec.get("variant"),
                "inputs": describe(v for v in values if isinstance(v, torch.Tensor)),
                "outputs": describe(outputs),
                "reference_error": own_error,
            }
        )
        del values, outputs
        release_cached(device)  # a GPU-size trial's blocks go back to the device, for the other jobs
        gpu.let_go()
    return trials, warnings


def build(request: dict) -> tuple:
    """(module, model on the CPU, filename, device, seed, the CUDA context's window, the GPU lock)
    as the reference had them: what the comparer needs to make any planned trial's expected outputs
    again (it moves the model to the device under a share of the GPU lock)."""
    filename, device, seed, context, gpu = _start(request)
    module, model, _ = _build(request, filename, seed)
    return module, model, filename, device, seed, context, gpu


def warm_up() -> None:
    """Imports, in the runner before it forks, what sizing a trial on the meta device
    (footprint.measure) would import lazily in every worker: torch._dynamo, over a second."""
    import torch._dynamo  # noqa: F401


def compile_in_process() -> None:
    """Inductor compiles this worker's kernels itself, without its pool of compile processes. On
    a GPU host torch.compile starts one (a process a core, each importing torch: 16 on an H100's
    host) that a short-lived timing worker never uses (the pool is not ready before its few kernels
    are compiled in process) and must then tear down: its timings' reservations outlived their
    work by 1.1-2.1 s (H100, 2026-12-07), the output pipe held open by the pool past the worker's exit."""
    import torch._inductor.config

    torch._inductor.config.compile_threads = 1


def warm_compile() -> None:
    """Imports Inductor, which a reference timing's torch.compile imports at its first call: 1.4-1.6
    s in every forked worker (H200), spent while the timing's device memory is reserved. Imported
    in the runner, every worker it forks has it. Inductor starts no thread when imported (a fork
    would not carry one). Its key of torch's own build (a hash of torch's 2,300 source files, kept
    per process) is computed here too, not in every timing's compile: in a thread beside the rest
    of Inductor's imports, since reading and hashing the files mostly waits outside the GIL."""
    import torch._inductor.codecache as codecache

    torch_key = getattr(codecache, "torch_key", None)
    with beside(torch_key, "torch-key") if torch_key is not None else contextlib.nullcontext():
        import torch._inductor.compile_fx  # noqa: F401


def _build(request: dict, filename: str, seed: int):
    """(module, model on the CPU with its perturbed parameters, init inputs): the same for the same
    source and seed, so a later request rebuilds the very model the outputs came from."""
    module = load_module(request["source"], filename)
    model_cls = require(module, "Model", "class Model")
    get_init_inputs = require(module, "get_init_inputs", "get_init_inputs()")
    init_inputs = list(run_stage("init", "get_init_inputs() raised", filename, get_init_inputs))
    if not _jsonable(init_inputs):
        raise TaskFailure("init", "get_init_inputs() must return JSON-like values (numbers, strings, lists)")
    _require_fit(module, init_inputs, seed, request.get("device", "cpu"))
    torch.manual_seed(seed)
    model = run_stage("init", "Model(*get_init_inputs()) raised", filename, lambda: model_cls(*init_inputs))
    _perturb(model, seed)
    return module, model, init_inputs


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _device_bytes(device: str) -> int:
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _require_fit(module, init_inputs: list, seed: int, device: str) -> None:
    """A task one trial of which cannot fit the device at all fails with what it needs, before
    anything of that size is allocated (which would end in an out-of-memory kill or error)."""
    need = trial_footprint.measure(module, init_inputs, seed)
    if need is None:
        return
    have = _device_bytes(device)
    if need.trial > have:
        raise TaskFailure(
            "memory",
            f"one trial needs {_gib(need.trial)} ({_gib(need.inputs)} of inputs, "
            f"{_gib(need.outputs)} of outputs, {_gib(need.params)} of parameters) and {device} has {_gib(have)} "
            "in all; make the task's tensors smaller or evaluate it on a device with more memory",
        )


def footprint(request: dict) -> dict:
    """From the task on the meta device (footprint.py; nulls when its code does not run there): the
    bytes of one trial's inputs, outputs and parameters, and what its reference holds at its peak,
    by which the engine reserves the reference's device memory."""
    filename = request.get("filename") or request.get("id", "<task>")
    try:
        module = load_module(request["source"], filename)
        init_inputs = list(module.get_init_inputs())
        need = trial_footprint.measure(module, init_inputs, int(request.get("seed", 0)))
    except Exception:  # noqa: BLE001 - the reference itself reports what is wrong with the task
        need = None
    return {"ok": True, "bytes": need and need.trial, "peak_bytes": need and need.reference_peak()}


def _start(request: dict) -> tuple[str, str, int, dict, GpuLock]:
    """(filename, device, seed, the CUDA context's window: tasks.make_context, the process's GPU
    lock, under a share of which the context was made)."""
    filename = request.get("filename") or request.get("id", "<task>")
    device = request.get("device", "cpu")
    gpu = GpuLock.for_device(
        device, request.get("lock_path"), request.get("lock_wait_s"), gather_s=request.get("timer_gather_s")
    )
    context = make_context(device, gpu)
    # The reference in true float32: TF32 convolutions (PyTorch's default) differ by ~1e-3.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return filename, device, int(request.get("seed", 0)), context, gpu


def _failed(failure: TaskFailure) -> dict:
    return {
        "ok": False,
        "stage": failure.stage,
        "error": str(failure),
        **({"line": failure.line} if failure.line else {}),
    }


def reference(request: dict) -> dict:
    """Builds the reference model, perturbs it, writes its parameters and answers the plan."""
    filename, device, seed, context, gpu = _start(request)
    directory = request["dir"]
    os.makedirs(directory, exist_ok=True)
    phases = dict(context)  # ms per step, in every verdict of the task as reference.* (the scale benchmark reads them)
    try:
        with phase(phases, "build"):
            module, model, init_inputs = _build(request, filename, seed)
        require(module, "get_inputs", "get_inputs()")
        with gpu.shared():
            with phase(phases, "params"):
                model = model.to(device)
                params = [p.detach() for p in model.parameters()]
                write_tensors(os.path.join(directory, "params.tt"), [(f"p{i}", p) for i, p in enumerate(params)])
            trials, warnings = _run_trials(module, model, request, filename, device, seed, phases, gpu)
        gpu.report(phases)
        note_peak(phases, "peak", device)
        return {
            "ok": True,
            "init_inputs": init_inputs,
            "params": describe(params),
            "trials": trials,
            "spots": SPOT_SETS,
            # The most a trial's draw of inputs and a forward (outputs, temporaries) allocated at
            # once: what the engine reserves for the processes that make sets again (0: not measured,
            # off the GPU). A task's get_inputs() may draw through temporaries of its own.
            "draw_bytes": phases.pop("draw_bytes", 0),
            "forward_bytes": phases.pop("forward_bytes", 0),
            "warnings": sorted(set(warnings)),
            "phases_ms": phases,
        }
    except TaskFailure as failure:
        return _failed(failure)


def time_reference(request: dict) -> dict:
    """The eager and torch.compile timings of a task, on its spot sets. The engine asks for them
    apart from the plan, so that candidates are checked while the reference compiles and is timed."""
    filename, device, seed, context, gpu = _start(request)
    try:
        module, model, _ = _build(request, filename, seed)
        with gpu.shared():
            model = model.to(device)
        timed = _timing(model, module, device, gpu, seed)
        timed["timing"]["phases_ms"].update(context)
        return {"ok": True, **timed}
    except TaskFailure as failure:
        return _failed(failure)


def _timing(model, module, device: str, gpu: GpuLock, seed: int) -> dict:
    start = time.perf_counter()
    timing = _time_references(model, module, device, gpu, seed)
    timing["seconds"] = time.perf_counter() - start
    note_peak(timing["phases_ms"], "peak", device)
    return {"timing": timing, "device_name": torch.cuda.get_device_name()}
