"""An engine's lifetime (docs/engine.md, "Lifetime"): stopped by SIGTERM or SIGINT, or killed outright,
it leaves no process and no work directory behind. Real processes on a real task, with a candidate
that sleeps in forward; each test points TMPDIR at its own directory, so the work directories it
looks for are its engines' alone."""

import fcntl
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES
from test_cli import TRITIUM

TASK = FIXTURES / "runtime" / "tasks" / "tiny_relu.py"
SLOW = FIXTURES / "lifetime" / "slow_relu.py"
HONEST = FIXTURES / "runtime" / "honest_relu.py"
ENGINE_FLAGS = ("--device", "cpu", "--jobs", "1", "--no-static", "--timeout", "300")


def _env(tmp) -> dict:
    return dict(os.environ, TMPDIR=str(tmp), TRITIUM_PYTHON=sys.executable)


def _stat(pid: int) -> tuple[int, int, str, str] | None:
    """(parent, session, state, start time) of a process, None once it is gone."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[3]), fields[0], fields[19]


def _descendants(root: int) -> dict[int, str]:
    """Every process under `root` now, with its start time (so that a reused pid is not taken for it)."""
    children: dict[int, list[int]] = {}
    starts = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))):
            children.setdefault(st[0], []).append(int(entry))
            starts[int(entry)] = st[3]
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def _alive(processes: dict[int, str]) -> list[int]:
    return [pid for pid, start in processes.items() if (st := _stat(pid)) and st[3] == start and st[2] != "Z"]


def _cmdline(pid: int) -> list[str]:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
    except OSError:
        return []


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := predicate():
            return result
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def _work_dirs(tmp) -> list:
    return sorted(tmp.glob("tritium-eval-*"))


def _comm(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def _candidate_running(proc) -> bool:
    """A candidate is in its forward, so in its sandbox: its uid changed there, which once disarmed
    its parent-death signal (stopped a moment earlier, before the sandbox, it died either way).
    slow_relu.py names its process then: its directory is read-only, its tmpfs unseen from here."""
    return any(_comm(pid) == "in_forward" for pid in _descendants(proc.pid))


def _runners(processes: dict[int, str]) -> list[int]:
    return [pid for pid in _alive(processes) if "tritium.runner" in _cmdline(pid)]


def _assert_nothing_left(processes: dict[int, str], tmp):
    _wait_for(lambda: not _alive(processes), 20, f"the processes {_alive(processes)} to end")
    _wait_for(lambda: not _work_dirs(tmp), 20, f"the work directories {_work_dirs(tmp)} to go")


def _start_eval(tmp, candidate=SLOW, command=None) -> subprocess.Popen:
    command = command or ["eval", str(TASK), str(candidate)]
    proc = subprocess.Popen(
        [TRITIUM, *command, *ENGINE_FLAGS], env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for_candidate(proc)
    return proc


def _wait_for_candidate(proc: subprocess.Popen) -> None:
    """Until the candidate is in its forward; a test that fails here kills the process it started
    (its runners die with it, by their parent-death signal) rather than leave it sleeping."""
    try:
        _wait_for(lambda: _candidate_running(proc) or proc.poll() is not None, 180, "the candidate to start")
        assert proc.poll() is None, proc.communicate()
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        raise


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_eval_ends_every_process_it_started_and_removes_its_work_directory(tmp_path, sig):
    proc = _start_eval(tmp_path)
    processes = _descendants(proc.pid)
    assert _runners(processes), "the engine's runners were found"
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -sig, stderr  # ended by the signal itself, as a shell expects
    assert f"{signal.Signals(sig).name} received; stopping" in stderr
    _assert_nothing_left(processes, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_search_ends_every_process_it_started_and_removes_its_work_directory(tmp_path, sig):
    proc = _start_eval(
        tmp_path, command=["search", "--task", str(TASK), "--candidate", str(SLOW), "--out", str(tmp_path / "search")]
    )
    processes = _descendants(proc.pid)
    assert _runners(processes)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -sig, stderr
    _assert_nothing_left(processes, tmp_path)


def test_a_killed_engine_s_guard_removes_its_work_directory(tmp_path):
    proc = _start_eval(tmp_path)
    processes = _descendants(proc.pid)
    proc.kill()
    proc.communicate()
    _assert_nothing_left(processes, tmp_path)


def test_the_next_engine_reclaims_the_directory_of_one_killed_with_its_guard(tmp_path):
    proc = _start_eval(tmp_path)
    processes = _descendants(proc.pid)
    # The guard is the child that leads its own session (runners lead only their process group).
    guards = [pid for pid in processes if (st := _stat(pid)) and st[0] == proc.pid and st[1] == pid]
    assert len(guards) == 1
    os.kill(guards[0], signal.SIGKILL)
    proc.kill()
    proc.communicate()
    _wait_for(lambda: not _alive(processes), 20, "the runners to die with their engine")
    (left,) = _work_dirs(tmp_path)
    assert (left / "lock").is_file()
    # Beside it: a directory whose owner lives (its lock held here), a dead one, and one without a
    # lock (a user's --work-dir): only the dead ones go.
    held, dead, no_lock = (tmp_path / f"tritium-eval-{name}" for name in ("held", "dead", "nolock"))
    for d in (held, dead, no_lock):
        (d / "refs").mkdir(parents=True)
        (d / "refs" / "data").write_bytes(b"x" * 1000)
    (dead / "lock").touch()
    (held / "lock").touch()
    with open(held / "lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(
            [TRITIUM, "eval", str(TASK), str(HONEST), *ENGINE_FLAGS],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert _work_dirs(tmp_path) == sorted([held, no_lock])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_server_ends_its_runners_and_removes_its_work_directory(tmp_path, sig):
    proc = subprocess.Popen(
        [TRITIUM, "serve", "--port", "0", "--tasks", str(TASK), *ENGINE_FLAGS],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert re.search(r"listening on http://", line), (line, proc.stderr.read() if proc.poll() is not None else "")
    processes = _descendants(proc.pid)
    assert _runners(processes) and _work_dirs(tmp_path)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == 0  # serve drains, then exits 0
    _assert_nothing_left(processes, tmp_path)
    assert not list(tmp_path.glob("tritium-serve-*"))


PYTHON_ENGINE = """
import pathlib, sys, tritium
engine = tritium.Engine(device="cpu", jobs=1, static_check=False, timeout_s=300)
engine.evaluate([{"task": pathlib.Path(sys.argv[1]).read_text(), "code": pathlib.Path(sys.argv[2]).read_text()}])
"""


def test_a_python_process_killed_by_sigterm_leaves_no_runner_and_no_work_directory(tmp_path):
    # SIGTERM's default action ends the interpreter without destructors: the runners die with it
    # (their parent-death signal) and the engine's guard removes the directory.
    proc = subprocess.Popen(
        [sys.executable, "-c", PYTHON_ENGINE, str(TASK), str(SLOW)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_candidate(proc)
    processes = _descendants(proc.pid)
    assert _runners(processes)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    _assert_nothing_left(processes, tmp_path)


TRAIN = """
out = "{out}"
stages = ["data"]
[data]
count = 2
difficulty = "1"
ops = "unary"
heldout = 1
device = "cpu"
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_train_ends_the_runners_of_its_in_process_engine(tmp_path, sig):
    # The data stage calls the engine in-process (no `tritium` child): its runners and work
    # directory must go with the trainer, whether stopped by SIGTERM or by Ctrl-C.
    config = tmp_path / "data.toml"
    config.write_text(TRAIN.format(out=tmp_path / "run"))
    proc = subprocess.Popen(
        [TRITIUM, "train", "--config", str(config)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: _runners(_descendants(proc.pid)) or proc.poll() is not None, 240, "the data stage's engine")
    assert proc.poll() is None, proc.communicate()
    processes = _descendants(proc.pid)
    assert not [pid for pid in processes if _cmdline(pid)[1:3] == ["data", "sft"]]  # no CLI child any more
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == -sig
    _assert_nothing_left(processes, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_bench_ends_its_model_server_and_removes_its_work_directory(tmp_path, sig):
    from tritium.train import models

    model_dir = tmp_path / "tiny"
    model, tokenizer = models.load("tiny", corpus=[TASK.read_text()])
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    proc = subprocess.Popen(
        [
            TRITIUM,
            "bench",
            "--tasks",
            str(TASK),
            "--model",
            str(model_dir),
            "--samples",
            "16",
            "--max-tokens",
            "4000",
            "--out",
            str(tmp_path / "bench"),
            *ENGINE_FLAGS,
        ],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def model_server():
        return [pid for pid in _descendants(proc.pid) if "tritium.model_server" in _cmdline(pid)]

    _wait_for(lambda: model_server() or proc.poll() is not None, 180, "the model server to start")
    assert proc.poll() is None, proc.communicate()
    processes = _descendants(proc.pid)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -sig, stderr
    _assert_nothing_left(processes, tmp_path)
