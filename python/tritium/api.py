"""The Python face of Tritium's C++ core (tritium._core)."""

import json
import os
import sys

from . import _core


def version() -> str:
    """Tritium's version, e.g. "0.1.0"."""
    return _core.version()


def load_suite(path: str | os.PathLike, with_source: bool = False) -> dict:
    """Loads a task suite: a .py task, a directory of them or a .jsonl file.

    Returns {"suite", "tasks": [{"id", "origin", "level", "meta", "source"?}], "problems": [...]};
    raises ValueError when the path itself is unusable.
    """
    return json.loads(_core.load_suite_json(os.fspath(path), with_source))


def check_suite(
    path: str | os.PathLike, device: str = "cpu", timeout_s: float = 60.0, seed: int = 0, python: str | None = None
) -> dict:
    """Runs each task's reference in a runner process (like `tritium tasks PATH --check --json`).

    The runner uses `python` (default: this interpreter). Raises ValueError for an unusable path and
    RuntimeError when no runner can start.
    """
    return json.loads(_core.check_suite_json(os.fspath(path), device, timeout_s, seed, python or sys.executable))


def _looks_like_response(text: str) -> bool:
    return "```" in text or "~~~" in text or "<think>" in text or "</think>" in text


def verify(code_or_response: str, task_source: str | None = None, is_response: bool | None = None) -> dict:
    """Static verdict of a candidate: {"status", "findings": [{rule, severity, line, col, message}]}.

    `code_or_response` is candidate code, or a raw LLM response (a fenced block or a <think> block
    makes it one; `is_response` forces the choice). With `task_source`, ModelNew's __init__ and
    forward parameters must match Model's (`func.signature_mismatch`).
    """
    if is_response is None:
        is_response = _looks_like_response(code_or_response)
    return json.loads(_core.verify_json(code_or_response, is_response, task_source or ""))


def extract(response: str) -> dict:
    """Plan and code of a raw LLM response, with byte spans: {plan, code, plan_span, code_span, has_code, notes}."""
    return json.loads(_core.extract_json(response))


def synthesize(count: int = 100, difficulty: int | tuple[int, int] = (1, 3), ops: str | list[str] | None = None,
               seed: int = 0, size: str = "cpu", threads: int = 1) -> list[dict]:
    """CSP-DAG synthesized tasks (like `tritium synth`, docs/synth.md): a list of
    {"id", "origin", "level", "meta", "source"}, the same for the same arguments whatever `threads`.

    `difficulty` is K or (K1, K2) compute operators; `ops` operator categories ("unary,reduction" or a
    list); `size` "cpu" or "gpu". Raises ValueError on bad options.
    """
    lo, hi = (difficulty, difficulty) if isinstance(difficulty, int) else difficulty
    options = {"count": count, "min_difficulty": lo, "max_difficulty": hi, "seed": seed, "size": size,
               "threads": threads, "ops": ops if isinstance(ops, str) else ",".join(ops or [])}
    return json.loads(_core.synthesize_json(json.dumps(options)))


def synth_stats(tasks: list[dict], ops: str | list[str] | None = None) -> dict:
    """Coverage of synthesized tasks (their "meta"): op histogram, chi-square uniformity, pairs, sizes."""
    return json.loads(_core.synth_stats_json(json.dumps(tasks), ops if isinstance(ops, str) else ",".join(ops or [])))


def rewards(verdicts: list[dict], config: dict | None = None) -> list[dict]:
    """Reward components and advantages of verdicts (docs/rewards.md), in order:
    [{"reward": {valid, correct, speedup, r_correct, r_speedup, coverage, plan, code, scalar, penalty},
      "advantage": {"plan", "code"}}]. Verdicts whose meta.group is equal form a prompt group.
    `config` is a reward config (absent keys default; TritonRL's HRD); raises ValueError on a bad one."""
    return json.loads(_core.rewards_json(json.dumps(list(verdicts)), json.dumps(config or {})))


def reward_config(config: dict | None = None) -> dict:
    """The full reward config `config` stands for (defaults filled in); raises ValueError on a bad one."""
    return json.loads(_core.reward_config_json(json.dumps(config or {})))


def token_advantages(response: str, offsets: list[tuple[int, int]], advantage: dict) -> list[float]:
    """Per-token advantages of one response from its tokens' character offsets (a tokenizer's
    offset_mapping; non-ASCII text is handled): tokens starting inside the extracted plan get
    advantage["plan"], others advantage["code"]."""
    return _core.token_advantages(response, [tuple(o) for o in offsets], advantage["plan"], advantage["code"])


def metrics(verdicts: list[dict], ks: tuple[int, ...] = (1, 5, 10), ps: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)) -> dict:
    """pass@k, fast_p@k, speedups, stages, per level and rule (docs/metrics.md), as `tritium report`'s JSON."""
    return json.loads(_core.metrics_json(json.dumps(list(verdicts)), list(ks), [float(p) for p in ps]))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct."""
    return _core.pass_at_k(n, c, k)


def kernel_prompt(task_source: str) -> str:
    """The user message asking a model for a Triton ModelNew for a task (docs/data.md)."""
    return _core.kernel_prompt(task_source)


def task_in_prompt(prompt: str) -> str | None:
    """The task a prompt carries: its first fenced code block defining `class Model`, or None."""
    return _core.task_in_prompt(prompt)


def format_response(plan: str, code: str) -> str:
    """A response in the trained format: <think>plan</think>, then one ```python block."""
    return _core.format_response(plan, code)


class Engine:
    """The sandboxed evaluation engine (the same C++ engine as `tritium eval`).

    Create once and call evaluate() many times: runners stay warm and each task's reference is
    computed once. Options are EngineOptions' (docs/engine.md): device ("auto", "cpu", "cuda",
    "cuda:N"), profile, trials, jobs, timeout_s, seed, static_check, timing, cache, work_dir,
    memory_gb, reference_cache_gb, unsafe_sandbox, python (default: this interpreter). Raises RuntimeError
    when no runner can start, or when the sandbox cannot be established and unsafe_sandbox is not set.
    """

    def __init__(self, **options):
        unknown = set(options) - _ENGINE_OPTIONS
        if unknown:
            raise TypeError(f"unknown Engine options: {', '.join(sorted(unknown))}")
        options.setdefault("python", sys.executable)
        self._engine = _core.Engine(json.dumps({k: v for k, v in options.items() if v is not None}))

    def evaluate(self, batch: list[dict]) -> list[dict]:
        """One verdict per item, in order. An item is {"code" | "response", "task" (the task's
        source) | "task_id", "id"?, "group"?, "sample"?, "level"? (the task's level, for per-level
        metrics), "rerun"? (judge and time it again even when the cache holds its verdict)}; an
        unusable item gets an "error" verdict."""
        return json.loads(self._engine.evaluate_json(json.dumps(list(batch))))

    def info(self) -> dict:
        """Device, seed, jobs, profile and library versions the verdicts were made with."""
        return json.loads(self._engine.info_json())


_ENGINE_OPTIONS = {
    "python", "device", "profile", "trials", "jobs", "timeout_s", "seed", "static_check", "timing", "cache",
    "work_dir", "memory_gb", "reference_cache_gb", "unsafe_sandbox",
}
