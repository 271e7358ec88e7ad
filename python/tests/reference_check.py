"""Runs a candidate ModelNew against its task's reference, KernelBench-style, for the tests.

Model and ModelNew are built right after the same seed; each trial draws seeded inputs, the
candidate gets clones, must launch at least one Triton kernel (interpreted or compiled), must
match within the KernelBench fp32 tolerance, and must leave the inputs untouched.
"""

import contextlib
import os
import pathlib

import torch
import triton.runtime.interpreter as interpreter
import triton.runtime.jit as jit

from tritium.runner.tasks import load_module

ATOL = RTOL = 1e-4  # KernelBench's fp32 tolerance
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") == "0" and torch.cuda.is_available() else "cpu"


@contextlib.contextmanager
def count_launches():
    """Records every Triton kernel launch, interpreted or compiled."""
    launches = []
    patched = [(cls, cls.run) for cls in (interpreter.InterpretedFunction, jit.JITFunction)]

    def counting(original):
        def run(self, *args, **kwargs):
            launches.append(getattr(self, "__name__", "kernel"))
            return original(self, *args, **kwargs)

        return run

    for cls, original in patched:
        cls.run = counting(original)
    try:
        yield launches
    finally:
        for cls, original in patched:
            cls.run = original


def _to_device(values):
    return [v.to(DEVICE) if isinstance(v, torch.Tensor) else v for v in values]


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _clone(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def assert_matches_reference(
    task_path: pathlib.Path, candidate_path: pathlib.Path, trials: int, modes=("eval", "train")
):
    task = load_module(task_path.read_text(), str(task_path))
    candidate = load_module(candidate_path.read_text(), str(candidate_path), name="tritium_candidate")
    assert hasattr(candidate, "ModelNew"), f"{candidate_path.name}: a candidate defines ModelNew"
    init_inputs = task.get_init_inputs()
    torch.manual_seed(0)
    model = task.Model(*init_inputs).to(DEVICE)
    torch.manual_seed(0)
    model_new = candidate.ModelNew(*init_inputs).to(DEVICE)
    for mode in modes:
        getattr(model, mode)()
        getattr(model_new, mode)()
        for trial in range(trials):
            torch.manual_seed(1000 + trial)
            inputs = _to_device(task.get_inputs())
            originals = _clone(inputs)
            with torch.no_grad():
                expected = _as_tuple(model(*inputs))
                with count_launches() as launches:
                    actual = _as_tuple(model_new(*_clone(inputs)))
            assert launches, f"{candidate_path.name}: ModelNew.forward launched no Triton kernel ({mode} mode)"
            assert len(actual) == len(expected)
            for a, e in zip(actual, expected):
                assert type(a) is torch.Tensor and a.shape == e.shape and a.dtype == e.dtype
                torch.testing.assert_close(a, e, atol=ATOL, rtol=RTOL)
            for x, x0 in zip(inputs, originals):
                if isinstance(x, torch.Tensor):
                    assert torch.equal(x, x0), "the reference's inputs are untouched"
