"""The zygote: one warm process that forks an engine's runners instead of each importing torch.

An engine on a GPU runs some 23 runners (a candidate runner and a comparer a slot, and trusted
runners for references). Started each as `python -m tritium.runner`, they imported torch, Triton,
Dynamo and Inductor side by side: the 16-core host was saturated for 5 s after the engine's
creation, and a batch's first reference started 7 s after it (H100, 2026-12-07). The zygote imports
all of that once and forks a runner per request, a copy of itself in milliseconds. It never makes a
CUDA context (a forked child could not use its parent's), as a runner never does before it forks a
worker.

Protocol (the engine's cpp/src/exec/runner.cc, class Zygote), on its channel: a request frame
{"op": "fork", "role", "device", "threads", "warm_compile", "light_first", "log"}, then one byte
carrying the new runner's channel (SCM_RIGHTS); the answer {"ok": true, "pid": N}. The runner leads
its own process group (the engine kills it as a group, as it kills a runner it started), dies with
the zygote (parent-death signal), and the zygote, which ignores SIGCHLD, never leaves it a zombie.
A runner with `light_first` (the engine's first, which answers creation's light requests) is forked
at once; the others after the imports of every role, done once: right after the light runner's
fork, while the engine's creation goes on and its caller prepares a batch, so that the batch's first
runners wait for what is left of it (the engine says how long: `fork_waited`), not
for all of it (8.4 s cold on a fresh H100, 2026-12-07, the batch's first reference held back as long).
"""

import contextlib
import ctypes
import gc
import os
import signal
import socket
import sys
import time
import traceback

from . import protocol
from .lifetime import die_with_parent

RUNNER_ROLES = ("reference", "candidate", "comparer")
RUNNER_NAMES = {"reference": "tritium-ref", "candidate": "tritium-cand", "comparer": "tritium-cmp"}
_PR_SET_NAME = 15


def _name(name: str) -> None:
    """The process's name (/proc/PID/comm, what ps and top show), at most 15 bytes."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


class Zygote:
    def __init__(self, channel: socket.socket, device: str, scratch: str, warm_compile: bool):
        self.channel, self.device, self.scratch, self.warm_compile = channel, device, scratch, warm_compile
        self.ready = False  # every role's modules imported
        self.set_up_ms = None  # what the set-up took, until the first fork after it reports it
        self.driver_seed = None  # Triton's driver module, built once for every candidate runner

    def serve(self, startup_ms: dict, began: float) -> int:
        from .__main__ import _hello

        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the runners it forks
        import torch  # noqa: F401 - the hello's; every runner needs it

        startup_ms["imports"] = (time.perf_counter() - began) * 1000
        hello = _hello(self.device, startup_ms)
        protocol.write_frame(self.channel, hello)
        if not hello["ok"]:
            return 1
        while (request := protocol.read_frame(self.channel)) is not None:
            _, fds, _, _ = socket.recv_fds(self.channel, 1, 1)
            protocol.write_frame(self.channel, self._fork(request, fds))
            if request.get("light_first"):
                self._set_up()  # ahead of the next request, which the engine makes when a batch needs a runner
        return 0

    def _fork(self, request: dict, fds: list[int]) -> dict:
        if request.get("op") != "fork" or len(fds) != 1 or request.get("role") not in RUNNER_ROLES:
            for fd in fds:
                os.close(fd)
            return {"ok": False, "error": "a zygote forks runners: op fork, a role and one descriptor"}
        set_up_ms = None
        if not request.get("light_first"):
            self._set_up()
            set_up_ms, self.set_up_ms = self.set_up_ms, None  # the first fork after it reports it
        sys.stdout.flush()
        sys.stderr.flush()
        # Its objects out of the collector's sight: a collection in a runner would otherwise write to
        # every object the zygote made (their headers), copying all its pages into each runner.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            os._exit(self._runner(request, fds[0]))
        # Its own process group before the engine hears of it (the child sets it too, whichever
        # runs first): the engine kills a runner and its workers as one group.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        os.close(fds[0])
        return {"ok": True, "pid": pid, **({"set_up_ms": set_up_ms} if set_up_ms else {})}

    def _set_up(self) -> None:
        """Every role's modules, imported and warmed up as each role's runner would (once); the ms
        of each step in `set_up_ms`."""
        if self.ready:
            return
        from .__main__ import set_up

        if self.device.startswith("cuda"):  # its build, a process of its own, beside the imports
            from .triton_driver import SharedDriverSeed

            self.driver_seed = SharedDriverSeed(os.path.join(self.scratch, "triton-driver"))
        took_ms = {}
        set_up(RUNNER_ROLES, self.warm_compile, took_ms)
        self.ready, self.set_up_ms = True, took_ms

    def _runner(self, request: dict, channel_fd: int) -> int:
        """In the forked child: becomes the runner the request describes; never returns to the zygote."""
        zygote = os.getppid()
        try:
            with contextlib.suppress(OSError):
                os.setpgid(0, 0)  # as the zygote does: whichever runs first
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a runner waits for its workers
            die_with_parent(zygote)
            self.channel.close()
            log = os.open(request.get("log") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            _name(RUNNER_NAMES[request["role"]])  # its command line is the zygote's: ps tells them apart by this
            device = str(request.get("device") or self.device)
            # As the engine's runner_environment: one hardware work queue a context on a GPU, unless
            # the caller's environment set a number (which the zygote then has).
            if device.startswith("cuda"):
                os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
            from .__main__ import serve

            options = {
                "threads": int(request.get("threads") or 0),
                "warm_compile": bool(request.get("warm_compile")),
                "light_first": bool(request.get("light_first")),
                "driver_seed": self.driver_seed,
            }
            began = time.perf_counter()
            return serve(socket.socket(fileno=channel_fd), device, request["role"], options, {"forked": 0.0}, began)
        except BaseException:  # noqa: BLE001 - a runner's failure is its own; the zygote goes on
            traceback.print_exc()
            return 1
