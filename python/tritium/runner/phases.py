"""Where a runner's request spent its wall time, step by step (ms): what the verdict's `phases_ms`
reports and the scale benchmark reads to find the bottleneck."""

import contextlib
import time


def add_since(phases: dict, name: str, start: float) -> None:
    """Adds the wall time since `start` (a perf_counter value) to phases[name]."""
    phases[name] = phases.get(name, 0.0) + (time.perf_counter() - start) * 1000


@contextlib.contextmanager
def phase(phases: dict, name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        add_since(phases, name, start)
