"""Every honest verifier fixture (tests/fixtures/verify/honest/*.py) is real, correct Triton.

These are the candidates the static verifier must accept with zero error findings, so they must also
be right: each is loaded with the task named in its `# task:` header, built after the same seed as the
task's Model, run on seeded inputs under Triton's interpreter (or compiled on a GPU when
TRITON_INTERPRET=0 and CUDA is there), and must launch at least one Triton kernel and match the
reference within the KernelBench fp32 tolerance.
"""

import re

import pytest
import torch

from conftest import EXAMPLE_TASKS, FIXTURES
from test_solutions import DEVICE, _as_tuple, _to_device, count_launches
from tritium.runner.tasks import load_module

HONEST = FIXTURES / "verify" / "honest"
HONEST_FILES = sorted(p.name for p in HONEST.glob("*.py"))
ATOL = RTOL = 1e-4
TRIALS = 2
TASK_HEADER = re.compile(r"^# task: (\S+)$", re.MULTILINE)
WHY_HEADER = re.compile(r"^# why: honest variant: \S", re.MULTILINE)


def _task_id(source: str, name: str) -> str:
    found = TASK_HEADER.findall(source)
    assert len(found) == 1, f"{name}: exactly one '# task: <level>/<name>' header line"
    return found[0]


def test_there_are_enough_honest_variants_and_they_cover_every_task():
    assert len(HONEST_FILES) >= 30
    tasks = {_task_id((HONEST / name).read_text(), name) for name in HONEST_FILES}
    all_tasks = {p.relative_to(EXAMPLE_TASKS).with_suffix("").as_posix() for p in EXAMPLE_TASKS.rglob("*.py")}
    assert tasks == all_tasks


@pytest.mark.parametrize("name", HONEST_FILES)
def test_honest_variant_matches_reference(name):
    path = HONEST / name
    source = path.read_text()
    task_id = _task_id(source, name)
    assert WHY_HEADER.search(source), f"{name}: a '# why: honest variant: ...' header line"
    task_path = EXAMPLE_TASKS / f"{task_id}.py"
    assert task_path.is_file(), f"{name}: unknown task {task_id}"
    task = load_module(task_path.read_text(), str(task_path))
    candidate = load_module(source, str(path), name="tritium_candidate")

    init_inputs = task.get_init_inputs()
    torch.manual_seed(0)
    model = task.Model(*init_inputs).to(DEVICE)
    torch.manual_seed(0)
    model_new = candidate.ModelNew(*init_inputs).to(DEVICE)
    for trial in range(TRIALS):
        torch.manual_seed(1000 + trial)
        inputs = _to_device(task.get_inputs())
        with torch.no_grad():
            expected = _as_tuple(model(*inputs))
            with count_launches() as launches:
                actual = _as_tuple(model_new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
        assert launches, f"{name}: ModelNew.forward launched no Triton kernel"
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert isinstance(a, torch.Tensor) and a.shape == e.shape and a.dtype == e.dtype
            torch.testing.assert_close(a, e, atol=ATOL, rtol=RTOL)
