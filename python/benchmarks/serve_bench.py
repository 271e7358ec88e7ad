"""`tritium serve` under a real load generator (wrk) on loopback.

    python serve_bench.py [--seconds 10] [--connections 8] [--threads 64] [--json FILE]

Starts a server on the example tasks (CPU engine), fills its verdict cache with the example
solutions, then drives three routes with wrk: GET /healthz (the baseline: the HTTP floor of this
machine, measured side by side in the same run), POST /v1/verify and a cache-hit POST /v1/reward.
Prints requests/s, p50 and p99 latency, each route's throughput as a ratio of the baseline, and
the targets of issue 6 (reward >= 2,000 req/s with p99 < 10 ms; verify >= 5,000 req/s).

Then issue 23's: 4x --threads slow clients each hold a half-sent header while GET /healthz is
timed, one fresh connection per request (target: every answer within 1 s, none lost).
"""

import argparse
import http.client
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASKS, SOLUTIONS = ROOT / "examples" / "tasks", ROOT / "examples" / "solutions"
TRITIUM = (
    os.environ.get("TRITIUM_BIN")
    or shutil.which("tritium", path=os.path.dirname(sys.executable))
    or shutil.which("tritium")
)

LUA = """
local f = io.open(os.getenv("WRK_BODY"), "rb"); wrk.body = f:read("*a"); f:close()
wrk.method = os.getenv("WRK_METHOD")
wrk.headers["Content-Type"] = "application/json"
"""


def wrk(url: str, method: str, body: str, seconds: int, connections: int, workdir: pathlib.Path) -> dict:
    body_file, script = workdir / "body.json", workdir / "post.lua"
    body_file.write_text(body)
    script.write_text(LUA)
    env = dict(os.environ, WRK_BODY=str(body_file), WRK_METHOD=method)
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout

    def ms(label: str) -> float:
        value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", out).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50_ms": ms("50%"),
        "p99_ms": ms("99%"),
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def healthz_behind_slow_clients(port: int, slow: int, requests: int = 200, timeout: float = 3.0) -> dict:
    """/healthz latency while `slow` connections each hold half a header (the slowloris pattern)."""
    held = []
    try:
        for i in range(slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            path = ("/healthz", "/v1/verify", "/v1/reward", "/get_reward")[i % 4]
            s.sendall(f"{'GET' if path == '/healthz' else 'POST'} {path} HTTP/1.1\r\nHost: x\r\nContent-Le".encode())
            held.append(s)
        time.sleep(0.5)
        times, lost = [], 0
        for _ in range(requests):
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                conn.request("GET", "/healthz")
                ok = conn.getresponse().status == 200
                conn.close()
            except OSError:
                ok = False
            if not ok:
                lost += 1
                if lost >= 3:  # the server is stalled: no point waiting out every timeout
                    break
                continue
            times.append((time.perf_counter() - start) * 1e3)
        times.sort()
        pick = (lambda q: times[min(len(times) - 1, int(q * len(times)))]) if times else (lambda q: float("nan"))
        return {
            "slow_clients": slow,
            "answered": len(times),
            "lost": lost,
            "p50_ms": pick(0.5),
            "p99_ms": pick(0.99),
            "max_ms": times[-1] if times else float("nan"),
        }
    finally:
        for s in held:
            s.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=64, help="the server's --threads")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("serve_bench: needs wrk (apt-get install wrk)")
    command = [
        TRITIUM,
        "serve",
        "--port",
        "0",
        "--tasks",
        str(TASKS),
        "--device",
        "cpu",
        "--threads",
        str(args.threads),
    ]
    if (
        "--max-client-connections"
        in subprocess.run([TRITIUM, "serve", "--help"], capture_output=True, text=True).stdout
    ):
        command += ["--max-client-connections", str(8 * args.threads)]  # the slow clients all come from loopback
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=dict(os.environ, TRITIUM_PYTHON=sys.executable)
    )
    try:
        port = int(re.search(r":(\d+)$", server.stdout.readline().strip()).group(1))
        base = f"http://127.0.0.1:{port}"
        relu = (SOLUTIONS / "level1" / "01_relu.py").read_text()
        items = [{"task_id": "level1/01_relu", "code": relu, "group": 0}]
        reward_body = json.dumps({"items": items})
        warm = urllib.request.Request(base + "/v1/reward", data=reward_body.encode(), method="POST")
        assert json.load(urllib.request.urlopen(warm, timeout=300))["verdicts"][0]["status"] == "correct"
        with tempfile.TemporaryDirectory() as tmp:
            work = pathlib.Path(tmp)
            runs = {
                "healthz (baseline)": wrk(base + "/healthz", "GET", "", args.seconds, args.connections, work),
                "verify": wrk(
                    base + "/v1/verify", "POST", json.dumps({"items": items}), args.seconds, args.connections, work
                ),
                "reward (cache hit)": wrk(
                    base + "/v1/reward", "POST", reward_body, args.seconds, args.connections, work
                ),
            }
        slow = healthz_behind_slow_clients(port, 4 * args.threads)
    finally:
        server.terminate()
        server.wait(timeout=60)
    floor = runs["healthz (baseline)"]["requests_per_s"]
    print(f"{os.cpu_count()} cores, wrk -t2 -c{args.connections} -d{args.seconds}s, loopback")
    print(f"{'route':<22}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'vs healthz':>12}{'non-2xx':>9}")
    for name, r in runs.items():
        print(
            f"{name:<22}{r['requests_per_s']:>10.0f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
            f"{r['requests_per_s'] / floor:>11.2f}x{r['non_2xx']:>9}"
        )
    reward, verify = runs["reward (cache hit)"], runs["verify"]
    targets = {
        "reward >= 2000 req/s": reward["requests_per_s"] >= 2000,
        "reward p99 < 10 ms": reward["p99_ms"] < 10,
        "verify >= 5000 req/s": verify["requests_per_s"] >= 5000,
    }
    print(
        f"GET /healthz, one connection each, behind {slow['slow_clients']} slow clients (4x --threads {args.threads}): "
        f"{slow['answered']} answered, {slow['lost']} lost, p50 {slow['p50_ms']:.2f} ms, p99 {slow['p99_ms']:.2f} ms, "
        f"max {slow['max_ms']:.2f} ms"
    )
    targets["healthz behind slow clients < 1 s"] = slow["lost"] == 0 and slow["max_ms"] < 1000
    for name, met in targets.items():
        print(f"target {name}: {'met' if met else 'NOT met'}")
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps({"runs": runs, "slow_clients": slow, "targets": targets}, indent=2)
        )


if __name__ == "__main__":
    main()
