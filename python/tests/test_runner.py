"""The runner's pieces in-process: framing, forked workers, and the reference check."""

import os
import socket
import struct

import pytest
from conftest import EXAMPLE_TASKS, FIXTURES

from tritium.runner import protocol
from tritium.runner.tasks import check_task
from tritium.runner.worker import run_in_worker

BROKEN = FIXTURES / "broken_tasks"


def request_for(path, **extra):
    return {"op": "check_task", "id": path.stem, "source": path.read_text(), "filename": str(path), **extra}


@pytest.fixture
def channel():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_frames_round_trip(channel):
    a, b = channel
    protocol.write_frame(a, {"op": "check_task", "text": "é" * 1000})
    assert protocol.read_frame(b) == {"op": "check_task", "text": "é" * 1000}


def test_a_closed_channel_reads_as_none(channel):
    a, b = channel
    a.close()
    assert protocol.read_frame(b) is None


def test_a_frame_that_is_not_an_object_is_refused(channel):
    a, b = channel
    body = b"[1, 2]"
    a.sendall(struct.pack("<I", len(body)) + body)
    with pytest.raises(protocol.ProtocolError):
        protocol.read_frame(b)


def test_an_oversized_length_is_refused_before_reading(channel):
    a, b = channel
    a.sendall(struct.pack("<I", protocol.MAX_FRAME_BYTES + 1))
    with pytest.raises(protocol.ProtocolError):
        protocol.read_frame(b)


def test_check_task_describes_inputs_and_outputs():
    result = check_task(request_for(BROKEN / "ok_two_outputs.py"))
    assert result["ok"], result
    assert result["inputs"] == [{"shape": [2, 3], "dtype": "float32"}] * 2
    assert result["outputs"] == [{"shape": [2, 3], "dtype": "float32"}] * 2
    assert result["forward_ms"] >= 0


@pytest.mark.parametrize(
    "name, stage, words",
    [
        ("syntax_error", "load", "does not parse: SyntaxError"),
        ("missing_get_inputs", "load", "missing get_inputs()"),
        ("raises_in_forward", "forward", "forward raised: RuntimeError"),
        ("non_tensor_output", "output", "forward returned float"),
    ],
)
def test_check_task_names_the_stage_that_failed(name, stage, words):
    result = check_task(request_for(BROKEN / f"{name}.py"))
    assert not result["ok"]
    assert result["stage"] == stage
    assert words in result["error"]


def test_a_syntax_error_carries_its_line():
    assert check_task(request_for(BROKEN / "syntax_error.py"))["line"] == 6


def test_sys_exit_at_import_is_a_load_failure_not_an_exit():
    result = check_task({"source": "import sys\nsys.exit(4)\n", "filename": "exits.py"})
    assert result == {"ok": False, "stage": "load", "error": "failed at import: SystemExit: 4", "line": 2}


def test_a_task_that_returns_no_list_of_inputs_is_named():
    source = (
        "import torch\nclass Model(torch.nn.Module):\n  pass\n"
        "def get_inputs(): return 3\ndef get_init_inputs(): return []\n"
    )
    result = check_task({"source": source, "filename": "t.py"})
    assert result["stage"] == "inputs" and "expected a list" in result["error"]


def test_the_worker_answers_and_captures_output():
    def handler(request):
        print("hello from the worker")
        return {"ok": True, "echo": request["x"]}

    result = run_in_worker(handler, {"x": 5})
    assert result["ok"] and result["echo"] == 5
    assert "hello from the worker" in result["output_tail"]


def test_a_workers_last_work_runs_after_its_request_within_its_time_and_reports_its_phases():
    """What a worker registers with before_exit (ending its CUDA context, on a GPU) runs once the
    handler has answered, in the worker, with the time left less a margin; what it returns joins
    the answer's phases. One that raises leaves the answer standing, and says so."""
    from tritium.runner import worker

    def handler(request):
        worker.before_exit(lambda seconds: {"last_pid": os.getpid(), "budget_s": seconds})
        worker.before_exit(lambda seconds: 1 / 0)
        return {"ok": True, "pid": os.getpid(), "phases_ms": {"load": 1.0}}

    result = run_in_worker(handler, {}, timeout_s=20.0)
    phases = result["phases_ms"]
    assert result["ok"] and phases["load"] == 1.0
    assert phases["last_pid"] == result["pid"] != os.getpid()
    assert 15.0 < phases["budget_s"] <= 20.0 - worker._ANSWER_MARGIN_S
    assert phases["before_exit_failed"] == 1 and "ZeroDivisionError" in result["output_tail"]
    assert worker._before_exit == []  # nothing was registered in the caller


def test_a_process_serving_requests_itself_registers_no_last_work():
    """A comparer serves its slot's jobs in its own process, making (tasks.make_context) the same
    context again for each: nothing piles up for an exit that a later job would outlive (each
    registration would keep the job's GPU lock files open)."""
    from tritium.runner import worker

    for _ in range(3):
        worker.before_exit(lambda seconds: {})
    assert worker._before_exit == []


def test_a_reference_timings_last_work_reports_into_its_timing_phases():
    from tritium.runner import worker

    def handler(request):
        worker.before_exit(lambda seconds: {"teardown": 2.0})
        return {"ok": True, "timing": {"phases_ms": {}}}

    assert run_in_worker(handler, {})["timing"]["phases_ms"] == {"teardown": 2.0}


def test_a_worker_that_dies_is_reported_and_the_caller_survives():
    result = run_in_worker(lambda request: os._exit(9), {})
    assert result["stage"] == "crash"
    assert "exit code 9" in result["error"]


def test_a_worker_killed_by_a_signal_is_reported():
    result = run_in_worker(lambda request: os.kill(os.getpid(), 9), {})
    assert "signal 9" in result["error"]


def test_a_handler_exception_becomes_a_runner_error():
    def handler(request):
        raise ValueError("boom")

    result = run_in_worker(handler, {})
    assert result["stage"] == "runner" and "ValueError: boom" in result["error"]


def test_an_answer_that_is_not_json_is_reported():
    result = run_in_worker(lambda request: {"ok": True, "x": float("nan")}, {})
    assert result["ok"] is False and "not JSON" in result["error"]


def test_the_runner_and_its_worker_die_with_their_parent(tmp_path):
    """A caller killed outright (no chance to kill the group) leaves no runner or hung worker."""
    import signal
    import subprocess
    import sys
    import time

    pids = tmp_path / "pids"
    hang = (BROKEN / "hangs.py").resolve()
    caller = f"""
import os, socket, subprocess, sys, time
from tritium.runner import protocol
ours, theirs = socket.socketpair()
runner = subprocess.Popen([sys.executable, "-m", "tritium.runner", "--channel-fd", str(theirs.fileno())],
                          pass_fds=[theirs.fileno()], stdout=subprocess.DEVNULL)
protocol.read_frame(ours)
source = open({str(hang)!r}).read()
protocol.write_frame(ours, {{"op": "check_task", "source": source, "filename": "hangs.py"}})
time.sleep(3)
open({str(pids)!r}, "w").write(str(runner.pid))
time.sleep(600)
"""
    proc = subprocess.Popen([sys.executable, "-c", caller])
    deadline = time.time() + 120
    while not pids.exists() and time.time() < deadline:
        time.sleep(0.2)
    runner_pid = int(pids.read_text())
    children = [int(p) for p in open(f"/proc/{runner_pid}/task/{runner_pid}/children").read().split()]
    assert children, "the runner forked a worker for the hanging task"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[1][0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.time() + 20
    while any(alive(p) for p in [runner_pid, *children]) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in [runner_pid, *children])


def test_fresh_timed_inputs_are_new_draws_of_the_tasks_own_inputs():
    import types

    import torch

    from tritium.runner.inputs import fresh_source, trial_values

    task = types.SimpleNamespace(get_inputs=lambda: [torch.randn(64, 33), torch.randint(0, 9, (5,)), 3])
    fresh = fresh_source(task, seed=7, salt="fresh", device="cpu")
    calls = [fresh(j) for j in range(20)]
    for x, ints, scalar in calls:
        assert x.shape == (64, 33) and x.dtype == torch.float32 and ints.shape == (5,) and scalar == 3
    assert len({tuple(c[0].reshape(-1)[:4].tolist()) for c in calls}) == 20  # every call sees new values
    again = fresh_source(task, seed=7, salt="fresh", device="cpu")
    assert all(torch.equal(again(j)[0], calls[j][0]) for j in range(20))  # deterministic per seed
    planned = [trial_values(task, {"index": i, "distribution": "task"}, 7, "cpu")[0] for i in range(20)]
    assert not any(torch.equal(p, c[0]) for p in planned for c in calls)  # never a checked set again


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def _fork_request(zygote: socket.socket, role: str, log, light: bool = False) -> tuple[socket.socket, dict]:
    """Asks the zygote for a runner; (our end of its channel, the zygote's answer)."""
    ours, theirs = socket.socketpair()
    protocol.write_frame(zygote, {"op": "fork", "role": role, "device": "cpu", "light_first": light, "log": str(log)})
    socket.send_fds(zygote, [b"x"], [theirs.fileno()])
    theirs.close()
    return ours, protocol.read_frame(zygote)


def test_the_zygote_forks_runners_that_serve_and_die_with_it(tmp_path):
    """runner/zygote.py: one process imports torch once; the runners it forks lead their own process
    groups, serve their role, reap their workers, and end when the zygote ends, however it ends."""
    import signal
    import subprocess
    import sys
    import time

    ours, theirs = socket.socketpair()
    zygote = subprocess.Popen(
        [sys.executable, "-m", "tritium.runner", "--channel-fd", str(theirs.fileno()), "--zygote", str(tmp_path)],
        pass_fds=[theirs.fileno()],
        stdout=subprocess.DEVNULL,
    )
    theirs.close()
    try:
        assert protocol.read_frame(ours)["ok"]
        # Refused: no descriptor's worth of a request, or a role no runner has.
        channel, answer = _fork_request(ours, "trainer", tmp_path / "no.log")
        assert answer["ok"] is False and "role" in answer["error"]
        runners = []
        for role, light in (("reference", True), ("reference", False), ("candidate", False)):
            if len(runners) == 1:
                time.sleep(6)  # longer than the set-up on a 2-core machine (1.6-3.8 s)
            asked = time.perf_counter()
            channel, answer = _fork_request(ours, role, tmp_path / f"{role}.log", light)
            waited_ms = (time.perf_counter() - asked) * 1000
            assert answer["ok"], answer
            # The first fork that is not light says what every role's set-up took, and waited for
            # little of it: the set-up began right after the light fork, while this test slept.
            took = answer.get("set_up_ms")
            if len(runners) == 1:
                assert set(took) == {"triton_key", "reference", "candidate", "comparer"}, took
                assert all(ms >= 0 for ms in took.values()) and took["reference"] > 0
                assert waited_ms < took["reference"] / 2, (waited_ms, took)
            else:
                assert took is None, took
            pid = answer["pid"]
            assert os.getpgid(pid) == pid  # its own group when the zygote answers, as a spawned runner's
            hello = protocol.read_frame(channel)
            assert hello["ok"] and hello["pid"] == pid and "forked" in hello["startup_ms"]
            runners.append((pid, channel))
        # A forked reference runner answers a request in a worker, which it reaps.
        _, channel = runners[1]
        protocol.write_frame(channel, request_for(next(EXAMPLE_TASKS.glob("level1/*.py"))))
        assert protocol.read_frame(channel)["ok"] is True
        # The candidate runner refuses what its role does not serve, as a spawned one does.
        protocol.write_frame(runners[2][1], {"op": "check_task"})
        assert "not served by a candidate runner" in protocol.read_frame(runners[2][1])["error"]
        zygote.send_signal(signal.SIGKILL)
        zygote.wait()
        deadline = time.time() + 20
        while any(_alive(pid) for pid, _ in runners) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid, _ in runners)
    finally:
        zygote.kill()
        zygote.wait()
