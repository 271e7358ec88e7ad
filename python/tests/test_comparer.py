"""A slot's comparer serves its jobs in one process (runner role `comparer`), whose CUDA context is
made once; after a job that leaves the process in doubt it ends, and the engine starts another."""

import os
import signal
import sys
import time

from test_engine import RUNTIME, item

import tritium
from tritium.runner.worker import serve_in_process


def comparer_pids() -> list[int]:
    """This process's comparer runners (the engine runs in it): its children started with the role
    comparer, or forked by its zygote (its child), which names them."""
    found, parents = [], {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                name, rest = f.read().split("(", 1)[1].rsplit(")", 1)
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        parents[int(entry)] = int(rest.split()[1])
        role = args[args.index(b"--role") + 1] if b"--role" in args else None
        if role == b"comparer" or name == "tritium-cmp":
            found.append(int(entry))
    return [pid for pid in found if os.getpid() in (parents[pid], parents.get(parents[pid]))]


def test_a_request_served_in_process_answers_from_this_process():
    answer, healthy = serve_in_process(lambda r: {"ok": True, "pid": os.getpid(), "seen": r["x"]}, {"x": 3})
    assert answer["ok"] and answer["pid"] == os.getpid() and answer["seen"] == 3 and healthy


def test_a_handler_that_could_not_let_go_ends_the_process_after_answering():
    answer, healthy = serve_in_process(lambda r: {"ok": True, "released": False}, {})
    assert answer["ok"] and not healthy


def test_a_handler_that_raises_is_answered_and_the_process_serves_on():
    def broken(request):
        raise ValueError("the comparer's own bug")

    answer, healthy = serve_in_process(broken, {})
    assert not answer["ok"] and answer["stage"] == "runner" and "the comparer's own bug" in answer["error"]
    assert healthy  # nothing on a device was touched


def test_one_comparer_process_serves_the_slots_jobs_and_a_killed_one_is_replaced():
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, seed=5)
    wrong, honest = item("wrong_kernel.py"), item("honest_relu.py")
    first = engine.evaluate([honest, wrong])
    (pid,) = comparer_pids()
    held = len(os.listdir(f"/proc/{pid}/fd"))
    again = engine.evaluate(
        [{**honest, "id": f"again {k}", "rerun": True} for k in range(3)] + [{**wrong, "rerun": True}]
    )
    assert [v["status"] for v in first] == ["correct", "incorrect"]
    assert [v["status"] for v in again] == ["correct"] * 3 + ["incorrect"]
    assert comparer_pids() == [pid]  # the same process judged all six
    assert len(os.listdir(f"/proc/{pid}/fd")) == held  # each job's channel let go
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    (after,) = engine.evaluate([{**honest, "id": "after the kill", "rerun": True}])
    assert after["status"] == "correct", after["message"]
    (replacement,) = comparer_pids()
    assert replacement != pid


def test_a_task_that_changes_torchs_defaults_at_import_does_not_change_the_next_comparison():
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, seed=5)
    changer = item("honest_relu.py", task=RUNTIME / "tasks" / "default_dtype_at_import.py", id="the changer")
    verdicts = engine.evaluate([changer, item("honest_relu.py", id="next")])
    assert len(comparer_pids()) == 1  # one process compared both
    assert verdicts[1]["status"] == "correct", verdicts[1]["message"]


# The runners' interpreter, as the engine starts it (`python -m tritium.runner ...`), with the
# comparer's end made unable to let go of its buffer: every comparer must then exit after its job.
HOLDING_PYTHON = """#!/bin/sh
exec {python} -c '
import runpy, sys
from tritium.runner.channel import ComparerEnd
close = ComparerEnd.close
ComparerEnd.close = lambda self: close(self) and False
sys.argv = ["tritium.runner"] + sys.argv[3:]
runpy.run_module("tritium.runner", run_name="__main__", alter_sys=True)
' "$@"
"""


def test_a_comparer_that_cannot_let_go_exits_and_the_next_job_gets_another(tmp_path):
    python = tmp_path / "python"
    python.write_text(HOLDING_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, seed=5, python=str(python))
    verdicts = engine.evaluate([item("honest_relu.py", id=f"relu {k}", rerun=True) for k in range(3)])
    assert [v["status"] for v in verdicts] == ["correct"] * 3, [v["message"] for v in verdicts]
    assert comparer_pids() == []  # each exited after its job; the engine started one for the next


def test_forked_comparers_judge_alike():
    engine = tritium.Engine(device="cpu", jobs=1, static_check=False, seed=5, fork_comparers=True)
    verdicts = engine.evaluate([item("honest_relu.py"), item("wrong_kernel.py")])
    assert [v["status"] for v in verdicts] == ["correct", "incorrect"]
    assert comparer_pids() == []  # its runners are trusted ones, forking a worker per job
