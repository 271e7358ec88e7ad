"""A candidate's Triton kernels compiled before its job is admitted to device memory (GPU only).

On the GPU-size suite a third of the device memory held x time was held by processes compiling:
Triton compiles a kernel at its first launch, and a candidate's first launch came inside its job,
after the engine had reserved the job's memory (H100, 2026-12-06: 303 of the jobs' 1,387 GiB x s).
So the engine first sends the slot's runner a `compile` request: a sandboxed worker, like the
candidate's, loads the task and the candidate, builds ModelNew on the meta device and calls it on
meta tensors shaped like each planned trial's inputs, with every Triton launch turned into a
compile (`launches_held_back`). No kernel runs and no device memory is allocated; no CUDA context
should be made either (the answer says: `context`). Triton specialises a kernel on its arguments'
dtypes, integer values and pointers' 16-byte alignment; a meta tensor's address (0, plus its
offset) aligns as a device tensor's does, so the kernels compiled here are the ones the real calls
pick.

The worker answers with the files Triton's cache gained (`cache_files`); the runner writes them
into the evaluating worker's private cache (sandbox.job_seed), where the first launch finds its
kernel compiled. Everything here is an optimisation: a candidate whose forward does not run on
meta tensors (data-dependent code, an explicit device) compiles at its first call, as before.
"""

import base64
import contextlib
import os
import time

import torch

from . import inputs as trial_inputs
from . import triton_driver
from .phases import add_since
from .tasks import load_module

MAX_FILES = 512  # a cache entry per kernel is a handful of files (binary, metadata, launcher)
MAX_BYTES = 64 << 20  # what the runner keeps in memory for the next worker; the scratch holds 256 MB


@contextlib.contextmanager
def launches_held_back(counted: list):
    """Inside: every Triton launch compiles its kernel and launches nothing; an autotuned kernel
    compiles each of its configurations and benchmarks none (its choice is made by the real call).
    `counted` gets one entry per kernel compiled."""
    from triton import knobs
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    run, tune, hook = JITFunction.run, Autotuner.run, knobs.runtime.jit_post_compile_hook
    launchers = set()  # kernels whose launcher is built: a forward may launch one kernel many times

    def compile_only(self, *args, grid, warmup, **kwargs):
        kernel = run(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None and id(kernel) not in launchers:
            launchers.add(id(kernel))
            _build_launcher(kernel)
        return kernel

    def compile_configs(self, *args, **kwargs):
        for config in self.configs:
            self.fn.run(*args, **{**kwargs, **config.all_kwargs()})

    def count(*args, **kwargs):
        counted.append(1)
        return hook(*args, **kwargs) if hook else False

    JITFunction.run, Autotuner.run, knobs.runtime.jit_post_compile_hook = compile_only, compile_configs, count
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run, knobs.runtime.jit_post_compile_hook = run, tune, hook


def _build_launcher(kernel) -> None:
    """The kernel's launcher (Triton 3.6 compiles one per signature with the host's C compiler, at
    the first launch), built into the cache too; without loading the kernel onto the device."""
    with contextlib.suppress(Exception):  # another Triton: the first launch builds it, as before
        from triton.runtime import driver

        driver.active.launcher_cls(kernel.src, kernel.metadata)


def _layouts(trials: list) -> list[dict]:
    """One planned trial per distinct input layout: the batch-size variant changes the shapes, the
    distributions do not (meta tensors are drawn from the task's own)."""
    seen, specs = set(), []
    for trial in trials:
        spec = {**trial_inputs.planned(trial), "distribution": "task"}
        key = (spec["mode"], str(spec["variant"]))
        if key not in seen:
            seen.add(key)
            specs.append(spec)
    return specs


def compile_kernels(request: dict) -> dict:
    """Compiles the candidate's kernels for the planned trials; answers how many and the cache's
    new files. A candidate that does not run on meta tensors says why in `skipped`."""
    started = time.perf_counter()
    answer = {"ok": True, "compiled": 0, "skipped": None, "phases_ms": {}}
    if "forked_at" in request:
        add_since(answer["phases_ms"], "startup", request["forked_at"])
    cache = os.environ.get("TRITON_CACHE_DIR")
    before = set(triton_driver.cache_paths(cache)) if cache else set()
    counted: list = []
    try:
        triton_driver.make_driver()
        task = load_module(request["task"], request.get("task_filename", "<task>"))
        with open(request["filename"], encoding="utf-8") as f:
            module = load_module(f.read(), request["filename"], name="tritium_candidate")
        seed = int(request.get("seed", 0))
        with torch.device("meta"), torch.no_grad(), launches_held_back(counted):
            torch.manual_seed(seed)
            model = module.ModelNew(*request.get("init_inputs", []))
            for spec in _layouts(request.get("trials", [])):
                getattr(model, spec["mode"])()
                model(*trial_inputs.trial_values(task, spec, seed, "meta"))
    except BaseException as exc:  # noqa: BLE001 - SystemExit included: the real call judges the candidate
        answer["skipped"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    answer["compiled"] = len(counted)
    answer["context"] = _made_context()
    answer["files"] = cache_files(cache, before) if cache else {}
    add_since(answer["phases_ms"], "compile", started)
    return answer


def _made_context() -> bool | None:
    """Whether this worker made a CUDA context (it should not: no kernel ran; a context made beside
    another process's timed calls slows them, so contexts are made under a share of the GPU lock)."""
    try:  # asks the driver without making one; torch's own init flag misses a context Triton made
        return any(torch._C._cuda_hasPrimaryContext(i) for i in range(torch.cuda.device_count()))
    except Exception:  # noqa: BLE001 - a torch without the query (a CPU build)
        return None


def cache_files(directory: str, before: set) -> dict[str, str]:
    """The cache's files not in `before`, base64 (an answer is JSON): none when there are more than
    MAX_FILES or MAX_BYTES of them (the candidate's own files, perhaps; the real call compiles)."""
    files, total = {}, 0
    for relative in triton_driver.cache_paths(directory):
        if relative in before:
            continue
        with open(os.path.join(directory, relative), "rb") as f:
            data = f.read(MAX_BYTES - total + 1)
        total += len(data)
        if total > MAX_BYTES or len(files) >= MAX_FILES:
            return {}
        files[relative] = base64.b64encode(data).decode("ascii")
    return files


def decoded(files, protected=()) -> dict[str, bytes]:
    """A compile answer's files as the runner keeps them: bounded like cache_files, each in a cache
    entry's directory (Triton's layout: <key>/<file>), none of the `protected` paths (the driver
    module, which the worker loads before the candidate's code); nothing else. The answer came from
    a process the candidate ran in."""
    if not isinstance(files, dict) or len(files) > MAX_FILES:
        return {}
    out, total = {}, 0
    for relative, text in files.items():
        try:
            data = base64.b64decode(text, validate=True)
        except (TypeError, ValueError):
            return {}
        total += len(data)
        if not isinstance(relative, str) or total > MAX_BYTES:
            return {}
        parts = relative.split("/")
        if len(parts) == 2 and all(p not in ("", ".", "..") for p in parts) and relative not in protected:
            out[relative] = data
    return out
