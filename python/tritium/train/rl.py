"""GRPO on Triton tasks with Tritium's rewards: each step samples `group_size` responses per task
(tritium.train.rollout), scores them with the engine (in-process or `tritium serve`
endpoints, through tritium.integrations.RewardClient), turns the group's rewards into per-token
advantages (HRD by default: plan tokens get alpha times the speed advantage, code tokens the
correctness advantage) and makes `updates` passes over the step's groups, each of `minibatches`
clipped policy-gradient steps on a slice of them (tritium.train.grpo). Tasks come from a
curriculum over difficulty levels with mixing weights (tritium.train.curriculum). Data-parallel
through accelerate: each process rolls out its share of a step's prompts, `rollout_batch` prompts
per generate call (each batch seeded by its first prompt, so the rollouts do not depend on which
process draws them), and the gradients are averaged over all groups.

    python -m tritium.train.rl --tasks SUITE --model DIR --out DIR [--steps N] [--group-size G] ...
    accelerate launch --num_processes 2 -m tritium.train.rl --tasks SUITE --model DIR --out DIR ...
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import pathlib
import random
import shutil
import statistics
import sys
import time
import typing
from collections import Counter

import torch

from . import grpo, models, rollout
from .board import Board, progress
from .cli import parse_config
from .curriculum import Curriculum, parse_weights, task_level
from .evaluate import model_files
from .rollout import rollouts
from .sft import latest_checkpoint

STATE = "trainer_state.pt"  # in a checkpoint: what a run resumes from


@dataclasses.dataclass
class RLConfig:
    tasks: str
    model: str
    out: str
    steps: int = 10
    prompts_per_step: int = 2
    group_size: int = 4
    rollout_batch: int = 1  # prompts per generate call and per engine call (rollouts depend on it)
    max_new_tokens: int = 512
    generator: str = "auto"  # rollouts: "generate" (= "auto"), "continuous" or "compiled" (tritium.train.rollout)
    # "compiled": every step's prompts padded to this many tokens or more, so that its generate calls keep one
    # shape and compile once (a call took 129 s with its compile on an H100); 0: the tasks' widest prompt.
    prompt_width: int = 0
    overlap_scoring: bool = True  # judge a batch's rollouts while the next batch is generated
    # Generate step k+1's rollouts while step k's are judged, before step k's update: one step off-policy,
    # the clipped ratio taken against the policy that sampled them (its log-probs taken at generation). A
    # step then costs about the longer of generation and scoring, not their sum (on an H100, 129 s and 147 s
    # for 256 rollouts of mid-size tasks). Needs overlap_scoring.
    overlap_steps: bool = False
    rollout_dtype: str = ""  # "bfloat16": sample from a copy in that dtype, refreshed after each step; "": the policy
    # torch's float32 matmul precision for the run: "highest" (float32, torch's default), "high" (TF32 on
    # GPUs that have it: the policy's forwards and backwards, old log-probs included) or "medium" (bfloat16).
    matmul_precision: typing.Literal["highest", "high", "medium"] = "highest"
    temperature: float = 1.0
    top_p: float = 1.0
    lr: float = 1e-6
    clip_eps: float = 0.2
    kl_coef: float = 0.0
    updates: int = 1  # passes over a step's rollouts
    # Optimizer steps per pass, each on a slice of the step's prompt groups (PPO's minibatches): a
    # step's rollouts can then be many (decoding 256 at once made 3-4x the tokens/s of 64 on the
    # H200) while each update stays the size of a smaller step. Each process's groups must divide evenly.
    minibatches: int = 1
    # Rollouts per forward and backward pass in the update and in the old log-probs (0: a whole prompt
    # group): the activations held at once scale with it, and a slice drops the padding past its longest
    # rollout. The loss and its gradient are the group's whichever it is. On an H100 the mid config's
    # trainer (groups of 8 rollouts up to about 3,000 tokens) reserved up to 77 GB beside the engine.
    update_micro_batch: int = 0
    reward: str = "{}"  # reward config as JSON (docs/rewards.md); default HRD
    endpoints: str = ""  # comma-separated tritium serve URLs; empty: the engine in-process
    device: str = "auto"
    engine_device: str = "auto"
    engine_timeout_s: float = 0.0  # per rollout's evaluation, in-process engine; 0: the engine's default (120 s)
    # Candidate slots of the in-process engine; 0: its default, min(cores, 8) on a GPU. A mid-size rollout's job
    # took 4.8 s on an H100, mostly the fixed cost of its processes' CUDA contexts, so slots bound the scoring.
    engine_jobs: int = 0
    # GB of the GPU the in-process engine's jobs may reserve at once; 0: 90% of what is free when it starts,
    # at the first scoring (after the first generation: not the trainer's peak). Each RL step records the
    # engine's room, its jobs' waits for it and the trainer's peak (rl_history.json), to set this from.
    engine_memory_gb: float = 0.0
    seed: int = 0
    save_every: int = 0  # 0: only at the end
    # Seconds of wall clock the stage may take (0: no limit): it stops after the step that leaves less time
    # than the last step took, saving that step's checkpoint, so that a run cut into calls of a GPU machine
    # loses no half-done step and the stages after RL (eval) still run; the first step always runs.
    time_limit_s: float = 0.0
    # Continue from the latest checkpoint in `out` that holds a trainer state (the optimizer's, the task
    # draw's, the curriculum's): a run longer than one call of a GPU machine is several calls.
    resume: bool = True
    log_every: int = 1
    curriculum: bool = False  # open difficulty levels one at a time (docs/training.md)
    promote_at: float = 0.5  # held-out pass@1 on the highest open level that opens the next
    curriculum_every: int = 5  # steps between held-out checks
    heldout: str = ""  # suite of held-out tasks for the checks; empty: training rollouts
    level_weights: str = ""  # mixing weights over open levels, "1:0.5,2:0.3,3:0.2"; empty: equal
    tensorboard: bool = True  # scalars in OUT/tensorboard (when the package is installed)


def _batch(prompt_ids: list[int], completions: list[list[int]], pad_id: int, device: torch.device):
    width = len(prompt_ids) + max(1, max(len(c) for c in completions))
    ids = torch.full((len(completions), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, c in enumerate(completions):
        row = prompt_ids + c
        ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
    return ids.to(device), attention.to(device)


class RolloutCopy:
    """The policy's weights in another dtype, kept for sampling and refreshed in place after each
    update: the same module every step, so a compiled generator's graphs (which hold its parameters'
    storage) stay valid. On an H200, compiled bfloat16 decoding made 3.2-3.4x the tokens/s of
    float32 `generate` at 256-512 sequences (docs/results/2026-12-02-rollouts.md). The old
    log-probs of the loss still come from the float32 policy."""

    def __init__(self, model, dtype: str):
        self.model = model
        try:
            self.sampler = models.cast_parameters(copy.deepcopy(model).eval().requires_grad_(False), dtype)
        except ValueError as e:
            raise ValueError(f"rollout_dtype: {e}") from None

    @torch.no_grad()
    def refresh(self) -> None:
        for mine, theirs in zip(self.sampler.parameters(), self.model.parameters()):
            mine.copy_(theirs)


def _seed_for(seed: int, *where) -> int:
    return int.from_bytes(hashlib.sha256(repr((seed, *where)).encode()).digest()[:7], "little")


def _generate(cfg: RLConfig, sampler, tokenizer, tasks: list[dict], first: int, step: int, clock: Counter) -> list:
    """The groups of prompts first, first+1, ... in one generate call, seeded by step and first
    prompt (so on any process alike)."""
    from .. import api

    torch.manual_seed(_seed_for(cfg.seed, step, first))
    began = time.monotonic()
    results = rollouts(
        sampler,
        tokenizer,
        [api.kernel_prompt(t["source"]) for t in tasks],
        cfg.group_size,
        cfg.max_new_tokens,
        cfg.temperature,
        cfg.top_p,
        cfg.generator,
        min_width=cfg.prompt_width,
    )
    clock["generate"] += time.monotonic() - began
    return results


def _score(cfg: RLConfig, client, tasks: list[dict], results: list, first: int, clock: Counter) -> list[dict]:
    """One engine call for a batch's samples (it lets go of the GIL: a thread can run it)."""
    began = time.monotonic()
    scored = client.score(
        [
            {"response": text, "task": task["source"], "group": first + i}
            for i, (task, (_, _, texts)) in enumerate(zip(tasks, results))
            for text in texts
        ]
    )
    clock["score"] += time.monotonic() - began
    return scored


def _tensors(cfg: RLConfig, tokenizer, tasks, results, scored, behaviour: list[dict]) -> tuple[list, list]:
    groups, stats = [], []
    for i, (task, (prompt_ids, completions, texts)) in enumerate(zip(tasks, results)):
        mine = scored[i * cfg.group_size : (i + 1) * cfg.group_size]
        group, st = _advantaged(tokenizer, prompt_ids, texts, mine, behaviour[i])
        groups.append(group)
        stats.append({**st, "level": task_level(task), "samples": _samples(cfg, task, completions, texts, mine)})
    return groups, stats


def _samples(cfg: RLConfig, task: dict, completions: list, texts: list, scored: list) -> list[dict]:
    """What each rollout was and got, for OUT/rollouts.jsonl: a run's statuses can be read there
    (a cut-off response, `cut`, reads as invalid syntax)."""
    return [
        {
            "task": task.get("id"),
            "status": s["verdict"]["status"],
            "message": str(s["verdict"].get("message", ""))[:300],
            "reward": s["reward"]["scalar"],
            # What the speed reward stood on: the measured speedup, and whether its timing was below
            # the floor (a gain there counts as none).
            "speedup_eager": s["verdict"].get("speedup_eager"),
            "below_timing_floor": bool(s["verdict"].get("below_timing_floor")),
            "tokens": len(c),
            "cut": len(c) >= cfg.max_new_tokens,  # stopped by the limit, not by an end of sequence
            "text": t,
        }
        for c, t, s in zip(completions, texts, scored)
    ]


@dataclasses.dataclass
class _Launched:
    """A step's batches of this process: generated, their behaviour tensors taken (the sampling
    policy's log-probs), their scoring under way or done; `clock` has the seconds spent on them."""

    batches: list[tuple[list[dict], list, list[dict], concurrent.futures.Future]] = dataclasses.field(
        default_factory=list
    )  # (tasks, results, behaviour, scored)
    clock: Counter = dataclasses.field(default_factory=Counter)


def _launch(cfg, model, tokenizer, client, batches, step, reference, device, sampler, scorer) -> _Launched:
    """Generates this process's batches of a step, (first prompt, tasks) each, by `sampler` (the
    policy when None) and takes each group's behaviour tensors from the policy as it is now; each
    batch's scoring goes to `scorer` (a one-thread executor), else runs here."""
    launched = _Launched()
    for first, tasks in batches:
        results = _generate(cfg, model if sampler is None else sampler, tokenizer, tasks, first, step, launched.clock)
        behaviour = [
            _behaviour(cfg, tokenizer, ids, completions, model, reference, device) for ids, completions, _ in results
        ]
        if scorer is None:
            scored = concurrent.futures.Future()
            scored.set_result(_score(cfg, client, tasks, results, first, launched.clock))
        else:
            scored = scorer.submit(_score, cfg, client, tasks, results, first, launched.clock)
        launched.batches.append((tasks, results, behaviour, scored))
    return launched


def _finish(cfg: RLConfig, tokenizer, launched: _Launched, overlapped: bool) -> tuple[list[dict], list[dict]]:
    """A launched step's groups and statistics, once each batch is scored. `clock["score_wait"]`:
    the scoring that generation did not hide (`overlapped`: scored in a thread)."""
    groups, stats = [], []
    for tasks, results, behaviour, scoring in launched.batches:
        waiting = time.monotonic()
        scored = scoring.result()
        if overlapped:
            launched.clock["score_wait"] += time.monotonic() - waiting
        more = _tensors(cfg, tokenizer, tasks, results, scored, behaviour)
        groups, stats = groups + more[0], stats + more[1]
    return groups, stats


def _behaviour(cfg: RLConfig, tokenizer, prompt_ids, completions, model, reference, device) -> dict:
    """One prompt's group as the sampling policy saw it: token ids, the completion mask, old (and
    reference) log-probs, taken before any update that follows the sampling."""
    ids, attention = _batch(prompt_ids, completions, tokenizer.pad_token_id, device)
    mask = attention[:, 1:].clone()
    mask[:, : len(prompt_ids) - 1] = 0  # only the completion's tokens are trained
    group = {"ids": ids, "attention": attention, "mask": mask}

    def logprobs(of) -> torch.Tensor:  # slice by slice, as the update takes them; zero past a slice's end
        parts = [grpo.token_logprobs(of, part["ids"], part["attention"]) for part, _ in _slices(group, cfg)]
        return torch.cat([torch.nn.functional.pad(lp, (0, ids.shape[1] - 1 - lp.shape[1])) for lp in parts])

    with torch.no_grad():
        old = logprobs(model)
        ref = logprobs(reference) if reference is not None else None
    return {**group, "old": old, "ref": ref}


def _slices(group: dict, cfg: RLConfig) -> list[tuple[dict, float]]:
    """A group's rollouts `update_micro_batch` at a time (all at once when 0), each slice cut after its
    longest rollout (the batch is right-padded: no position before the cut sees one after it) and
    paired with its share of the group, by which its mean loss weighs in the group's."""
    rows = len(group["ids"])
    size = cfg.update_micro_batch if 0 < cfg.update_micro_batch < rows else rows
    out = []
    for first in range(0, rows, size):
        picked = slice(first, min(first + size, rows))
        width = int(group["attention"][picked].sum(dim=1).max())  # tokens; the shifted tensors have one fewer
        cut = {k: width if k in ("ids", "attention") else width - 1 for k in group}
        part = {k: (v[picked, : cut[k]] if v is not None else None) for k, v in group.items()}
        out.append((part, (picked.stop - picked.start) / rows))
    return out


def _advantaged(tokenizer, prompt_ids, texts, scored, behaviour: dict) -> tuple[dict, dict]:
    """A group's behaviour tensors with the token-level advantages of its scores, and its statistics."""
    ids, attention, mask, old, ref = (behaviour[k] for k in ("ids", "attention", "mask", "old", "ref"))
    adv = torch.stack(
        [
            grpo.response_advantages(tokenizer, len(prompt_ids), t, s["advantage"], ids.shape[1])
            for t, s in zip(texts, scored)
        ]
    )[:, 1:].to(ids.device)
    tokens = mask.sum().clamp(min=1)
    stats = {
        "statuses": [s["verdict"]["status"] for s in scored],
        "rewards": [s["reward"]["scalar"] for s in scored],
        "components": [{k: float(v) for k, v in s["reward"].items() if isinstance(v, (int, float))} for s in scored],
        "lengths": [int(n) for n in (attention.sum(dim=1) - len(prompt_ids)).tolist()],
        "phases": [s["verdict"].get("phases_ms") or {} for s in scored],
        # The sampled tokens' mean surprise estimates the policy's entropy (at temperature 1).
        "entropy": float(-(old * mask).sum() / tokens),
    }
    if ref is not None:
        delta = ref - old
        stats["kl"] = float(((torch.exp(delta) - delta - 1) * mask).sum() / tokens)
    return {**behaviour, "adv": adv}, stats


def _update(cfg: RLConfig, accelerator, model, optimizer, groups: list[dict], total_groups: int) -> float:
    """`updates` passes over the step's groups, each `minibatches` clipped steps on the mean GRPO
    loss over all processes' groups of a slice; the last pass's mean loss."""
    parts = cfg.minibatches
    size = len(groups) // parts  # every process has as many (checked at the start)
    for _ in range(cfg.updates):
        loss_sum = sum(
            _minibatch_step(cfg, accelerator, model, optimizer, groups[k * size : (k + 1) * size], total_groups / parts)
            for k in range(parts)
        )
    return float(accelerator.reduce(loss_sum, "sum")) / total_groups


def _minibatch_step(cfg: RLConfig, accelerator, model, optimizer, chunk: list[dict], chunk_groups: float):
    """One clipped optimizer step on the mean GRPO loss over all processes' `chunk_groups` groups of
    a slice (this process's `chunk`); the sum of its own groups' losses."""
    world = accelerator.num_processes
    optimizer.zero_grad(set_to_none=True)
    loss_sum = torch.zeros((), device=accelerator.device)
    passes = [part for group in chunk for part in _slices(group, cfg)]
    for k, (t, share) in enumerate(passes):
        sync = contextlib.nullcontext() if k == len(passes) - 1 else accelerator.no_sync(model)
        with sync:
            loss = share * grpo.grpo_loss(
                grpo.token_logprobs(model, t["ids"], t["attention"]),
                t["old"],
                t["adv"],
                t["mask"],
                cfg.clip_eps,
                ref_logprobs=t["ref"],
                kl_coef=cfg.kl_coef,
            )
            accelerator.backward(loss * world / chunk_groups)  # averaged by accelerate over processes
        loss_sum += loss.detach()
    accelerator.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss_sum


def _own_batches(count: int, rank: int, world: int, batch: int) -> list[range]:
    """The batches of a step's `count` prompts that process `rank` rolls out: `batch` at a time,
    dealt round-robin over the processes."""
    return [range(first, min(first + batch, count)) for first in range(rank * batch, count, world * batch)]


def _check_minibatches(cfg: RLConfig, world: int, batch: int) -> None:
    """With minibatches, each process's prompt groups must split into that many equal slices: a
    process short of a slice would leave the others waiting in its gradients' all-reduce. And
    `update_micro_batch`, which cuts each group into passes, must not be negative."""
    if cfg.minibatches < 1:
        raise ValueError(f"minibatches {cfg.minibatches}: expected at least 1")
    if cfg.update_micro_batch < 0:
        raise ValueError(f"update_micro_batch {cfg.update_micro_batch}: expected 0 (a whole group) or more")
    own = [sum(map(len, _own_batches(cfg.prompts_per_step, r, world, batch))) for r in range(world)]
    if cfg.minibatches > 1 and (len(set(own)) > 1 or own[0] % cfg.minibatches):
        raise ValueError(
            f"prompts_per_step {cfg.prompts_per_step} in batches of {batch} (rollout_batch) gives the "
            f"{world} processes {own} prompt groups: each must split into minibatches {cfg.minibatches} equal slices"
        )


def _has_signal(group_stats: dict) -> bool:
    """Whether a group's samples earned different rewards (plan or code): a group whose samples
    all earned the same (all correct and as fast, or all wrong) has zero advantages and teaches
    nothing."""
    return len({(c.get("plan"), c.get("code")) for c in group_stats["components"]}) > 1


def signal_summary(history: list[dict]) -> str:
    """One line on how much of the RL stage could teach the model anything."""
    groups = sum(r.get("groups", 0) for r in history)
    signal = sum(r.get("groups_with_signal", 0) for r in history)
    line = f"rl: {signal} of {groups} prompt groups had a learning signal (rewards that differ within the group)"
    if groups and signal == 0:
        line += "; every group's samples earned the same reward (all correct or all wrong), so RL changed nothing"
    return line


def _score_phases(stats: list[dict]) -> dict:
    """Where the engine's jobs of a step spent their time, from the verdicts' `phases_ms` (durations;
    not the memory figures nor the counts of GPU lock holds): per phase the median and the sum in
    seconds, and how many jobs had it. Scoring is the longer half of a step on the GPU; this says which
    part of it. A task's `reference.*` phases come once per task and are repeated in each of its
    verdicts, so their sums count the reference once per candidate."""
    spent: dict[str, list[float]] = {}
    for st in stats:
        for phases in st["phases"]:
            for name, ms in phases.items():
                if isinstance(ms, (int, float)) and not name.endswith(("_mib", "_at", ".holds")):
                    spent.setdefault(name, []).append(ms / 1000)
    return {
        name: {"median": round(statistics.median(v), 3), "sum": round(sum(v), 1), "jobs": len(v)}
        for name, v in sorted(spent.items())
    }


def _engine_memory(client) -> dict | None:
    """The engine's slots and device memory room (`engine_memory_gb`, else set from the memory free
    when it started, after the first generation), and its admissions so far that waited for room or
    ran again alone: an H100 step's jobs waited a median 1.3 s each for room."""
    info = client.engine_info()
    keys = ("jobs", "gpus", "memory_budget_gb", "memory_waits", "memory_retries")
    return {k: info.get(k) for k in keys} if info else None


def _crowded(engine: dict | None, trainer_peak_gb: float, device_gb: float) -> str | None:
    """A warning when the trainer's allocator peak and the room the engine lets its jobs take on each
    GPU add up past the GPU's memory: a job may then run out of memory, and its `error` verdict is
    rewarded as a failure (an H100 step's comparer did, the trainer holding 73.6 GB, 2026-12-06)."""
    if not engine or not engine.get("memory_budget_gb"):
        return None
    room = engine["memory_budget_gb"] / max(1, engine.get("gpus") or 1)
    if trainer_peak_gb + room <= device_gb:
        return None
    return (
        f"rl: warning: the trainer's allocator peaked at {trainer_peak_gb:.1f} GB and the engine lets its jobs "
        f"take {room:.1f} GB of the GPU's {device_gb:.1f} GB: a job can run out of memory and get an error verdict, "
        f"rewarded as a failure; lower the trainer's peak (update_micro_batch) or set engine_memory_gb to at most "
        f"{max(device_gb - trainer_peak_gb, 0):.0f}"
    )


def _engine_line(engine: dict | None) -> str:
    if not engine:
        return ""
    return (
        f"; engine: {engine['jobs']} slots, {engine['memory_budget_gb']:.1f} GB for its jobs, "
        f"{engine['memory_waits']} admissions waited for room, {engine['memory_retries']} ran again alone"
    )


def _record(step: int, stats: list[dict], losses: float, generated: int, seconds: float, chosen, curriculum) -> dict:
    statuses = Counter(s for st in stats for s in st["statuses"])
    rewards = [r for st in stats for r in st["rewards"]]
    lengths = [n for st in stats for n in st["lengths"]]
    components = Counter()
    for st in stats:
        for c in st["components"]:
            components.update(c)
    record = {
        "step": step,
        "loss": losses,
        "reward_mean": sum(rewards) / len(rewards),
        "statuses": dict(statuses),
        "rollout_tokens_per_s": generated / max(seconds, 1e-9),
        "levels": dict(Counter(task_level(t) for t in chosen)),
        "open_levels": curriculum.open_levels(),
        "reward_components": {k: v / len(rewards) for k, v in components.items()},
        "completion_tokens_mean": sum(lengths) / len(lengths),
        "entropy_estimate": sum(st["entropy"] for st in stats) / len(stats),
        "cut_at_limit": sum(s["cut"] for st in stats for s in st["samples"]),
        "groups": len(stats),
        "groups_with_signal": sum(_has_signal(st) for st in stats),
        "score_phases_s": _score_phases(stats),
    }
    kls = [st["kl"] for st in stats if "kl" in st]
    if kls:
        record["kl"] = sum(kls) / len(kls)
    return record


def train_rl(cfg: RLConfig, log=print) -> dict:
    """The RL run under cfg.matmul_precision; the process's own precision is back after it."""
    choices = typing.get_args(typing.get_type_hints(RLConfig)["matmul_precision"])
    if cfg.matmul_precision not in choices:
        raise ValueError(f"matmul_precision {cfg.matmul_precision!r}: expected one of {', '.join(choices)}")
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    try:
        return _train_rl(cfg, log)
    finally:
        torch.set_float32_matmul_precision(before)


def _train_rl(cfg: RLConfig, log=print) -> dict:
    from accelerate import Accelerator
    from accelerate.utils import gather_object

    from .. import api
    from ..integrations import RewardClient

    accelerator = Accelerator(cpu=cfg.device == "cpu" or not torch.cuda.is_available())
    world, rank, main = accelerator.num_processes, accelerator.process_index, accelerator.is_main_process
    batch = max(1, cfg.rollout_batch)
    if -(-cfg.prompts_per_step // batch) < world:
        raise ValueError(
            f"prompts_per_step {cfg.prompts_per_step} in batches of {batch} (rollout_batch) leaves some "
            f"of {world} processes without a prompt"
        )
    _check_minibatches(cfg, world, batch)
    if cfg.overlap_steps and not cfg.overlap_scoring:
        raise ValueError(
            "overlap_steps judges a step's rollouts in a thread while the next are generated: it needs overlap_scoring"
        )
    log = log if main else (lambda *_: None)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    device = accelerator.device if cfg.device == "auto" or world > 1 else models.device_for(cfg.device)
    out = pathlib.Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    resumed = _resumable(out, cfg.model, log) if cfg.resume else None
    resume_from, state = resumed or (None, None)
    if main:
        _clear_earlier_run(out, pathlib.Path(cfg.model), resume_from)
    tasks = api.load_suite(cfg.tasks, with_source=True)["tasks"]
    if not tasks:
        raise ValueError(f"{cfg.tasks}: no tasks")
    model, tokenizer = models.load(str(resume_from or cfg.model))
    if rollout.resolve(cfg.generator) == "compiled" and not cfg.prompt_width:
        widest = max(len(rollout.prompt_ids(tokenizer, api.kernel_prompt(t["source"]))) for t in tasks)
        cfg = dataclasses.replace(cfg, prompt_width=widest)
    model.to(device).train()
    # The KL anchor is the starting policy, frozen (a second copy of the weights: only when asked).
    reference = None
    if cfg.kl_coef:
        start = models.load(cfg.model)[0].to(device) if resume_from else copy.deepcopy(model)
        reference = start.eval().requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    wrapped, optimizer = accelerator.prepare(model, optimizer)
    copied = RolloutCopy(model, cfg.rollout_dtype) if cfg.rollout_dtype else None
    reward_config = json.loads(cfg.reward)
    endpoints = [u for u in cfg.endpoints.split(",") if u]
    client = (
        RewardClient(endpoints, config=reward_config)
        if endpoints
        else RewardClient(
            config=reward_config,
            device=cfg.engine_device,
            timeout_s=cfg.engine_timeout_s or None,
            jobs=cfg.engine_jobs,
            device_memory_gb=cfg.engine_memory_gb or None,
            lazy_reference_timing=True,  # most of a step's tasks get no correct rollout: no speedup to compute
        )
    )
    curriculum = Curriculum(tasks, parse_weights(cfg.level_weights), cfg.curriculum, cfg.promote_at)
    heldout = api.load_suite(cfg.heldout, with_source=True)["tasks"] if cfg.curriculum and cfg.heldout else []
    rng = random.Random(cfg.seed)
    history, top_rollouts, done = [], [], 0
    if resume_from:
        optimizer.load_state_dict(state["optimizer"])
        rng.setstate(state["draw"])
        curriculum.open, top_rollouts, done = state["open_levels"], state["top_rollouts"], state["step"]
        history = json.loads((out / "rl_history.json").read_text())[:done]
        log(
            f"rl: resuming from {resume_from} at step {done}"
            + (f", past steps {cfg.steps}" if done >= cfg.steps else "")
        )
    draws = {}  # the task draw's state before each step's pick: a resumed run picks as an uninterrupted one
    warned_crowded = False
    board = Board(out, cfg.tensorboard and main)
    bar = progress(cfg.steps, done, "rl", main)
    # Scoring in a thread while generation goes on: the next batch's, or with overlap_steps the next step's.
    threaded = cfg.overlap_scoring and (
        cfg.overlap_steps or len(_own_batches(cfg.prompts_per_step, rank, world, batch)) > 1
    )
    if threaded and not endpoints and device.type == "cuda" and not rollout.yields_to_timers(cfg.generator):
        log(
            f"rl: warning: the {cfg.generator} generator keeps the GPU from the engine's timers while it decodes, "
            "so speedups timed during generation measure the decoding too (use compiled or generate, or "
            "overlap_scoring = false)"
        )
    scorer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="rl-score")

    def launch(step: int) -> tuple[list[dict], _Launched]:
        draws[step] = rng.getstate()
        chosen = curriculum.pick(rng, cfg.prompts_per_step)  # the same on every process
        mine = [(b.start, chosen[b.start : b.stop]) for b in _own_batches(len(chosen), rank, world, batch)]
        sampler = copied and copied.sampler
        return chosen, _launch(
            cfg, model, tokenizer, client, mine, step, reference, device, sampler, scorer if threaded else None
        )

    ends = time.monotonic() + cfg.time_limit_s if cfg.time_limit_s else None
    last_wall, stopped = None, None

    def fits(steps: int) -> bool:
        """Whether `steps` more steps as long as the last end within time_limit_s (every process agrees)."""
        if ends is None or last_wall is None:
            return True
        late = time.monotonic() + steps * last_wall > ends
        return not accelerator.reduce(torch.tensor(int(late), device=device), "max").item()

    ahead = None
    try:
        for step in range(done + 1, cfg.steps + 1):
            began = time.monotonic()
            chosen, current = ahead or launch(step)
            # overlap_steps: the next step's rollouts come from the policy before this step's update, and are
            # generated while this step's are judged (not when the next step would end past the time limit).
            ahead = launch(step + 1) if cfg.overlap_steps and step < cfg.steps and fits(2) else None
            groups, stats = _finish(cfg, tokenizer, current, threaded)
            clock = current.clock
            updating = time.monotonic()
            loss = _update(cfg, accelerator, wrapped, optimizer, groups, len(chosen))
            if copied:
                copied.refresh()
            clock["update"] = time.monotonic() - updating
            own_generated = sum(sum(st["lengths"]) for st in stats)
            own_trained = cfg.updates * sum(int(g["attention"].sum()) for g in groups)
            generated = int(accelerator.reduce(torch.tensor(own_generated, device=device), "sum"))
            stats = gather_object(stats) if world > 1 else stats
            top_rollouts += [s == "correct" for st in stats if st["level"] == curriculum.top for s in st["statuses"]]
            record = _record(step, stats, loss, generated, time.monotonic() - began, chosen, curriculum)
            # The main process's own phases: generate and update throughput apart from the engine's time.
            record["seconds"] = {k: round(v, 3) for k, v in clock.items()}
            record["generate_tokens_per_s"] = own_generated / max(clock["generate"], 1e-9)
            record["update_tokens_per_s"] = own_trained / max(clock["update"], 1e-9)
            record["engine"] = _engine_memory(client)
            if device.type == "cuda":  # beside the engine's room: what the trainer's allocator took at most
                record["trainer_peak_reserved_gb"] = torch.cuda.max_memory_reserved(device) / 2**30
                total_gb = torch.cuda.get_device_properties(device).total_memory / 2**30
                crowded = _crowded(record["engine"], record["trainer_peak_reserved_gb"], total_gb)
                if crowded and not warned_crowded:
                    log(crowded)
                    warned_crowded = True
            if cfg.curriculum and step % max(cfg.curriculum_every, 1) == 0:
                torch.manual_seed(_seed_for(cfg.seed, "check", step))  # every process decides alike
                record["curriculum"] = _check_curriculum(
                    cfg, curriculum, heldout, top_rollouts, model, tokenizer, client, device, log
                )
                top_rollouts = []
            history.append(record)
            if main:  # every step, so that a run stopped early keeps what it did
                (out / "rl_history.json").write_text(json.dumps(history, indent=2))
                with (out / "rollouts.jsonl").open("a") as f:
                    for st in stats:
                        f.writelines(json.dumps({"step": step, **sample}) + "\n" for sample in st["samples"])
            _show(cfg, record, bar, board, log)
            last_wall = time.monotonic() - began
            stopping = step < cfg.steps and ahead is None and not fits(1)
            if ((cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps or stopping) and main:
                trainer_state = {
                    "start": {"model": cfg.model, "files": model_files(cfg.model)},
                    "step": step,
                    "optimizer": optimizer.state_dict(),
                    "draw": draws.get(step + 1, rng.getstate()),
                    "open_levels": curriculum.open,
                    "top_rollouts": top_rollouts,
                }
                save_checkpoint(model, tokenizer, out / f"checkpoint-{step}", trainer_state)
            accelerator.wait_for_everyone()
            if stopping:
                stopped = step
                log(
                    f"rl: stopping after step {step} of {cfg.steps}: another, as long as this one ({last_wall:.0f} s), "
                    f"would end past time_limit_s ({cfg.time_limit_s:.0f} s); a later run resumes from "
                    f"checkpoint-{step}"
                )
                break
    finally:
        scorer.shutdown(wait=False, cancel_futures=True)
    board.close()
    bar.close()
    if main:
        log(signal_summary(history))
    last = stopped or max(done, cfg.steps)  # a resumed run already past `steps` does none
    return {
        "steps": last,
        "history": history,
        "checkpoint": str(out / f"checkpoint-{last}"),
        "processes": world,
        "stopped_by_time_limit": stopped is not None,
    }


def _show(cfg: RLConfig, record: dict, bar, board: Board, log) -> None:
    """A step's record on the progress bar, in TensorBoard and, every `log_every` steps, in the log."""
    step, statuses = record["step"], record["statuses"]
    total = sum(statuses.values())
    bar.update(1)
    bar.set_postfix(reward=f"{record['reward_mean']:.3f}", correct=f"{statuses.get('correct', 0)}/{total}")
    board.scalars(
        step,
        "rl",
        {
            **{
                k: v
                for k, v in record.items()
                if k not in ("statuses", "levels", "open_levels", "score_phases_s", "engine")
            },
            "status_share": {k: n / total for k, n in statuses.items()},
            "open_levels": len(record["open_levels"]),
        },
    )
    if cfg.log_every and step % cfg.log_every == 0:
        log(
            f"rl: step {step}/{cfg.steps} loss {record['loss']:.4f} reward {record['reward_mean']:.3f} "
            f"statuses {dict(statuses)} ({record['rollout_tokens_per_s']:.0f} generated tokens/s over the step; "
            f"generate {record['generate_tokens_per_s']:.0f}, update {record['update_tokens_per_s']:.0f} tokens/s; "
            f"{', '.join(f'{k} {v:.1f} s' for k, v in record['seconds'].items())}{_engine_line(record['engine'])})"
        )


def _clear_earlier_run(out: pathlib.Path, model: pathlib.Path, resume_from: pathlib.Path | None) -> None:
    """What in `out` is not this run's goes: an earlier run's samples and checkpoints when this one
    starts at step 1 (a run cut short would otherwise leave a longer earlier run's last checkpoint to
    be taken for its own); when it resumes, the samples and checkpoints of steps after the one it
    resumes from (a run cut between logging a step and saving it)."""
    done = _step_of(resume_from) if resume_from else 0
    earlier = [p for p in out.glob("checkpoint-*") if _step_of(p) > done] + list(out.glob("partial-checkpoint-*"))
    inside = [p for p in earlier if model.resolve().is_relative_to(p.resolve())]
    if inside:
        raise ValueError(
            f"rl: model {model} lies in {inside[0]}, which a new run into {out} removes: copy it out first"
        )
    samples = out / "rollouts.jsonl"
    if done and samples.exists():
        kept = [line for line in samples.read_text().splitlines(keepends=True) if json.loads(line)["step"] <= done]
        samples.write_text("".join(kept))
    else:
        samples.unlink(missing_ok=True)
    for path in earlier:
        shutil.rmtree(path)


def _resumable(out: pathlib.Path, model: str, log) -> tuple[pathlib.Path, dict] | None:
    """The newest checkpoint in `out` with a trainer state, and that state, if its run started from
    `model` as it is now (a rerun SFT writes a new checkpoint, or overwrites one); else None: the
    run starts over."""
    newest = latest_checkpoint(out, STATE)
    if newest is None:
        return None
    # Mapped, not read: the start is compared before the optimizer's state (twice the weights) is
    # paged in, and a run from another model reads none of it. The optimizer moves it to the device.
    state = torch.load(newest / STATE, map_location="cpu", weights_only=False, mmap=True)
    if state.get("start") != {"model": model, "files": model_files(model)}:
        was = (state.get("start") or {}).get("model")
        log(f"rl: {newest} is of a run that started from another model ({was}): starting over")
        return None
    return newest, state


def _step_of(checkpoint: pathlib.Path) -> int:
    return int(checkpoint.name.rsplit("-", 1)[1])


def save_checkpoint(model, tokenizer, path: pathlib.Path, state: dict | None = None) -> None:
    """Writes the model and tokenizer (and `state`, to resume from, in STATE) beside `path`, then
    renames them into place: a run cut off mid-save (a call's time limit) leaves no `checkpoint-N`
    that a later eval would load half-written. The optimizer's state is twice the weights: only the
    newest checkpoint keeps one."""
    partial = path.with_name(f"partial-{path.name}")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    if state is not None:
        torch.save(state, partial / STATE)
    shutil.rmtree(path, ignore_errors=True)  # a rerun's checkpoint of the same step
    os.replace(partial, path)
    if state is not None:
        for older in path.parent.glob(f"checkpoint-*/{STATE}"):
            if older.parent != path:
                older.unlink()


def _check_curriculum(
    cfg: RLConfig,
    curriculum: Curriculum,
    heldout: list[dict],
    top_rollouts: list[bool],
    model,
    tokenizer,
    client,
    device,
    log,
) -> dict:
    """Pass@1 at the highest open level: one sample per held-out task of that level, or (with
    none held out there) the share of correct rollouts at that level since the last check."""
    from .. import api

    level = curriculum.top
    tasks = [t for t in heldout if task_level(t) == level]
    if tasks:  # in one generate call and one engine call, each task its own group
        # Greedy, as the eval stage's pass@1: sampled at the rollouts' temperature, a dozen tasks
        # gave 0.25-0.42 on the H200 where greedy decoding of the same model gave 0.75.
        results = rollouts(
            model,
            tokenizer,
            [api.kernel_prompt(t["source"]) for t in tasks],
            1,
            cfg.max_new_tokens,
            0.0,
            cfg.top_p,
            cfg.generator,
        )
        scored = client.score(
            [
                {"response": texts[0], "task": t["source"], "group": g}
                for g, (t, (_, _, texts)) in enumerate(zip(tasks, results))
            ]
        )
        outcomes = [s["verdict"]["status"] == "correct" for s in scored]
        source = f"{len(tasks)} held-out tasks"
    else:
        outcomes, source = top_rollouts, f"{len(top_rollouts)} training rollouts (no held-out task at this level)"
    pass_at_1 = sum(outcomes) / len(outcomes) if outcomes else 0.0
    opened = curriculum.update(pass_at_1)
    log(
        f"rl: curriculum: level {level} pass@1 {pass_at_1:.2f} over {source}"
        + (f"; level {curriculum.top} opens" if opened else "")
    )
    return {"level": level, "pass_at_1": pass_at_1, "samples": len(outcomes), "opened": opened}


def main(argv: list[str] | None = None) -> int:
    result = train_rl(parse_config(RLConfig, argv, __doc__))
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: v for k, v in result.items() if k != "history"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
