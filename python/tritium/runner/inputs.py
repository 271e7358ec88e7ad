"""Inputs the engine chooses: seeds, distributions, modes and shape variants of the trials.

Each trial calls the task's get_inputs() under its own seed (so shapes, dtypes and integer
inputs are the task's), then redraws the floating-point tensors from the trial's distribution.
A distribution the task's domain rejects (the reference turns non-finite where it was finite on
the task's own inputs, e.g. log of a negative) falls back to its absolute value, then to the
task's own distribution; the trial records what it used.
"""

import collections
import hashlib
import math
import random
import sys

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


def redraw(tensor: torch.Tensor, distribution: str, generator: torch.Generator, alone: bool = False) -> torch.Tensor:
    """`tensor`'s values drawn again from `distribution`, written into the tensor itself when it is
    `alone` (no other input shares its memory) and owns all of it: the task's draw and the new one
    then never coexist, nor do temporaries of its size (drawn out of place, a 6 GiB "wide" set held
    four sets at once, and every process making GPU-size inputs peaked at about twice what the
    engine reserved for it, H200 2026-12-04). Otherwise (a view, shared memory, requires grad) the
    values go to a fresh tensor."""
    if not tensor.is_floating_point() or distribution == "task":
        return tensor
    values = (
        tensor
        if alone and _owns_memory(tensor)
        else torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    )
    _fill(values, distribution, generator)
    return values


def _owns_memory(tensor: torch.Tensor) -> bool:
    return (
        not tensor.requires_grad
        and tensor.is_contiguous()
        and tensor.storage_offset() == 0
        and tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size()
    )


def _fill(values: torch.Tensor, distribution: str, generator: torch.Generator) -> None:
    if distribution == "normal":
        values.normal_(generator=generator)
    elif distribution == "signed_uniform":
        values.uniform_(-2, 2, generator=generator)
    elif distribution == "wide":  # sign x 10^U[-2, 2): one byte of scratch per element for the sign
        values.uniform_(-2, 2, generator=generator).mul_(math.log(10.0)).exp_()
        sign = torch.empty(values.shape, dtype=torch.int8, device=values.device).random_(0, 2, generator=generator)
        values.mul_(sign.mul_(2).sub_(1))
    elif distribution.endswith("_abs"):
        _fill(values, distribution.removesuffix("_abs"), generator)
        values.abs_()
    else:
        raise ValueError(f"unknown distribution {distribution!r}")


def _seed_everything(seed: int) -> None:
    """Seeds every generator a get_inputs() may draw from: each process must draw the same."""
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def draw(get_inputs, seed: int, distribution: str, device: str = "cpu") -> list:
    """The task's inputs under `seed`, floating tensors redrawn from `distribution`, on `device`.
    Made on the device itself (get_inputs() under it as the default device): a 6.4 GB tensor drawn
    on the host and copied over takes seconds, on an H200 milliseconds. The same seed, device type
    and code give the same values in every process, which is how the reference, the comparer and
    the candidate's worker agree on a trial's inputs without passing them."""
    _seed_everything(seed)
    with torch.device(device):
        inputs = get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"get_inputs() returned {type(inputs).__name__}; expected a list of inputs")
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    generator = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)
    memory = collections.Counter(x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor))
    return [
        redraw(x, distribution, generator, alone=memory[x.untyped_storage().data_ptr()] == 1)
        if isinstance(x, torch.Tensor)
        else x
        for x in inputs
    ]


def planned(trial: dict) -> dict:
    """The spec that makes a planned trial's inputs (trial_values) from its entry in the plan."""
    return {
        "index": int(trial["index"]),
        "mode": trial["mode"],
        "distribution": trial["distribution"],
        "variant": trial.get("variant_spec"),
    }


def trial_values(module, spec: dict, seed: int, device: str) -> list:
    """Trial `spec`'s inputs ({"index", "distribution", "variant": [name, value] or None}), as
    every process that needs them makes them: the module's batch size set to the variant's for
    the draw only."""
    get_inputs = module.get_inputs
    variant = spec.get("variant")
    s = trial_seed(seed, spec["index"])
    if not variant:
        return draw(get_inputs, s, spec["distribution"], device)
    name, value = variant
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        return draw(get_inputs, s, spec["distribution"], device)
    finally:
        setattr(module, name, saved)


def fallbacks(distribution: str) -> list[str]:
    return [distribution] if distribution == "task" else [distribution, distribution + "_abs", "task"]


def batch_variant(module) -> tuple[str, int] | None:
    """A module-level batch size to change for a shape-variant trial, with its new value."""
    for name in BATCH_NAMES:
        value = getattr(module, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
            return name, value // 2 + 1
    return None


def fresh_source(module, seed: int, salt: str, device: str):
    """fresh(j): timed call j's inputs, the task's own draw (get_inputs(), its distribution) under a
    seed of their own, salted apart from every planned set's, made on the device when asked for.
    A timed call thus sees inputs it has never seen, in the task's domain, and no input set stays
    resident between calls: an earlier version rolled three spot sets kept on the device (19 GB
    for a 4096 x 393216 task), which kept GPU-size jobs from running side by side."""

    def fresh(j: int) -> list:
        return draw(module.get_inputs, trial_seed(seed, j, salt), "task", device)

    return fresh


def identical(a, b) -> bool:
    """The same input: tensors of one shape and dtype with equal elements (NaN where NaN)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) and a == b
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if torch.equal(a, b):
        return True
    return a.is_floating_point() and torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0), b.nan_to_num(0))
