"""Models in the loop, for real on loopback: `tritium serve-model` over a tiny model, the official
`openai` package as its client, and the C++ client driving it through `tritium bench`, `distill`
and `search` (retries on 503, timeouts, resuming after a crash)."""

import concurrent.futures
import json
import pathlib
import subprocess

import pytest
from conftest import EXAMPLE_TASKS
from test_cli import TRITIUM, run

KEY = "test-key"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> pathlib.Path:
    from tritium.train import models

    where = tmp_path_factory.mktemp("tiny")
    corpus = [p.read_text() for p in EXAMPLE_TASKS.rglob("*.py")]
    model, tokenizer = models.load("tiny", corpus=corpus)
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    return where


class Server:
    def __init__(self, model: pathlib.Path, log: pathlib.Path, *flags: str):
        self.log = log
        self.proc = subprocess.Popen(
            [TRITIUM, "serve-model", str(model), "--port", "0", *flags],
            text=True,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
        )
        line = self.proc.stdout.readline()
        if "--json" in flags:  # the same, as one JSON line
            self.url = json.loads(line)["listening"]
            return
        assert "listening on" in line, log.read_text()
        self.url = line.split("listening on ")[1].strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    s = Server(
        tiny_model,
        tmp_path_factory.mktemp("server") / "log",
        "--api-key",
        KEY,
        "--max-batch",
        "8",
        "--batch-wait-ms",
        "200",
        "--model-name",
        "tiny",
    )
    yield s
    s.stop()


def test_with_json_the_server_says_where_it_listens_as_json(tiny_model, tmp_path):
    s = Server(tiny_model, tmp_path / "log", "--json", "--model-name", "tiny-json")
    try:
        import urllib.request

        with urllib.request.urlopen(s.url + "/health", timeout=30) as answer:
            assert json.loads(answer.read()) == {"status": "ok", "model": "tiny-json"}
    finally:
        s.stop()


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("TRITIUM_API_KEY", KEY)


def openai_client(server, key=KEY):
    import openai

    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def test_the_openai_package_talks_to_the_server(server):
    client = openai_client(server)
    assert [m.id for m in client.models.list().data] == ["tiny"]
    chat = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "relu kernel"}], n=2, max_tokens=8, temperature=0.8
    )
    assert len(chat.choices) == 2 and all(isinstance(c.message.content, str) for c in chat.choices)
    assert chat.usage.completion_tokens <= 16 and chat.choices[0].finish_reason in ("stop", "length")
    done = client.completions.create(model="tiny", prompt=["import torch", "def f"], max_tokens=4, temperature=0)
    assert [c.index for c in done.choices] == [0, 1]
    again = client.completions.create(model="tiny", prompt="import torch", max_tokens=4, temperature=0)
    assert again.choices[0].text == done.choices[0].text  # greedy is deterministic
    # Usage counts each prompt once, however many samples it had.
    twice = client.completions.create(model="tiny", prompt="import torch", max_tokens=4, temperature=0.8, n=2)
    assert twice.usage.prompt_tokens == again.usage.prompt_tokens > 0
    assert done.usage.prompt_tokens > again.usage.prompt_tokens


def test_the_server_refuses_bad_requests_and_wrong_keys(server):
    import openai

    client = openai_client(server)
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.completions.create(model="tiny", prompt="x", max_tokens=0)
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="tiny", messages=[])
    with pytest.raises(openai.BadRequestError, match="stream"):
        client.completions.create(model="tiny", prompt="x", extra_body={"stream_options": "usage"})
    with pytest.raises(openai.AuthenticationError):
        openai_client(server, key="wrong").models.list()
    for field, value in (
        ("logprobs", True),
        ("tools", [{"type": "function", "function": {"name": "f"}}]),
        ("response_format", {"type": "json_object"}),
    ):
        with pytest.raises(openai.BadRequestError, match=field):  # refused, never silently ignored
            client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], **{field: value})


def test_streamed_answers_carry_the_same_text_as_whole_ones(server):
    client = openai_client(server)
    messages = [{"role": "user", "content": "relu kernel"}]
    whole = client.chat.completions.create(model="tiny", messages=messages, max_tokens=6, temperature=0)
    chunks = list(
        client.chat.completions.create(
            model="tiny",
            messages=messages,
            max_tokens=6,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    plain = client.completions.create(model="tiny", prompt=["import torch", "def f"], max_tokens=4, temperature=0)
    streamed = list(
        client.completions.create(
            model="tiny", prompt=["import torch", "def f"], max_tokens=4, temperature=0, stream=True
        )
    )
    assert {c.choices[0].index: c.choices[0].text for c in streamed} == {c.index: c.text for c in plain.choices}


def test_max_completion_tokens_bounds_the_answer(server):
    chat = openai_client(server).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "relu kernel"}], max_completion_tokens=4, temperature=0.8
    )
    assert chat.usage.completion_tokens <= 4


def test_concurrent_requests_share_a_batch(server):
    client = openai_client(server)
    before = server.log.read_text().count("batch of")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(
                lambda p: client.completions.create(model="tiny", prompt=p, max_tokens=4, temperature=0.7),
                ["a", "b", "c", "d"],
            )
        )
    assert all(len(a.choices) == 1 for a in answers)
    batches = [
        int(line.split("batch of ")[1].split()[0]) for line in server.log.read_text().splitlines() if "batch of" in line
    ][before:]
    assert sum(batches) == 4 and max(batches) > 1, batches


def test_bench_samples_evaluates_reports_and_resumes(server, keyed, tmp_path):
    out = tmp_path / "bench"
    r = run(
        "bench",
        "--tasks",
        EXAMPLE_TASKS,
        "--model",
        server.url,
        "--samples",
        2,
        "--limit",
        3,
        "--max-tokens",
        24,
        "--out",
        out,
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["sampled_now"] == 3 and info["client"]["requests"] == 3
    assert len((out / "verdicts.jsonl").read_text().splitlines()) == 6
    assert len((out / "samples.jsonl").read_text().splitlines()) == 6
    assert "pass@1" in (out / "report.md").read_text()
    assert info["metrics"]["overall"]["samples"] == 6
    # A torn verdict line (a crash mid-write) is dropped and its task redone; finished tasks are not.
    with (out / "verdicts.jsonl").open("a") as f:
        f.write('{"task_id": "level1/04_broadcast_ad')
    r = run(
        "bench",
        "--tasks",
        EXAMPLE_TASKS,
        "--model",
        server.url,
        "--samples",
        2,
        "--limit",
        4,
        "--max-tokens",
        24,
        "--out",
        out,
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert "resuming: 3 tasks done, 1 to go" in r.stderr
    tasks = [json.loads(line)["task_id"] for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert len(tasks) == 8 and len(set(tasks)) == 4


def test_the_client_retries_a_busy_server(tiny_model, tmp_path):
    busy = Server(tiny_model, tmp_path / "log", "--max-pending", "1")
    try:
        r = run(
            "bench",
            "--tasks",
            EXAMPLE_TASKS / "level1",
            "--model",
            busy.url,
            "--samples",
            1,
            "--limit",
            2,
            "--concurrency",
            2,
            "--max-tokens",
            8,
            "--retries",
            12,
            "--out",
            tmp_path / "b",
            "--device",
            "cpu",
            "--json",
        )
    finally:
        busy.stop()
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["sampled_now"] == 2
    assert info["client"]["retries"] >= 1 and info["client"]["failures"] == 0, info["client"]


def test_a_timeout_costs_the_task_and_says_so(server, keyed, tmp_path):
    r = run(
        "bench",
        "--tasks",
        EXAMPLE_TASKS / "level1" / "01_relu.py",
        "--model",
        server.url,
        "--max-tokens",
        3000,
        "--request-timeout",
        0.2,
        "--retries",
        0,
        "--out",
        tmp_path / "b",
        "--device",
        "cpu",
    )
    assert r.returncode == 3, r.stderr
    assert "no answer within 0.2 s" in r.stderr


def test_a_wrong_key_is_a_clear_error(server, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_API_KEY", "wrong")
    r = run(
        "bench",
        "--tasks",
        EXAMPLE_TASKS / "level1" / "01_relu.py",
        "--model",
        server.url,
        "--out",
        tmp_path / "b",
        "--device",
        "cpu",
    )
    assert r.returncode == 3 and "HTTP 401: missing or wrong API key" in r.stderr, r.stderr


def test_bench_serves_a_model_directory_itself(tiny_model, tmp_path):
    r = run(
        "bench",
        "--tasks",
        EXAMPLE_TASKS / "level1" / "01_relu.py",
        "--model",
        tiny_model,
        "--samples",
        2,
        "--max-tokens",
        16,
        "--out",
        tmp_path / "b",
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["overall"]["samples"] == 2


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("synth") / "tasks.jsonl"
    r = run(
        "synth",
        "--count",
        3,
        "--difficulty",
        "1",
        "--ops",
        "unary,binary",
        "--seed",
        5,
        "--with-solutions",
        "--out",
        path,
    )
    assert r.returncode == 0, r.stderr
    return path


def test_distill_keeps_verified_traces_and_resumes_after_a_crash(synthesized, tmp_path):
    out = tmp_path / "sft.jsonl"
    progress = pathlib.Path(str(out) + ".progress.jsonl")
    r = run(
        "distill",
        "--tasks",
        synthesized,
        "--teacher",
        "emitter",
        "--samples",
        2,
        "--limit",
        2,
        "--out",
        out,
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["kept"] == 2 and stats["dropped"] == {"duplicate": 2}
    # A crash after the second task's trace was written but before its progress line was.
    lines = progress.read_text().splitlines()
    progress.write_text(lines[0] + "\n" + lines[1][:10])
    r = run(
        "distill",
        "--tasks",
        synthesized,
        "--teacher",
        "emitter",
        "--samples",
        2,
        "--out",
        out,
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert "resuming: 1 tasks done, 2 to go" in r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["task_id"] for row in rows) == sorted({row["task_id"] for row in rows})  # no duplicates
    assert json.loads(r.stdout)["kept"] == 3 and all("<think>" in row["response"] for row in rows)


def test_distill_drops_what_a_weak_teacher_writes(server, keyed, tmp_path):
    r = run(
        "distill",
        "--tasks",
        EXAMPLE_TASKS / "level1",
        "--teacher",
        server.url,
        "--samples",
        2,
        "--limit",
        2,
        "--max-tokens",
        16,
        "--out",
        tmp_path / "sft.jsonl",
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["samples"] == 4 and stats["kept"] + sum(stats["dropped"].values()) == 4


def test_search_keeps_only_correct_candidates(synthesized, server, keyed, tmp_path):
    task_id = json.loads(synthesized.read_text().splitlines()[0])["id"]
    r = run(
        "search",
        "--task",
        task_id,
        "--tasks",
        synthesized,
        "--generator",
        "emitter",
        "--budget",
        2,
        "--out",
        tmp_path / "emitter",
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["best"] == 0 and result["tried"][0]["status"] == "correct"
    assert "@triton.jit" in (tmp_path / "emitter" / "best.py").read_text()
    # A model that writes no kernel: best-of-N and a refinement round, and nothing is returned.
    r = run(
        "search",
        "--task",
        task_id,
        "--tasks",
        synthesized,
        "--generator",
        server.url,
        "--budget",
        2,
        "--rounds",
        1,
        "--max-tokens",
        16,
        "--out",
        tmp_path / "tiny",
        "--device",
        "cpu",
        "--json",
    )
    assert r.returncode == 1, r.stderr
    result = json.loads(r.stdout)
    assert result["best"] is None and not (tmp_path / "tiny" / "best.py").exists()
    stages = [json.loads(line).get("stage") for line in (tmp_path / "tiny" / "search.jsonl").read_text().splitlines()]
    assert "best_of_n" in stages and "refine" in stages
