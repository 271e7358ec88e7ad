"""Entry point: python -m tritium.runner --channel-fd FD [--device cpu|cuda] [--role ...].

A runner has one role: `reference` runs task code only (checks and reference outputs: the trusted
side), `candidate` runs candidates only, each in a sandboxed worker, and `comparer` compares one
slot's candidates' outputs with the task's, job after job in its own process, whose CUDA context is
made once: a context costs about 2 s of a small job's 4-5 s when many are made at once
(docs/engine.md). It exits after a job that leaves its context or memory in doubt; the engine
starts another.
"""

import argparse
import contextlib
import os
import socket
import sys
import time

from .lifetime import die_with_parent


def _resolve_device(device: str) -> str:
    """ "auto" becomes cuda when torch sees a GPU. Sets the environment before triton loads: on the
    CPU, kernels run under Triton's interpreter."""
    # Ask NVML, not the CUDA driver: a driver initialised here would be unusable in forked workers.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    os.environ["TRITON_INTERPRET"] = "1" if device == "cpu" else "0"
    return device


def _since_start_ms() -> float | None:
    """Milliseconds since this process started (its start time in /proc, in clock ticks); None
    where /proc does not tell."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return (uptime - ticks / os.sysconf("SC_CLK_TCK")) * 1000
    except (OSError, ValueError, IndexError):
        return None


def _hello(device: str, startup_ms: dict) -> dict:
    """The runner's versions and devices, and where its start went (`startup_ms`: the interpreter's
    start, its imports before the hello, the role's set-up among them unless --light-first, the device
    count)."""
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    counting = time.perf_counter()
    devices = torch.cuda.device_count() if device.startswith("cuda") and torch.cuda.is_available() else 0
    startup_ms["device_count"] = (time.perf_counter() - counting) * 1000
    if device.startswith("cuda") and not devices:
        return {"ok": False, "error": f"--device {device}, but torch {torch.__version__} sees no CUDA device"}
    return {
        "ok": True,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": triton_version,
        "pid": os.getpid(),
        "device": "cuda" if device.startswith("cuda") else "cpu",
        "cuda_devices": devices,
        "startup_ms": startup_ms,
    }


def _device_info(request: dict) -> dict:
    import torch

    from . import timing

    index = torch.device(request.get("device", "cuda:0")).index or 0
    props = torch.cuda.get_device_properties(index)
    # The GPU itself, whatever index CUDA_VISIBLE_DEVICES gives it: engines name its lock after it.
    uuid = getattr(props, "uuid", None)
    free, _ = torch.cuda.mem_get_info(index)
    return {
        "ok": True,
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "memory_gb": props.total_memory / 2**30,
        "free_gb": free / 2**30,
        "uuid": timing.lock_name(uuid),
    }


def _sandbox_probe(request: dict) -> dict:
    """Runs in a worker that has entered a candidate's sandbox (the engine's start-up check)."""
    return {"ok": True, "sandbox": request.get("sandbox_report")}


# What a reference runner started with --light-first serves before its role's set-up: an engine's
# creation asks its first runner only these, and waits for their answers.
LIGHT_OPS = {"device_info": _device_info, "sandbox_probe": _sandbox_probe}


def _role_handlers(role: str, warm_compile: bool) -> dict:
    """The role's handlers, its modules imported and warmed up once here, not in every forked worker."""
    if role == "candidate":
        from .candidate import evaluate, warm_up

        warm_up()
        return {"evaluate": evaluate}
    if role == "comparer":
        from .compare import compare
        from .reference import warm_up

        warm_up()
        return {"compare": compare}
    from . import reference
    from .compare import compare
    from .tasks import check_task
    from .trace import trace_task

    reference.warm_up()
    if warm_compile:
        reference.warm_compile()
    return {
        "check_task": check_task,
        "trace_task": trace_task,
        "reference": reference.reference,
        "compare": compare,
        "footprint": reference.footprint,
        "time_reference": reference.time_reference,
        **LIGHT_OPS,
    }


def set_up(roles: tuple[str, ...], warm_compile: bool, took_ms: dict | None = None) -> dict:
    """The last of `roles`' handlers, every role's modules imported (and Inductor for the reference
    role with `warm_compile`). Done before the hello; with --light-first, after it and the light
    requests (LIGHT_OPS) that an engine's creation makes: it waited for its first runner's hello,
    which these imports held back (6.2 s of a 9.5-s creation, H100 2026-12-07). Triton's key of its
    build is computed in a thread beside the imports: reading and hashing libtriton (500 MB) waits
    on the disk or in hashlib, both outside the GIL, and a cold disk made it seconds. `took_ms`
    gets the ms of each step (the key's in its thread)."""
    from .lifetime import beside
    from .phases import phase
    from .triton_driver import warm_cache_key

    with contextlib.suppress(ImportError):  # every module the key's walk imports, imported before the thread starts
        import triton.language  # noqa: F401
    took_ms = {} if took_ms is None else took_ms

    def key() -> None:
        with phase(took_ms, "triton_key"):
            warm_cache_key()

    handlers = {}
    with beside(key, "triton-key"):
        for role in roles:
            with phase(took_ms, role):
                handlers = _role_handlers(role, warm_compile and role == "reference")
    return handlers


def serve(channel: socket.socket, device: str, role: str, options: dict, startup_ms: dict, began: float) -> int:
    """Says hello on `channel`, then answers its requests until it closes. `options`: threads,
    warm_compile, light_first (the command line's flags); `began`: when the runner's imports began."""
    import torch  # the hello's, counted with the runner's own imports

    from . import protocol
    from .worker import run_in_worker, serve_in_process

    if options.get("threads", 0) > 0:
        torch.set_num_threads(options["threads"])
    warm_compile = bool(options.get("warm_compile"))
    seed = None
    if role == "candidate" and device.startswith("cuda"):  # built beside the role's set-up
        from .triton_driver import DriverSeed

        seed = options.get("driver_seed") or DriverSeed()
    light_first = bool(options.get("light_first")) and role == "reference"
    handlers = None if light_first else set_up((role,), warm_compile)
    startup_ms["imports"] = (time.perf_counter() - began) * 1000
    hello = _hello(device, startup_ms)
    protocol.write_frame(channel, hello)
    if not hello["ok"]:
        return 1
    while (request := protocol.read_frame(channel)) is not None:
        op = request.get("op")
        if handlers is None and op not in LIGHT_OPS:
            handlers = set_up((role,), warm_compile)
        handler = (handlers if handlers is not None else LIGHT_OPS).get(op)
        healthy = True
        if handler is None:
            answer = {
                "ok": False,
                "stage": "runner",
                "error": f"op {op!r} is not served by a {role} runner",
            }
        elif role == "comparer":
            answer, healthy = serve_in_process(handler, request)
            answer["runner_exits"] = not healthy  # the engine starts another for the slot's next job
        else:
            if seed is not None and seed.done():  # every worker forked from here writes it into its cache
                from . import sandbox

                sandbox.triton_seed, seed = seed.files(), None
            if op == "time_reference":  # imported once here, not in every timing's worker
                from .reference import warm_compile as import_inductor

                import_inductor()
            answer = run_in_worker(handler, request, request.get("timeout_s"))
        protocol.write_frame(channel, answer)
        if not healthy:
            break
        if handlers is None and op == "sandbox_probe":  # an engine's creation asks nothing after it
            handlers = set_up((role,), warm_compile)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tritium.runner")
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--role", choices=("reference", "candidate", "comparer"), default="reference")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads per worker (0: torch's default)")
    parser.add_argument("--parent-pid", type=int, default=0, help="the engine's pid: gone already, the runner exits")
    parser.add_argument(
        "--warm-compile", action="store_true", help="reference (or zygote): import Inductor with the role's modules"
    )
    parser.add_argument(
        "--light-first",
        action="store_true",
        help="reference: answer device_info and sandbox_probe before importing the role's modules",
    )
    parser.add_argument(
        "--zygote",
        metavar="SCRATCH",
        help="fork runners on request instead of serving one role (zygote.py); SCRATCH: a directory of its own",
    )
    startup_ms = {"interpreter": _since_start_ms()}
    began = time.perf_counter()
    args = parser.parse_args()
    die_with_parent(args.parent_pid or None)
    device = _resolve_device(args.device)
    channel = socket.socket(fileno=args.channel_fd)
    if args.zygote:
        from .zygote import Zygote

        return Zygote(channel, device, args.zygote, args.warm_compile).serve(startup_ms, began)
    options = {"threads": args.threads, "warm_compile": args.warm_compile, "light_first": args.light_first}
    return serve(channel, device, args.role, options, startup_ms, began)


if __name__ == "__main__":
    sys.exit(main())
