"""Escape attempts against the run-time sandbox, with the static verifier off so that the sandbox
stands alone (tests/fixtures/escape/: each returns the right answer only when its escape worked).
They run as the engine's own uid (root in CI) and, through as_user.py, as an ordinary user:
none may be `correct`, nothing may be written outside, no connection may leave, and nothing
they start may outlive their verdict."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

import tritium

ESCAPES = FIXTURES / "escape"
TASK = FIXTURES / "runtime" / "tasks" / "tiny_relu.py"
ORDINARY_UID = 65534
EVALUATE = """
import json, sys
import tritium
items = json.load(open(sys.argv[1]))
engine = tritium.Engine(device=sys.argv[3], jobs=2, timeout_s=60, static_check=False)
json.dump(engine.evaluate(items), open(sys.argv[2], "w"))
"""


class Listener:
    """A TCP listener on the host's loopback that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def batch(marker: str, port: int) -> list[dict]:
    items = []
    for path in sorted(ESCAPES.glob("*.py")):
        code = path.read_text().replace("__MARKER__", marker).replace("__LISTEN_PORT__", str(port))
        code = code.replace("__HOST_PID__", str(os.getpid()))
        items.append({"id": path.name, "task": TASK.read_text(), "task_id": "tiny_relu", "code": code})
    return items


def outside_paths(marker: str) -> list[Path]:
    package = Path(tritium.__file__).parent
    return [package / "runner" / marker, package / marker, ROOT / marker, Path("/tmp") / marker, Path("/usr") / marker]


def alive_with(marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(entry)
        except OSError:
            pass
    return found


def evaluate_as_user(items: list[dict], device: str = "cpu") -> list[dict]:
    """The same batch, evaluated by an engine running as an ordinary user."""
    scratch = Path(tempfile.mkdtemp(prefix="tritium-as-user-", dir="/tmp"))
    try:
        scratch.chmod(0o777)
        (scratch / "items.json").write_text(json.dumps(items))
        env = {**os.environ, "HOME": str(scratch), "TMPDIR": str(scratch)}
        done = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).with_name("as_user.py")),
                str(ORDINARY_UID),
                "--",
                sys.executable,
                "-c",
                EVALUATE,
                str(scratch / "items.json"),
                str(scratch / "out.json"),
                device,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads((scratch / "out.json").read_text())
    finally:
        subprocess.run(["rm", "-rf", str(scratch)])


@pytest.fixture(scope="module", params=["engine's uid", "ordinary user"])
def escape_run(request):
    if request.param == "ordinary user" and os.geteuid() != 0:
        pytest.skip("already an ordinary user: the first run was the one")
    marker = f"tritium-escape-{uuid.uuid4().hex}"
    listener = Listener()
    bystander = tritium.Engine(device="cpu", jobs=1)  # another engine's work directory in /tmp
    items = batch(marker, listener.port)
    if request.param == "ordinary user":
        verdicts = evaluate_as_user(items)
    else:
        verdicts = tritium.Engine(device="cpu", jobs=2, timeout_s=60, static_check=False).evaluate(items)
    del bystander
    yield {"verdicts": {v["candidate_id"]: v for v in verdicts}, "marker": marker, "listener": listener}
    listener.sock.close()


@pytest.mark.parametrize("name", sorted(p.name for p in ESCAPES.glob("*.py")))
def test_no_escape_is_judged_correct(escape_run, name):
    verdict = escape_run["verdicts"][name]
    assert verdict["status"] != "correct", verdict["stderr_tail"][-2000:]
    assert verdict["status"] == "runtime_error" and "contained:" in verdict["message"], verdict["message"]


def test_nothing_is_written_outside_the_candidates_directory(escape_run):
    assert [p for p in outside_paths(escape_run["marker"]) if p.exists()] == []


def test_no_connection_leaves_the_sandbox(escape_run):
    assert escape_run["listener"].accepted == 0


def test_nothing_the_candidates_started_is_left_running(escape_run):
    assert alive_with(escape_run["marker"]) == []


def test_no_file_of_the_host_reaches_the_verdict(escape_run):
    tail = escape_run["verdicts"]["read_host_files.py"]["stderr_tail"]
    assert "root:x:0:0" not in tail and "sandbox:x:" in tail


def test_every_verdict_says_what_the_sandbox_applied(escape_run):
    for verdict in escape_run["verdicts"].values():
        sandbox = verdict["sandbox"]
        assert sandbox["root"] == "private" and sandbox["seccomp"] == "on", sandbox
        assert "no capabilities" in sandbox["user"] and not verdict["unsafe"]


UNISOLATED = """
import json, sys
import tritium
try:
    tritium.Engine(device="cpu", jobs=1)
    refused = None
except RuntimeError as exc:
    refused = str(exc)
engine = tritium.Engine(device="cpu", jobs=1, static_check=False, unsafe_sandbox=True)
(verdict,) = engine.evaluate([json.load(open(sys.argv[1]))])
print(json.dumps({"refused": refused, "verdict": verdict}))
"""


def test_an_engine_that_cannot_isolate_refuses_to_start_unless_told(tmp_path):
    # Root of a user namespace in which no other uid is mapped: the engine takes itself for root,
    # and the switch to a slot's uid fails, as it would in a container that maps only root.
    honest = {"task": TASK.read_text(), "code": (FIXTURES / "runtime" / "honest_relu.py").read_text()}
    (tmp_path / "item.json").write_text(json.dumps(honest))
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-c", UNISOLATED, str(tmp_path / "item.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["refused"] and "--unsafe-sandbox" in result["refused"] and "\n" not in result["refused"]
    verdict = result["verdict"]
    assert verdict["unsafe"] and verdict["sandbox"]["unsafe"], verdict["sandbox"]
    assert verdict["status"] == "correct", verdict["message"]


MULTITHREADED = """
import sys, threading, time
from tritium.runner import sandbox
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
report = {}
sandbox._isolate(report)
print(report.get("pid_namespace", False), "|", sandbox._unshare_error())
"""


def test_a_failed_unshare_says_how_many_threads_the_caller_had():
    """A user namespace needs a single-threaded caller: an ordinary user's worker with a second
    thread gets EINVAL, and the message names the thread count (what an ordinary user's engine on
    the H200 met, 2026-12-01, unexplained then)."""
    if os.geteuid() != 0:
        pytest.skip("as_user.py needs root to switch to an ordinary user")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("as_user.py")), str(ORDINARY_UID), "--"]
        + [sys.executable, "-c", MULTITHREADED],
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    isolated, message = done.stdout.strip().splitlines()[-1].split(" | ")
    assert isolated == "False"
    assert message.startswith("Invalid argument (through a user namespace; this process has 2 thread(s); "), message
    assert "max_user_namespaces=" in message, message  # what the kernel allows, the other causes of EINVAL
