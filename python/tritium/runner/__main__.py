"""Entry point: python -m tritium.runner --channel-fd FD [--device cpu|cuda]."""

import argparse
import os
import socket
import sys

from .lifetime import die_with_parent


def _prepare_environment(device: str) -> None:
    # Must precede any triton import: on the CPU, kernels run under Triton's interpreter.
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    # Ask NVML, not the CUDA driver: a driver initialised here would be unusable in forked workers.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


def _hello(device: str) -> dict:
    import torch

    info = {"ok": True, "python": sys.version.split()[0], "torch": torch.__version__, "pid": os.getpid()}
    if device.startswith("cuda") and not torch.cuda.is_available():
        return {"ok": False, "error": f"--device {device}, but torch {torch.__version__} sees no CUDA device"}
    return info


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tritium.runner")
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    die_with_parent()
    _prepare_environment(args.device)
    channel = socket.socket(fileno=args.channel_fd)

    from . import protocol
    from .tasks import check_task
    from .worker import run_in_worker

    handlers = {"check_task": check_task}
    hello = _hello(args.device)
    protocol.write_frame(channel, hello)
    if not hello["ok"]:
        return 1
    while (request := protocol.read_frame(channel)) is not None:
        handler = handlers.get(request.get("op"))
        if handler is None:
            answer = {"ok": False, "stage": "runner", "error": f"unknown op {request.get('op')!r}"}
        else:
            answer = run_in_worker(handler, request)
        protocol.write_frame(channel, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
