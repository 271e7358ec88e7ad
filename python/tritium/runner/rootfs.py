"""The candidate's file system: a root of its own, assembled from read-only bind mounts, then
pivoted into so that the machine's root is gone from the candidate's mount namespace.

What the candidate sees (everything else is absent, not covered: it was never mounted there):
- read-only: /usr and the /bin, /sbin, /lib* links or directories, /opt, the Python runtime
  (sys.prefix, sys.base_prefix, every sys.path entry and every loaded package's directory), the
  GPU lock directory, /sys;
- a minimal /etc (the dynamic linker's cache and configuration, /etc/alternatives, localtime) with
  a passwd and group that name the sandbox's own user only;
- a /dev of its own: null, zero, full, random, urandom and, on a GPU, the NVIDIA device nodes;
  a small private /dev/shm;
- a fresh /proc of its PID namespace;
- read-only: its own directory (the code, the parameters, the outputs' socket);
- read-write: only `scratch` in it, a tmpfs of SCRATCH_BYTES (HOME, TMPDIR, Triton's cache), so
  that a candidate cannot fill the host's disk (300 MB written by one did, and it was `correct`).
Paths the engine names in `hide` (its work directory, the verdict cache) that fall inside a bound
tree are covered by empty read-only mounts; the candidate's own directory is placed back on top.
Every mount is nosuid; all but /dev are nodev. The mounts belong to the mount namespace the worker
made before it dropped its privileges, so the candidate can neither unmount nor remount them.

This does what bubblewrap does with the same kernel calls, in the forked worker itself: bubblewrap
can only start a new program, and a candidate forked from a warm runner (torch and triton imported
once per slot) saves every candidate that import.
"""

import ctypes
import errno
import glob
import os
import platform
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (Linux 5.12+)

SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
DEV_NODES = ("null", "zero", "full", "random", "urandom")
SHM_BYTES = 64 << 20
SCRATCH = "scratch"  # the only writable place: HOME, TMPDIR and Triton's cache
SCRATCH_BYTES = 256 << 20  # RAM while the candidate lives; Triton's cache of a kernel is well under 1 MB

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class RootError(OSError):
    """The candidate's root could not be built: the candidate must not run."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _fail(what: str) -> RootError:
    code = ctypes.get_errno()
    return RootError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s):
        return None if s is None else s.encode()

    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise _fail(f"mount {source or fstype} on {target}")


def _mount_points_under(target: str) -> list[str]:
    """Mount points at or below `target` in this namespace (for kernels without mount_setattr)."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == target or point.startswith(target.rstrip("/") + "/"):
                points.append(point)
    return points


def _make_read_only(target: str, dev: bool = False) -> None:
    """Read-only and nosuid (and nodev unless `dev`) for the mount at `target` and all below it."""
    attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | (0 if dev else _MOUNT_ATTR_NODEV), 0, 0, 0)
    done = _libc.syscall(
        _SYS_MOUNT_SETATTR, _AT_FDCWD, target.encode(), _AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr)
    )
    if done == 0:
        return
    if ctypes.get_errno() != errno.ENOSYS:
        raise _fail(f"mount_setattr {target}")
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (0 if dev else MS_NODEV)
    for point in _mount_points_under(target):
        _mount(None, point, None, flags)


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _bind(root: str, path: str, writable: bool = False, dev: bool = False) -> None:
    """`path` (a directory, a file or a symbolic link) at the same place under `root`, with the
    mounts below it, except when writable: the candidate's own directory holds the mount point of
    the root being built, whose copy would be a writable view of that root."""
    target = _inside(root, path)
    if os.path.islink(path):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(path), target)
        return
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(path, target, None, MS_BIND if writable else MS_BIND | MS_REC)
    if not writable:
        _make_read_only(target, dev)


def _covered(path: str, trees: list[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in trees)


def runtime_trees() -> list[str]:
    """The directories the Python runtime reads from: its prefixes (the standard library and
    site-packages) and the directory of every module already loaded (an editable install's package
    lives outside the prefixes). Other import-path entries (the runner's working directory, to
    begin with) are left out: they may hold anything."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.isabs(file):
            found.append(os.path.dirname(file))
    return _outermost(found)


def _outermost(paths: list[str]) -> list[str]:
    """Real, existing paths with those inside another one dropped."""
    real = sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})
    kept: list[str] = []
    for path in real:
        if not _covered(path, kept):
            kept.append(path)
    return kept


def _write_etc(root: str, uid: int, gid: int, home: str) -> None:
    etc = _inside(root, "/etc")
    os.makedirs(etc, exist_ok=True)
    for name in ETC_FILES:
        if os.path.lexists(f"/etc/{name}"):
            _bind(root, f"/etc/{name}")
    with open(os.path.join(etc, "passwd"), "w") as f:
        f.write(f"sandbox:x:{uid}:{gid}:sandbox:{home}:/bin/false\n")
    with open(os.path.join(etc, "group"), "w") as f:
        f.write(f"sandbox:x:{gid}:\n")


def _make_dev(root: str, gpu: bool) -> None:
    dev = _inside(root, "/dev")
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,mode=755")
    nodes = [f"/dev/{n}" for n in DEV_NODES]
    if gpu:
        nodes += sorted(glob.glob("/dev/nvidia*"))
    for node in nodes:
        if os.path.exists(node):
            _bind(root, node, dev=True)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, os.path.join(dev, name))
    os.makedirs(os.path.join(dev, "shm"))
    _mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    _mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", MS_NOSUID | MS_NODEV, f"size={SHM_BYTES},mode=1777")


def _cover(root: str, path: str) -> bool:
    """An empty read-only mount over `path` where a bound tree brought it into the root."""
    target = _inside(root, path)
    if not os.path.isdir(target) or os.path.islink(target):
        return False
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=755")
    return True


def _pivot(root: str) -> None:
    """Makes `root` the root of this mount namespace and detaches the old one entirely."""
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise RootError(errno.ENOSYS, f"pivot_root: unknown system call number on {platform.machine()}")
    os.chdir(root)
    if _libc.syscall(number, b".", b".") != 0:
        raise _fail("pivot_root")
    if _libc.umount2(b".", MNT_DETACH) != 0:
        raise _fail("detaching the old root")
    os.chdir("/")


def scratch_dir(directory: str) -> str:
    return os.path.join(directory, SCRATCH)


def scratch_used_mib(directory: str) -> float | None:
    """What the candidate's scratch tmpfs holds (its Triton cache among it), against SCRATCH_BYTES."""
    try:
        fs = os.statvfs(scratch_dir(directory))
    except OSError:
        return None
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize / 2**20


def build(
    directory: str,
    uid: int,
    gid: int,
    hide: list[str],
    extra: list[str],
    gpu: bool,
    scratch_bytes: int = SCRATCH_BYTES,
) -> dict:
    """Builds and enters the candidate's root (as PID 1 of a fresh PID namespace, inside a mount
    namespace of its own); `directory` stays at its own path, read-only, with a writable tmpfs of
    `scratch_bytes` at scratch_dir(directory). Returns what it mounted."""
    os.umask(0o022)  # the directories made on the way to each bound path: traversable by the candidate
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = os.path.join(directory, ".root")
    os.makedirs(root, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    trees = _outermost([*(t for t in SYSTEM_TREES if os.path.lexists(t)), *runtime_trees(), *extra])
    for tree in trees:
        _bind(root, tree)
    for link in SYSTEM_TREES:  # merged /usr: /bin and the rest are links into it
        if os.path.islink(link):
            _bind(root, link)
    _write_etc(root, uid, gid, directory)
    _make_dev(root, gpu)
    os.makedirs(_inside(root, "/proc"))
    _mount("proc", _inside(root, "/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if os.path.isdir("/sys"):
        _bind(root, "/sys")
    covered = [p for p in _outermost(hide) if _covered(p, trees) and _cover(root, p)]
    os.makedirs(_inside(root, directory), exist_ok=True)
    if uid > 0:  # the slot's uid reads its directory (the engine made it 0700), read-only from here
        os.chown(directory, uid, gid)
    os.makedirs(scratch_dir(directory), exist_ok=True)  # its tmpfs's mount point, made while writable
    _bind(root, directory, writable=True)  # not recursive (see _bind), then read-only
    _mount(None, _inside(root, directory), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # The tmpfs is owned by the candidate's uid (root of its user namespace: 0) from the start.
    scratch = f"size={scratch_bytes},mode=700,uid={uid},gid={gid}"
    _mount("tmpfs", _inside(root, scratch_dir(directory)), "tmpfs", MS_NOSUID | MS_NODEV, scratch)
    _mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in covered:
        _mount(None, _inside(root, path), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _pivot(root)
    return {"root": "private", "read_only": trees, "covered": covered, "scratch_bytes": scratch_bytes}
