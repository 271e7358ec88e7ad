"""timing.warm_up_calls: the warm-up holds as many outputs at once as the timed calls will (their
kept spot outputs), so that no timed call allocates its output from the device; timing.measure's
record of each call of a short timing (runner/timing.py)."""

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


class _MeasuredOnTheCpu(_CallsOnTheCpu):
    def runtimes(self, calls, trusted=False):  # stream times, as for trusted code: no CUDA calibration here
        return timing.Timer.runtimes(self, calls, trusted=True)


def test_a_short_timing_reports_each_calls_time_and_where_its_tensors_lay():
    # timing.measure's per_call: a GPU-size ReLU timed bimodally in one engine of five (H100): which
    # calls were slow, and on which input and output addresses, tells whether placement explains it.
    held = torch.zeros(1 << 16)
    spot = {0: lambda: [held], 1: lambda: [held]}  # the same input twice; their outputs are kept apart
    result = timing.measure(lambda x: x + 1, lambda j: [held], "cpu", spot=spot, calls=4, timer=_MeasuredOnTheCpu())
    calls = result["stats"]["per_call"]
    assert calls["ms"] == [3.0, 4.0, 5.0, 6.0]  # the fake timer's times, in call order
    assert len(calls["placement"]) == 4 and all(0 <= k < len(calls["placements"]) for k in calls["placement"])
    assert all(inp == held.data_ptr() for inp, _ in calls["placements"])
    # the two spot outputs are alive at once: two calls on distinct output addresses
    outputs = [calls["placements"][k][1] for k in calls["placement"]]
    assert outputs[0] != outputs[1] and set(result["spot_outputs"]) == {0, 1}


def test_a_long_timing_reports_no_calls_one_by_one():
    result = timing.measure(
        lambda x: x + 1, lambda j: [torch.zeros(4)], "cpu", calls=timing.PER_CALL_MAX + 1, timer=_MeasuredOnTheCpu()
    )
    assert "per_call" not in result["stats"] and result["stats"]["n"] == timing.PER_CALL_MAX + 1


def test_a_candidates_output_that_will_not_tell_its_address_is_recorded_as_unknown():
    class Secretive(torch.Tensor):
        def data_ptr(self):
            raise RuntimeError("no address here")

    out = torch.zeros(4).as_subclass(Secretive)
    result = timing.measure(lambda x: out, lambda j: [torch.zeros(4)], "cpu", calls=2, timer=_MeasuredOnTheCpu())
    assert all(p[1] is None for p in result["stats"]["per_call"]["placements"])
