"""TensorBoard scalars of the training stages, in OUT/tensorboard (`tensorboard --logdir OUT`),
beside the console lines, and the stages' progress bars. Nested dicts become tag paths:
{"status_share": {"correct": .5}} at prefix "rl" is the scalar "rl/status_share/correct".
Without the tensorboard package it is silent."""

from __future__ import annotations

import math
import os
import pathlib


class Board:
    def __init__(self, out: str | pathlib.Path, enabled: bool = True):
        self.writer = None
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional: the console and the JSON history remain
                return
            self.writer = SummaryWriter(str(pathlib.Path(out) / "tensorboard"))

    def scalars(self, step: int, prefix: str, values: dict) -> None:
        if self.writer is None:
            return
        for key, value in values.items():
            tag = f"{prefix}/{key}"
            if isinstance(value, dict):
                self.scalars(step, tag, value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                self.writer.add_scalar(tag, value, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def progress(total: int, done: int, stage: str, enabled: bool = True):
    """A stage's progress bar over its steps, on stderr: shown where stderr is a terminal (a log
    file or CI gets the console lines alone), or always with TRITIUM_PROGRESS=1 (never with 0).
    `update(1)` per step, `set_postfix(...)` for the step's figures, `close()` at the end."""
    from tqdm.auto import tqdm  # transformers' own dependency

    forced = os.environ.get("TRITIUM_PROGRESS")
    # disable=None: tqdm asks whether stderr is a terminal.
    disable = True if not enabled else None if forced is None else forced != "1"
    return tqdm(total=total, initial=done, desc=stage, unit="step", dynamic_ncols=True, disable=disable)
