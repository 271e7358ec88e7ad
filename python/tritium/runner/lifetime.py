"""No orphans: a runner or worker whose parent dies (Ctrl-C, kill -9 of the caller) dies too.

The parent kills the process group on timeouts and at exit, but a parent killed outright cannot;
Linux's parent-death signal covers that case.
"""

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
