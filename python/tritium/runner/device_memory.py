"""Device memory that two processes map: the CUDA driver's virtual memory management (VMM).

A GPU-size output set crossing from a candidate's worker to its comparer through host memory costs
a device-to-host copy in one process and a host-to-device copy in the other (seconds for 6.4 GB,
and the comparer holds its share of the GPU lock meanwhile). Legacy CUDA IPC handles would avoid
that, but they cannot be opened across PID namespaces, and every candidate has its own. An
allocation made with cuMemCreate and exported as a POSIX file descriptor can: the descriptor
crosses a Unix socket (SCM_RIGHTS) like any other, and the receiving process maps the same memory.

The trusted comparer allocates and exports; the worker imports. Only the channel's two halves live
there (a few hundred MB), never a whole set. Calls go to libcuda through ctypes, on the calling
thread's current context (torch's primary context: the caller has used the device before).
"""

from __future__ import annotations

import contextlib
import ctypes
import os

import torch

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MINIMUM = 0


class DeviceMemoryError(RuntimeError):
    pass


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Properties(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_driver = None


def _call(name: str, *args) -> None:
    global _driver
    if _driver is None:
        try:
            _driver = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise DeviceMemoryError(f"no CUDA driver library: {exc}") from None
    status = getattr(_driver, name)(*args)
    if status != 0:
        raise DeviceMemoryError(f"{name} failed (CUresult {status})")


def _ordinal(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _properties(ordinal: int) -> _Properties:
    prop = _Properties()
    prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
    prop.location = _Location(_ON_DEVICE, ordinal)
    return prop


class _ArrayView:
    """What torch.as_tensor reads to view device memory it did not allocate."""

    def __init__(self, address: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (address, False), "version": 2}


class SharedDeviceBuffer:
    """`size` bytes of device memory, mapped into this process; `tensor` views them as uint8."""

    def __init__(self, handle: int, size: int, device: torch.device):
        self.handle, self.size, self.address = handle, size, ctypes.c_uint64(0)
        ordinal = _ordinal(device)
        try:
            _call(
                "cuMemAddressReserve",
                ctypes.byref(self.address),
                ctypes.c_size_t(size),
                ctypes.c_size_t(0),
                ctypes.c_uint64(0),
                ctypes.c_uint64(0),
            )
            _call(
                "cuMemMap",
                self.address,
                ctypes.c_size_t(size),
                ctypes.c_size_t(0),
                ctypes.c_uint64(handle),
                ctypes.c_uint64(0),
            )
            access = _Access(_Location(_ON_DEVICE, ordinal), _READ_WRITE)
            _call("cuMemSetAccess", self.address, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1))
        except DeviceMemoryError:
            self.close()
            raise
        self.tensor = torch.as_tensor(_ArrayView(self.address.value, size), device=torch.device("cuda", ordinal))

    @classmethod
    def allocate(cls, size: int, device: torch.device) -> SharedDeviceBuffer:
        """New memory of at least `size` bytes (rounded up to the driver's granularity)."""
        prop = _properties(_ordinal(device))
        granularity = ctypes.c_size_t(0)
        _call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), _GRANULARITY_MINIMUM)
        size = -(-size // granularity.value) * granularity.value
        handle = ctypes.c_uint64(0)
        _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_uint64(0))
        return cls(handle.value, size, device)

    @classmethod
    def adopt(cls, fd: int, size: int, device: torch.device) -> SharedDeviceBuffer:
        """The memory another process exported as `fd` (closed here, whatever happens)."""
        handle = ctypes.c_uint64(0)
        try:
            _call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD)
        finally:
            os.close(fd)
        return cls(handle.value, size, device)

    def export(self) -> int:
        """A new file descriptor for this memory, to hand to another process."""
        fd = ctypes.c_int(-1)
        _call(
            "cuMemExportToShareableHandle",
            ctypes.byref(fd),
            ctypes.c_uint64(self.handle),
            _POSIX_FD,
            ctypes.c_uint64(0),
        )
        return fd.value

    def close(self) -> None:
        """Unmaps and releases this process's hold (the memory goes when no process holds it)."""
        self.tensor = None
        if self.address.value:  # a failure leaves the range reserved: the process's exit frees it
            for name in ("cuMemUnmap", "cuMemAddressFree"):
                with contextlib.suppress(DeviceMemoryError):
                    _call(name, self.address, ctypes.c_size_t(self.size))
            self.address = ctypes.c_uint64(0)
        if self.handle:
            with contextlib.suppress(DeviceMemoryError):
                _call("cuMemRelease", ctypes.c_uint64(self.handle))
            self.handle = 0
