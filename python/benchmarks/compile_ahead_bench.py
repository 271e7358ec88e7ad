"""Can a candidate's Triton kernels be compiled before its job holds device memory? A forward on
meta tensors, with every Triton launch turned into a warm-up (compile, no launch), against a cold
first call, side by side (GPU only).

    python python/benchmarks/compile_ahead_bench.py [--rows 4096] [--cols 24576] [--json F]

Why (docs/engine.md, "Not yet"): on the GPU-size suite a third of the device memory held x time
was held by processes compiling, Triton's compile of each candidate at its first call among them,
because a job is admitted before its worker has compiled anything. Triton specialises a kernel on
its arguments' dtypes, integer values and pointers' 16-byte alignment; a meta tensor's address is
0, aligned. If the kernels compiled from meta tensors are the ones the real call picks, the real
first call finds them compiled and runs at once.

Each arm runs in a process of its own with a Triton cache of its own (cold): `cold` calls the
forward on device tensors twice; `meta` first calls it on meta tensors with the launches held
back, then on device tensors twice. It prints each call's seconds, the first real call's ratio
(cold / meta) and whether the outputs are right.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, cols, BLOCK):
        offs = c + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc))


def forward(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A candidate-like forward: two Triton kernels and PyTorch glue between them."""
    total = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, total, n, BLOCK=1024)
    sums = torch.empty(x.shape[0], device=x.device)
    row_sum_kernel[(x.shape[0],)](total, sums, x.shape[1], BLOCK=1024)
    return sums * 2


def compile_from_meta(shape: tuple[int, int]) -> float:
    """The forward on meta tensors with every launch a warm-up: seconds."""
    from triton.runtime.jit import JITFunction

    launch = JITFunction.run

    def warm_up_only(self, *args, **kwargs):
        kwargs["warmup"] = True
        return launch(self, *args, **kwargs)

    JITFunction.run = warm_up_only
    try:
        began = time.perf_counter()
        x = torch.empty(shape, device="meta")
        forward(x, x)
        return time.perf_counter() - began
    finally:
        JITFunction.run = launch


def arm(name: str, shape: tuple[int, int]) -> dict:
    """One arm, in this process: the meta pass (arm `meta`), then two real calls."""
    out = {"arm": name}
    if name == "meta":
        try:
            out["meta_s"] = compile_from_meta(shape)
        except Exception as exc:  # noqa: BLE001 - what fails is the finding
            out["meta_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    x = torch.randn(shape, device="cuda")
    torch.cuda.synchronize()
    out["calls_s"] = []
    for _ in range(2):
        began = time.perf_counter()
        got = forward(x, x)
        torch.cuda.synchronize()
        out["calls_s"].append(time.perf_counter() - began)
    out["correct"] = bool(torch.allclose(got, (2 * x).sum(dim=1) * 2, rtol=1e-3, atol=1e-1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=24576)
    parser.add_argument("--arm", choices=("cold", "meta"), help=argparse.SUPPRESS)  # one arm, in this process
    parser.add_argument("--json", type=str, default="")
    args = parser.parse_args()
    shape = (args.rows, args.cols)
    if not torch.cuda.is_available():
        print("compile_ahead_bench: needs a CUDA GPU (Triton's compiler; the CPU only interprets)", file=sys.stderr)
        return 2
    if args.arm:
        print(json.dumps(arm(args.arm, shape)), flush=True)
        return 0
    results = {}
    for name in ("cold", "meta"):
        with tempfile.TemporaryDirectory() as cache:
            done = subprocess.run(
                [sys.executable, __file__, "--arm", name, "--rows", str(args.rows), "--cols", str(args.cols)],
                capture_output=True,
                text=True,
                env=dict(os.environ, TRITON_CACHE_DIR=cache),
            )
        if done.returncode != 0:
            print(f"{name}: failed: {done.stderr.strip()[-500:]}", flush=True)
            return 1
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
        r = results[name]
        meta = f"meta pass {r['meta_s']:.3f} s, " if "meta_s" in r else r.get("meta_error", "")
        calls = ", ".join(f"{s:.3f}" for s in r["calls_s"])
        print(f"{name}: {meta}real calls {calls} s; correct {r['correct']}", flush=True)
    first = results["cold"]["calls_s"][0] / results["meta"]["calls_s"][0]
    print(f"first real call, cold / after the meta pass: {first:.1f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": shape, "arms": results, "first_call_ratio": first}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
