"""`tritium serve` driven over real HTTP on loopback: routes, errors, auth, overload, timeouts, drain."""

import http.client
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS
from test_cli import TRITIUM

TOKEN = "s3cret-token"
RELU = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()
NO_KERNEL = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


class Server:
    """A `tritium serve --port 0` process and a small HTTP client for it."""

    def __init__(self, *flags: str):
        env = dict(os.environ, TRITIUM_PYTHON=sys.executable)
        self.proc = subprocess.Popen(
            [TRITIUM, "serve", "--port", "0", "--tasks", str(EXAMPLE_TASKS), "--device", "cpu", "--jobs", "2", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.proc.stdout.readline()
        match = re.search(r"listening on http://[\d.]+:(\d+)", line)
        if not match:
            self.proc.kill()
            pytest.fail(f"serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(match.group(1))

    def request(
        self,
        method: str,
        path: str,
        body=None,
        token: str | None = TOKEN,
        raw: bytes | None = None,
        timeout: float = 300,
    ):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers=headers)
        res = conn.getresponse()
        text = res.read().decode()
        conn.close()
        return res.status, dict(res.getheaders()), text

    def post(self, path: str, body, **kw):
        status, headers, text = self.request("POST", path, body, **kw)
        return status, headers, json.loads(text)

    def wait_pending(self, n: int, timeout: float = 60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            _, _, text = self.request("GET", "/healthz")
            if json.loads(text)["pending_items"] >= n:
                return
            time.sleep(0.05)
        pytest.fail(f"never saw {n} pending items")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def server():
    s = Server("--token", TOKEN, "--max-items", "8", "--max-body-mb", "0.5")
    yield s
    s.stop()


def unique(code: str) -> str:
    """The same kernel under a new cache key: a fresh evaluation."""
    return code + f"\n# {time.time_ns()}\n"


def test_with_json_serve_says_where_it_listens_as_one_json_line():
    env = dict(os.environ, TRITIUM_PYTHON=sys.executable)
    proc = subprocess.Popen(
        [TRITIUM, "serve", "--port", "0", "--device", "cpu", "--jobs", "1", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        document = json.loads(proc.stdout.readline())
        host, port = re.fullmatch(r"http://([\d.]+):(\d+)", document["listening"]).groups()
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_healthz_needs_no_token_and_describes_the_engine(server):
    status, _, text = server.request("GET", "/healthz", token=None)
    doc = json.loads(text)
    assert status == 200 and doc["status"] == "ok"
    assert doc["engine"]["device"] == "cpu"


def test_every_other_route_needs_the_bearer_token(server):
    for path in ("/v1/verify", "/v1/evaluate", "/v1/reward", "/get_reward"):
        status, headers, doc = server.post(path, {"items": []}, token=None)
        assert status == 401 and "bearer token" in doc["error"]
        assert headers.get("WWW-Authenticate") == "Bearer"
        assert server.post(path, {"items": []}, token="wrong")[0] == 401
    assert server.request("GET", "/metrics", token=None)[0] == 401


def test_bad_json_is_a_400_that_says_where(server):
    status, _, doc = server.post("/v1/evaluate", None, raw=b'{"items": [')
    assert status == 400 and "bad JSON" in doc["error"] and "column" in doc["error"]
    status, _, doc = server.post("/v1/reward", {"itemz": []})
    assert status == 400 and '"items"' in doc["error"]
    status, _, doc = server.post("/v1/reward", {"items": [], "config": {"scheme": "fastest"}})
    assert status == 400 and "scheme" in doc["error"]


def test_a_body_that_is_not_utf8_is_a_400_naming_the_byte(server):
    status, _, doc = server.post("/v1/verify", None, raw=b'{"items": [{"code": "x = \xff"}]}')
    assert status == 400 and "not valid UTF-8 (byte 25)" in doc["error"]
    status, _, doc = server.post("/v1/verify", None, raw=b'{"items": [{"code": "\xed\xa0\x80"}]}')  # a surrogate
    assert status == 400 and "UTF-8" in doc["error"]


def test_a_number_out_of_range_is_a_400_without_a_library_code(server):
    status, _, doc = server.post("/v1/evaluate", None, raw=b'{"items": [{"code": "x", "sample": 1e999999}]}')
    assert status == 400 and "1e999999" in doc["error"] and "64-bit float" in doc["error"]
    assert "json.exception" not in doc["error"]


def test_deeply_nested_json_is_refused_not_fatal(server):
    status, _, doc = server.post("/v1/verify", None, raw=b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and "expected a JSON object" in doc["error"]
    assert server.request("GET", "/healthz", token=None)[0] == 200


WRONG_TYPES = [
    ("/v1/verify", [1, 2], "the body: expected a JSON object"),
    ("/v1/verify", {"items": {"code": "x"}}, "items: expected an array of items, got an object"),
    ("/v1/verify", {"items": [{"code": 5}]}, "items[0].code: expected a string, got an integer"),
    ("/v1/evaluate", {"items": ["x"]}, "items[0]: expected an object"),
    ("/v1/evaluate", {"items": [{"code": "x", "task_id": ["a"]}]}, "items[0].task_id: expected a string, got an array"),
    ("/v1/evaluate", {"items": [{"code": "x", "id": 3.5}]}, "items[0].id: expected a string, got a fractional number"),
    ("/v1/reward", {"items": [{"code": "x"}, {"response": "y", "level": "1"}]}, "items[1].level: expected an integer"),
    ("/v1/reward", {"items": [{"code": "x", "rerun": 1}]}, "items[0].rerun: expected true or false"),
    ("/v1/reward", {"items": [{"code": "x", "group": {"a": 1}}]}, "items[0].group: expected a string or a number"),
    (
        "/v1/reward",
        {"items": [{"code": "x", "token_offsets": "0-7"}]},
        "items[0].token_offsets: expected [[begin, end]",
    ),
    (
        "/v1/reward",
        {"items": [{"code": "x", "token_offsets": [[5, 2]]}]},
        "items[0].token_offsets[0]: expected [begin, end]",
    ),
    ("/v1/reward", {"items": [], "config": ["correct"]}, "config: expected an object of reward settings"),
    ("/get_reward", [], "the body: expected a JSON object"),
    ("/get_reward", {"query": "a prompt"}, "query: expected an array of strings, got a string"),
    ("/get_reward", {"query": ["a", 1]}, "query[1]: expected a string, got an integer"),
    ("/get_reward", {"query": ["a"], "prompts": "p"}, "prompts: expected an array of strings"),
    ("/get_reward", {"query": ["a"], "prompts": ["p", "q"]}, "prompts: 2 entries for 1 queries; send one per query"),
    ("/get_reward", {"query": ["a"], "labels": [5]}, "labels[0]: expected a string or null, got an integer"),
    ("/get_reward", {"query": ["a"], "config": "correct"}, "config: expected an object"),
]


@pytest.mark.parametrize("path,body,message", WRONG_TYPES, ids=[m.split(":")[0] + " " + p for p, _, m in WRONG_TYPES])
def test_a_wrong_type_is_a_400_that_names_the_field(server, path, body, message):
    status, _, doc = server.post(path, body)
    assert status == 400, doc
    assert message in doc["error"] and "json.exception" not in doc["error"]


def test_an_unknown_task_id_is_an_error_verdict_at_every_route(server):
    item = {"code": RELU, "task_id": "level1/no_such_task"}
    status, _, doc = server.post("/v1/verify", {"items": [item, {"code": RELU, "task_id": "level1/01_relu"}]})
    assert status == 200
    unknown, known = doc["verdicts"]
    assert unknown["status"] == "error" and 'unknown task_id "level1/no_such_task"' in unknown["message"]
    assert known["status"] == "valid"
    status, _, doc = server.post("/v1/reward", {"items": [item]})
    assert status == 200 and doc["verdicts"][0]["status"] == "error" and doc["rewards"][0]["reward"]["scalar"] == 0
    # OpenRLHF: a label that is neither a task id of --tasks nor a task's source is that sample's error,
    # even when its prompt carries a task.
    task = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    prompt = f"Rewrite:\n```python\n{task}```\n"
    status, _, doc = server.post(
        "/get_reward",
        {
            "query": [prompt + "```python\n" + RELU + "```"] * 2,
            "prompts": [prompt] * 2,
            "labels": ["level1/no_such_task", ""],
        },
    )
    assert status == 200 and doc["rewards"] == pytest.approx([0.0, 1.1])


def test_oversized_bodies_and_batches_are_refused(server):
    status, _, _ = server.request("POST", "/v1/verify", raw=b'{"items": ["' + b"x" * 700_000 + b'"]}')
    assert status == 413
    status, _, doc = server.post("/v1/verify", {"items": [{"code": "x"}] * 9})
    assert status == 413 and "limit is 8" in doc["error"]


def test_verify_answers_each_item_in_order(server):
    status, _, doc = server.post(
        "/v1/verify", {"items": [{"code": RELU, "task_id": "level1/01_relu"}, {"code": NO_KERNEL}, {"nothing": 1}]}
    )
    assert status == 200
    statuses = [v["status"] for v in doc["verdicts"]]
    assert statuses == ["valid", "invalid_syntax", "error"]


def test_deeply_nested_code_is_a_syntax_verdict_and_the_server_stays_up(server):
    # 200 KB each: the forms that overflowed the parser's stack and killed the server (issue 23).
    nested = [
        "x = " + "(" * 100_000 + "1" + ")" * 100_000,
        "x = " + "~" * 200_000 + "1",
        "x = " + "not " * 50_000 + "y",
        "x = " + "2 ** " * 50_000 + "2",
    ]
    for code in nested:  # one a request: the server takes bodies up to 0.5 MB here
        status, _, doc = server.post("/v1/verify", {"items": [{"code": code}]})
        assert status == 200
        [verdict] = doc["verdicts"]
        assert verdict["status"] == "invalid_syntax" and verdict["findings"][0]["rule"] == "syntax.parse"
    status, _, text = server.request("GET", "/healthz", token=None)
    assert status == 200 and json.loads(text)["status"] == "ok"


def test_evaluate_keeps_bad_items_as_error_verdicts(server):
    status, _, doc = server.post(
        "/v1/evaluate",
        {"items": [{"code": RELU, "task_id": "level1/01_relu"}, {"code": RELU, "task_id": "no/such_task"}]},
    )
    assert status == 200
    first, second = doc["verdicts"]
    assert first["status"] == "correct" and first["level"] == 1
    assert second["status"] == "error" and "no/such_task" in second["message"]


def test_reward_gives_components_group_advantages_and_token_advantages(server):
    response = "<think>one pass, one program per block</think>\n```python\n" + RELU + "```\n"
    plan_end = response.index("</think>")
    offsets = [[0, 7], [7, plan_end], [plan_end, len(response)]]
    body = {
        "items": [
            {"response": response, "task_id": "level1/01_relu", "group": "p", "token_offsets": offsets},
            {"code": NO_KERNEL, "task_id": "level1/01_relu", "group": "p"},
        ]
    }
    status, _, doc = server.post("/v1/reward", body)
    assert status == 200
    good, bad = doc["rewards"]
    assert good["reward"]["r_correct"] == 1 and good["reward"]["scalar"] == pytest.approx(1.1)  # HRD, untimed
    assert bad["reward"]["scalar"] == 0 and not bad["reward"]["valid"]
    # GRPO over code rewards [1, 0]: +-0.5 / (std 0.7071 + eps); plan rewards [1, 0] weighted by alpha.
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    assert good["advantage"]["code"] == pytest.approx(a) and bad["advantage"]["code"] == pytest.approx(-a)
    assert good["advantage"]["plan"] == pytest.approx(0.1 * a)
    assert good["token_advantages"] == pytest.approx([a, 0.1 * a, a])
    # A request may override the server's reward config.
    body["config"] = {"scheme": "correct", "advantage": "rloo"}
    status, _, doc = server.post("/v1/reward", body)
    assert [r["advantage"]["code"] for r in doc["rewards"]] == [1.0, -1.0]
    assert all(v["cache_hit"] for v in doc["verdicts"])  # the first request's verdicts were cached


def test_openrlhf_get_reward_answers_in_openrlhf_format(server):
    prompt = "Write ModelNew for this task.\n"
    body = {
        "query": [prompt + "```python\n" + RELU + "```", prompt + "no code here"],
        "prompts": [prompt, prompt],
        "labels": ["level1/01_relu", "level1/01_relu"],
    }
    status, _, doc = server.post("/get_reward", body)
    assert status == 200
    assert doc["rewards"] == pytest.approx([1.1, 0.0]) and doc["scores"] == doc["rewards"]
    assert doc["extra_logs"]["correct"] == [1.0, 0.0]
    # Without labels, the task comes from the prompt's fenced block defining Model.
    task = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    prompt = f"Rewrite:\n```python\n{task}```\n"
    status, _, doc = server.post("/get_reward", {"query": [prompt + "```python\n" + RELU + "```"], "prompts": [prompt]})
    assert status == 200 and doc["rewards"] == pytest.approx([1.1])


def test_metrics_are_prometheus_text(server):
    server.post("/v1/verify", {"items": [{"code": NO_KERNEL}]})
    status, headers, text = server.request("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert re.search(r'tritium_requests_total\{route="/v1/verify",code="200"\} \d+', text)
    assert 'tritium_request_seconds_bucket{route="/v1/verify",le="+Inf"}' in text
    assert re.search(r'tritium_verdicts_total\{status="correct"\} \d+', text)
    assert "tritium_pending_items 0" in text


def slow_evaluation(s: Server) -> tuple[threading.Thread, dict]:
    """A fresh candidate evaluating in the background (seconds on the CPU), once it is admitted."""
    result = {}
    slow = threading.Thread(
        target=lambda: result.update(
            answer=s.post("/v1/evaluate", {"items": [{"code": unique(RELU), "task_id": "level1/01_relu"}]}, token=None)
        )
    )
    slow.start()
    s.wait_pending(1)
    return slow, result


def test_overload_is_refused_with_429_and_retry_after():
    s = Server("--max-pending", "1")
    try:
        slow, result = slow_evaluation(s)
        status, headers, doc = s.post(
            "/v1/evaluate", {"items": [{"code": RELU, "task_id": "level1/01_relu"}]}, token=None
        )
        assert status == 429 and headers["Retry-After"] == "1" and "overloaded" in doc["error"]
        status, _, doc = s.post("/v1/reward", {"items": [{"code": RELU}] * 2}, token=None)
        assert status == 413 and "--max-pending" in doc["error"]  # can never fit
        assert s.post("/v1/verify", {"items": [{"code": RELU}]}, token=None)[0] == 200  # cheap routes still answer
        slow.join()
        assert result["answer"][0] == 200 and result["answer"][2]["verdicts"][0]["status"] == "correct"
    finally:
        s.stop()


def test_a_request_past_its_timeout_gets_504():
    s = Server("--request-timeout", "0.3")
    try:
        status, _, doc = s.post(
            "/v1/evaluate", {"items": [{"code": unique(RELU), "task_id": "level1/01_relu"}]}, token=None
        )
        assert status == 504 and "0.3" in doc["error"]
    finally:
        s.stop()


def test_sigterm_drains_the_work_in_flight_then_exits_0():
    s = Server()
    try:
        slow, result = slow_evaluation(s)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        status, _, doc = s.post("/v1/verify", {"items": [{"code": RELU}]}, token=None)
        assert status == 503 and "draining" in doc["error"]
        status, _, text = s.request("GET", "/healthz", token=None)
        assert json.loads(text)["status"] == "draining"
        slow.join()
        assert result["answer"][0] == 200 and result["answer"][2]["verdicts"][0]["status"] == "correct"
        assert s.proc.wait(timeout=60) == 0
        assert "drained" in s.proc.stderr.read()
    finally:
        s.stop()
