"""timing.warm_up_calls: the warm-up holds as many outputs at once as the timed calls will (their
kept spot outputs), so that no timed call allocates its output from the device (runner/timing.py)."""

import weakref

import torch

from tritium.runner import timing


class _CallsOnTheCpu:
    """Timer.call's contract on the CPU (the real one records CUDA events): (output, ms, ...)."""

    def __init__(self):
        self.alive_at_call = []
        self.outputs = []

    def call(self, fn, inputs):
        self.alive_at_call.append(sum(ref() is not None for ref in self.outputs))
        out = fn(*inputs)
        self.outputs.append(weakref.ref(out))
        return out, 2.0 + len(self.outputs), 0.0, 0.0, 0.0


def _run(keep):
    timer = _CallsOnTheCpu()
    calls = timing.warm_up_calls(timer, lambda x: x * 2, lambda j: [torch.full((4,), float(j))], keep=keep)
    return timer, calls


def test_the_warm_up_holds_as_many_outputs_as_the_timed_calls_keep_then_none():
    timer, calls = _run(keep=2)
    assert timer.alive_at_call == [0, 1, 2]  # the third call runs beside two held outputs, as after two spots
    assert all(ref() is None for ref in timer.outputs)  # all freed: blocks the allocator keeps for the timed calls
    assert calls == timing.planned_calls(3.0)  # planned from the quickest warm-up call


def test_more_outputs_kept_than_warm_up_calls_makes_more_calls():
    timer, _ = _run(keep=timing.WARMUP_CALLS + 1)
    assert timer.alive_at_call == list(range(timing.WARMUP_CALLS + 2))


def test_without_kept_outputs_nothing_is_held():
    timer, _ = _run(keep=0)
    assert timer.alive_at_call == [0] * timing.WARMUP_CALLS
