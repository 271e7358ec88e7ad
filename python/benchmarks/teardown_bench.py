"""Does another process's GPU memory work slow a kernel timed alone on the GPU? (GPU only.)

    python python/benchmarks/teardown_bench.py [--seconds 8] [--gib 24]

Why (docs/engine.md, "Not yet"): honest kernels timed under the engine's exclusive hold of the GPU
lock sometimes run 10-20% over do_bench in half their calls, with no CUDA context made during the
hold. Processes that hold no share do no kernels, but they still map, free and tear down device
memory: a worker that exits frees its context and tens of GiB outside the lock. Here one process
times a memory-bound kernel (a 6.4 GB elementwise multiply) call by call with CUDA events, while
other processes, in turn: do nothing (quiet), allocate and fill `--gib` GiB then exit (exits),
allocate and free it in a loop without exiting (frees), or only make a context and exit (contexts).
It prints each phase's call times against the quiet phase's median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time

import torch

DISTURBERS = {
    "exits": (
        "import torch,sys; x=torch.empty(int(sys.argv[1])<<28, device='cuda'); x.fill_(1); torch.cuda.synchronize()"
    ),
    "frees": (
        "import torch,sys,time\nend=time.time()+float(sys.argv[2])\nwhile time.time()<end:\n"
        " x=torch.empty(int(sys.argv[1])<<28, device='cuda'); x.fill_(1); torch.cuda.synchronize(); del x;"
        " torch.cuda.empty_cache()"
    ),
    "contexts": "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()",
}


def disturb(kind: str, gib: int, seconds: float, stop: threading.Event, counts: list) -> None:
    """Runs the kind's processes back to back until `stop`; counts how many ended."""
    while not stop.is_set():
        subprocess.run([sys.executable, "-c", DISTURBERS[kind], str(gib), str(seconds)], check=False)
        counts.append(1)


def timed_calls(x: torch.Tensor, out: torch.Tensor, seconds: float) -> list[float]:
    times, end = [], time.perf_counter() + seconds
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while time.perf_counter() < end:
        start.record()
        torch.mul(x, 2.0, out=out)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--gib", type=int, default=24)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("teardown_bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    x = torch.randn(4096, 393216, device="cuda")
    out = torch.empty_like(x)
    timed_calls(x, out, 1.0)  # warm
    quiet = None
    for kind in ("quiet", "exits", "frees", "contexts", "quiet"):
        stop, counts = threading.Event(), []
        helpers = []
        if kind != "quiet":
            helpers = [
                threading.Thread(target=disturb, args=(kind, args.gib, args.seconds, stop, counts)) for _ in range(2)
            ]
            for h in helpers:
                h.start()
            time.sleep(2.0)  # the first processes past their imports
        times = timed_calls(x, out, args.seconds)
        stop.set()
        for h in helpers:
            h.join()
        median = statistics.median(times)
        quiet = quiet or median
        slow = sum(t > 1.05 * quiet for t in times) / len(times)
        q = statistics.quantiles(times, n=20)
        print(
            f"{kind:9} calls {len(times):5}  median {median:.3f} ms ({median / quiet - 1:+.1%})  p95 {q[18]:.3f}  "
            f"max {max(times):.3f}  over +5%: {slow:.1%}  processes ended {sum(counts)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
