"""The eval stage: k samples per held-out task from a model, verdicts from the engine, then
metrics and the report's files (pass@k, fast_p, the status breakdown)."""

from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import json
import os
import pathlib
import sys
import time

import torch

from . import models
from .curriculum import task_level
from .data import write_jsonl
from .rollout import rollouts

SAMPLES = 4  # per held-out task, by default


def pass_ks(samples: int) -> tuple[int, ...]:
    """The pass@k a held-out eval of `samples` answers per task reports: pass@1 and pass@samples."""
    return (1, samples) if samples > 1 else (1,)


def evaluate_model(model_dir: str, tasks: str, out: str, **settings) -> dict:
    """evaluate_models() of one model: OUT/verdicts.jsonl, OUT/report.{md,json,html}; its metrics."""
    return evaluate_models([(model_dir, out)], tasks, **settings)[0]


def evaluate_models(
    models_out: list[tuple[str, str]],
    tasks: str,
    samples: int = SAMPLES,
    max_new_tokens: int = 512,
    temperature: float = 0.7,
    top_p: float = 0.95,
    device: str = "auto",
    engine_device: str = "auto",
    seed: int = 0,
    prompts_per_generate: int = 16,
    engine_timeout_s: float = 0.0,
    engine_jobs: int = 0,
    generator: str = "auto",
    dtype: str = "",
    greedy: bool = False,
    log=print,
) -> list[dict]:
    """Each (model, OUT) of `models_out` on the held-out `tasks`: writes OUT/verdicts.jsonl and
    OUT/report.{md,json,html}, broken down by level (a synthesized task's difficulty); returns each
    one's overall metrics. The models share one engine (its references computed once for all), and
    a model's answers are judged while the next one's are sampled, unless the engine times kernels on
    the GPU and the generator does not let its timers in (judges_beside_sampling). `engine_timeout_s` bounds
    each sample's evaluation (0: the engine's default), `engine_jobs` is the engine's candidate slots (0: its
    default; on an H100, 8 slots judged 400 mid-size answers in 252 s, 4.8 s a job). `generator` samples them
    (tritium.train.rollout), from the model with its parameters in `dtype` ("": as saved): on the H200 the
    bfloat16 compiled generator made 3.2-3.4x float32 `generate`'s tokens/s, and a float32 eval of 80 prompts x
    4 samples of up to 2,304 tokens took over 5 minutes. Compare models sampled with the same dtype. `greedy`:
    one greedy answer per task too, decoded in the sampled answers' batches and judged in the same engine call,
    its verdicts in OUT/greedy/verdicts.jsonl and its metrics under the result's "greedy" (pass@1, fast_p).
    `prompts_per_generate` held-out prompts (each `samples` times) decode together: with static batches a call
    lasts as long as its longest sample, so on a GPU all of them in one call is quickest. The answers are saved
    (OUT/answers.jsonl) before they are judged, and an eval of the same model files, tasks and settings judges
    them again instead of sampling: a run cut while judging (on an H100, 80 x 5 answers took 4.5 minutes to
    sample) loses only the judging."""
    from .. import api

    base = {"samples": samples, "max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p}
    base |= {"seed": seed, "generator": generator, "dtype": dtype, "greedy": greedy}
    tasks_hash = hashlib.sha256(pathlib.Path(tasks).read_bytes()).hexdigest()
    engine = None  # started with the first judging, so that a bad model fails before it
    judging = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="eval-judge")
    pending: list[concurrent.futures.Future] = []
    try:
        for model_dir, out in models_out:
            where = pathlib.Path(out)
            where.mkdir(parents=True, exist_ok=True)
            settings = {"model": str(model_dir), "model_files": model_files(model_dir)}
            settings |= {"tasks": tasks_hash, **base}
            answers = _saved_answers(where, settings)
            if answers is None:
                if engine is not None and not judges_beside_sampling(engine.info(), generator):
                    for judged in pending:  # the earlier models' timings done with the GPU to themselves
                        judged.result()
                answers = _sample(model_dir, tasks, settings, device, prompts_per_generate, log)
                _save_answers(where, settings, answers)
                _release()
            else:
                saved = where / ANSWERS
                log(f"eval: {len(answers)} answers of {model_dir} sampled earlier with these settings ({saved})")
            if engine is None:
                # Lazy reference timing: a task's references are timed (torch.compile, seconds of CPU work each)
                # only once one of its answers is correct; a held-out eval of a small model has many tasks with none.
                engine = api.Engine(
                    device=engine_device,
                    python=sys.executable,
                    timeout_s=engine_timeout_s or None,
                    jobs=engine_jobs,
                    lazy_reference_timing=True,
                )
            pending.append(judging.submit(_judge, engine, answers, where, samples, greedy, engine_device, log))
        return [future.result() for future in pending]
    finally:
        judging.shutdown(wait=True, cancel_futures=True)


def judges_beside_sampling(engine_info: dict, generator: str) -> bool:
    """Whether a model's answers may be judged while the next model samples with `generator`: yes
    where the engine does not time kernels on a GPU, or where the generator lets the engine's timers
    have the GPU between its decode steps (rollout.yields_to_timers). A kernel timed beside another
    process's decoding shares the GPU with it: on an H100 (2026-12-06) five GPU-size honest kernels
    timed beside a decoding model without the share came out 1.34-1.57x their runtimes alone, none
    below the timing floor; with it, 0.99-1.00x. Continuous batching does not yield."""
    from . import rollout

    return not engine_info.get("timing", False) or rollout.yields_to_timers(generator)


def _release() -> None:
    """What sampling left on the device goes back before the next model loads: the static batch's KV
    cache (about 28 GB for 400 sequences of SmolLM2) and the compiled decode step's graphs, which
    hold the model that made them."""
    import gc

    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _judge(engine, answers: list[dict], where: pathlib.Path, samples: int, greedy: bool, device: str, log) -> dict:
    """One model's answers through the engine: its verdict files and report; its overall metrics."""
    from .. import api

    sampled = sum(a["group"] == a["task_id"] for a in answers)  # the greedy ones come after, grouped apart
    log(f"eval: judging {len(answers)} samples on {device} ({where})")
    began = time.monotonic()
    verdicts = engine.evaluate(answers, progress=_JudgingLog(len(answers), log))
    verdicts, greedy_verdicts = verdicts[:sampled], verdicts[sampled:]
    verdict_file = where / "verdicts.jsonl"
    write_jsonl(verdict_file, verdicts)
    api.report([verdict_file], where)
    overall = api.metrics(verdicts, ks=pass_ks(samples))["overall"]
    log(
        f"eval: {len(verdicts)} samples over {overall['tasks']} tasks, judged in {time.monotonic() - began:.0f} s: "
        f"{overall['stages']}, {overall['pass']}"
    )
    if greedy:
        (where / "greedy").mkdir(exist_ok=True)
        write_jsonl(where / "greedy" / "verdicts.jsonl", greedy_verdicts)
        greedy_overall = overall["greedy"] = api.metrics(greedy_verdicts, ks=(1,))["overall"]
        log(f"eval: greedy: {greedy_overall['stages']}, {greedy_overall['pass']}, {greedy_overall['fast_eager']}")
    return overall


ANSWERS = "answers.jsonl"  # the sampled answers, written before judging: a run cut while judging keeps them
SETTINGS = ANSWERS + ".settings.json"  # what they were sampled with, written after them: they are whole


def _sample(model_dir: str, tasks: str, settings: dict, device: str, prompts_per_generate: int, log) -> list[dict]:
    """The sampled answers (`samples` a task), then the greedy ones with `greedy`, as engine items."""
    from .. import api

    torch.manual_seed(settings["seed"])
    model, tokenizer = models.load(model_dir)
    if settings["dtype"]:
        model = models.cast_parameters(model, settings["dtype"])
        log(f"eval: sampling from the model's parameters in {settings['dtype']}")
    model.to(models.device_for(device))
    suite = api.load_suite(tasks, with_source=True)["tasks"]

    length, top_p, generator = settings["max_new_tokens"], settings["top_p"], settings["generator"]
    samples, greedy = settings["samples"], settings["greedy"]
    sampled, greedy_items, began = [], [], time.monotonic()
    for start in range(0, len(suite), prompts_per_generate):
        chunk = suite[start : start + prompts_per_generate]
        prompts = [api.kernel_prompt(t["source"]) for t in chunk]
        # The greedy answers decode in the sampled ones' batch: one static batch, compiled once.
        results = rollouts(
            model, tokenizer, prompts, samples, length, settings["temperature"], top_p, generator, greedy
        )
        for task, (_, _, texts) in zip(chunk, results):
            sampled += [_item(task, "sampled", k, t) for k, t in enumerate(texts[:samples])]
            greedy_items += [_item(task, "greedy", 0, t) for t in texts[samples:]]
        # Progress: on the H200, 80 prompts x 4 samples of up to 2,304 tokens took over 5 minutes
        # in one call, silent until then.
        each = f"{samples} + greedy" if greedy else f"{samples}"
        log(f"eval: {start + len(chunk)} of {len(suite)} prompts x {each} in {time.monotonic() - began:.0f} s")
    return sampled + greedy_items


def model_files(model: str) -> list:
    """What tells one saved model from another at the same path (a rerun SFT overwrites its
    checkpoint-N): each file's name, size and modification time; a preset name has none."""
    path = pathlib.Path(model)
    files = sorted(f for f in path.iterdir() if f.is_file()) if path.is_dir() else []
    return [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]


def _saved_answers(where: pathlib.Path, settings: dict) -> list[dict] | None:
    """The answers an earlier run of this eval saved, if it sampled the same model and tasks with
    the same settings; else None (they are sampled again)."""
    try:
        if json.loads((where / SETTINGS).read_text()) != settings:
            return None
        return [json.loads(line) for line in (where / ANSWERS).read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None


def _save_answers(where: pathlib.Path, settings: dict, answers: list[dict]) -> None:
    """The answers, then their settings (the settings file says the answers are whole), each
    written aside and renamed into place."""
    meta = where / SETTINGS
    meta.unlink(missing_ok=True)
    for path, text in ((where / ANSWERS, "".join(json.dumps(a) + "\n" for a in answers)), (meta, json.dumps(settings))):
        aside = path.with_name(path.name + ".partial")
        aside.write_text(text)
        os.replace(aside, path)


class _JudgingLog:
    """The engine's progress on an eval's answers, a line every tenth of them: judging 400 on a
    GPU takes minutes."""

    def __init__(self, total: int, log):
        self.log, self.every = log, max(1, total // 10)
        self.began, self.statuses = time.monotonic(), collections.Counter()

    def __call__(self, done: int, total: int, status: str) -> None:
        self.statuses[status] += 1
        if done % self.every == 0 or done == total:
            counts = ", ".join(f"{k} {v}" for k, v in self.statuses.most_common())
            self.log(f"eval: judged {done} of {total} in {time.monotonic() - self.began:.0f} s ({counts})")


def _item(task: dict, label: str, k: int, response: str) -> dict:
    """One answer as the engine takes it; greedy answers have ids and groups of their own."""
    suffix = "" if label == "sampled" else f"-{label}"
    return {
        "id": f"{task['id']}#{k}{suffix}",
        "task": task["source"],
        "task_id": task["id"],
        "response": response,
        "group": task["id"] + suffix,
        "sample": k,
        "level": task_level(task),
    }


def stage_change(before: str | pathlib.Path, after: str | pathlib.Path, names=("sft", "rl")) -> str:
    """One line on how the held-out tasks moved between two stages' verdict files: the correct
    samples in all, and the tasks that gained, lost or kept their count of correct samples."""

    from .. import api

    def correct_by_task(path) -> dict[str, tuple[int, int]]:  # task -> (correct, samples), as the metrics count
        verdicts = [json.loads(line) for line in pathlib.Path(path).read_text().splitlines() if line.strip()]
        per_task = api.metrics(verdicts, ks=(1,), ps=(1.0,))["overall"]["per_task"]
        return {t["task_id"]: (t["correct"], t["samples"]) for t in per_task}

    first, then = correct_by_task(before), correct_by_task(after)
    shared = sorted(first.keys() & then.keys())
    moved = [then[t][0] - first[t][0] for t in shared]
    a, b = names
    total = sum(first[t][1] for t in shared)
    partly = sum(0 < first[t][0] < first[t][1] for t in shared)
    line = (
        f"{b} against {a} on {len(shared)} held-out tasks: correct samples {sum(first[t][0] for t in shared)} -> "
        f"{sum(then[t][0] for t in shared)} of {total}; tasks that gained correct samples {sum(m > 0 for m in moved)}, "
        f"lost some {sum(m < 0 for m in moved)}, kept their count {sum(m == 0 for m in moved)}; "
        f"correct only part of the time under {a}: {partly}"
    )
    if not partly and not any(moved):
        line += f" (every task was always or never solved under {a}: {b} had no partial success to raise)"
    return line
