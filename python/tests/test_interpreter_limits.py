"""Known limits of Triton's CPU interpreter cost the candidate nothing: evaluated by the real engine
on the CPU, an honest kernel that runs into one gets status `error` with `interpreter_limit` (the
engine could not judge it there) and is not cached, while a wrong kernel that fails with the same
message keeps its runtime_error (tests/fixtures/interpreter_limits/README.md)."""

import pytest
from conftest import EXAMPLE_TASKS, FIXTURES

import tritium

LIMITS = FIXTURES / "interpreter_limits"
TASK = EXAMPLE_TASKS / "level1" / "01_relu.py"
HONEST = ("autotune_two_configs.py", "constexpr_module_alias.py", "constexpr_language_alias.py")
WRONG = ("arange_runtime_bound.py", "raises_driver_message.py")


def item(name: str) -> dict:
    return {"id": name, "task": TASK.read_text(), "task_id": "level1/01_relu", "code": (LIMITS / name).read_text()}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Each candidate evaluated twice by one engine with a verdict cache: (first, second)."""
    cache = tmp_path_factory.mktemp("cache") / "verdicts.sqlite"
    engine = tritium.Engine(device="cpu", jobs=2, timeout_s=120, static_check=False, cache=str(cache))
    items = [item(name) for name in HONEST + WRONG]
    first = {v["candidate_id"]: v for v in engine.evaluate(items)}
    second = {v["candidate_id"]: v for v in engine.evaluate(items)}
    return first, second


@pytest.mark.parametrize("name", HONEST)
def test_an_honest_kernel_on_an_interpreter_limit_gets_error_not_runtime_error(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict["status"] == "error", (verdict["message"], verdict["stderr_tail"][-500:])
    assert verdict["interpreter_limit"] is True
    assert [f["rule"] for f in verdict["findings"]] == ["eval.interpreter_limit"]
    assert "interpreter limit" in verdict["message"] and "not the candidate's fault" in verdict["message"]


def test_each_limit_is_named_in_the_message(verdicts):
    assert "GPU driver" in verdicts[0]["autotune_two_configs.py"]["message"]
    assert "`BLOCK: tl_alias.constexpr`" in verdicts[0]["constexpr_module_alias.py"]["message"]
    assert "`BLOCK: language.constexpr`" in verdicts[0]["constexpr_language_alias.py"]["message"]


@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_kernel_failing_with_the_same_message_keeps_runtime_error(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict["status"] == "runtime_error", verdict["message"]
    assert verdict["interpreter_limit"] is False
    assert "eval.interpreter_limit" not in {f["rule"] for f in verdict["findings"]}


def test_the_markers_are_the_same_messages(verdicts):
    """The near misses really do fail with the messages the limits give: only where Triton raised
    them tells the two apart."""
    first = verdicts[0]
    assert "arange's arguments must be of type tl.constexpr" in first["constexpr_module_alias.py"]["message"]
    assert "arange's arguments must be of type tl.constexpr" in first["arange_runtime_bound.py"]["message"]
    assert "0 active drivers" in first["autotune_two_configs.py"]["message"]
    assert "0 active drivers" in first["raises_driver_message.py"]["message"]


def test_an_interpreter_limit_verdict_is_not_cached(verdicts):
    first, second = verdicts
    for name in HONEST:
        assert not second[name]["cache_hit"] and second[name]["status"] == "error", name
    for name in WRONG:
        assert second[name]["cache_hit"] and second[name]["status"] == first[name]["status"], name


@pytest.mark.parametrize("name", HONEST)
def test_the_honest_ones_pass_the_static_check(name):
    code = (LIMITS / name).read_text()
    assert tritium.verify(code, task_source=TASK.read_text())["status"] == "valid"
