"""Framing shared with cpp/src/exec/frame.cc: a 4-byte little-endian length, then UTF-8 JSON."""

import json
import socket
import struct

MAX_FRAME_BYTES = 256 << 20


class ProtocolError(Exception):
    pass


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> dict | None:
    """The next request, or None when the parent closed the channel."""
    header = _recv_exact(sock, 4)
    if header is None:
        return None
    (size,) = struct.unpack("<I", header)
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit")
    body = _recv_exact(sock, size)
    if body is None:
        return None
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise ProtocolError("a frame must hold a JSON object")
    return message


def encode_frame(message: dict) -> bytes:
    body = json.dumps(message, allow_nan=False, default=str).encode("utf-8")
    return struct.pack("<I", len(body)) + body


def write_frame(sock: socket.socket, message: dict) -> None:
    sock.sendall(encode_frame(message))
