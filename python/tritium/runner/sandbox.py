"""The candidate's cell: what a forked worker does to itself before it loads untrusted code.

Layers, each applied where the kernel permits it and recorded in the returned report:
- a session of its own (made by the worker), so the scheduler's autogroups share the CPU between
  candidates rather than between their processes;
- new mount, network and PID namespaces: no network (only a down loopback), the engine's
  reference and cache directories hidden under empty tmpfs mounts, and the candidate runs as PID 1
  of its own namespace, so every process it starts dies with it (fork bombs, daemons);
- bounded processes: RLIMIT_NPROC, which does not bind root, so as root the worker switches to a
  per-slot uid when that uid can read the Python runtime; and, on Linux 6.14+, a pid_max of the
  candidate's own PID namespace, which binds root too;
- no privileges: without root, a user namespace whose capabilities are dropped;
- rlimits: CPU seconds, open files, file size, processes, address space (CPU only: CUDA reserves
  vast virtual ranges), no core dumps;
- a private working directory that is also HOME, TMPDIR and Triton's cache.
"""

import ctypes
import os
import resource
import signal

from .lifetime import die_with_parent

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_CAPABILITY_VERSION_3 = 0x20080522
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _map_to_root(uid: int, gid: int) -> None:
    """Inside a fresh user namespace: be root there (mounts need it), mapped to our own ids."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")


def _hide(paths: list[str]) -> list[str]:
    """Covers each directory with an empty read-only tmpfs in our private mount namespace."""
    _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)
    hidden = []
    for path in paths:
        if os.path.isdir(path) and _libc.mount(b"tmpfs", path.encode(), b"tmpfs", 1, b"size=4k") == 0:
            hidden.append(path)
    return hidden


def _drop_capabilities() -> bool:
    data = (_CapData * 2)()
    return _libc.capset(ctypes.byref(_CapHeader(_CAPABILITY_VERSION_3, 0)), data) == 0


def _count_own_tasks(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task")) if os.stat(f"/proc/{entry}").st_uid == uid else 0
            except OSError:
                pass
    return count


def _isolate(spec: dict, report: dict) -> None:
    """New mount, network and PID namespaces (through a user namespace when not root)."""
    hide = [p for p in spec.get("hide", []) if p]
    if os.geteuid() == 0:
        if _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID):
            report.update(network="isolated", pid_namespace=True, hidden=_hide(hide))
        return
    uid, gid = os.getuid(), os.getgid()
    if _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID):
        _map_to_root(uid, gid)
        report.update(network="isolated", pid_namespace=True, hidden=_hide(hide), user="user namespace")


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        found = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return found >= (major, minor)


def _mount_proc(report: dict) -> None:
    """As PID 1: a /proc of the new namespace. CUDA fails to initialise in a PID namespace that
    still sees the machine's /proc, and the candidate should not see other processes anyway."""
    if _libc.mount(b"proc", b"/proc", b"proc", 0, None) == 0:
        report["proc"] = "private"


def _cap_pids(limit: int, report: dict) -> None:
    """As PID 1 of the namespace: a pid_max of its own (Linux 6.14+; earlier kernels have only the
    machine-wide one, which must not be touched) bounds a fork bomb even for root."""
    if not _kernel_at_least(6, 14):
        return
    try:
        _write("/proc/sys/kernel/pid_max", str(max(limit, 301)))
        report["pid_max"] = max(limit, 301)
    except OSError:
        pass


def _world_readable(path: str) -> bool:
    """Whether another uid can read `path` (and traverse every directory above it)."""
    path = os.path.realpath(path)
    try:
        if not os.stat(path).st_mode & 0o004:
            return False
        parent = os.path.dirname(path)
        while parent != path:
            if not os.stat(parent).st_mode & 0o001:
                return False
            path, parent = parent, os.path.dirname(parent)
    except OSError:
        return False
    return True


def _runtime_paths() -> list[str]:
    import sys

    paths = [sys.base_prefix, sys.prefix]
    for name in ("torch", "triton", "tritium"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            paths.append(os.path.dirname(module.__file__))
    return paths


def _drop_privileges(spec: dict, report: dict) -> None:
    """Root becomes the slot's own uid, so RLIMIT_NPROC binds and nothing of root's is writable;
    only when that uid can still read the Python runtime (lazy imports happen later)."""
    if os.geteuid() != 0:
        report["user"] = report["user"] + (", no capabilities" if _drop_capabilities() else "")
        return
    uid = int(spec.get("uid", 0))
    if uid <= 0:
        return
    if not all(_world_readable(p) for p in _runtime_paths()):
        report["user"] = "root (the Python runtime is not readable by another uid)"
        return
    os.chown(spec["dir"], uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    report["user"] = f"uid {uid}"


def _process_limit(spec: dict) -> int:
    """Tasks (threads count) a candidate may have: PyTorch's pools (a thread per core, for
    intra-op and inter-op work) and a few compiler subprocesses, no more. Each process of a fork
    bomb is a copy of a PyTorch runtime whose teardown costs CPU: 512 of them took 15 s of two
    cores to die."""
    return int(spec.get("processes", 64 + 2 * (os.cpu_count() or 1)))


def _limit(spec: dict, device: str, report: dict, own_tasks: int) -> None:
    limits = {
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_CPU: int(spec.get("cpu_s", 600)),
        resource.RLIMIT_NOFILE: int(spec.get("open_files", 1024)),
        resource.RLIMIT_FSIZE: int(spec.get("file_bytes", 4 << 30)),
    }
    processes = _process_limit(spec)
    processes += own_tasks  # without root the limit counts every task of this uid, machine-wide
    limits[resource.RLIMIT_NPROC] = processes
    memory = int(spec.get("memory_bytes", 0))
    if memory and not device.startswith("cuda"):  # beyond what the warm runtime already maps
        limits[resource.RLIMIT_AS] = _mapped_bytes() + memory
    applied = {}
    for kind, value in limits.items():
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(kind, (value, value))
            applied[kind] = value
        except (ValueError, OSError):
            pass
    # A write past RLIMIT_FSIZE then fails with EFBIG instead of killing the process silently.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    report["rlimits"] = {resource_name(k): v for k, v in applied.items()}


def resource_name(kind: int) -> str:
    for name in ("CORE", "CPU", "NOFILE", "FSIZE", "NPROC", "AS"):
        if getattr(resource, f"RLIMIT_{name}") == kind:
            return name.lower()
    return str(kind)


def _mapped_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _private_dir(directory: str) -> None:
    os.makedirs(os.path.join(directory, "triton"), exist_ok=True)
    os.chdir(directory)
    os.environ.update(HOME=directory, TMPDIR=directory, TRITON_CACHE_DIR=os.path.join(directory, "triton"))


def _become_namespace_init() -> None:
    """Forks once more: the child is PID 1 of the new namespace, and when it exits the kernel kills
    everything the candidate started. The parent only waits and passes the child's fate on."""
    pid = os.fork()
    if pid == 0:
        die_with_parent()
        return
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _cpu_share() -> str:
    """How this worker's CPU is shared: its own session is an autogroup of its own when the kernel
    has them on (they apply outside CPU cgroups only), so one slot's fork bomb cannot starve another."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            enabled = f.read().strip() == "1"
    except OSError:
        enabled = False
    return "own autogroup" if enabled else "per process (autogroups off)"


def enter(spec: dict, device: str) -> dict:
    """Applies the sandbox to this (forked) process; returns what was applied."""
    report = {"network": "shared", "pid_namespace": False, "user": "unchanged", "hidden": [], "cpu_share": _cpu_share()}
    os.makedirs(spec["dir"], exist_ok=True)
    own_tasks = _count_own_tasks(os.getuid()) if os.geteuid() != 0 else 0  # before /proc shows only ours
    _isolate(spec, report)
    if report["pid_namespace"]:
        _become_namespace_init()
        _mount_proc(report)
        _cap_pids(_process_limit(spec) * 2, report)
    _drop_privileges(spec, report)
    _private_dir(spec["dir"])
    _limit(spec, device, report, own_tasks)
    return report
