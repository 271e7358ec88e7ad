"""`tritium serve-model PATH`: an OpenAI-compatible server over a transformers causal LM (any model
directory, Tritium's checkpoints, a directory holding a .gguf). Concurrent requests are batched
into one `generate` call. Standard library HTTP: the model, not the server, is the bottleneck.

    python -m tritium.model_server PATH [--host 127.0.0.1] [--port 8000] [--max-batch 8]

The first line on stdout is "tritium serve-model: listening on http://HOST:PORT" (port 0 picks a
free one): `tritium bench --model PATH` reads it to find the server it started. See docs/llm.md.
"""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_N = 16
MAX_STOP = 4


class RequestError(Exception):
    """A client's mistake: answered with this status and message, in OpenAI's error format."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass(frozen=True)
class Sampling:
    n: int
    temperature: float
    top_p: float
    max_tokens: int
    stop: tuple[str, ...]
    seed: int | None

    def batch_key(self):
        """Requests that can share one generate call (max_tokens is cut per request afterwards)."""
        return (self.temperature, self.top_p, self.seed)


@dataclass
class Job:
    prompt: str
    sampling: Sampling
    future: Future = field(default_factory=Future)


def _number(body: dict, key: str, default, kind, lo, hi):
    value = body.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise RequestError(f"'{key}' must be {'an integer' if kind is int else 'a number'}")
    if not lo <= value <= hi:
        raise RequestError(f"'{key}' must be between {lo} and {hi}, got {value}")
    return kind(value)


UNSUPPORTED = ("logprobs", "top_logprobs", "tools", "tool_choice", "functions", "response_format")


def parse_sampling(body: dict, max_tokens_limit: int) -> Sampling:
    stop = body.get("stop") or []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop) or len(stop) > MAX_STOP:
        raise RequestError(f"'stop' must be a string or a list of at most {MAX_STOP} non-empty strings")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError("'seed' must be an integer")
    if not isinstance(body.get("stream", False), bool) or not isinstance(body.get("stream_options") or {}, dict):
        raise RequestError("'stream' must be a boolean and 'stream_options' an object")
    for name in UNSUPPORTED:  # refused, not ignored: a client relying on one would get less than it asked
        if body.get(name) not in (None, False, [], {}) and not (
            name == "response_format" and body[name] == {"type": "text"}
        ):
            raise RequestError(f"'{name}' is not supported by tritium serve-model")
    # OpenAI's newer name wins over the older one
    tokens_key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return Sampling(
        n=_number(body, "n", 1, int, 1, MAX_N),
        temperature=_number(body, "temperature", 1.0, float, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, float, 1e-6, 1.0),
        max_tokens=_number(body, tokens_key, min(256, max_tokens_limit), int, 1, max_tokens_limit),
        stop=tuple(stop),
        seed=seed,
    )


def message_text(message) -> tuple[str, str]:
    if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
        raise RequestError('each message must be {"role": system|user|assistant, "content": ...}')
    content = message.get("content")
    if isinstance(content, list):  # content parts: the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if not isinstance(content, str):
        raise RequestError("a message's 'content' must be a string or a list of text parts")
    return message["role"], content


class Model:
    """The model and its tokenizer, and how a request becomes the text the model continues."""

    def __init__(self, path: str, device: str, dtype: str):
        import torch

        from .train import models

        self.torch = torch
        self.device = models.device_for(device)
        chosen = {
            "auto": torch.bfloat16 if self.device.type == "cuda" else torch.float32,
            "float32": torch.float32,
            "bfloat16": torch.bfloat16,
            "float16": torch.float16,
        }[dtype]
        self.model, self.tokenizer = models.load(path, dtype=chosen)
        self.model.to(self.device).eval()
        self.context = getattr(self.model.config, "max_position_embeddings", 4096)

    def chat_text(self, messages: list) -> str:
        if not isinstance(messages, list) or not messages:
            raise RequestError("'messages' must be a non-empty list")
        turns = [message_text(m) for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                [{"role": r, "content": c} for r, c in turns], tokenize=False, add_generation_prompt=True
            )
        # No template (the tiny preset): the layout its SFT used (train/data.py prompt_text).
        return "\n\n".join(c for _, c in turns) + "\n\n"

    def generate(self, jobs: list[Job]) -> list[list[dict]]:
        """The choices of each job, from one batched generate call (left-padded prompts)."""
        torch, tok = self.torch, self.tokenizer
        s = jobs[0].sampling
        rows = [(j, tok(j.prompt, add_special_tokens=False)["input_ids"]) for j in jobs]
        ids = [p for j, p in rows for _ in range(j.sampling.n)]
        width = max(len(p) for p in ids)
        budget = max(j.sampling.max_tokens for j in jobs)
        if width + budget > self.context:
            budget = max(1, self.context - width)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in ids], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in ids], device=self.device)
        if s.seed is not None:
            torch.manual_seed(s.seed)
        sample = s.temperature > 0
        extra = {"temperature": s.temperature, "top_p": s.top_p} if sample else {}
        with torch.no_grad():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                do_sample=sample,
                max_new_tokens=budget,
                pad_token_id=pad,
                eos_token_id=tok.eos_token_id,
                **extra,
            )
        new = out[:, width:].tolist()
        answers, row = [], 0
        for job, prompt_ids in rows:
            choices = []
            for i in range(job.sampling.n):
                choices.append(self._choice(new[row], job.sampling, i, len(prompt_ids)))
                row += 1
            answers.append(choices)
        return answers

    def _choice(self, tokens: list[int], s: Sampling, index: int, prompt_tokens: int) -> dict:
        eos = self.tokenizer.eos_token_id
        finish = "length"
        if eos in tokens:
            tokens, finish = tokens[: tokens.index(eos)], "stop"
        if len(tokens) > s.max_tokens:
            tokens, finish = tokens[: s.max_tokens], "length"
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cuts = [text.find(stop) for stop in s.stop if stop in text]
        if cuts:
            text, finish = text[: min(cuts)], "stop"
        return {
            "index": index,
            "text": text,
            "finish_reason": finish,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(tokens),
        }


class Batcher:
    """One thread runs the model; requests queue here and leave in batches of compatible sampling."""

    def __init__(self, model: Model, max_batch: int, wait_s: float, max_pending: int, log):
        self.model, self.max_batch, self.wait_s, self.max_pending, self.log = model, max_batch, wait_s, max_pending, log
        self.jobs: queue.Queue[Job] = queue.Queue()
        self.pending = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True, name="generate").start()

    def submit(self, job: Job) -> Future:
        with self.lock:
            if self.pending + job.sampling.n > self.max_pending:
                raise RequestError(
                    f"the server is busy ({self.pending} sequences queued); retry later", 503, "server_busy"
                )
            self.pending += job.sampling.n
        self.jobs.put(job)
        return job.future

    def _take_batch(self) -> list[Job]:
        first = self.jobs.get()
        batch, held, rows = [first], [], first.sampling.n
        deadline = time.monotonic() + self.wait_s
        while rows < self.max_batch and first.sampling.seed is None:  # a seeded request runs alone
            try:
                job = self.jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            fits = job.sampling.batch_key() == first.sampling.batch_key() and rows + job.sampling.n <= self.max_batch
            (batch if fits else held).append(job)
            rows += job.sampling.n if fits else 0
        for job in held:  # the next batches take them, in order
            self.jobs.put(job)
        return batch

    def _run(self):
        while True:
            batch = self._take_batch()
            start = time.monotonic()
            try:
                answers = self.model.generate(batch)
                for job, choices in zip(batch, answers):
                    job.future.set_result(choices)
                tokens = sum(c["completion_tokens"] for a in answers for c in a)
                self.log(f"batch of {len(batch)} requests, {tokens} tokens in {time.monotonic() - start:.2f} s")
            except Exception as e:  # noqa: BLE001 -- a failed batch fails its requests, not the server
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(e)
            finally:
                with self.lock:
                    self.pending -= sum(j.sampling.n for j in batch)


def completion_body(kind: str, model_name: str, choices: list[dict], chat: bool, usage_prompt: int) -> dict:
    """The OpenAI-shaped answer; `usage_prompt` counts each prompt once, however many samples it had."""
    usage_completion = sum(c["completion_tokens"] for c in choices)
    out = []
    for c in choices:
        item = {"index": c["index"], "finish_reason": c["finish_reason"]}
        if chat:
            item["message"] = {"role": "assistant", "content": c["text"]}
        else:
            item["text"] = c["text"]
        out.append(item)
    return {
        "id": f"{kind}-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": out,
        "usage": {
            "prompt_tokens": usage_prompt,
            "completion_tokens": usage_completion,
            "total_tokens": usage_prompt + usage_completion,
        },
    }


def stream_events(body: dict, chat: bool, include_usage: bool) -> list[dict]:
    """A finished answer as OpenAI's stream chunks: per choice its text in one delta (the model
    runs whole batches, so nothing is sent before the text is complete), then its finish reason;
    the usage last when asked (`stream_options.include_usage`)."""
    base = {
        "id": body["id"],
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": body["created"],
        "model": body["model"],
    }
    events = []
    for c in body["choices"]:
        if chat:
            text = {"delta": {"role": "assistant", "content": c["message"]["content"]}}
            events += [
                {**base, "choices": [{"index": c["index"], **text, "finish_reason": None}]},
                {**base, "choices": [{"index": c["index"], "delta": {}, "finish_reason": c["finish_reason"]}]},
            ]
        else:
            events.append(
                {**base, "choices": [{"index": c["index"], "text": c["text"], "finish_reason": c["finish_reason"]}]}
            )
    if include_usage:
        events.append({**base, "choices": [], "usage": body["usage"]})
    return events


def make_handler(
    model: Model, batcher: Batcher, model_name: str, api_key: str | None, max_tokens: int, timeout_s: float
):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # the batch log says what matters; keep stderr readable
            pass

        def _send(self, status: int, body: dict, headers: dict | None = None):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, e: RequestError):
            self._send(
                e.status,
                {"error": {"message": str(e), "type": e.kind, "code": e.status}},
                {"Retry-After": "1"} if e.status == 503 else None,
            )

        def _authorised(self) -> bool:
            if api_key and self.headers.get("Authorization", "") != f"Bearer {api_key}":
                self._error(RequestError("missing or wrong API key", 401, "authentication_error"))
                return False
            return True

        def do_GET(self):
            if self.path in ("/health", "/healthz"):
                self._send(200, {"status": "ok", "model": model_name})
            elif self.path == "/v1/models" and self._authorised():
                self._send(
                    200, {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "tritium"}]}
                )
            elif self.path != "/v1/models":
                self._error(RequestError(f"no route {self.path}", 404, "not_found"))

        def do_POST(self):
            routes = {"/v1/chat/completions": True, "/v1/completions": False}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            if self.path not in routes:
                return self._error(RequestError(f"no route {self.path}", 404, "not_found"))
            if not self._authorised():
                return None
            try:
                body, stream = self._complete(raw, routes[self.path])
                if stream is None:
                    self._send(200, body)
                else:
                    self._stream(stream_events(body, routes[self.path], bool(stream.get("include_usage"))))
            except RequestError as e:
                self._error(e)
            except Exception as e:  # noqa: BLE001 -- the model failed: 500, and the server lives on
                self._error(RequestError(f"generation failed: {e}", 500, "server_error"))

        def _stream(self, events: list[dict]):
            """Server-sent events, then `data: [DONE]`; the connection closes after them."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _complete(self, raw: bytes, chat: bool) -> tuple[dict, dict | None]:
            """The answer, and the stream options when the client asked to stream it (else None)."""
            try:
                body = json.loads(raw)
            except ValueError as e:
                raise RequestError(f"the body is not JSON: {e}") from None
            if not isinstance(body, dict):
                raise RequestError("the body must be a JSON object")
            sampling = parse_sampling(body, max_tokens)
            if chat:
                prompts = [model.chat_text(body.get("messages"))]
            else:
                prompt = body.get("prompt")
                prompts = [prompt] if isinstance(prompt, str) else prompt
                if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
                    raise RequestError("'prompt' must be a string or a non-empty list of strings")
            futures = [batcher.submit(Job(p, sampling)) for p in prompts]
            choices, prompt_tokens = [], 0
            for p, future in enumerate(futures):
                try:
                    got = future.result(timeout=timeout_s)
                except TimeoutError:
                    raise RequestError(f"generation took longer than {timeout_s} s", 504, "timeout") from None
                prompt_tokens += got[0]["prompt_tokens"] if got else 0
                choices += [{**c, "index": p * sampling.n + c["index"]} for c in got]
            answer = completion_body("chatcmpl" if chat else "cmpl", model_name, choices, chat, prompt_tokens)
            return answer, (body.get("stream_options") or {}) if body.get("stream") else None

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tritium serve-model", description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a transformers causal-LM directory (or one holding a .gguf)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    ap.add_argument("--model-name", default=None, help="the name /v1/models reports (default: the directory name)")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    ap.add_argument("--max-batch", type=int, default=8, help="sequences per generate call")
    ap.add_argument("--batch-wait-ms", type=float, default=20, help="how long a batch waits to fill")
    ap.add_argument("--max-pending", type=int, default=256, help="queued sequences before 503")
    ap.add_argument("--max-tokens", type=int, default=4096, help="the largest max_tokens a request may ask")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a request may wait for its answer")
    ap.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    ap.add_argument("--json", action="store_true", help="say where it listens as one JSON line: {listening, model}")
    ap.add_argument(
        "--parent-pid",
        type=int,
        default=0,
        help="end with this process (a `tritium bench` or `search` that started the server)",
    )
    args = ap.parse_args(argv)
    if args.parent_pid:
        from .runner.lifetime import die_with_parent

        die_with_parent(args.parent_pid)
    import pathlib

    log = lambda msg: print(f"tritium serve-model: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        model = Model(args.path, args.device, args.dtype)
    except (ValueError, OSError) as e:
        print(f"tritium serve-model: error: {e}", file=sys.stderr)
        return 2
    name = args.model_name or pathlib.Path(args.path).resolve().name
    batcher = Batcher(model, max(1, args.max_batch), args.batch_wait_ms / 1000, max(1, args.max_pending), log)
    server = ThreadingHTTPServer(
        (args.host, args.port), make_handler(model, batcher, name, args.api_key, args.max_tokens, args.timeout)
    )
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}"
    print(
        json.dumps({"listening": url, "model": name}) if args.json else f"tritium serve-model: listening on {url}",
        flush=True,
    )
    log(f"{name} on {model.device}, batches of up to {args.max_batch}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
