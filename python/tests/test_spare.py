"""Spare workers (runner/spare.py): forked before their request, prepared for it, then handed it.
In-process with the runner's own pieces, and end to end through the engine on the CPU (real
sandboxes and channels: the candidate's ends are opened by the runner and handed over)."""

import os
import time

import pytest
from test_engine import item

import tritium
from tritium.runner.spare import Spares
from tritium.runner.worker import run_in_worker


def _echo(request: dict) -> dict:
    return {"ok": True, "pid": os.getpid(), "value": request.get("value"), "phases_ms": {}}


HANDLERS = {"echo": _echo}
SPEC = {"op": "echo", "device": "cpu"}


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie not yet reaped by its parent is gone too
        return f.read().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.fixture
def spares():
    made = Spares(HANDLERS)
    yield made
    made.close()


def test_a_spare_answers_the_request_it_was_made_for(spares):
    spares.make(SPEC)
    pid = spares.spare.pid
    spare = spares.take({"op": "echo", "device": "cpu", "value": 7})
    assert spare is not None and spares.spare is None
    answer = run_in_worker(_echo, {"op": "echo", "device": "cpu", "value": 7}, 10, spare)
    assert answer["ok"] and answer["value"] == 7
    assert answer["pid"] == pid  # forked before the request, not for it
    assert {"warm.sandbox", "warm.prepare", "warm.late"} <= set(answer["phases_ms"])


def test_a_spare_made_for_another_request_is_ended_and_the_request_gets_its_own_worker(spares):
    spares.make(SPEC)
    pid = spares.spare.pid
    request = {"op": "echo", "device": "cuda:1", "value": 1}
    assert spares.take(request) is None and spares.spare is None
    assert _gone(pid)
    answer = run_in_worker(_echo, request, 10, None)
    assert answer["ok"] and answer["pid"] != pid and "warm.prepare" not in answer["phases_ms"]


def test_a_spare_for_the_next_request_is_kept_while_another_is_served_apart(spares):
    spares.make(SPEC)
    pid = spares.spare.pid
    assert spares.take({"op": "echo", "device": "cuda:1", "warm": SPEC}) is None  # a retry on another device
    assert spares.spare is not None and spares.spare.pid == pid and not _gone(pid)
    spares.make(SPEC)  # asked again for the same: the same spare
    assert spares.spare.pid == pid


def test_the_next_spare_is_forked_while_the_current_request_runs(spares):
    def slow(request):
        time.sleep(0.5)
        return _echo(request)

    request = {"op": "echo", "device": "cpu", "warm": SPEC}
    answer = run_in_worker(slow, request, 10, spares.take(request), lambda: spares.make(request["warm"]))
    assert answer["ok"] and spares.spare is not None
    assert spares.spare.pid != answer["pid"] and not _gone(spares.spare.pid)


def test_a_spare_that_died_is_not_handed_a_request(spares):
    spares.make(SPEC)
    pid = spares.spare.pid
    os.kill(pid, 9)
    time.sleep(0.2)
    assert spares.take({"op": "echo", "device": "cpu"}) is None


def test_a_spare_let_go_unused_exits(spares):
    spares.make(SPEC)
    pid = spares.spare.pid
    spares.close()
    assert _gone(pid)


@pytest.mark.parametrize("warm", [True, False])
def test_the_engine_judges_alike_with_and_without_spares(warm):
    """A slot's jobs after its first run in spares, sandboxed as its first: same verdicts, same
    sandbox; with warm_workers off every job's worker is forked for it."""
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, seed=3, warm_workers=warm)
    verdicts = engine.evaluate([item("honest_relu.py", id=f"relu {k}", rerun=True) for k in range(3)])
    assert [v["status"] for v in verdicts] == ["correct"] * 3
    served = ["warm.prepare" in v["phases_ms"] for v in verdicts]
    assert served == ([False, True, True] if warm else [False] * 3)  # on the CPU the first is forked for its job
    # The same sandbox; the address space's limit counts from what each worker maps, which differs
    # by a thread's malloc arena (64 MiB of addresses) with the moment its watchdog thread starts.
    spaces = [v["sandbox"]["rlimits"].pop("as") for v in verdicts]
    assert max(spaces) - min(spaces) <= 128 << 20 and min(spaces) > 1 << 30
    assert verdicts[1]["sandbox"] == verdicts[0]["sandbox"] == verdicts[2]["sandbox"]
    assert verdicts[2]["sandbox"]["seccomp"] == "on" and verdicts[2]["sandbox"]["pid_namespace"]
    compared = ["compare.warm.prepare" in v["phases_ms"] for v in verdicts]
    assert compared == ([False, True, True] if warm else [False] * 3)
