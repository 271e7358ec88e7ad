"""Every honest verifier fixture (tests/fixtures/verify/honest/*.py) is real, correct Triton.

These are the candidates the static verifier must accept with zero error findings, so they must also
be right: each is loaded with the task named in its `# task:` header, built after the same seed as the
task's Model, run on seeded inputs under Triton's interpreter (or compiled on a GPU when
TRITON_INTERPRET=0 and CUDA is there), and must launch at least one Triton kernel and match the
reference within the KernelBench fp32 tolerance.
"""

import re

import pytest
from conftest import EXAMPLE_TASKS, FIXTURES
from reference_check import assert_matches_reference

HONEST = FIXTURES / "verify" / "honest"
HONEST_FILES = sorted(p.name for p in HONEST.glob("*.py"))
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
    assert_matches_reference(task_path, path, TRIALS, modes=("train",))
