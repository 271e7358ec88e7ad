"""Every example solution is real Triton that matches its task's reference (KernelBench-style).

Each ModelNew is built right after the same seed as Model, runs under Triton's interpreter (or
compiled on a GPU when TRITON_INTERPRET=0 and CUDA is there), must launch at least one Triton kernel
during forward, and must match the reference within the KernelBench fp32 tolerance on several
seeded inputs, in eval and train mode, leaving the inputs untouched.
"""

import contextlib
import os

import pytest
import torch
import triton.runtime.interpreter as interpreter
import triton.runtime.jit as jit

from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS
from tritium.runner.tasks import load_module

TASK_IDS = sorted(p.relative_to(EXAMPLE_TASKS).with_suffix("").as_posix() for p in EXAMPLE_TASKS.rglob("*.py"))
ATOL = RTOL = 1e-4  # KernelBench's fp32 tolerance
TRIALS = 3
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") == "0" and torch.cuda.is_available() else "cpu"


def test_every_task_has_a_solution_and_there_are_enough():
    solutions = sorted(p.relative_to(EXAMPLE_SOLUTIONS).with_suffix("").as_posix() for p in EXAMPLE_SOLUTIONS.rglob("*.py"))
    assert solutions == TASK_IDS
    assert len(TASK_IDS) >= 16


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


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_solution_matches_reference(task_id):
    task_path = EXAMPLE_TASKS / f"{task_id}.py"
    solution_path = EXAMPLE_SOLUTIONS / f"{task_id}.py"
    task = load_module(task_path.read_text(), str(task_path))
    solution = load_module(solution_path.read_text(), str(solution_path), name="tritium_solution")
    assert hasattr(solution, "ModelNew"), "a solution defines ModelNew"

    init_inputs = task.get_init_inputs()
    torch.manual_seed(0)
    model = task.Model(*init_inputs).to(DEVICE)
    torch.manual_seed(0)
    model_new = solution.ModelNew(*init_inputs).to(DEVICE)
    for mode in ("eval", "train"):
        getattr(model, mode)()
        getattr(model_new, mode)()
        for trial in range(TRIALS):
            torch.manual_seed(1000 + trial)
            inputs = _to_device(task.get_inputs())
            originals = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            with torch.no_grad():
                expected = _as_tuple(model(*inputs))
                with count_launches() as launches:
                    actual = _as_tuple(model_new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            assert launches, f"{task_id}: ModelNew.forward launched no Triton kernel ({mode} mode)"
            assert len(actual) == len(expected)
            for a, e in zip(actual, expected):
                assert type(a) is torch.Tensor and a.shape == e.shape and a.dtype == e.dtype
                torch.testing.assert_close(a, e, atol=ATOL, rtol=RTOL)
            for x, x0 in zip(inputs, originals):
                if isinstance(x, torch.Tensor):
                    assert torch.equal(x, x0), "the reference's inputs are untouched"
