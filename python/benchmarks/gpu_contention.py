"""What N busy CUDA contexts cost each other, against the same work on N streams of one context.

The engine's GPU work comes from many processes at once: each job's candidate worker and its
comparer, the trusted runners computing and timing references. A GPU time-slices between the
contexts of different processes, while the streams of one context run side by side. Each of N
workers does ROUNDS rounds of: redraw a 1 GiB tensor, clamp it into another, synchronize, then
TINY tiny kernels each followed by a synchronize (the waits the engine's per-set and per-chunk
steps make). Printed per N: the median round and tiny synchronize in N processes and in N streams
of one process, side by side, and their ratio.

    python gpu_contention.py [--workers 1,8,16]

Needs a CUDA GPU. Measured: docs/results/2026-12-04-engine-contention.md.
"""

import argparse
import multiprocessing as mp
import statistics
import threading
import time

import torch

ROUNDS, TINY = 20, 10
ELEMENTS = 1 << 28  # 1 GiB of float32


def work(stream: torch.cuda.Stream, out: list) -> None:
    """One worker's rounds on `stream`; appends (median round ms, median tiny synchronize ms)."""
    with torch.cuda.stream(stream):
        x = torch.empty(ELEMENTS, device="cuda")
        y = torch.empty_like(x)
        s = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        rounds, tiny = [], []
        for _ in range(ROUNDS):
            began = time.perf_counter()
            x.normal_()
            torch.clamp(x, min=0, out=y)
            stream.synchronize()
            for _ in range(TINY):
                waited = time.perf_counter()
                s.add_(1)
                stream.synchronize()
                tiny.append((time.perf_counter() - waited) * 1e3)
            rounds.append((time.perf_counter() - began) * 1e3)
    out.append((statistics.median(rounds), statistics.median(tiny)))


def _process(barrier, queue) -> None:
    torch.zeros(1, device="cuda")  # the context, before the others start working
    barrier.wait()
    out: list = []
    work(torch.cuda.current_stream(), out)
    queue.put(out[0])


def in_processes(n: int) -> list[tuple[float, float]]:
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_process, args=(barrier, queue), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        return [queue.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()


def in_streams(n: int) -> list[tuple[float, float]]:
    out: list = []
    threads = [threading.Thread(target=work, args=(torch.cuda.Stream(), out)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,8,16", help="comma-separated worker counts")
    args = parser.parse_args()
    torch.zeros(1, device="cuda")
    print(
        f"{'N':>3} {'round, processes':>17} {'round, streams':>15} {'ratio':>6} {'sync, processes':>16} "
        f"{'sync, streams':>14} {'ratio':>6}"
    )
    for n in (int(w) for w in args.workers.split(",")):
        procs, streams = in_processes(n), in_streams(n)
        rp, rs = statistics.median(r for r, _ in procs), statistics.median(r for r, _ in streams)
        sp, ss = statistics.median(s for _, s in procs), statistics.median(s for _, s in streams)
        print(
            f"{n:3} {rp:14.1f} ms {rs:12.1f} ms {rp / rs:5.2f}x {sp:13.3f} ms {ss:11.3f} ms {sp / ss:5.2f}x", flush=True
        )


if __name__ == "__main__":
    main()
