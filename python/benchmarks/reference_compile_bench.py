"""Can a reference's torch.compile be done before its timing holds device memory? Compiles on fake
tensors (no device memory) against a cold and a warm first call on device tensors (GPU only).

    python python/benchmarks/reference_compile_bench.py [--tasks 03_softmax,07_layernorm,...] [--json F]

Why (docs/engine.md, "Not yet"): on the GPU-size suite the reference timings held 755 GiB x s of
device memory, 644 of them through `torch.compile`'s first call (2.3-5.6 s a task), host work
that needs the inputs' shapes, not their memory. If a compile on fake tensors fills the caches that
the timing's own torch.compile then reads (Inductor's FX graph and code caches, Triton's kernel
cache), the timing could be admitted after it and compile in a fraction of the time.

Arms, per task, each with Inductor and Triton caches of its own (cold at its start), each process
timing its first real call of `torch.compile(model)` on device inputs of the task's shapes:
`cold` (one process), `warm` (a second process after `cold`, same caches: the best a compile
ahead could give), and for each fake method a process that compiles on fake tensors, then one that
calls for real: `fake_compile` (torch.compile called under a FakeTensorMode), `fake_export`
(torch.export on fake inputs, then Inductor's compile_fx on its graph).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

TASKS = Path(__file__).resolve().parents[2] / "examples" / "kernelbench_scale" / "tasks"
DEFAULT_TASKS = "03_softmax,07_layernorm"
METHODS = ("fake_compile", "fake_export", "fake_make_fx")
DEVICE = "cuda"  # --device cpu checks the mechanics on a machine without a GPU (Inductor's C++ then)


def load(name: str):
    """A suite task by name, or any task file by its path."""
    path = Path(name) if name.endswith(".py") else TASKS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shapes(module) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """The task's input shapes and dtypes, drawn on the meta device (nothing allocated)."""
    with torch.device("meta"):
        return [(tuple(t.shape), t.dtype) for t in module.get_inputs()]


def real_call(module) -> dict:
    """torch.compile's first and second call on device inputs: seconds each."""
    model = module.Model(*module.get_init_inputs()).to(DEVICE).eval()
    inputs = [torch.empty(s, dtype=d, device=DEVICE).normal_() for s, d in shapes(module)]
    compiled = torch.compile(model)
    calls = []
    with torch.no_grad():
        for _ in range(2):
            sync()
            began = time.perf_counter()
            compiled(*inputs)
            sync()
            calls.append(time.perf_counter() - began)
    return {"calls_s": calls}


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def fake_inputs(module):
    return [torch.empty(s, dtype=d, device=DEVICE) for s, d in shapes(module)]


def fake_compile(module) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
        model = module.Model(*module.get_init_inputs()).to(DEVICE).eval()
        torch.compile(model)(*fake_inputs(module))


def fake_export(module) -> None:
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode, torch.no_grad():
        model = module.Model(*module.get_init_inputs()).to(DEVICE).eval()
        args = fake_inputs(module)
        graph = torch.export.export(model, tuple(args)).module()
    with mode, torch.no_grad():
        compile_fx(graph, args)


def fake_make_fx(module) -> None:
    """An aten graph traced on fake tensors with the parameters as inputs (as Dynamo lifts them)."""
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode(allow_non_fake_inputs=True) as mode, torch.no_grad():
        model = module.Model(*module.get_init_inputs()).to(DEVICE).eval()
        params = dict(model.named_parameters())
        args = fake_inputs(module)

        def forward(params, *xs):
            return torch.func.functional_call(model, params, xs)

        graph = make_fx(forward)(params, *args)
    with mode, torch.no_grad():
        compile_fx(graph, [*params.values(), *args])


def arm(name: str, task: str) -> dict:
    """One process's part: a fake method (then nothing else), or a real first call."""
    module = load(task)
    out = {"arm": name, "task": task}
    began = time.perf_counter()
    if name in METHODS:
        try:
            globals()[name](module)
        except Exception as exc:  # noqa: BLE001 - what fails is the finding
            out["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        out["fake_s"] = time.perf_counter() - began
        out["context"] = torch.cuda.is_initialized()
        with contextlib.suppress(Exception):
            out["device_bytes"] = torch.cuda.memory_allocated()
        return out
    return {**out, **real_call(module)}


def run_arm(name: str, task: str, caches: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{caches}/inductor", TRITON_CACHE_DIR=f"{caches}/triton")
    command = [sys.executable, __file__, "--arm", name, "--tasks", task, "--device", DEVICE]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"arm": name, "task": task, "error": done.stderr.strip()[-600:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(task: str) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as caches:
        results["cold"] = run_arm("cold", task, caches)
        results["warm"] = run_arm("cold", task, caches)
    for method in METHODS:
        with tempfile.TemporaryDirectory() as caches:
            results[method] = run_arm(method, task, caches)
            results[f"after_{method}"] = run_arm("cold", task, caches)
    return results


def describe(name: str, r: dict) -> str:
    if "calls_s" in r:
        return f"{name} first call {r['calls_s'][0]:.2f} s (second {r['calls_s'][1]:.3f})"
    if "fake_s" in r:
        made = "a CUDA context" if r.get("context") else "no CUDA context"
        return f"{name} {r['fake_s']:.2f} s, {made}" + (f"; failed: {r['error']}" if "error" in r else "")
    return f"{name} failed: {r.get('error', '?')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--arm", help=argparse.SUPPRESS)  # one arm, in this process
    parser.add_argument("--json", default="")
    parser.add_argument("--device", default="cuda", help="cpu: the mechanics only (Inductor's C++ kernels)")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("reference_compile_bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.arm:
        print(json.dumps(arm(args.arm, args.tasks)), flush=True)
        return 0
    everything = {}
    for task in args.tasks.split(","):
        everything[task] = results = bench(task)
        print(f"{task}:", flush=True)
        for name, r in results.items():
            print(f"  {describe(name, r)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
