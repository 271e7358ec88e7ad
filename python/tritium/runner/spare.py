"""Workers forked before their request: each makes its CUDA context (inside the candidate's sandbox,
for a candidate) while the slot's current job runs, then waits for its own job.

On an H100 a mid-size job took a median 4.8 s, of which two fresh CUDA contexts took about 4 s:
the candidate's worker's and its comparer's (docs/results/2026-12-05-h100-rl.md). CUDA cannot cross
a fork, and a sandbox cannot be entered once CUDA runs (a user namespace needs a single-threaded
process; the namespace's PID 1 is a forked child), so a spare enters its sandbox first, for a job
directory the engine named in advance (the previous request's "warm" spec), and makes its context
there. The channel's ends, which the engine's /proc gives and the sandbox hides, are opened by the
runner when the job comes and handed over with the request (SCM_RIGHTS).

A spare serves one request and exits, as a worker forked for the request does; what it prepared
is the only difference, and its answer says how long that took (`warm.*` phases). A spare that
does not fit the request (another directory, device, sandbox or op) is ended and the request gets a
worker forked for it; one whose sandbox could not be made answers the error such a worker would.
"""

import json
import os
import socket
import sys
import time

from . import sandbox, worker
from .channel import CandidateEnd

_HEAD = 8  # bytes of the request's length, sent with the descriptors


class Spare:
    """A worker forked ahead of its request, prepared as `spec` says."""

    def __init__(self, spec: dict, handlers: dict, triton_driver: bool):
        self.spec = spec
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        read_fd, write_fd = os.pipe()
        out_read, out_write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            parent.close()
            os.close(read_fd)
            os.close(out_read)
            _serve(spec, handlers, triton_driver, child, write_fd, out_write)
        child.close()
        os.close(write_fd)
        os.close(out_write)
        self.pid, self.socket, self.read_fd, self.output_fd = pid, parent, read_fd, out_read

    def fits(self, request: dict) -> bool:
        """Whether it was prepared for this very request (and is still there to serve it)."""
        same = all(request.get(key) == self.spec.get(key) for key in ("op", "device", "sandbox"))
        return same and self._alive()

    def _alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def hand_over(self, request: dict) -> tuple[int, int, int]:
        """Sends the request (and the candidate's channel ends); (pid, result fd, output fd), which
        are the caller's from now on, as a freshly forked worker's would be."""
        fds = CandidateEnd.descriptors(request["channel"]) if worker.has_channel(request) else []
        try:
            body = json.dumps(request).encode()
            socket.send_fds(self.socket, [len(body).to_bytes(_HEAD, "little")], fds)
            self.socket.sendall(body)
        except OSError:
            pass  # it died meanwhile: the caller reads its end and reports the crash
        finally:
            for fd in fds:
                os.close(fd)
            self.socket.close()
        return self.pid, self.read_fd, self.output_fd

    def discard(self) -> None:
        """Ends it and everything it started."""
        self.socket.close()
        worker.kill_group(self.pid)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        worker.await_teardown(self.pid)
        os.close(self.read_fd)
        os.close(self.output_fd)


class Spares:
    """A runner's spare worker: at most one, made for the request that the engine says comes next."""

    def __init__(self, handlers: dict, triton_driver: bool = False):
        self.handlers, self.triton_driver = handlers, triton_driver
        self.spare: Spare | None = None

    def take(self, request: dict) -> Spare | None:
        """The spare if it was made for `request`; otherwise kept if made for the request after it."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        if spare.fits(request):
            return spare
        if spare.spec == request.get("warm") and spare._alive():  # a request served apart (a retry)
            self.spare = spare
        else:
            spare.discard()
        return None

    def make(self, spec: dict | None) -> None:
        """A spare for the request `spec` describes (none: keep what there is)."""
        if not spec or spec.get("op") not in self.handlers:
            return
        if self.spare is not None:
            if self.spare.spec == spec:
                return
            self.spare.discard()
        self.spare = Spare(spec, self.handlers, self.triton_driver)

    def close(self) -> None:
        if self.spare is not None:
            self.spare.discard()
            self.spare = None


def _serve(spec: dict, handlers: dict, triton_driver: bool, sock: socket.socket, result_fd: int, output_fd: int):
    """The spare's life: prepare, wait for the request, answer it; never returns."""
    me = os.getpid()
    try:
        worker.begin(output_fd, {result_fd, sock.fileno()})
        failed, report, phases = None, None, {}
        began = time.perf_counter()
        try:
            if spec.get("sandbox"):
                report = sandbox.enter(spec["sandbox"], spec.get("device", "cpu"), address_limit=False)
            phases["warm.sandbox"] = (time.perf_counter() - began) * 1000
            _prepare(spec, triton_driver)
        except BaseException as exc:  # noqa: BLE001 - answered as a worker forked for the job would
            failed = worker.runner_error(exc)
        ready = time.perf_counter()
        phases["warm.prepare"] = (ready - began) * 1000
        request, fds = _receive(sock)
        if request is None:  # let go unused
            os._exit(0)
        phases["warm.late"] = max(0.0, ready - request["forked_at"]) * 1000  # the job waited for it
        result = failed or _run(handlers, request, fds, report)
        if isinstance(result.get("phases_ms"), dict):
            result["phases_ms"].update(phases)
        worker.answer(result, result_fd, me)
    finally:
        os._exit(0)


def _prepare(spec: dict, triton_driver: bool) -> None:
    """The CUDA context of the spec's device, made under a share of its GPU lock as a worker makes
    it, and Triton's driver for a candidate. A failure here is left to the job, which makes both
    again and reports what fails."""
    device = spec.get("device", "cpu")
    if not device.startswith("cuda"):
        return
    from . import triton_driver as driver
    from .tasks import make_context
    from .timing import GpuLock

    try:
        gpu = GpuLock.for_device(device, spec.get("lock_path"), spec.get("lock_wait_s"), None, spec.get("gather_s"))
        make_context(device, gpu)
        if triton_driver:
            driver.make_driver()
    except Exception:  # noqa: BLE001
        pass


def _run(handlers: dict, request: dict, fds: list[int], report: dict | None) -> dict:
    try:
        if fds:
            request["channel_end"] = CandidateEnd(request["channel"], fds)
        request["sandbox_report"] = report
        worker.stacks_before_timeout(request.get("timeout_s"), request["forked_at"])
        worker.limit_address_space(request)
        return handlers[request["op"]](request)
    except BaseException as exc:  # noqa: BLE001 - the worker must always answer
        return worker.runner_error(exc)


def _receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """The request and its descriptors; (None, []) when the runner closed the socket first."""
    head, fds, _, _ = socket.recv_fds(sock, _HEAD, 8)
    body = bytearray()
    while len(head) < _HEAD and (more := sock.recv(_HEAD - len(head))):
        head += more
    if len(head) < _HEAD:
        return None, []
    size = int.from_bytes(head, "little")
    while len(body) < size and (chunk := sock.recv(min(1 << 20, size - len(body)))):
        body += chunk
    sock.close()
    return (json.loads(body) if len(body) == size else None), fds
