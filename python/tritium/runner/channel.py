"""The path a candidate's outputs take to the trusted comparer: shared memory, one set at a time.

A GPU-size task's tensors are gigabytes (4096 x 393216 float32 is 6.4 GB), so neither its
inputs nor its outputs go through files. Both sides make the inputs from the engine's seed
(inputs.trial_values); the candidate's worker streams each output set through a small shared
buffer and waits; the comparer (compare.py, a trusted process that never loads candidate code)
makes the expected outputs itself, compares them piece by piece, and lets the worker go on. So
no output set exists whole outside the candidate, and the expected outputs never reach it.

The engine creates the channel for each job: a memfd (the buffer: two halves of up to 64 MB) and
two pipes, `ready` (worker -> comparer: JSON lines) and `go` (comparer -> worker). Per set:
  worker: {"kind", "index", "outputs": [{dtype, shape}...]}   comparer: {"send": bool}
  (if send) worker: {"chunk": 0|1, "bytes": n} per half filled  comparer: {"free": 0|1} per half used
  comparer: {"go": true, "match": bool}
A set whose shapes or dtypes are wrong is judged on its layout alone (send false). On a GPU the
halves move to device memory once per job: with its first {"send": true} the comparer may add
"device": true, having allocated them (device_memory.py) and handed their descriptor over the Unix
socket the worker listens on (`socket`, bound before the sandbox hides the path); the worker maps
them and answers {"device": true}, or {"device": false, "why"} and the halves stay in host memory.
Chunks then cross the device: a copy there, no trip through the host. Two halves
let the worker fill one while the comparer compares the other; a small buffer keeps the host's
memory free and takes milliseconds to page-lock, where a set-sized one (6.4 GB) took 5 s on the
H200 machine. Each side opens its ends through /proc/<engine pid>/fd/N before anything untrusted
runs: the candidate's worker before it enters its sandbox, in whose fresh /proc the engine is
then invisible.
"""

import contextlib
import json
import mmap
import os
import select
import socket
import time

import torch

from .device_memory import DeviceMemoryError, SharedDeviceBuffer

MAX_LINE = 1 << 16  # a layout line; anything longer is not ours
ADOPT_WAIT_S = 2.0  # the worker's wait for an announced offer (queued before the announcement: instant)


class ChannelError(RuntimeError):
    pass


def _open(spec: dict, key: str, flags: int) -> int:
    """One of the engine's descriptors, opened anew; it must be this job's (the engine may have
    closed the job's and reused the number for another job's channel)."""
    fd = os.open(f"/proc/{int(spec['pid'])}/fd/{int(spec[key])}", flags | os.O_CLOEXEC)
    if os.fstat(fd).st_ino != int(spec["inodes"][key.split("_")[0]]):
        os.close(fd)
        raise ChannelError(f"the engine's {key} is no longer this job's channel")
    return fd


def _map(fd: int, size: int) -> mmap.mmap | None:
    return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) if size else None


class _End:
    def __init__(self, spec: dict, write_key: str, read_key: str):
        self.size = int(spec["bytes"])
        buffer_fd = _open(spec, "buffer", os.O_RDWR)
        try:
            self.buffer = _map(buffer_fd, self.size)
        finally:
            os.close(buffer_fd)
        self.out_fd = _open(spec, write_key, os.O_WRONLY)
        self.in_fd = _open(spec, read_key, os.O_RDONLY)
        self.pending = b""
        self.socket_path, self.device_bytes = spec.get("socket"), int(spec.get("device_bytes", 0))
        self.device_buffer: SharedDeviceBuffer | None = None  # the halves, once moved to the device
        self.pinned = 0  # the host buffer's address while page-locked

    def close(self) -> bool:
        """Lets go of what this end holds: descriptors, mappings, page locks, device halves (a
        comparer serving many jobs in one process). False when the host buffer is still viewed by a
        tensor and stays mapped: the process must not go on to another job."""
        if self.device_buffer is not None:
            self.device_buffer.close()
            self.device_buffer = None
        if self.pinned:
            with contextlib.suppress(Exception):
                torch.cuda.cudart().cudaHostUnregister(self.pinned)
            self.pinned = 0
        for fd in (self.out_fd, self.in_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.out_fd = self.in_fd = -1
        if self.buffer is not None:
            try:
                self.buffer.close()
            except BufferError:
                return False
            self.buffer = None
        return True

    def halves(self) -> tuple[torch.Tensor, int]:
        """The buffer the chunks cross (device memory once moved there, else the host's) and a half's bytes."""
        buffer = self.device_buffer.tensor if self.device_buffer is not None else self.host()
        return buffer, buffer.numel() // 2

    def settle(self) -> None:
        """Waits for this process's work on the device halves: the other process reads or writes them next."""
        if self.device_buffer is not None:
            torch.cuda.current_stream(self.device_buffer.tensor.device).synchronize()

    def pin(self) -> bool:
        """Page-locks the buffer for the GPU (copies to and from it at the bus's speed, not through
        a bounce buffer); False where the driver refuses (the copies then still work)."""
        if self.buffer is None or os.environ.get("TRITIUM_CHANNEL_PIN", "1") == "0":
            return False
        try:
            address = self.host().data_ptr()
            if torch.cuda.cudart().cudaHostRegister(address, self.size, 0) != 0:
                return False
        except Exception:  # noqa: BLE001 - a runtime without the call: pageable copies
            return False
        self.pinned = address
        return True

    def host(self) -> torch.Tensor:
        """The buffer as bytes on the host (a view, not a copy)."""
        if self.buffer is None:
            return torch.empty(0, dtype=torch.uint8)
        return torch.frombuffer(self.buffer, dtype=torch.uint8)

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def receive(self, deadline: float | None) -> dict | None:
        """The next line as JSON; None at end of stream. Raises ChannelError past the deadline."""
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.in_fd], [], [], wait)
            if not ready:
                raise ChannelError("no message before the deadline")
            chunk = os.read(self.in_fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
            if len(self.pending) > MAX_LINE:
                raise ChannelError("a message longer than any layout")
        line, _, self.pending = self.pending.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise ChannelError(f"not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise ChannelError("a message that is not an object")
        return message


class CandidateEnd(_End):
    """The worker's end: streams one output set through the buffer's two halves."""

    def __init__(self, spec: dict):
        super().__init__(spec, "ready_w", "go_r")
        self.listener = _listen(self.socket_path) if self.socket_path else None
        self.bound_inode = os.stat(self.socket_path).st_ino if self.listener is not None else None

    def ship(self, what: dict, outputs: list[torch.Tensor], deadline: float | None) -> bool:
        """Describes `outputs`; if the comparer wants their data (their shapes and dtypes are the
        expected ones), streams it, half a buffer at a time; then waits to be let go on. True
        unless the comparer found the set wrong."""
        self.send(
            {
                **what,
                "outputs": [{"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)} for t in outputs],
            }
        )
        reply = self._expect(deadline, "send")
        if reply.get("device") is True:
            self._adopt(deadline)
        if reply["send"] is True:
            self._stream(outputs, deadline)
        return self._expect(deadline, "go").get("match") is not False

    def _expect(self, deadline: float | None, key: str) -> dict:
        reply = self.receive(deadline)
        if reply is None or key not in reply:
            raise ChannelError("the comparer stopped answering")
        return reply

    def _adopt(self, deadline: float | None) -> None:
        """Maps the device halves the comparer hands over, and says whether that worked."""
        try:
            if self.listener is None:
                raise ChannelError("no socket to take them on")
            # The comparer connected before it said so: the connection is queued, or is not coming.
            self.listener.settimeout(min(ADOPT_WAIT_S, _remaining(deadline) or ADOPT_WAIT_S))
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                raise ChannelError(f"no offer reached the socket within {ADOPT_WAIT_S:g} s ({self._where()})") from None
            with connection:
                connection.settimeout(_remaining(deadline))
                message, fds, _, _ = socket.recv_fds(connection, 256, 1)
            if len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise ChannelError("no descriptor came with the offer")
            size = int(json.loads(message)["bytes"])
            device = torch.device("cuda", torch.cuda.current_device())
            self.device_buffer = SharedDeviceBuffer.adopt(fds[0], size, device)
        except (OSError, ValueError, KeyError, ChannelError, DeviceMemoryError) as exc:
            self.send({"device": False, "why": f"{type(exc).__name__}: {exc}"[:300]})
            return
        self.send({"device": True})

    def _where(self) -> str:
        """Where the listener is bound and what the path now names (why an offer went astray)."""
        try:
            now = os.stat(self.socket_path).st_ino
        except OSError as exc:
            now = f"gone: {exc.strerror}"
        return f"bound inode {self.bound_inode}, the path's inode now {now}"

    def _stream(self, outputs: list[torch.Tensor], deadline: float | None) -> None:
        buffer, half = self.halves()
        outstanding, k = 0, 0
        for t in outputs:
            data = t.detach().contiguous().reshape(-1).view(torch.uint8)
            for start in range(0, data.numel(), half):
                if outstanding == 2:  # both halves full: the comparer frees one
                    self._expect(deadline, "free")
                    outstanding -= 1
                n = min(half, data.numel() - start)
                slot = k % 2
                buffer[slot * half : slot * half + n].copy_(data[start : start + n])
                self.settle()
                self.send({"chunk": slot, "bytes": n})
                outstanding, k = outstanding + 1, k + 1
        for _ in range(outstanding):
            self._expect(deadline, "free")


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.001, deadline - time.monotonic())


def _listen(path: str) -> socket.socket | None:
    """The worker's socket for the comparer's device halves, at `path` in the job's directory; None
    where it cannot be made (the halves then stay in host memory)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by this job's first run (a job run again alone)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(1)
    except OSError:
        listener.close()
        return None
    return listener


def _bound_at(path: str) -> int:
    """How many sockets of this network namespace are bound at `path` (/proc/net/unix)."""
    try:
        with open("/proc/net/unix") as f:
            return sum(1 for line in f if line.rstrip("\n").endswith(" " + path))
    except OSError:
        return -1


class ComparerEnd(_End):
    """The comparer's end: takes a set's layout, then its data, half a buffer at a time."""

    def __init__(self, spec: dict):
        super().__init__(spec, "go_w", "ready_r")
        self.offered, self.offer_ms, self.connected_inode = False, 0.0, None
        self.device_refused = ""  # why the halves stayed on the host, where an offer failed

    @staticmethod
    def layout(message: dict) -> list[tuple[str, list[int]]]:
        """(dtype, shape) of each shipped output; the layout comes from untrusted code."""
        layout = message.get("outputs")
        if not isinstance(layout, list) or len(layout) > 1024:
            raise ChannelError("the outputs' layout is not a list")
        seen = []
        for entry in layout:
            if not isinstance(entry, dict):
                raise ChannelError("a layout entry that is not an object")
            name, shape = entry.get("dtype"), entry.get("shape")
            if (
                not isinstance(name, str)
                or not isinstance(shape, list)
                or len(shape) > 16
                or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 48 for d in shape)
            ):
                raise ChannelError("a layout entry without a dtype and a shape")
            seen.append((name, shape))
        return seen

    def pieces(self, expected: torch.Tensor, deadline: float | None):
        """Yields (expected slice, shipped slice on the host) until `expected` is covered; each
        shipped slice is valid until the next is asked for."""
        flat = expected.reshape(-1)
        size = flat.element_size()
        buffer, half = self.halves()
        done = 0
        while done < flat.numel():
            message = self.receive(deadline)
            if message is None:
                raise ChannelError("the worker stopped in the middle of a set")
            slot, n = message.get("chunk"), message.get("bytes")
            if (
                slot not in (0, 1)
                or not isinstance(n, int)
                or n <= 0
                or n > half
                or n % size
                or done + n // size > flat.numel()
            ):
                raise ChannelError("a chunk outside the buffer or the set")
            count = n // size
            yield flat[done : done + count], buffer[slot * half : slot * half + n].view(expected.dtype)
            done += count
            self.settle()
            self.send({"free": slot})

    def answer(self, send: bool, deadline: float | None, device: torch.device | None = None) -> None:
        """Whether the set's data is wanted; with the first wanted set on a GPU, the device halves."""
        offered = send and self._offer(device)
        self.send({"send": send, **({"device": True} if offered else {})})
        if offered:
            reply = self.receive(deadline)
            if reply is None or "device" not in reply:
                raise ChannelError("the worker stopped answering")
            if reply["device"] is not True:
                self.device_refused = (
                    f"{str(reply.get('why', ''))[:300]}; the comparer connected to inode {self.connected_inode}, "
                    f"{_bound_at(self.socket_path)} socket(s) bound at the path"
                )
                self.device_buffer.close()
                self.device_buffer = None

    def _offer(self, device: torch.device | None) -> bool:
        """Allocates the device halves and hands them to the worker's socket (once per job)."""
        if self.offered or not self.socket_path or self.device_bytes <= 0 or device is None or device.type != "cuda":
            return False
        self.offered = True
        began, buffer = time.perf_counter(), None
        try:
            buffer = SharedDeviceBuffer.allocate(self.device_bytes, device)
            fd = buffer.export()
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(5.0)
                    self.connected_inode = os.stat(self.socket_path).st_ino
                    s.connect(self.socket_path)
                    socket.send_fds(s, [json.dumps({"bytes": buffer.size}).encode()], [fd])
            finally:
                os.close(fd)
        except (OSError, DeviceMemoryError) as exc:
            if buffer is not None:
                buffer.close()
            self.device_refused = f"{type(exc).__name__}: {exc}"[:300]
            return False
        self.device_buffer = buffer
        self.offer_ms = (time.perf_counter() - began) * 1e3
        return True

    def go(self, match: bool = True) -> None:
        """Lets the worker go on, saying whether its set matched: a worker whose checked outputs
        were wrong skips its timed calls (their speed is worth nothing; the verdict is made)."""
        self.send({"go": True, "match": bool(match)})
