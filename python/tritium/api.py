"""The Python face of Tritium's C++ core (tritium._core)."""

import json
import os
import sys

# torch, where installed, loads before the extension: in the other order `import torch` crashed in
# its operator registry (torch._ops, a segfault) on the H200 machine (torch 2.11 + CUDA 13, 2026-12-03).
try:
    import torch  # noqa: F401
except ImportError:
    pass

from . import _core  # noqa: E402


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


def verify(code: str | None = None, task_source: str | None = None, *, response: str | None = None) -> dict:
    """Static verdict of a candidate: {"status", "findings": [{rule, severity, line, col, message}]}.

    Give exactly one of `code` (candidate code) or `response` (a raw LLM response, whose code is
    extracted first), as `tritium verify` and the server's /v1/verify take them. With `task_source`,
    ModelNew's __init__ and forward parameters must match Model's (`func.signature_mismatch`).
    Raises ValueError when neither or both are given.
    """
    item = {k: v for k, v in (("code", code), ("response", response)) if v is not None}
    return json.loads(_core.verify_item_json(json.dumps(item), task_source or ""))


def extract(response: str) -> dict:
    """Plan and code of a raw LLM response, with byte spans: {plan, code, plan_span, code_span, has_code, notes}."""
    return json.loads(_core.extract_json(response))


def synthesize(
    count: int = 100,
    difficulty: int | tuple[int, int] | str = (1, 3),
    ops: str | list[str] | None = None,
    seed: int = 0,
    size: str = "cpu",
    threads: int = 1,
    with_solutions: bool = False,
) -> list[dict]:
    """CSP-DAG synthesized tasks (docs/synth.md): a list of {"id", "origin", "level", "meta", "source"},
    the same for the same arguments whatever `threads`.

    `difficulty` is K, (K1, K2) or "K1-K2" compute operators; `ops` operator categories ("unary,reduction"
    or a list); `size` "cpu", "mid" or "gpu" (docs/synth.md); `with_solutions` adds meta.solution and
    meta.plan where the emitter can. Raises ValueError on bad options.
    """
    options = {
        "count": count,
        "difficulty": _difficulty(difficulty),
        "ops": ops or "",
        "seed": seed,
        "size": size,
        "threads": threads,
        "with_solutions": with_solutions,
    }
    return json.loads(_core.synthesize_json(json.dumps(options)))


def _difficulty(difficulty: int | tuple[int, int] | str) -> int | str | list[int]:
    return list(difficulty) if isinstance(difficulty, tuple) else difficulty


def make_suite(
    out: str | os.PathLike | None = None,
    validate: bool = False,
    device: str = "cpu",
    solution_timeout_s: float = 120,
    **synth_options,
) -> dict:
    """`tritium synth` as a call: synthesize(**synth_options), then with `validate` run every
    reference (dropping ill-conditioned tasks) and judge every solution with the engine on `device`,
    then write `out` (a .jsonl suite or a directory) when given. Returns {"tasks", "report", "ok"}:
    the tasks kept (with sources), the report `tritium synth --json --validate` prints, and whether
    every reference ran and every solution was correct. ValueError on bad options, RuntimeError when
    no runner can start."""
    options = {
        "validate": validate,
        "device": device,
        "python": sys.executable,
        "solution_timeout_s": solution_timeout_s,
        **synth_options,
    }
    if "difficulty" in options:
        options["difficulty"] = _difficulty(options["difficulty"])
    if out is not None:
        options["out"] = os.fspath(out)
    return json.loads(_core.make_suite_json(json.dumps(options)))


def sft_data(
    tasks: str | os.PathLike,
    out: str | os.PathLike,
    responses: str | os.PathLike | None = None,
    evaluate: bool = True,
    **engine_options,
) -> dict:
    """`tritium data sft` as a call: SFT JSONL {prompt, response} at `out` of the traces that verify
    and evaluate correct: the tasks' reference solutions (meta.solution, meta.plan), or the lines of
    `responses` ({"task_id" | "task", "response"}). `engine_options` are Engine's. Returns {out,
    candidates, kept, dropped, evaluated}."""
    options = {
        "tasks": os.fspath(tasks),
        "out": os.fspath(out),
        "evaluate": evaluate,
        "engine": _engine_options(engine_options),
    }
    if responses is not None:
        options["responses"] = os.fspath(responses)
    return json.loads(_core.sft_data_json(json.dumps(options)))


def bench(tasks: str | os.PathLike, model: str, out: str | os.PathLike, engine: dict | None = None, **options) -> dict:
    """`tritium bench` as a call: samples of `model` (an http(s) URL, a model directory or "emitter")
    on every task not yet in OUT/verdicts.jsonl, evaluated by an engine with `engine`'s options, then
    OUT's reports and run.json, whose document it returns. `options`: samples, limit, model_name,
    temperature, top_p, max_tokens, sampling_seed, concurrency, request_timeout_s, retries,
    system_prompt, extra_body, completions, model_device (docs/llm.md)."""
    return json.loads(_core.bench_json(json.dumps(_sampling(tasks, model, out, engine, options))))


def distill(
    tasks: str | os.PathLike, model: str, out: str | os.PathLike, engine: dict | None = None, **options
) -> dict:
    """`tritium distill` as a call: appends to `out` the samples of `model` that verify and evaluate
    correct (resuming from OUT.progress.jsonl). `options` as bench's, plus only_faster and max_per_task.
    Returns {out, teacher, tasks, samples, kept, dropped, sampled_now, tasks_failed}."""
    return json.loads(_core.distill_json(json.dumps(_sampling(tasks, model, out, engine, options))))


def _sampling(tasks, model, out, engine, options) -> dict:
    return {
        "tasks": os.fspath(tasks),
        "model": model,
        "out": os.fspath(out),
        "python": sys.executable,
        "engine": _engine_options(engine or {}),
        **options,
    }


def report(
    verdicts: list[str | os.PathLike],
    out: str | os.PathLike,
    ks: tuple[int, ...] = (1, 5, 10),
    ps: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0),
) -> dict:
    """`tritium report` as a call: OUT/report.md, report.json and report.html of verdict files (the
    first, then those shown beside it); returns report.json's document. ValueError names a missing
    or empty file."""
    options = {
        "verdicts": [os.fspath(v) for v in verdicts],
        "out": os.fspath(out),
        "ks": list(ks),
        "ps": [float(p) for p in ps],
    }
    return json.loads(_core.report_json(json.dumps(options)))


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


def metrics(
    verdicts: list[dict], ks: tuple[int, ...] = (1, 5, 10), ps: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)
) -> dict:
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
    computed once. Options are EngineOptions' fields (docs/engine.md): device ("auto", "cpu", "cuda",
    "cuda:N"), profile, trials, jobs, timeout_s, seed, static_check, timing, cache, work_dir,
    memory_gb, device_memory_gb, reference_cache_gb, keep_files, unsafe_sandbox, timer_gather_s,
    lazy_reference_timing, fork_comparers, python (default: this interpreter); None means the default.
    Raises ValueError on an unknown or bad option, RuntimeError when no runner can start, or when the
    sandbox cannot be established and unsafe_sandbox is not set.
    """

    def __init__(self, **options):
        self._engine = _core.Engine(json.dumps(_engine_options(options)))

    def evaluate(self, batch: list[dict], progress=None) -> list[dict]:
        """One verdict per item, in order. An item is {"code" | "response", "task" (the task's
        source) | "task_id", "id"?, "group"?, "sample"?, "level"? (the task's level, for per-level
        metrics), "rerun"? (judge and time it again even when the cache holds its verdict)}; an
        unusable item gets an "error" verdict. `progress(done, total, status)`, if given, hears of
        each usable item's verdict as it completes, from the engine's threads (keep it short: the
        engine waits for it); an exception in it is reported and the batch goes on."""
        return json.loads(self._engine.evaluate_json(json.dumps(list(batch)), progress))

    def info(self) -> dict:
        """Device, seed, jobs, profile and library versions the verdicts were made with."""
        return json.loads(self._engine.info_json())


def _engine_options(options: dict) -> dict:
    """EngineOptions' JSON (checked by the library): None drops a key, the runners use this interpreter."""
    return {"python": sys.executable, **{k: v for k, v in options.items() if v is not None}}
