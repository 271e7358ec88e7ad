"""What N busy CUDA contexts cost each other, against the same work on N streams of one context.

The engine's GPU work comes from many processes at once: each job's candidate worker and its
comparer, the trusted runners computing and timing references. A GPU time-slices between the
contexts of different processes, while the streams of one context run side by side. Each of N
workers does ROUNDS rounds of: redraw a 1 GiB tensor, clamp it into another, synchronize, then
TINY tiny kernels each followed by a synchronize (the waits the engine's per-set and per-chunk
steps make). Printed per N: the median round and tiny synchronize in N processes and in N streams
of one process, side by side, and their ratio.

    python gpu_contention.py [--workers 1,8,16] [--jobs 8]

--jobs N also runs N engine-like jobs, each two workers (a candidate and its trusted comparer), as
2N processes (the engine now) and as N processes beside N streams of one process (the trusted
sides in one process): what putting them in one process would gain, before it is built.

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


def in_processes(n: int, streams: int = 0) -> tuple[list, list]:
    """N workers as N processes; with `streams`, that many more as streams of this process, all
    starting together: (the processes' results, the streams' results)."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(n + (1 if streams else 0)), ctx.Queue()
    procs = [ctx.Process(target=_process, args=(barrier, queue), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        if streams:
            barrier.wait(timeout=120)
        beside = in_streams(streams) if streams else []
        return [queue.get(timeout=120) for _ in procs], beside
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
    parser.add_argument("--workers", default="1,8,16", help="comma-separated worker counts (empty: none)")
    parser.add_argument("--jobs", default="", help="also N engine-like jobs: 2N processes against N beside N streams")
    args = parser.parse_args()
    torch.zeros(1, device="cuda")
    if args.workers:
        print(
            f"{'N':>3} {'round, processes':>17} {'round, streams':>15} {'ratio':>6} {'sync, processes':>16} "
            f"{'sync, streams':>14} {'ratio':>6}"
        )
    for n in (int(w) for w in args.workers.split(",") if w):
        procs, streams = in_processes(n)[0], in_streams(n)
        rp, rs = statistics.median(r for r, _ in procs), statistics.median(r for r, _ in streams)
        sp, ss = statistics.median(s for _, s in procs), statistics.median(s for _, s in streams)
        print(
            f"{n:3} {rp:14.1f} ms {rs:12.1f} ms {rp / rs:5.2f}x {sp:13.3f} ms {ss:11.3f} ms {sp / ss:5.2f}x", flush=True
        )

    if args.jobs:
        engine_like(int(args.jobs))


def engine_like(n: int) -> None:
    """N jobs of two sides each (a candidate and its trusted comparer doing the same work): as 2N
    processes, as the engine runs them now, against N processes beside N streams of one trusted
    process (one context for every job's trusted side)."""
    now = [r for r, _ in in_processes(2 * n)[0]]
    candidates, trusted = in_processes(n, streams=n)
    one = [r for r, _ in candidates + trusted]
    print(
        f"{n} jobs: round {statistics.median(now):.1f} ms as {2 * n} processes; "
        f"{statistics.median(one):.1f} ms as {n} processes beside {n} streams of one process "
        f"(candidates {statistics.median(r for r, _ in candidates):.1f} ms, trusted "
        f"{statistics.median(r for r, _ in trusted):.1f} ms): {statistics.median(now) / statistics.median(one):.2f}x",
        flush=True,
    )


if __name__ == "__main__":
    main()
