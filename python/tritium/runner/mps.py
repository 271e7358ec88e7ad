"""The keeper of an engine's MPS control daemon: python -m tritium.runner.mps DIR --parent-pid PID.

On a GPU the engine's trusted runners (references, comparers) put their CUDA work through NVIDIA's
Multi-Process Service, so that all of it runs in one GPU context: the GPU time-slices between the
contexts of different processes, and the trusted half of every running job was a context of its
own (docs/engine.md, "MPS"). Candidates never connect: a fault in any MPS client ends every client
on that GPU, and a candidate must harm no job but its own.

This process starts `nvidia-cuda-mps-control -f` with its pipe and log directories under DIR (in
the engine's work directory, hidden from candidates), so no other CUDA program on the machine finds
it. It lives as long as the engine: when the engine ends, however it ends (the parent-death
signal), the daemon is told to quit, which ends its server, and whatever is left of this process
group is killed. Exit status 3: no daemon on this machine (the engine then runs without MPS).
"""

import argparse
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1
_QUIT_WAIT_S = 5.0
CONTROL = "nvidia-cuda-mps-control"


def pipe_directory(directory: str) -> str:
    """Where the daemon listens: its clients' CUDA_MPS_PIPE_DIRECTORY."""
    return os.path.join(directory, "pipe")


def environment(directory: str) -> dict:
    """The daemon's environment."""
    return {
        **os.environ,
        "CUDA_MPS_PIPE_DIRECTORY": pipe_directory(directory),
        "CUDA_MPS_LOG_DIRECTORY": os.path.join(directory, "log"),
    }


def _quit(env: dict, control: subprocess.Popen) -> None:
    """Asks the daemon to quit (it ends its server first), then kills what is left of the group."""
    try:
        subprocess.run([CONTROL], input=b"quit\n", env=env, timeout=_QUIT_WAIT_S, capture_output=True)
        control.wait(timeout=_QUIT_WAIT_S)
    except (OSError, subprocess.SubprocessError):
        pass
    os.killpg(0, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tritium.runner.mps")
    parser.add_argument("directory")
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args()
    # SIGTERM, not SIGKILL, on the parent's death: the daemon must be told to quit, or its server
    # (not necessarily in this process group) could outlive it.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != args.parent_pid:
        return 1
    if shutil.which(CONTROL) is None:
        print(f"{CONTROL} is not on PATH", flush=True)
        return 3
    env = environment(args.directory)
    for name in ("pipe", "log"):
        os.makedirs(os.path.join(args.directory, name), mode=0o700, exist_ok=True)
    control = subprocess.Popen([CONTROL, "-f"], env=env, stdin=subprocess.DEVNULL)
    signal.signal(signal.SIGTERM, lambda *_: (_quit(env, control), sys.exit(0)))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the engine's Ctrl-C reaches its group, not this one
    while control.poll() is None:
        if os.getppid() != args.parent_pid:  # the parent died before the signal was armed
            _quit(env, control)
        time.sleep(0.5)
    print(f"{CONTROL} exited ({control.returncode})", flush=True)
    return 4


if __name__ == "__main__":
    sys.exit(main())
