"""Verdicts and rewards for raw LLM responses, in-process or from `tritium serve` endpoints."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import threading
import time
import urllib.parse


class RewardClient:
    """Scores batches of {"response" | "code", "task" (source) | "task_id", "group"?} items.

    With `endpoints` (URLs of `tritium serve`), batches go to POST /v1/reward, round-robin; a busy
    (429), draining (503) or unreachable endpoint is skipped for the next, with backoff, up to
    `retries` rounds. Without, a `tritium.Engine` in this process evaluates (engine options as
    keyword arguments, e.g. device="cuda"), and task ids resolve through `tasks` (a suite path).
    `config` is a reward config (docs/rewards.md). Each result is {"verdict", "reward", "advantage"}.
    """

    def __init__(
        self,
        endpoints: list[str] | None = None,
        token: str | None = None,
        config: dict | None = None,
        tasks: str | None = None,
        timeout: float = 1800.0,
        retries: int = 3,
        **engine_options,
    ):
        from .. import api

        self.config = api.reward_config(config)  # a bad config fails here, not mid-training
        self.endpoints = [urllib.parse.urlsplit(u if "://" in u else "http://" + u) for u in endpoints or []]
        self.token, self.timeout, self.retries = token, timeout, retries
        self._next = itertools.cycle(range(len(self.endpoints))) if self.endpoints else None
        self._lock = threading.Lock()
        self._engine = None
        self._engine_options = engine_options
        self._tasks = {t["id"]: t["source"] for t in api.load_suite(tasks, with_source=True)["tasks"]} if tasks else {}

    def score(self, items: list[dict]) -> list[dict]:
        items = [dict(item) for item in items]
        if not items:
            return []
        if self.endpoints:
            return self._score_remote(items)
        return self._score_local(items)

    def engine_info(self) -> dict | None:
        """The in-process engine's info() (its slots, memory budget, admissions that waited); None
        before its first batch, or with endpoints."""
        with self._lock:
            engine = self._engine
        return engine.info() if engine is not None else None

    def _score_local(self, items: list[dict]) -> list[dict]:
        from .. import api

        for item in items:
            if "task" not in item and item.get("task_id") in self._tasks:
                item["task"] = self._tasks[item["task_id"]]
        with self._lock:
            if self._engine is None:
                self._engine = api.Engine(**self._engine_options)
        verdicts = self._engine.evaluate(items)
        scored = api.rewards(verdicts, self.config)
        return [{"verdict": v, **s} for v, s in zip(verdicts, scored)]

    def _score_remote(self, items: list[dict]) -> list[dict]:
        body = json.dumps({"items": items, "config": self.config}).encode()
        errors = []
        for attempt in range(self.retries * len(self.endpoints)):
            with self._lock:
                url = self.endpoints[next(self._next)]
            try:
                status, text = self._post(url, "/v1/reward", body)
            except OSError as e:
                errors.append(f"{url.netloc}: {e}")
            else:
                if status == 200:
                    doc = json.loads(text)
                    return [{"verdict": v, **r} for v, r in zip(doc["verdicts"], doc["rewards"])]
                message = f"{url.netloc}: HTTP {status}: {text[:300]}"
                if status not in (429, 502, 503, 504):
                    raise ValueError(message)  # our request is wrong: retrying will not help
                errors.append(message)
            if (attempt + 1) % len(self.endpoints) == 0:
                time.sleep(min(30.0, 0.5 * 2 ** (attempt // len(self.endpoints))))
        raise RuntimeError("no tritium serve endpoint answered: " + "; ".join(errors[-len(self.endpoints) :]))

    def _post(self, url, path: str, body: bytes) -> tuple[int, str]:
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=self.timeout)
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn.request("POST", url.path.rstrip("/") + path, body=body, headers=headers)
            res = conn.getresponse()
            return res.status, res.read().decode()
        finally:
            conn.close()


_default: RewardClient | None = None
_default_lock = threading.Lock()


def default_client() -> RewardClient:
    """The client that framework hooks use, configured from the environment: TRITIUM_SERVE_URLS
    (comma-separated endpoints; unset: evaluate in this process), TRITIUM_SERVE_TOKEN,
    TRITIUM_REWARD_CONFIG (a JSON object), TRITIUM_TASKS (a suite, for task ids in-process),
    TRITIUM_DEVICE (in-process engine device, default auto)."""
    global _default
    with _default_lock:
        if _default is None:
            urls = [u.strip() for u in os.environ.get("TRITIUM_SERVE_URLS", "").split(",") if u.strip()]
            config = (
                json.loads(os.environ["TRITIUM_REWARD_CONFIG"]) if os.environ.get("TRITIUM_REWARD_CONFIG") else None
            )
            engine = {} if urls else {"device": os.environ.get("TRITIUM_DEVICE", "auto")}
            _default = RewardClient(
                urls,
                token=os.environ.get("TRITIUM_SERVE_TOKEN"),
                config=config,
                tasks=os.environ.get("TRITIUM_TASKS"),
                **engine,
            )
        return _default
