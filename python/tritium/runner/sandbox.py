"""The candidate's cell: what a forked worker does to itself before it loads untrusted code.

Whatever the engine's uid (root included), the candidate ends up with:
- new mount, network and PID namespaces (root makes them directly; any other user through a user
  namespace in which it is root): no network (only a down loopback); PID 1 of its own namespace,
  so everything it starts dies with it (fork bombs, daemons);
- a root file system of its own (rootfs.py): read-only binds of the system and the Python
  runtime, its own directory writable, the engine's references and other slots' files absent;
- no privileges: as root, a per-slot uid; otherwise root of the user namespace with every
  capability dropped; in both cases an empty capability bounding set and no_new_privs, so nothing
  it executes gains any back; then a seccomp filter (seccomp.py) against unsharing, mounting,
  setns, ptrace and the like;
- bounded processes: RLIMIT_NPROC (and, on Linux 6.14+, a pid_max of its PID namespace);
- rlimits: CPU seconds, open files, file size, processes, address space (CPU only: CUDA reserves
  vast virtual ranges), no core dumps;
- a session of its own (made by the worker), so the scheduler's autogroups share the CPU between
  candidates rather than between their processes;
- a private working directory that is also HOME, TMPDIR and Triton's cache: a small tmpfs
  (rootfs.SCRATCH_BYTES), the only place it can write.
Any layer that cannot be applied raises SandboxError and the candidate does not run, unless the
spec says `unsafe` (the engine then marks every verdict so).
"""

import ctypes
import os
import resource
import select
import signal

from . import rootfs, seccomp
from .lifetime import die_with_parent

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_CAPABILITY_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

_libc = ctypes.CDLL(None, use_errno=True)


_namespace_init_pid: int | None = None  # set in the process that became PID 1 of the sandbox


def answering_pid(worker_pid: int) -> int:
    """The process that answers for the worker: PID 1 of its sandbox once that exists."""
    return _namespace_init_pid or worker_pid


class SandboxError(RuntimeError):
    """A layer of the sandbox could not be applied: the candidate must not run."""


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _unshare(flags: int) -> bool:
    return _libc.unshare(flags) == 0


def _threads() -> int:
    with open("/proc/self/status") as f:
        return next((int(line.split()[1]) for line in f if line.startswith("Threads:")), 0)


def _user_namespaces() -> str:
    """What the kernel allows of user namespaces: EINVAL also means a kernel built without them,
    ENOSPC or EPERM a limit of 0 or a policy (Ubuntu's AppArmor restriction)."""
    if not os.path.exists("/proc/self/ns/user"):
        return "this kernel has no user namespaces"
    found = []
    for name in (
        "user/max_user_namespaces",
        "kernel/unprivileged_userns_clone",
        "kernel/apparmor_restrict_unprivileged_userns",
    ):
        try:
            with open(f"/proc/sys/{name}") as f:
                found.append(f"{name.split('/')[1]}={f.read().strip()}")
        except OSError:
            pass
    return ", ".join(found) or "user namespaces present"


def _unshare_error() -> str:
    """Why unshare failed, with what tells its causes apart: EINVAL for a user namespace means a
    multithreaded caller or a kernel without user namespaces (an engine run as an ordinary user on
    the H200 got it, root did not)."""
    errno = ctypes.get_errno()
    if os.geteuid() == 0:
        return f"{os.strerror(errno)} (as root; this process has {_threads()} thread(s))"
    return (
        f"{os.strerror(errno)} (through a user namespace; this process has {_threads()} thread(s); "
        f"{_user_namespaces()})"
    )


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _map_to_root(uid: int, gid: int) -> None:
    """Inside a fresh user namespace: be root there (mounts need it), mapped to our own ids."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")


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


def _isolate(report: dict) -> None:
    """New mount, network and PID namespaces (through a user namespace when not root)."""
    if os.geteuid() == 0:
        if _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID):
            report.update(network="isolated", pid_namespace=True)
        return
    uid, gid = os.getuid(), os.getgid()
    if _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID):
        _map_to_root(uid, gid)
        report.update(network="isolated", pid_namespace=True, user="user namespace")


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        found = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return found >= (major, minor)


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


def _sandbox_ids(spec: dict) -> tuple[int, int]:
    """The uid and gid the candidate runs as: the slot's own as root, else root of the user namespace."""
    if os.geteuid() == 0:
        uid = int(spec.get("uid", 0))
        return uid, uid
    return 0, 0


def _unreadable_runtime(trees: list[str]) -> str | None:
    for tree in trees:
        if not _world_readable(tree):
            return tree
    return None


def _no_new_privileges() -> None:
    """Empties the capability bounding and ambient sets and sets no_new_privs: nothing the
    candidate executes (a set-uid program, a file with capabilities) gains a privilege."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise SandboxError(f"cannot drop capability {cap} from the bounding set: {os.strerror(ctypes.get_errno())}")
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SandboxError("cannot set no_new_privs")


def _drop_privileges(spec: dict, ids: tuple[int, int], report: dict, trees: list[str]) -> None:
    """Root becomes the slot's own uid (so RLIMIT_NPROC binds and no capability is left); any
    other user drops every capability of its user namespace."""
    _no_new_privileges()
    if os.geteuid() != 0 or report.get("user") == "user namespace":
        if not _drop_capabilities():
            raise SandboxError(f"cannot drop capabilities: {os.strerror(ctypes.get_errno())}")
        report["user"] = "user namespace, no capabilities"
        return
    uid, gid = ids
    if uid <= 0:
        raise SandboxError("no uid for the candidate (the engine runs as root and gave none)")
    unreadable = _unreadable_runtime(trees)
    if unreadable:
        raise SandboxError(
            f"{unreadable} is not readable by other users, so the candidate's uid cannot load "
            f"Python from it; make it readable (chmod -R o+rX {unreadable})"
        )
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    report["user"] = f"uid {uid}, no capabilities"


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


# Triton's cache files that every candidate's private cache starts with (its driver module, built
# once by the runner: triton_driver.py); set by the runner before it forks workers.
triton_seed: dict[str, bytes] = {}


def _private_dir(directory: str) -> None:
    """The candidate works in its directory (read-only) and writes to its scratch tmpfs."""
    import tempfile

    from .triton_driver import seed_cache

    scratch = rootfs.scratch_dir(directory)
    cache = os.path.join(scratch, "triton")
    os.makedirs(cache, exist_ok=True)
    try:
        seed_cache(cache, triton_seed)
    except OSError:
        pass  # Triton compiles its driver module itself, as it would without the seed
    os.chdir(directory)
    os.environ.update(HOME=scratch, TMPDIR=scratch, TRITON_CACHE_DIR=cache)
    # The runner chose its temporary directory before the fork (/tmp, read-only in the sandbox's root):
    # Triton compiles its launcher in a tempfile.TemporaryDirectory.
    tempfile.tempdir = scratch


def _become_namespace_init() -> int:
    """Forks once more: the child is PID 1 of the new namespace, and when it exits the kernel kills
    everything the candidate started. The parent only waits and passes the child's fate on. The
    child returns a descriptor that reads end of file once the parent is gone (_follow_parent)."""
    alive_r, alive_w = os.pipe()  # the parent holds the write end until it exits, and never writes
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        _follow_parent(alive_r)
        return alive_r
    os.close(alive_r)
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


def _follow_parent(alive_r: int) -> None:
    """Arms the parent-death signal of the namespace's PID 1, then exits if its parent is gone
    already. It sees no parent (getppid() is 0), so die_with_parent cannot tell whether the parent
    died before the signal was armed; the pipe can: its end of file. Armed again after the uid
    changes, which clears it: a candidate that had dropped its privileges outlived a stopped engine
    (python/tests/test_lifetime.py)."""
    die_with_parent()
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(1)


def _cpu_share() -> str:
    """How this worker's CPU is shared: its own session is an autogroup of its own when the kernel
    has them on (they apply outside CPU cgroups only), so one slot's fork bomb cannot starve another."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            enabled = f.read().strip() == "1"
    except OSError:
        enabled = False
    return "own autogroup" if enabled else "per process (autogroups off)"


def enter(spec: dict, device: str, on_init=None) -> dict:
    """Applies the sandbox to this (forked) process; returns what was applied. Raises SandboxError
    when a layer cannot be applied, unless spec["unsafe"] (then the report says what is missing).
    `on_init()` runs first thing in the namespace's PID 1, the process that returns."""
    report = {
        "network": "shared",
        "pid_namespace": False,
        "user": "unchanged",
        "root": "host",
        "seccomp": "off",
        "cpu_share": _cpu_share(),
    }
    os.makedirs(spec["dir"], exist_ok=True)
    own_tasks = _count_own_tasks(os.getuid()) if os.geteuid() != 0 else 0  # before /proc shows only ours
    uid, gid = _sandbox_ids(spec)  # before a user namespace makes anyone root
    alive_r = None
    try:
        _isolate(report)
        if not report["pid_namespace"]:
            raise SandboxError(f"cannot make new mount, network and PID namespaces: {_unshare_error()}")
        alive_r = _become_namespace_init()
        if on_init is not None:
            on_init()
        global _namespace_init_pid
        _namespace_init_pid = os.getpid()
        report.update(
            rootfs.build(
                spec["dir"],
                uid,
                gid,
                [p for p in spec.get("hide", []) if p],
                [p for p in spec.get("read_only", []) if p],
                device.startswith("cuda"),
                int(spec.get("scratch_bytes", rootfs.SCRATCH_BYTES)),
            )
        )
        _cap_pids(_process_limit(spec) * 2, report)
        _drop_privileges(spec, (uid, gid), report, report["read_only"])
    except (SandboxError, OSError) as exc:
        if not spec.get("unsafe"):
            raise SandboxError(f"the sandbox could not be established: {exc}") from exc
        report["unsafe"] = str(exc)
    if alive_r is not None:  # the uid may have changed, which disarms the parent-death signal
        _follow_parent(alive_r)
        os.close(alive_r)
    _private_dir(spec["dir"])
    _limit(spec, device, report, own_tasks)
    report["seccomp"] = seccomp.install()
    if report["seccomp"] != "on" and not spec.get("unsafe"):
        raise SandboxError(f"the sandbox could not be established: seccomp {report['seccomp']}")
    return report
