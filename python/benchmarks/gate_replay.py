"""Replays an `engine_bench.py scale` run's memory reservations under another room or admission
order, without a GPU: what the suite's evaluation would take on a card with more memory (an H200's
125 GiB of room against an H100's 71), or with timings let in first.

  python python/benchmarks/gate_replay.py scale.json --rooms 70.8,125 --orders fcfs,timings-first

Each reservation keeps the size and the duration it had in the run (from the engine's
`*admitted_at`/`*released_at` stamps): the replay moves holds in time, it does not model how a
hold would stretch with more work beside it on the GPU, so it bounds from below what a larger card
gives. Its scheme is the engine's: prefetch threads compute the tasks' references in task order,
slots take the batch's items in order (a job waits for its task's reference, or computes it), timer
threads time each task once its reference is done, and one gate admits references, timings and
jobs, first come first served (`fcfs`) or timings before the rest (`timings-first`). A request
larger than the room is admitted alone.
"""

import argparse
import dataclasses
import heapq
import json


@dataclasses.dataclass(frozen=True)
class Hold:
    gib: float
    seconds: float


# Each reservation the engine stamps in a verdict's phases: its kind, the prefix of its stamps
# ("<prefix>admitted_at", "<prefix>released_at", ms since the epoch), the prefix of its process's
# own phases, and the phase that holds its size.
RESERVATIONS = (
    ("jobs", "engine.", "", "mem.job_reserved_mib"),
    ("references", "reference.engine_", "reference.", "reference.mem.reserved_mib"),
    ("timings", "reference_timing.engine_", "reference_timing.", "reference_timing.mem.reserved_mib"),
)


def reservations(phases: dict):
    """(kind, GiB, admitted ms, released ms, the prefix of its process's phases) of each
    reservation stamped in one verdict's phases (a task's reference and timing are copied into each
    of its verdicts)."""
    for kind, stamp, side, size in RESERVATIONS:
        at, end = phases.get(stamp + "admitted_at"), phases.get(stamp + "released_at")
        if at is not None and end is not None and size in phases:
            yield kind, phases[size] / 1024, at, end, side


def holds_of(items: list[dict]) -> tuple[dict, dict, list]:
    """(task -> its reference's Hold, task -> its timing's Hold, [(task, a job's Hold)] in batch
    order) from the scale benchmark's items (each with "task" and "phases_ms")."""
    refs, timings, jobs = {}, {}, []
    for item in items:
        for kind, gib, at, end, _ in reservations(item.get("phases_ms") or {}):
            hold = Hold(gib, (end - at) / 1000)
            if kind == "jobs":
                jobs.append((item["task"], hold))
            else:
                (refs if kind == "references" else timings)[item["task"]] = hold
    return refs, timings, jobs


class Replay:
    """One replay: an event queue in time and the gate's line."""

    def __init__(self, refs: dict, timings: dict, room: float, order: str):
        self.refs, self.timings, self.room, self.order = refs, timings, room, order
        self.now, self.used, self.tick = 0.0, 0.0, 0
        self.events, self.line = [], []  # (time, tick, fn); [tick, kind, gib, fn] waiting to enter
        self.ref_done, self.ref_started, self.ref_waiters = set(), set(), {}
        self.timer_line, self.ends = [], []

    def at(self, seconds: float, fn) -> None:
        self.tick += 1
        heapq.heappush(self.events, (seconds, self.tick, fn))

    def hold(self, kind: str, hold: Hold, then) -> None:
        """Enters the gate, holds for the hold's seconds, leaves, then calls `then`."""

        def admitted():
            self.at(self.now + hold.seconds, lambda: (self._leave(hold.gib), then()))

        self.tick += 1
        self.line.append([self.tick, kind, min(hold.gib, self.room), admitted])
        self._admit()

    def _leave(self, gib: float) -> None:
        self.used -= min(gib, self.room)
        self._admit()

    def _admit(self) -> None:
        while self.line:
            first = min(self.line, key=lambda w: (self.order == "timings-first" and w[1] != "timing", w[0]))
            if self.used > 0 and self.used + first[2] > self.room + 1e-9:
                return
            self.line.remove(first)
            self.used += first[2]
            first[3]()

    def reference(self, task: str, then) -> None:
        self.ref_started.add(task)

        def done():  # the engine submits the timing from the thread that computed the reference
            self.ref_done.add(task)
            self.timer_line.append(task)
            self.next_timing()
            for fn in self.ref_waiters.pop(task, []):
                fn()
            then()

        self.hold("reference", self.refs[task], done)

    def next_timing(self) -> None:
        while self.free_timers and self.timer_line:
            task = self.timer_line.pop(0)
            self.free_timers -= 1

            def done():
                self.ends.append(self.now)
                self.free_timers += 1
                self.next_timing()

            self.hold("timing", self.timings.get(task, Hold(0.0, 0.0)), done)

    def next_prefetch(self) -> None:
        while self.free_prefetch and self.queue:
            task = self.queue.pop(0)
            if task in self.ref_started:
                continue
            self.free_prefetch -= 1

            def done():
                self.free_prefetch += 1
                self.next_prefetch()

            self.reference(task, done)

    def next_job(self) -> None:
        if not self.jobs:
            return
        task, hold = self.jobs.pop(0)

        def start():
            self.hold("job", hold, lambda: (self.ends.append(self.now), self.next_job()))

        if task in self.ref_done:
            start()
        else:
            self.ref_waiters.setdefault(task, []).append(start)
            if task not in self.ref_started:
                self.reference(task, lambda: None)

    def run(self, tasks: list[str], jobs: list, slots: int, prefetch: int, timers: int) -> float:
        """The span from the first admission to the last release, in seconds."""
        self.free_timers, self.free_prefetch = timers, prefetch
        self.queue, self.jobs = list(tasks), list(jobs)
        self.next_prefetch()
        for _ in range(slots):
            self.next_job()
        while self.events:
            self.now, _, fn = heapq.heappop(self.events)
            fn()
        return max(self.ends, default=0.0)


def replay(items: list[dict], room: float, order: str = "fcfs", slots: int = 8, prefetch: int = 4, timers: int = 4):
    refs, timings, jobs = holds_of(items)
    tasks = list(dict.fromkeys(item["task"] for item in items if item["task"] in refs))
    return Replay(refs, timings, room, order).run(tasks, jobs, slots, prefetch, timers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scale_json", help="engine_bench.py scale --json FILE's output")
    parser.add_argument("--rooms", default="70.8,125", help="GiB the gate admits into, comma-separated")
    parser.add_argument("--orders", default="fcfs,timings-first")
    args = parser.parse_args()
    with open(args.scale_json) as f:
        items = json.load(f)["scale"]["items"]
    for room in (float(r) for r in args.rooms.split(",")):
        for order in args.orders.split(","):
            print(f"room {room:6.1f} GiB, {order:13}: {replay(items, room, order):5.1f} s from the first admission")


if __name__ == "__main__":
    main()
