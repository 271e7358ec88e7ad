"""`tritium serve`'s connections on real loopback sockets: slow and idle clients, the per-client bound,
the whole-request deadline, HTTP framing (pipelining, chunked bodies, 100-continue) and a busy port.
The latency of /healthz behind slow clients is measured in python/benchmarks/serve_bench.py; here
it only has to answer while they hold their connections."""

import json
import os
import socket
import subprocess
import sys
import time

from conftest import EXAMPLE_TASKS
from test_cli import TRITIUM
from test_serve import RELU, Server


class Raw:
    """A raw HTTP/1.1 connection: bytes go out as given, answers come back one at a time (1xx included)."""

    def __init__(self, port: int, timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data: bytes):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {self.buf!r}")
        self.buf += chunk

    def answer(self) -> tuple[int, dict, bytes]:
        """The next answer: status, headers (lower-case names), body."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", 0))
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), headers, body

    def closed_by_server(self, within: float) -> bool:
        """Whether the server closes the connection (EOF or reset, after any answer) within `within` s."""
        self.sock.settimeout(within)
        deadline = time.time() + within
        try:
            while time.time() < deadline:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        return False

    def close(self):
        self.sock.close()


def post_bytes(path: str, body: bytes) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


VERIFY = json.dumps({"items": [{"code": RELU, "task_id": "level1/01_relu"}]}).encode()


def test_healthz_and_verify_answer_while_four_times_threads_slow_clients_hold_half_headers():
    s = Server("--threads", "9", "--max-client-connections", "100")
    slow = []
    try:
        for i in range(36):  # 4x --threads, on every route, /healthz included
            c = Raw(s.port)
            path = ("/healthz", "/v1/verify", "/v1/reward", "/get_reward")[i % 4]
            c.send(f"{'GET' if path == '/healthz' else 'POST'} {path} HTTP/1.1\r\nHost: x\r\nContent-Le".encode())
            slow.append(c)
        time.sleep(0.5)
        start = time.time()
        status, _, text = s.request("GET", "/healthz", token=None, timeout=10)
        assert status == 200 and json.loads(text)["status"] == "ok"
        assert time.time() - start < 5  # generous: the benchmark measures it
        status, _, doc = s.post("/v1/verify", json.loads(VERIFY), token=None, timeout=10)
        assert status == 200 and doc["verdicts"][0]["status"] == "valid"
        assert not any(c.closed_by_server(0.01) for c in slow)  # still held, within their deadline
    finally:
        for c in slow:
            c.close()
        s.stop()


def test_a_request_must_arrive_whole_within_the_read_timeout_even_when_it_trickles():
    s = Server("--read-timeout", "1")
    try:
        c = Raw(s.port)
        start = time.time()
        header = b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 200
        status = None
        for byte in header:  # one byte every 50 ms: each read is quick, the whole header is not
            try:
                c.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.05)
            if time.time() - start > 1.5:
                break
        c.sock.settimeout(5)
        try:
            status, _, body = c.answer()
        except (ConnectionError, OSError):
            pass
        assert time.time() - start < 4
        assert status == 408 and b"--read-timeout" in body
    finally:
        s.stop()


def test_idle_keep_alive_connections_are_closed_after_the_keep_alive_timeout():
    s = Server("--keep-alive-timeout", "1")
    try:
        c = Raw(s.port)
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.answer()[0] == 200
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # kept alive between requests
        assert c.answer()[0] == 200
        start = time.time()
        assert c.closed_by_server(5)
        assert 0.8 < time.time() - start < 4
    finally:
        s.stop()


def test_connections_per_client_are_bounded_and_freed_when_closed():
    s = Server("--max-client-connections", "4")
    held = []
    try:
        held = [Raw(s.port) for _ in range(4)]
        time.sleep(0.2)
        extra = Raw(s.port)
        status, headers, body = extra.answer()
        assert status == 429 and headers["retry-after"] == "1"
        assert "--max-client-connections" in json.loads(body)["error"]
        held.pop().close()
        time.sleep(0.3)
        status, _, _ = s.request("GET", "/healthz", token=None, timeout=10)
        assert status == 200
    finally:
        for c in held:
            c.close()
        s.stop()


def test_pipelined_requests_are_answered_in_order_on_one_connection():
    s = Server()
    try:
        c = Raw(s.port)
        c.send(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            + post_bytes("/v1/verify", VERIFY)
            + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        first, second, third = c.answer(), c.answer(), c.answer()
        assert first[0] == second[0] == third[0] == 200
        assert "verdicts" in json.loads(second[2]) and "engine" in json.loads(third[2])
    finally:
        s.stop()


def test_a_chunked_body_and_expect_100_continue_are_read_whole():
    s = Server()
    try:
        c = Raw(s.port)
        head = b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        half = len(VERIFY) // 2
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (VERIFY[:half], VERIFY[half:])) + b"0\r\n\r\n"
        c.send(head + chunks[:10])
        time.sleep(0.2)
        c.send(chunks[10:])
        status, _, body = c.answer()
        assert status == 200 and json.loads(body)["verdicts"][0]["status"] == "valid"
        c.send(
            b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(VERIFY)
        )
        assert c.answer()[0] == 100  # before the body was sent
        c.send(VERIFY)
        status, _, body = c.answer()  # and only one 100 Continue
        assert status == 200 and json.loads(body)["verdicts"][0]["status"] == "valid"
    finally:
        s.stop()


def test_a_body_over_the_limit_is_refused_from_its_content_length():
    s = Server("--max-body-mb", "0.5")
    try:
        c = Raw(s.port)
        c.send(b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        status, headers, body = c.answer()  # answered without waiting for the 100 MB
        assert status == 413 and headers["connection"] == "close" and "--max-body-mb" in json.loads(body)["error"]
    finally:
        s.stop()


def test_a_second_server_on_a_busy_port_exits_3_with_one_clear_line():
    s = Server()
    try:
        env = dict(os.environ, TRITIUM_PYTHON=sys.executable)
        second = subprocess.run(
            [TRITIUM, "serve", "--port", str(s.port), "--tasks", str(EXAMPLE_TASKS), "--device", "cpu"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert second.returncode == 3
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "in use" in lines[0] and str(s.port) in lines[0]
        assert s.request("GET", "/healthz", token=None)[0] == 200  # the first one still serves alone
    finally:
        s.stop()
