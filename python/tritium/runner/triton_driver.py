"""Triton's driver in a candidate's worker on a GPU: built before the worker takes its share of the
GPU lock, from a module compiled once per runner, and launchers built outside the share.

Each worker has a private Triton cache (sandbox.py), so Triton's driver module (`cuda_utils`, which
Triton compiles from C with the host's compiler at its first use, seconds of CPU) would be compiled
again in every worker, at the candidate's first launch: inside its share of the GPU lock, where a
queued timer's drain, and every job behind the gate that timer closed, waited for it. Triton 3.6
also compiles a launcher per kernel signature at the first launch, after the compile hooks that
already let go of the share (candidate.py). So:
- the runner compiles the driver module once, in a throwaway process with a throwaway cache
  (`DriverSeed`), and keeps the cache's files in memory; every worker it forks once they are there
  writes them into its private cache before the candidate runs (the candidate may change its copy:
  only its own);
- a worker makes Triton's driver before it takes its share (`make_driver`), and builds launchers
  without one (`unshared_launchers`).
Everything here is an optimisation: when a step fails, Triton does what it always did.
"""

import os
import subprocess
import sys
import tempfile
import threading

BUILD_TIMEOUT_S = 120.0
# Builds the driver module the way Triton's CUDA driver does at its first use, into TRITON_CACHE_DIR.
_BUILD = "from triton.backends.nvidia.driver import CudaUtils; CudaUtils()"


def warm_cache_key() -> None:
    """Computes Triton's key of its own build (a hash of its sources and of libtriton, which every
    compile and cache lookup takes into its key): once in the runner before it forks, instead of at
    the first launch of every worker it forks (0.4 s on this 2-core machine; Triton keeps it per
    process). The first launch of a cached kernel in a fresh process took 0.52-0.56 s on an H100's
    host (2026-12-07): a comparer's first set, each reference's float64 check, each candidate's
    first call."""
    if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter compiles nothing
        return
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # another Triton: it computes its key itself
        return
    triton_key()


def _cache_files(directory: str) -> dict[str, bytes]:
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    files[os.path.relpath(path, directory)] = f.read()
    return files


def _build_env(cache: str) -> dict[str, str]:
    return {**os.environ, "TRITON_CACHE_DIR": cache, "TRITON_INTERPRET": "0"}


def build_driver_files(python: str = sys.executable, timeout_s: float = BUILD_TIMEOUT_S) -> dict[str, bytes]:
    """The files Triton's cache holds after it built its CUDA driver module: relative path -> bytes;
    empty when the build failed (no GPU toolchain, another backend)."""
    with tempfile.TemporaryDirectory(prefix="tritium-triton-") as cache:
        try:
            done = subprocess.run([python, "-c", _BUILD], env=_build_env(cache), capture_output=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        return _cache_files(cache) if done.returncode == 0 else {}


class DriverSeed:
    """The driver module's cache files, built in the background from the runner's start. Nothing
    waits for the build: workers forked before it is done compile the module themselves, as before
    (a build that hung would otherwise hold up a candidate's evaluation)."""

    def __init__(self, build=build_driver_files):
        self._files: dict[str, bytes] = {}
        self._thread = threading.Thread(target=self._run, args=(build,), daemon=True)
        self._thread.start()

    def _run(self, build) -> None:
        self._files = build()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def files(self) -> dict[str, bytes]:
        """The files once the build is done (waits for it)."""
        self._thread.join()
        return self._files


# The shared build: _BUILD, then a marker, written last (atomically), that says "ok" or "failed".
_SHARED_BUILD = f"""
import os, sys
marker = sys.argv[1]
try:
    {_BUILD}
    outcome = "ok"
except Exception:
    outcome = "failed"
with open(marker + ".tmp", "w") as f:
    f.write(outcome)
os.replace(marker + ".tmp", marker)
"""


class SharedDriverSeed:
    """The driver module built once for every candidate runner a zygote forks (zygote.py), into
    `directory`: the build runs in a process of its own (the zygote forks, so it starts no thread),
    and a marker says when it ended. A runner forked before then finds it at a later request; its
    workers meanwhile compile the module themselves, as before."""

    def __init__(self, directory: str, python: str = sys.executable):
        self.cache, self.marker = os.path.join(directory, "cache"), os.path.join(directory, "built")
        os.makedirs(self.cache, exist_ok=True)
        self._build = subprocess.Popen(
            [python, "-c", _SHARED_BUILD, self.marker],
            env=_build_env(self.cache),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def done(self) -> bool:
        return os.path.exists(self.marker)

    def files(self) -> dict[str, bytes]:
        """The files once the build is done; empty where it failed or has not ended."""
        try:
            with open(self.marker) as f:
                built = f.read() == "ok"
        except OSError:
            return {}
        return _cache_files(self.cache) if built else {}


def seed_cache(directory: str, files: dict[str, bytes]) -> int:
    """Writes `files` under the cache `directory` (relative paths only); returns how many."""
    root = os.path.realpath(directory)
    written = 0
    for relative, data in files.items():
        path = os.path.realpath(os.path.join(root, relative))
        if os.path.commonpath([root, path]) != root:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        written += 1
    return written


def make_driver() -> bool:
    """Makes Triton's active driver now (its driver module loaded, or compiled where no seed was
    written). False when Triton has none to make."""
    try:
        import triton

        triton.runtime.driver.active.get_current_device()
        return True
    except Exception:  # noqa: BLE001 - the candidate's first launch then makes it, as before
        return False


def unshared_launchers(gpu) -> None:
    """Builds each kernel's launcher (a C compile per signature in Triton 3.6) with the share let go."""
    try:
        import triton

        driver = triton.runtime.driver.active
        build = driver.launcher_cls
    except Exception:  # noqa: BLE001
        return
    if getattr(build, "tritium_unshared", False):
        return

    def launcher(*args, **kwargs):
        gpu.let_go()
        try:
            return build(*args, **kwargs)
        finally:
            gpu.hold()

    launcher.tritium_unshared = True
    driver.launcher_cls = launcher
