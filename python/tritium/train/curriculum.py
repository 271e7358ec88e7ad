"""Which tasks an RL step trains on: a curriculum over difficulty levels (a level opens once the
policy's held-out pass@1 on the highest open level reaches `promote_at`) and mixing weights
over the open levels (DRTriton's difficulty-aware data mix). See docs/training.md."""

from __future__ import annotations

import random
from collections import defaultdict


def task_level(task: dict) -> int:
    """A synthesized task's difficulty (compute ops), else its KernelBench level, else 1."""
    meta = task.get("meta") or {}
    for value in (meta.get("difficulty"), task.get("level"), meta.get("level")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1


def parse_weights(text: str) -> dict[int, float]:
    """ "1:0.5,2:0.3,3:0.2" -> {1: 0.5, 2: 0.3, 3: 0.2}; "" -> {} (equal weights)."""
    weights = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, sep, weight = part.partition(":")
        try:
            weights[int(level)] = float(weight)
        except ValueError:
            raise ValueError(f"level weights {text!r}: expected LEVEL:WEIGHT pairs, like 1:0.5,2:0.5") from None
        if not sep or weights[int(level)] < 0:
            raise ValueError(f"level weights {text!r}: each entry is LEVEL:WEIGHT with a weight >= 0")
    return weights


class Curriculum:
    """Levels open in order; `pick` draws a level among the open ones by weight, then a task."""

    def __init__(
        self, tasks: list[dict], weights: dict[int, float] | None = None, enabled: bool = True, promote_at: float = 0.5
    ):
        self.by_level: dict[int, list[dict]] = defaultdict(list)
        for t in tasks:
            self.by_level[task_level(t)].append(t)
        self.levels = sorted(self.by_level)
        if not self.levels:
            raise ValueError("the curriculum has no tasks")
        self.weights = {lv: (weights or {}).get(lv, 1.0 if not weights else 0.0) for lv in self.levels}
        if not any(self.weights.values()):
            raise ValueError(f"level weights give every level of the suite ({self.levels}) weight 0")
        self.promote_at = promote_at
        self.open = 1 if enabled else len(self.levels)  # how many levels, lowest first, are open

    @property
    def top(self) -> int:
        """The highest open level."""
        return self.levels[self.open - 1]

    def open_levels(self) -> list[int]:
        levels = self.levels[: self.open]
        # A weight-0 level stays out of the mix; when all open ones are 0, they share equally.
        return [lv for lv in levels if self.weights[lv] > 0] or levels

    def pick(self, rng: random.Random, n: int) -> list[dict]:
        levels = self.open_levels()
        weights = [self.weights[lv] if self.weights[lv] > 0 else 1.0 for lv in levels]
        return [rng.choice(self.by_level[rng.choices(levels, weights)[0]]) for _ in range(n)]

    def update(self, pass_at_1: float) -> bool:
        """Opens the next level when the top one's held-out pass@1 reaches the threshold."""
        if pass_at_1 >= self.promote_at and self.open < len(self.levels):
            self.open += 1
            return True
        return False
