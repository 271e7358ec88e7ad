"""Inputs the engine chooses: seeds, distributions, modes and shape variants of the trials.

Each trial calls the task's get_inputs() under its own seed (so shapes, dtypes and integer
inputs are the task's), then redraws the floating-point tensors from the trial's distribution.
A distribution the task's domain rejects (the reference turns non-finite where it was finite on
the task's own inputs, e.g. log of a negative) falls back to its absolute value, then to the
task's own distribution; the trial records what it used.
"""

import hashlib
import random

import torch

# The task's own draw first: it defines the domain the others are checked against.
DISTRIBUTIONS = ("task", "normal", "signed_uniform", "wide")
BATCH_NAMES = ("batch_size", "batch", "N", "B")


def trial_seed(seed: int, index: int, salt: str = "trial") -> int:
    digest = hashlib.sha256(f"{seed}:{salt}:{index}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


def plan(trials: int) -> list[dict]:
    """Modes alternate so every distribution is seen in train and in eval mode."""
    return [
        {"index": i, "distribution": DISTRIBUTIONS[i % len(DISTRIBUTIONS)], "mode": "train" if i % 2 == 0 else "eval"}
        for i in range(trials)
    ]


def redraw(tensor: torch.Tensor, distribution: str, generator: torch.Generator) -> torch.Tensor:
    if not tensor.is_floating_point() or distribution == "task":
        return tensor
    shape, dtype = tensor.shape, tensor.dtype
    if distribution == "normal":
        values = torch.randn(shape, generator=generator)
    elif distribution == "signed_uniform":
        values = torch.rand(shape, generator=generator) * 4 - 2
    elif distribution == "wide":
        magnitude = torch.pow(10.0, torch.rand(shape, generator=generator) * 4 - 2)
        sign = torch.where(torch.rand(shape, generator=generator) < 0.5, -1.0, 1.0)
        values = sign * magnitude
    elif distribution.endswith("_abs"):
        values = redraw(tensor, distribution.removesuffix("_abs"), generator).abs()
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return values.to(dtype)


def draw(get_inputs, seed: int, distribution: str) -> list:
    torch.manual_seed(seed)
    inputs = get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"get_inputs() returned {type(inputs).__name__}; expected a list of inputs")
    generator = torch.Generator().manual_seed(seed ^ 0x5EED)
    return [redraw(x, distribution, generator) if isinstance(x, torch.Tensor) else x for x in inputs]


def fallbacks(distribution: str) -> list[str]:
    return [distribution] if distribution == "task" else [distribution, distribution + "_abs", "task"]


def batch_variant(module) -> tuple[str, int] | None:
    """A module-level batch size to change for a shape-variant trial, with its new value."""
    for name in BATCH_NAMES:
        value = getattr(module, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
            return name, value // 2 + 1
    return None


def fresh_source(base: list[list], seed: int, salt: str):
    """fresh(j): call j's timed inputs, new values drawn like base[j % len(base)]'s (on their device)."""
    chooser = random.Random(trial_seed(seed, 0, salt))

    def fresh(j: int) -> list:
        return fresh_like(base[j % len(base)], chooser)

    return fresh


def fresh_like(inputs: list, chooser: random.Random) -> list:
    """New values with the same shapes and value distribution: each floating tensor's elements are
    rolled by a random shift, so a timed call sees inputs it has never seen, in the task's domain.
    A roll, not a random permutation: the roll is one pass over memory inside the GPU's exclusive
    hold, a randperm a sort of every element."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            shift = chooser.randrange(1, x.numel())
            out.append(torch.roll(x.reshape(-1), shift).reshape(x.shape))
        elif isinstance(x, torch.Tensor):
            out.append(x.clone())
        else:
            out.append(x)
    return out
