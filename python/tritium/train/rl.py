"""GRPO on Triton tasks with Tritium's rewards: each step samples `group_size` responses per task
with transformers `generate`, scores them with the engine (in-process or `tritium serve`
endpoints, through tritium.integrations.RewardClient), turns the group's rewards into per-token
advantages (HRD by default: plan tokens get alpha times the speed advantage, code tokens the
correctness advantage) and takes `updates` clipped policy-gradient steps (tritium.train.grpo).
Tasks come from a curriculum over difficulty levels with mixing weights (tritium.train.curriculum).

    python -m tritium.train.rl --tasks SUITE --model DIR --out DIR [--steps N] [--group-size G] ...
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pathlib
import random
import sys
import time
from collections import Counter

import torch

from . import data, grpo, models
from .cli import parse_config
from .board import Board
from .curriculum import Curriculum, parse_weights, task_level


@dataclasses.dataclass
class RLConfig:
    tasks: str
    model: str
    out: str
    steps: int = 10
    prompts_per_step: int = 2
    group_size: int = 4
    max_new_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    lr: float = 1e-6
    clip_eps: float = 0.2
    kl_coef: float = 0.0
    updates: int = 1            # policy updates per batch of rollouts
    reward: str = "{}"          # reward config as JSON (docs/rewards.md); default HRD
    endpoints: str = ""         # comma-separated tritium serve URLs; empty: the engine in-process
    device: str = "auto"
    engine_device: str = "auto"
    seed: int = 0
    save_every: int = 0         # 0: only at the end
    log_every: int = 1
    curriculum: bool = False    # open difficulty levels one at a time (docs/training.md)
    promote_at: float = 0.5     # held-out pass@1 on the highest open level that opens the next
    curriculum_every: int = 5   # steps between held-out checks
    heldout: str = ""           # suite of held-out tasks for the checks; empty: training rollouts
    level_weights: str = ""     # mixing weights over open levels, "1:0.5,2:0.3,3:0.2"; empty: equal
    tensorboard: bool = True    # scalars in OUT/tensorboard (when the package is installed)


@torch.no_grad()
def rollout(model, tokenizer, prompt: str, group_size: int, max_new_tokens: int, temperature: float, top_p: float,
            device: torch.device) -> tuple[list[int], list[list[int]], list[str]]:
    """(prompt ids, completion ids per sample without padding, completion texts)."""
    prompt_ids = tokenizer(data.prompt_text(tokenizer, prompt), add_special_tokens=False)["input_ids"]
    inputs = torch.tensor([prompt_ids] * group_size, device=device)
    model.eval()
    # Temperature 0 is greedy decoding (an eval's pass@1 without sampling noise).
    sampling = dict(do_sample=True, temperature=temperature, top_p=top_p) if temperature > 0 else dict(do_sample=False)
    out = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=max_new_tokens,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, **sampling)
    model.train()
    completions = []
    for row in out[:, len(prompt_ids):].tolist():
        if tokenizer.eos_token_id in row:
            row = row[:row.index(tokenizer.eos_token_id) + 1]  # keep the EOS: it is a chosen token
        while row and row[-1] == tokenizer.pad_token_id and row[-1] != tokenizer.eos_token_id:
            row.pop()
        completions.append(row)
    texts = [tokenizer.decode([t for t in c if t != tokenizer.eos_token_id]) for c in completions]
    return prompt_ids, completions, texts


def _batch(prompt_ids: list[int], completions: list[list[int]], pad_id: int, device: torch.device):
    width = len(prompt_ids) + max(1, max(len(c) for c in completions))
    ids = torch.full((len(completions), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, c in enumerate(completions):
        row = prompt_ids + c
        ids[i, :len(row)] = torch.tensor(row)
        attention[i, :len(row)] = 1
    return ids.to(device), attention.to(device)


def train_rl(cfg: RLConfig, log=print) -> dict:
    from .. import api
    from ..integrations import RewardClient

    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    device = models.device_for(cfg.device)
    out = pathlib.Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = api.load_suite(cfg.tasks, with_source=True)["tasks"]
    if not tasks:
        raise ValueError(f"{cfg.tasks}: no tasks")
    model, tokenizer = models.load(cfg.model)
    model.to(device).train()
    # The KL anchor is the starting policy, frozen (a second copy of the weights: only when asked).
    reference = copy.deepcopy(model).eval().requires_grad_(False) if cfg.kl_coef else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    reward_config = json.loads(cfg.reward)
    endpoints = [u for u in cfg.endpoints.split(",") if u]
    client = RewardClient(endpoints, config=reward_config) if endpoints else \
        RewardClient(config=reward_config, device=cfg.engine_device)
    curriculum = Curriculum(tasks, parse_weights(cfg.level_weights), cfg.curriculum, cfg.promote_at)
    heldout = api.load_suite(cfg.heldout, with_source=True)["tasks"] if cfg.curriculum and cfg.heldout else []
    rng = random.Random(cfg.seed)
    history, top_rollouts = [], []
    board = Board(out, cfg.tensorboard)
    for step in range(1, cfg.steps + 1):
        began = time.monotonic()
        chosen = curriculum.pick(rng, cfg.prompts_per_step)
        losses, statuses, rewards, generated = [], Counter(), [], 0
        components, lengths, kls, entropies = Counter(), [], [], []
        for g, task in enumerate(chosen):
            prompt = api.kernel_prompt(task["source"])
            prompt_ids, completions, texts = rollout(model, tokenizer, prompt, cfg.group_size, cfg.max_new_tokens,
                                                     cfg.temperature, cfg.top_p, device)
            generated += sum(len(c) for c in completions)
            scored = client.score([{"response": t, "task": task["source"], "group": g} for t in texts])
            statuses.update(s["verdict"]["status"] for s in scored)
            if task_level(task) == curriculum.top:
                top_rollouts += [s["verdict"]["status"] == "correct" for s in scored]
            rewards += [s["reward"]["scalar"] for s in scored]
            for s in scored:  # reward components, summed here and averaged in the record
                components.update({k: float(v) for k, v in s["reward"].items() if isinstance(v, (int, float))})
            lengths += [len(c) for c in completions]
            ids, attention = _batch(prompt_ids, completions, tokenizer.pad_token_id, device)
            adv = torch.stack([grpo.response_advantages(tokenizer, len(prompt_ids), t, s["advantage"], ids.shape[1])
                               for t, s in zip(texts, scored)])[:, 1:].to(device)
            mask = attention[:, 1:].clone()
            mask[:, :len(prompt_ids) - 1] = 0  # only the completion's tokens are trained
            with torch.no_grad():
                old = grpo.token_logprobs(model, ids, attention)
                ref = grpo.token_logprobs(reference, ids, attention) if reference is not None else None
                tokens = mask.sum().clamp(min=1)
                # The sampled tokens' mean surprise estimates the policy's entropy (at temperature 1).
                entropies.append(float(-(old * mask).sum() / tokens))
                if ref is not None:
                    delta = ref - old
                    kls.append(float(((torch.exp(delta) - delta - 1) * mask).sum() / tokens))
            for _ in range(cfg.updates):
                loss = grpo.grpo_loss(grpo.token_logprobs(model, ids, attention), old, adv, mask, cfg.clip_eps,
                                      ref_logprobs=ref, kl_coef=cfg.kl_coef)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            losses.append(loss.item())
        seconds = time.monotonic() - began
        record = {"step": step, "loss": sum(losses) / len(losses), "reward_mean": sum(rewards) / len(rewards),
                  "statuses": dict(statuses), "rollout_tokens_per_s": generated / max(seconds, 1e-9),
                  "levels": dict(Counter(task_level(t) for t in chosen)), "open_levels": curriculum.open_levels(),
                  "reward_components": {k: v / len(rewards) for k, v in components.items()},
                  "completion_tokens_mean": sum(lengths) / len(lengths),
                  "entropy_estimate": sum(entropies) / len(entropies)}
        if kls:
            record["kl"] = sum(kls) / len(kls)
        if cfg.curriculum and step % max(cfg.curriculum_every, 1) == 0:
            record["curriculum"] = _check_curriculum(cfg, curriculum, heldout, top_rollouts, model, tokenizer,
                                                     client, device, log)
            top_rollouts = []
        history.append(record)
        total = sum(statuses.values())
        board.scalars(step, "rl", {**{k: v for k, v in record.items() if k not in ("statuses", "levels", "open_levels")},
                                   "status_share": {k: n / total for k, n in statuses.items()},
                                   "open_levels": len(record["open_levels"])})
        if cfg.log_every and step % cfg.log_every == 0:
            log(f"rl: step {step}/{cfg.steps} loss {record['loss']:.4f} reward {record['reward_mean']:.3f} "
                f"statuses {dict(statuses)} ({record['rollout_tokens_per_s']:.0f} generated tokens/s)")
        if (cfg.save_every and step % cfg.save_every == 0) or step == cfg.steps:
            path = out / f"checkpoint-{step}"
            model.save_pretrained(path)
            tokenizer.save_pretrained(path)
    board.close()
    (out / "rl_history.json").write_text(json.dumps(history, indent=2))
    return {"steps": cfg.steps, "history": history, "checkpoint": str(out / f"checkpoint-{cfg.steps}")}


def _check_curriculum(cfg: RLConfig, curriculum: Curriculum, heldout: list[dict], top_rollouts: list[bool], model,
                      tokenizer, client, device, log) -> dict:
    """Pass@1 at the highest open level: one sample per held-out task of that level, or (with
    none held out there) the share of correct rollouts at that level since the last check."""
    from .. import api

    level = curriculum.top
    tasks = [t for t in heldout if task_level(t) == level]
    if tasks:
        outcomes = []
        for t in tasks:
            _, _, texts = rollout(model, tokenizer, api.kernel_prompt(t["source"]), 1, cfg.max_new_tokens,
                                  cfg.temperature, cfg.top_p, device)
            scored = client.score([{"response": texts[0], "task": t["source"], "group": 0}])
            outcomes.append(scored[0]["verdict"]["status"] == "correct")
        source = f"{len(tasks)} held-out tasks"
    else:
        outcomes, source = top_rollouts, f"{len(top_rollouts)} training rollouts (no held-out task at this level)"
    pass_at_1 = sum(outcomes) / len(outcomes) if outcomes else 0.0
    opened = curriculum.update(pass_at_1)
    log(f"rl: curriculum: level {level} pass@1 {pass_at_1:.2f} over {source}"
        + (f"; level {curriculum.top} opens" if opened else ""))
    return {"level": level, "pass_at_1": pass_at_1, "samples": len(outcomes), "opened": opened}


def main(argv: list[str] | None = None) -> int:
    result = train_rl(parse_config(RLConfig, argv, __doc__))
    print(json.dumps({k: v for k, v in result.items() if k != "history"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
