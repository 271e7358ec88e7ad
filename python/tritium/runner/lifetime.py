"""No orphans: a runner or worker whose parent dies (Ctrl-C, kill -9 of the caller) dies too.

The parent kills the process group on timeouts and at exit, but a parent killed outright cannot;
Linux's parent-death signal covers that case. And no thread outlives the step it serves: a
process that forks (runners, the zygote) must have none running then.
"""

import contextlib
import ctypes
import os
import signal
import sys
import threading

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Arms the parent-death signal; exits at once if the parent (`parent`, or the one there is
    now) is already gone: a process started by exec arms it only once Python has started."""
    if not sys.platform.startswith("linux"):
        return
    parent = parent or os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


@contextlib.contextmanager
def beside(fn, name: str):
    """Runs `fn` in a thread while the with block runs, and joins it at the block's end: work that
    waits outside the GIL (reading and hashing files) overlaps the block's imports, and no thread is
    left when the process forks."""
    thread = threading.Thread(target=fn, name=name)
    thread.start()
    try:
        yield
    finally:
        thread.join()
