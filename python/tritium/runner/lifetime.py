"""No orphans: a runner or worker whose parent dies (Ctrl-C, kill -9 of the caller) dies too.

The parent kills the process group on timeouts and at exit, but a parent killed outright cannot;
Linux's parent-death signal covers that case.
"""

import ctypes
import os
import signal
import sys

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
