"""One forked worker per request: whatever the request does, the runner survives it. (Or, for a
comparer's trusted work, the request served in the runner itself: serve_in_process.)

The worker leads its own session (so its own process group), so a timeout kills it and everything it
started, and the scheduler's autogroups share the CPU between sessions, not processes: a fork bomb
in one slot cannot starve the candidates of the others. What it prints goes through a pipe of which
the runner keeps only the tail, so flooding costs no disk.
A request with a "sandbox" spec is run inside sandbox.enter() (namespaces, rlimits, own dir).
"""

import faulthandler
import functools
import gc
import json
import os
import selectors
import signal
import sys
import time

from . import sandbox
from .channel import CandidateEnd
from .lifetime import die_with_parent

OUTPUT_TAIL_BYTES = 4000
_REAP_GRACE_S = 0.5  # after the worker exits, how long its pipes may still deliver
_STACKS_BEFORE_S = 3.0  # a worker's stacks are written this long before its timeout
_stacks_armed = False  # in this process (a forked worker starts with the runner's False)
_TEARDOWN_WAIT_S = 10.0  # how long a killed group (a fork bomb: a thousand processes) may take to go
_ANSWER_MARGIN_S = 2.0  # of a worker's time limit, kept for its answer after its before-exit work
_LAST_WORK_UNTIMED_S = 30.0  # what a worker without a time limit gives its last work
_before_exit = []  # in a worker: what to do once its request is served (before_exit)
_in_worker = False  # this process is a forked worker (a runner serving in process is not)


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return (
            f"signal {sig} ({signal.Signals(sig).name})"
            if sig in signal.Signals._value2member_map_
            else f"signal {sig}"
        )
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _encode(result: dict) -> bytes:
    try:
        return json.dumps(result, allow_nan=False, default=str).encode("utf-8")
    except ValueError as exc:
        return json.dumps({"ok": False, "stage": "runner", "error": f"answer is not JSON: {exc}"}).encode("utf-8")


def _close_inherited(keep: int) -> None:
    """Stdin from /dev/null, and every socket and pipe but stdout, stderr and `keep` closed: the
    runner's channel to the engine above all, through which a candidate could otherwise answer for
    the runner. Other descriptors stay: NVML, initialised in the runner before it forked (torch
    counts devices through it), keeps using the GPU's device files and what else it opened."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if null != 0:
        os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd == keep:
            continue
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(("socket:", "pipe:")):
                os.close(fd)
        except OSError:
            pass  # the descriptor listdir itself used, gone already


def before_exit(fn) -> None:
    """Has this worker call fn(seconds) once its request is served, before it answers: its last work,
    such as ending its CUDA context under a share of the GPU lock (tasks.make_context), given at most
    `seconds`. A dict it returns is added to the answer's phases_ms. Nothing in a process that is
    not a forked worker (a comparer serving its slot's jobs itself keeps its context for the next)."""
    if _in_worker:
        _before_exit.append(fn)


def _last_work(result, timeout_s: float | None, forked_at: float) -> None:
    while _before_exit:
        fn = _before_exit.pop()
        left = timeout_s - (time.perf_counter() - forked_at) if timeout_s else _LAST_WORK_UNTIMED_S
        try:
            done = fn(max(0.0, left - _ANSWER_MARGIN_S))
        except BaseException as exc:  # noqa: BLE001 - the request's answer stands; say what failed
            print(f"tritium: a worker's last work failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            done = {"before_exit_failed": 1}  # phases are numbers
        # A reference timing's answer carries its phases in its "timing".
        phases = (
            result.get("phases_ms", (result.get("timing") or {}).get("phases_ms")) if isinstance(result, dict) else None
        )
        if isinstance(done, dict) and isinstance(phases, dict):
            phases.update(done)


def _runner_error(exc: BaseException) -> dict:
    """The answer for a request whose handler raised: the runner's failure, not the task's."""
    return {"ok": False, "stage": "runner", "error": f"runner error: {type(exc).__name__}: {exc}"}


def _child(handler, request: dict, result_fd: int, output_fd: int, timeout_s: float | None) -> None:
    """Runs in the forked process; never returns."""
    global _in_worker
    me = os.getpid()
    try:
        die_with_parent()
        _in_worker = True
        _before_exit.clear()  # registered in the process that forked this one: not this worker's
        os.setsid()
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        _close_inherited(result_fd)
        # The parent's sys.stdout may not be fd 1 (an embedding host, pytest): point both at it.
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        try:
            # The candidate's end, through the engine's /proc, which the sandbox hides. Only the
            # candidate's: a comparer opens its own in compare.py, and one holding the worker's ends
            # too would keep them open past the worker's death, and bind the worker's socket again.
            if request.get("op") == "evaluate" and request.get("channel"):
                request["channel_end"] = CandidateEnd(request["channel"])
            stacks = functools.partial(_stacks_before_timeout, timeout_s, request["forked_at"])
            if request.get("sandbox"):  # returns in a child (the namespace's PID 1), which arms `stacks`
                request["sandbox_report"] = sandbox.enter(request["sandbox"], request.get("device", "cpu"), stacks)
            stacks()
            result = handler(request)
        except BaseException as exc:  # noqa: BLE001 - the worker must always answer
            result = _runner_error(exc)
        # The sandbox's own PID 1 answers, also when entering failed after it was made.
        me = sandbox.answering_pid(me)
        if os.getpid() != me:  # a process the request forked came back here: it must not answer
            os._exit(0)
        _last_work(result, timeout_s, request["forked_at"])
        data = _encode(result)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view) :]
    finally:
        os._exit(0)


def _stacks_before_timeout(timeout_s: float | None, forked_at: float) -> None:
    """Where a worker that overruns is stuck: its threads' stacks, written to its output (the tail
    that the timeout's verdict carries) shortly before the timeout. Armed once, in the process that
    runs the request (a watchdog thread does not survive a fork)."""
    global _stacks_armed
    if _stacks_armed or not timeout_s:
        return
    _stacks_armed = True
    left = timeout_s - (time.perf_counter() - forked_at)
    if left > 2 * _STACKS_BEFORE_S:
        faulthandler.dump_traceback_later(left - _STACKS_BEFORE_S, exit=False)


class _Collector:
    """Reads the result pipe fully and the output pipe into a bounded tail."""

    def __init__(self, result_fd: int, output_fd: int):
        self.result = bytearray()
        self.tail = bytearray()
        self.selector = selectors.DefaultSelector()
        for fd in (result_fd, output_fd):
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ)
        self.result_fd = result_fd

    def pump(self, timeout: float) -> bool:
        """Reads what is ready; False once both pipes are closed."""
        for key, _ in self.selector.select(timeout):
            try:
                chunk = os.read(key.fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                self.selector.unregister(key.fd)
                os.close(key.fd)
            elif key.fd == self.result_fd:
                self.result += chunk
            else:
                self.tail = (self.tail + chunk)[-OUTPUT_TAIL_BYTES:]
        return bool(self.selector.get_map())

    def close(self) -> None:
        for fd in list(self.selector.get_map()):
            self.selector.unregister(fd)
            os.close(fd)


def _kill_group(pid: int) -> None:
    """Kills the worker's group (none is left once the worker and all it started are gone)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _await_teardown(pid: int) -> None:
    """Waits until no process of the worker's group is left (the kernel tears a killed PID
    namespace down asynchronously), so the slot's next candidate does not share the CPU with the
    remains of this one."""
    deadline = time.monotonic() + _TEARDOWN_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except OSError:
            return
        time.sleep(0.01)


def _wait(pid: int, collector: _Collector, deadline: float | None) -> tuple[int | None, bool]:
    """Pumps the pipes until the worker is gone; (wait status, timed out)."""
    status, exited_at = None, None
    while True:
        now = time.monotonic()
        if deadline is not None and now > deadline and status is None:
            os.kill(pid, signal.SIGKILL)  # not yet reaped, so still ours, even before its setsid
            _kill_group(pid)
            return os.waitpid(pid, 0)[1], True
        open_pipes = collector.pump(0.05)
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, exited_at = st, now
        # Descendants that escaped may keep the pipes open: stop shortly after the worker exits.
        if status is not None and (not open_pipes or now - exited_at > _REAP_GRACE_S):
            return status, False


def serve_in_process(handler, request: dict) -> tuple[dict, bool]:
    """handler(request) in this process, for trusted work that gains from what the process keeps
    (a comparer's CUDA context: made once per slot instead of once per job). (answer, whether the
    process may serve another request): not after a CUDA error, which sticks to the context, nor
    when the handler could not let go of what it held (its answer says "released": false)."""
    request["forked_at"] = time.perf_counter()
    try:
        result = handler(request)
    except BaseException as exc:  # noqa: BLE001 - the runner must always answer
        result = _runner_error(exc)
    healthy = result.get("released", True) is not False
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        try:
            torch.cuda.synchronize()
            gc.collect()
            torch.cuda.empty_cache()
            # The next job's measured peak starts from what is held now, not from this job's cache:
            # a small matmul's comparer after a GPU-size job's reported 16 GiB.
            torch.cuda.reset_peak_memory_stats()
        except Exception:  # noqa: BLE001 - a fault from this job's work: the context is lost
            healthy = False
    result["output_tail"] = ""
    return result, healthy


def run_in_worker(handler, request: dict, timeout_s: float | None = None) -> dict:
    """handler(request) in a forked child; a child that dies or overruns is reported."""
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    request["forked_at"] = time.perf_counter()  # the worker's start-up is one of its phases
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.close(out_read)
        _child(handler, request, write_fd, out_write, timeout_s)
    os.close(write_fd)
    os.close(out_write)
    collector = _Collector(read_fd, out_read)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        status, timed_out = _wait(pid, collector, deadline)
        _kill_group(pid)  # anything the worker left behind
        _await_teardown(pid)
    finally:
        collector.close()
    result = None
    if timed_out:
        result = {"ok": False, "stage": "timeout", "error": f"no answer within {timeout_s:g} s; the worker was killed"}
    else:
        try:
            result = json.loads(bytes(collector.result)) if collector.result else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            result = {
                "ok": False,
                "stage": "crash",
                "error": f"the worker process died without an answer ({_describe_status(status)})",
            }
    result["output_tail"] = collector.tail.decode("utf-8", errors="replace")
    return result
