"""A seccomp filter for the candidate, through libseccomp (Debian's libseccomp2): the system calls
that could undo the sandbox, or reach past it, fail with EPERM.

Denied: new namespaces (unshare, setns, clone with a namespace flag; clone3 answers ENOSYS, so
the C library falls back to clone, whose flags the filter can read), every mount call and
pivot_root/chroot, ptrace and the cross-process memory calls, kernel keyrings, BPF, userfaultfd,
io_uring (its operations would bypass this filter), modules, kexec, reboot, swap, the kernel log,
quotas and handle-based opens. Calls from another architecture (32-bit x86 on x86_64) kill the
process: libseccomp's default for a foreign architecture.
Everything else is allowed: PyTorch, CUDA and Triton's compiler need threads, processes, ioctls
and mmaps.
"""

import ctypes
import ctypes.util
import errno

_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7
DENIED = (
    "unshare",
    "setns",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
)
NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


def _library():
    """libseccomp, loaded when the runner imports this module, before it forks: find_library
    starts ldconfig, a process the sandboxed worker (under its process limit) should not need."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        name = ctypes.util.find_library("seccomp")
        if name is None:
            return None
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def _deny(lib, ctx, name: str, code: int = errno.EPERM, arg: _ArgCmp | None = None) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:  # not a system call of this architecture
        return
    args = ctypes.byref(arg) if arg is not None else None
    if lib.seccomp_rule_add_array(ctx, _errno_action(code), number, 1 if arg is not None else 0, args) != 0:
        raise OSError(f"seccomp: cannot add the rule for {name}")


_LIB = _library()


def install() -> str:
    """Loads the filter into this process (inherited by all it starts); says what was applied."""
    lib = _LIB
    if lib is None:
        return "unavailable (libseccomp2 is not installed)"
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        return "unavailable (seccomp_init failed)"
    try:
        for name in DENIED:
            _deny(lib, ctx, name)
        _deny(lib, ctx, "clone3", errno.ENOSYS)
        for flag in NAMESPACE_FLAGS:
            _deny(lib, ctx, "clone", arg=_ArgCmp(0, _CMP_MASKED_EQ, flag, flag))
        if lib.seccomp_load(ctx) != 0:
            raise OSError("seccomp: the filter could not be loaded")
    finally:
        lib.seccomp_release(ctx)
    return "on"
