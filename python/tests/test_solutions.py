"""Every example solution is real Triton that matches its task's reference (KernelBench-style).

Each runs under Triton's interpreter (or compiled on a GPU when TRITON_INTERPRET=0 and CUDA is
there), in eval and train mode on several seeded inputs: see reference_check.py.
"""

import pytest
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS
from reference_check import assert_matches_reference

TASK_IDS = sorted(p.relative_to(EXAMPLE_TASKS).with_suffix("").as_posix() for p in EXAMPLE_TASKS.rglob("*.py"))
TRIALS = 3


def test_every_task_has_a_solution_and_there_are_enough():
    solutions = sorted(
        p.relative_to(EXAMPLE_SOLUTIONS).with_suffix("").as_posix() for p in EXAMPLE_SOLUTIONS.rglob("*.py")
    )
    assert solutions == TASK_IDS
    assert len(TASK_IDS) >= 16


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_solution_matches_reference(task_id):
    assert_matches_reference(EXAMPLE_TASKS / f"{task_id}.py", EXAMPLE_SOLUTIONS / f"{task_id}.py", TRIALS)
