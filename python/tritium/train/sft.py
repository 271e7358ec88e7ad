"""Supervised fine-tuning on {prompt, response} JSONL: loss on response tokens only, gradient
accumulation, bf16 autocast on a GPU, checkpoints every `save_every` steps and resume from the
latest, held-out loss every `eval_every` steps.

    python -m tritium.train.sft --data sft.jsonl --out runs/sft [--model tiny|DIR] [--steps N] ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import pathlib
import random
import sys
import time

import torch

from . import data, models
from .board import Board
from .cli import parse_config


@dataclasses.dataclass
class SFTConfig:
    data: str
    out: str
    model: str = "tiny"
    tiny: dict | None = None   # the tiny preset's shape, over models.TINY (hidden_size, num_hidden_layers, ...)
    eval_data: str | None = None
    steps: int = 100
    batch_size: int = 4
    grad_accum: int = 1
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    max_len: int = 2048
    eval_every: int = 0        # 0: only at the end (when there is eval data)
    save_every: int = 0        # 0: only at the end
    log_every: int = 10
    seed: int = 0
    device: str = "auto"
    bf16: bool = True          # autocast to bfloat16 on a GPU; ignored on the CPU
    resume: bool = True        # continue from the latest checkpoint in `out`
    tensorboard: bool = True   # scalars in OUT/tensorboard (when the package is installed)


def latest_checkpoint(out: pathlib.Path) -> pathlib.Path | None:
    found = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    done = [p for p in found if (p / "trainer_state.pt").exists()]  # a crash mid-save leaves no state file
    return done[-1] if done else None


class _Batches:
    """Endless batches of encoded examples, reshuffled each epoch from the seed (so a resumed run
    sees the same order as an uninterrupted one)."""

    def __init__(self, examples: list[dict], batch_size: int, seed: int, pad_id: int):
        self.examples, self.batch_size, self.seed, self.pad_id = examples, batch_size, seed, pad_id

    def at(self, index: int) -> dict:
        per_epoch = max(1, len(self.examples) // self.batch_size)
        epoch, k = divmod(index, per_epoch)
        order = list(range(len(self.examples)))
        random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        chosen = order[k * self.batch_size:(k + 1) * self.batch_size] or order[:self.batch_size]
        return data.collate([self.examples[i] for i in chosen], self.pad_id)


def _autocast(device: torch.device, bf16: bool):
    if device.type == "cuda" and bf16:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def evaluate_loss(model, examples: list[dict], pad_id: int, device: torch.device, bf16: bool, batch_size: int = 8) -> float:
    """Mean loss per response token over `examples`."""
    model.eval()
    total, tokens = 0.0, 0
    for i in range(0, len(examples), batch_size):
        batch = {k: v.to(device) for k, v in data.collate(examples[i:i + batch_size], pad_id).items()}
        with _autocast(device, bf16):
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
        labels = batch["labels"][:, 1:]
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                                 ignore_index=data.IGNORE, reduction="sum")
        total += loss.item()
        tokens += int((labels != data.IGNORE).sum())
    model.train()
    return total / max(tokens, 1)


def _save(model, tokenizer, optimizer, step: int, cfg: SFTConfig, out: pathlib.Path) -> pathlib.Path:
    path = out / f"checkpoint-{step}"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    torch.save({"step": step, "optimizer": optimizer.state_dict(), "config": dataclasses.asdict(cfg)},
               path / "trainer_state.pt")
    return path


def train_sft(cfg: SFTConfig, log=print) -> dict:
    """Runs SFT to `cfg.steps` optimizer steps; returns {steps, loss, eval_loss, dropped, ...}."""
    out = pathlib.Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    device = models.device_for(cfg.device)
    rows = data.read_jsonl(cfg.data)
    eval_rows = data.read_jsonl(cfg.eval_data) if cfg.eval_data else []
    resume_from = latest_checkpoint(out) if cfg.resume else None
    if resume_from:
        model, tokenizer = models.load(str(resume_from))
    else:
        corpus = [r["prompt"] + "\n" + r["response"] for r in rows]
        model, tokenizer = models.load(cfg.model, corpus=corpus, seed=cfg.seed, tiny=cfg.tiny)
    model.to(device).train()
    encoded = [data.encode(tokenizer, r["prompt"], r["response"], cfg.max_len) for r in rows]
    examples = [e for e in encoded if e is not None]
    eval_examples = [e for e in (data.encode(tokenizer, r["prompt"], r["response"], cfg.max_len) for r in eval_rows) if e]
    if not examples:
        raise ValueError(f"{cfg.data}: no example fits in max_len {cfg.max_len}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start = 0
    if resume_from:
        state = torch.load(resume_from / "trainer_state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
        log(f"sft: resuming from {resume_from} at step {start}")
    batches = _Batches(examples, cfg.batch_size, cfg.seed, tokenizer.pad_token_id)
    result = {"steps": start, "loss": None, "eval_loss": None, "examples": len(examples),
              "dropped": len(rows) - len(examples), "device": str(device)}
    tokens, began = 0, time.monotonic()
    board = Board(out, cfg.tensorboard)
    for step in range(start, cfg.steps):
        loss_sum = 0.0
        for micro in range(cfg.grad_accum):
            batch = {k: v.to(device) for k, v in batches.at(step * cfg.grad_accum + micro).items()}
            with _autocast(device, cfg.bf16):
                loss = model(**batch).loss / cfg.grad_accum
            loss.backward()
            loss_sum += loss.item()
            tokens += int(batch["attention_mask"].sum())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for group in optimizer.param_groups:  # linear warm-up, then constant (a function of the step: resumable)
            group["lr"] = cfg.lr * (min(1.0, (step + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        done = step + 1
        result.update(steps=done, loss=loss_sum)
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"sft: loss became {loss_sum} at step {done}; lower the learning rate")
        rate = tokens / max(time.monotonic() - began, 1e-9)
        board.scalars(done, "sft", {"loss": loss_sum, "lr": optimizer.param_groups[0]["lr"], "tokens_per_s": rate})
        if cfg.log_every and done % cfg.log_every == 0:
            log(f"sft: step {done}/{cfg.steps} loss {loss_sum:.4f} ({rate:.0f} tokens/s)")
        if eval_examples and ((cfg.eval_every and done % cfg.eval_every == 0) or done == cfg.steps):
            result["eval_loss"] = evaluate_loss(model, eval_examples, tokenizer.pad_token_id, device, cfg.bf16)
            board.scalars(done, "sft", {"eval_loss": result["eval_loss"]})
            log(f"sft: step {done} held-out loss {result['eval_loss']:.4f}")
        if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
            result["checkpoint"] = str(_save(model, tokenizer, optimizer, done, cfg, out))
    board.close()
    result["tokens_per_s"] = tokens / max(time.monotonic() - began, 1e-9)
    (out / "sft_result.json").write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(train_sft(parse_config(SFTConfig, argv, __doc__))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
