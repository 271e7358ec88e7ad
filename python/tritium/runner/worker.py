"""One forked worker per request: whatever the request does, the runner survives it."""

import json
import os
import sys
import tempfile

from .lifetime import die_with_parent

OUTPUT_TAIL_CHARS = 4000


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _encode(result: dict) -> bytes:
    try:
        return json.dumps(result, allow_nan=False, default=str).encode("utf-8")
    except ValueError as exc:
        return json.dumps({"ok": False, "stage": "runner", "error": f"answer is not JSON: {exc}"}).encode("utf-8")


def _child(handler, request: dict, result_fd: int, output_fd: int) -> None:
    """Runs in the forked process; never returns."""
    try:
        die_with_parent()
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        # The parent's sys.stdout may not be fd 1 (an embedding host, pytest): point both at it.
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        try:
            result = handler(request)
        except BaseException as exc:  # noqa: BLE001 - the worker must always answer
            result = {"ok": False, "stage": "runner", "error": f"runner error: {type(exc).__name__}: {exc}"}
        data = _encode(result)
        sys.stdout.flush()
        sys.stderr.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view):]
    finally:
        os._exit(0)


def _tail(output) -> str:
    output.seek(0, os.SEEK_END)
    size = output.tell()
    output.seek(max(0, size - OUTPUT_TAIL_CHARS))
    return output.read().decode("utf-8", errors="replace")


def run_in_worker(handler, request: dict) -> dict:
    """handler(request) in a forked child; a child that dies without answering is reported."""
    with tempfile.TemporaryFile() as output:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(handler, request, write_fd, output.fileno())
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        try:
            result = json.loads(data) if data else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            result = {
                "ok": False,
                "stage": "crash",
                "error": f"the task's process died without an answer ({_describe_status(status)})",
            }
        result["output_tail"] = _tail(output)
        return result
