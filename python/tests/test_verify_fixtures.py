"""The verifier against the adversarial suite: every cheat flagged with its expected rules and
status, every honest candidate (the examples and the honest variants) with zero error findings."""

import pathlib

import pytest
from conftest import EXAMPLE_SOLUTIONS, FIXTURES

import tritium

CHEATS = sorted((FIXTURES / "verify" / "cheats").glob("*.py"))
HONEST = sorted((FIXTURES / "verify" / "honest").glob("*.py")) + sorted(EXAMPLE_SOLUTIONS.rglob("*.py"))


def headers(path: pathlib.Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(":")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_the_suite_is_big_enough():
    assert len(CHEATS) >= 50
    assert len(HONEST) >= 30


@pytest.mark.parametrize("path", CHEATS, ids=[p.stem for p in CHEATS])
def test_cheat_is_flagged(path):
    expected = headers(path)
    verdict = tritium.verify(path.read_text())
    errors = {f["rule"] for f in verdict["findings"] if f["severity"] == "error"}
    missing = set(expected.get("expect", [])) - errors
    assert not missing, f"missing {missing}; got {verdict['findings']}"
    assert verdict["status"] == expected["expect-status"][0], verdict


def task_source_for(path: pathlib.Path) -> str:
    """The task a candidate answers: its `# task:` header, or the example task at the same path."""
    from conftest import EXAMPLE_TASKS

    task = headers(path).get("task")
    relative = task[0] if task else path.relative_to(EXAMPLE_SOLUTIONS).with_suffix("").as_posix()
    return (EXAMPLE_TASKS / f"{relative}.py").read_text()


@pytest.mark.parametrize("path", HONEST, ids=[p.stem for p in HONEST])
def test_honest_candidate_is_valid(path):
    verdict = tritium.verify(path.read_text(), task_source=task_source_for(path))
    errors = [f for f in verdict["findings"] if f["severity"] == "error"]
    assert verdict["status"] == "valid" and not errors, errors


def test_a_response_is_extracted_then_verified():
    code = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()
    response = f"<think>Plan: one elementwise kernel.</think>\n```python\n{code}```\n"
    assert tritium.verify(response=response)["status"] == "valid"
    assert tritium.verify(response="I cannot help with that.")["findings"][0]["rule"] == "syntax.no_code"


def test_extract_gives_plan_and_code_spans():
    response = "<think>tile it</think>\n```python\nclass ModelNew: pass\n```\n"
    out = tritium.extract(response)
    b, e = out["code_span"]
    assert response.encode()[b:e].decode() == out["code"] == "class ModelNew: pass\n"
    assert out["plan"] == "tile it"


def test_with_the_task_the_signatures_must_match():
    from conftest import EXAMPLE_TASKS

    task = (EXAMPLE_TASKS / "level1" / "09_matmul.py").read_text()
    solution = (EXAMPLE_SOLUTIONS / "level1" / "09_matmul.py").read_text()
    assert tritium.verify(solution, task_source=task)["status"] == "valid"
    renamed = solution.replace("def forward(self, A: torch.Tensor, B", "def forward(self, X: torch.Tensor, Y", 1)
    assert renamed != solution and tritium.verify(renamed, task_source=task)["status"] == "valid"
    wrong = solution.replace("def forward(self, A: torch.Tensor, B: torch.Tensor)", "def forward(self, A)", 1)
    assert wrong != solution
    verdict = tritium.verify(wrong, task_source=task)
    assert verdict["status"] == "invalid_functionality"
    assert [f["rule"] for f in verdict["findings"]] == ["func.signature_mismatch"]
