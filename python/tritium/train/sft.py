"""Supervised fine-tuning on {prompt, response} JSONL: loss on response tokens only, gradient
accumulation, bf16 autocast on a GPU, optional LoRA (peft), checkpoints every `save_every` steps
and resume from the latest, held-out loss every `eval_every` steps. Data-parallel through
accelerate: under `accelerate launch` each process takes its share of every batch, and the loss
is normalised by the whole batch's response tokens, so N processes take the same steps as one.

    python -m tritium.train.sft --data sft.jsonl --out runs/sft [--model tiny|DIR] [--steps N] ...
    accelerate launch --num_processes 2 -m tritium.train.sft --data sft.jsonl --out runs/sft ...
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import os
import pathlib
import random
import sys
import time

import torch

from . import data, models
from .board import Board, progress
from .cli import parse_config


@dataclasses.dataclass
class SFTConfig:
    data: str
    out: str
    model: str = "tiny"
    tiny: dict | None = None  # the tiny preset's shape, over models.TINY (hidden_size, num_hidden_layers, ...)
    eval_data: str | None = None
    steps: int = 100
    batch_size: int = 4  # examples per optimizer step and micro-batch, over all processes
    grad_accum: int = 1
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    max_len: int = 2048
    eval_every: int = 0  # 0: only at the end (when there is eval data)
    save_every: int = 0  # 0: only at the end
    log_every: int = 10
    seed: int = 0
    device: str = "auto"  # "auto": accelerate's (each launched process its GPU), else as given
    lora_rank: int = 0  # > 0: train LoRA adapters of this rank (peft) instead of every weight
    lora_alpha: float = 16.0
    bf16: bool = True  # autocast to bfloat16 on a GPU; ignored on the CPU
    resume: bool = True  # continue from the latest checkpoint in `out`
    tensorboard: bool = True  # scalars in OUT/tensorboard (when the package is installed)


def latest_checkpoint(out: pathlib.Path, marker: str = "trainer_state.pt") -> pathlib.Path | None:
    """The highest-step checkpoint under `out` that holds `marker`: SFT's trainer state, written
    last, so a crash mid-save leaves none; RL's checkpoints hold no state, so they pass config.json
    (rl.save_checkpoint renames each into place once written)."""
    found = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    done = [p for p in found if (p / marker).exists()]
    return done[-1] if done else None


class _Batches:
    """Endless batches of encoded examples, reshuffled each epoch from the seed (so a resumed run
    sees the same order as an uninterrupted one)."""

    def __init__(self, examples: list[dict], batch_size: int, seed: int, pad_id: int):
        self.examples, self.batch_size, self.seed, self.pad_id = examples, batch_size, seed, pad_id

    def at(self, index: int) -> list[dict]:
        """The examples of global batch `index` (every process draws the same ones)."""
        per_epoch = max(1, len(self.examples) // self.batch_size)
        epoch, k = divmod(index, per_epoch)
        order = list(range(len(self.examples)))
        random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        chosen = order[k * self.batch_size : (k + 1) * self.batch_size] or order[: self.batch_size]
        return [self.examples[i] for i in chosen]


def _targets(example: dict) -> int:
    """Response tokens an example's loss counts (labels after the shift by one)."""
    return sum(label != data.IGNORE for label in example["labels"][1:])


def _token_loss_sum(model, batch: dict) -> torch.Tensor:
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
    labels = batch["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=data.IGNORE, reduction="sum"
    )


def _autocast(device: torch.device, bf16: bool):
    if device.type == "cuda" and bf16:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def evaluate_loss(
    model, examples: list[dict], pad_id: int, device: torch.device, bf16: bool, batch_size: int = 8
) -> float:
    """Mean loss per response token over `examples`."""
    model.eval()
    total, tokens = 0.0, 0
    for i in range(0, len(examples), batch_size):
        batch = {k: v.to(device) for k, v in data.collate(examples[i : i + batch_size], pad_id).items()}
        with _autocast(device, bf16):
            total += _token_loss_sum(model, batch).item()
        tokens += sum(_targets(e) for e in examples[i : i + batch_size])
    model.train()
    return total / max(tokens, 1)


def _save(model, tokenizer, optimizer, step: int, cfg: SFTConfig, out: pathlib.Path) -> pathlib.Path:
    """A loadable model directory (LoRA adapters merged in) plus the state to resume from."""
    path = out / f"checkpoint-{step}"
    merged = copy.deepcopy(model).merge_and_unload() if cfg.lora_rank else model
    merged.save_pretrained(path)
    tokenizer.save_pretrained(path)
    state = {"step": step, "optimizer": optimizer.state_dict(), "config": dataclasses.asdict(cfg)}
    if cfg.lora_rank:  # the adapters' optimizer state belongs to them: keep them apart, to resume
        model.save_pretrained(path / "adapter")
    torch.save(state, path / "trainer_state.pt")
    return path


def _with_lora(model, cfg: SFTConfig, resume_from: pathlib.Path | None):
    """The model with LoRA adapters on every linear layer of its blocks (resumed ones when there are)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if resume_from and (resume_from / "adapter").exists():
        return PeftModel.from_pretrained(model, resume_from / "adapter", is_trainable=True)
    return get_peft_model(
        model,
        LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"),
    )


def _accelerator(cfg: SFTConfig):
    """accelerate's view of the processes; on the CPU (asked, or no GPU) gloo between them."""
    from accelerate import Accelerator

    return Accelerator(cpu=cfg.device == "cpu" or not torch.cuda.is_available())


def _load(cfg: SFTConfig, rows: list[dict], resume_from: pathlib.Path | None):
    if resume_from and not cfg.lora_rank:
        return models.load(str(resume_from))
    corpus = [r["prompt"] + "\n" + r["response"] for r in rows]
    model, tokenizer = models.load(cfg.model, corpus=corpus, seed=cfg.seed, tiny=cfg.tiny)
    return (_with_lora(model, cfg, resume_from) if cfg.lora_rank else model), tokenizer


def train_sft(cfg: SFTConfig, log=print) -> dict:
    """Runs SFT to `cfg.steps` optimizer steps; returns {steps, loss, eval_loss, dropped, ...}."""
    accelerator = _accelerator(cfg)
    world, rank, main = accelerator.num_processes, accelerator.process_index, accelerator.is_main_process
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} does not split over {world} processes")
    log = log if main else (lambda *_: None)
    out = pathlib.Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    device = accelerator.device if cfg.device == "auto" or world > 1 else models.device_for(cfg.device)
    rows = data.read_jsonl(cfg.data)
    eval_rows = data.read_jsonl(cfg.eval_data) if cfg.eval_data else []
    resume_from = latest_checkpoint(out) if cfg.resume else None
    model, tokenizer = _load(cfg, rows, resume_from)
    model.to(device).train()
    encoded = [data.encode(tokenizer, r["prompt"], r["response"], cfg.max_len) for r in rows]
    examples = [e for e in encoded if e is not None]
    eval_examples = [
        e for e in (data.encode(tokenizer, r["prompt"], r["response"], cfg.max_len) for r in eval_rows) if e
    ]
    if not examples:
        raise ValueError(f"{cfg.data}: no example fits in max_len {cfg.max_len}")
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=cfg.weight_decay
    )
    start = 0
    if resume_from:
        state = torch.load(resume_from / "trainer_state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
        log(f"sft: resuming from {resume_from} at step {start}")
    model, optimizer = accelerator.prepare(model, optimizer)
    batches = _Batches(examples, cfg.batch_size, cfg.seed, tokenizer.pad_token_id)
    result = {
        "steps": start,
        "loss": None,
        "eval_loss": None,
        "examples": len(examples),
        "dropped": len(rows) - len(examples),
        "device": str(device),
        "processes": world,
        "losses": [],
    }
    tokens, began = 0, time.monotonic()
    board = Board(out, cfg.tensorboard and main)
    bar = progress(cfg.steps, start, "sft", main)
    share = cfg.batch_size // world
    for step in range(start, cfg.steps):
        micro_batches = [batches.at(step * cfg.grad_accum + m) for m in range(cfg.grad_accum)]
        # Every process knows the whole step's targets: its loss sum over them, times the number
        # of processes (whose gradients accelerate averages), is the step's mean token loss.
        targets = sum(_targets(e) for b in micro_batches for e in b)
        loss_sum = torch.zeros((), device=device)
        for m, examples_m in enumerate(micro_batches):
            batch = {
                k: v.to(device)
                for k, v in data.collate(examples_m[rank * share : (rank + 1) * share], tokenizer.pad_token_id).items()
            }
            sync = contextlib.nullcontext() if m == cfg.grad_accum - 1 else accelerator.no_sync(model)
            with sync, _autocast(device, cfg.bf16):
                local = _token_loss_sum(model, batch)
                accelerator.backward(local * world / max(targets, 1))
            loss_sum += local.detach()
            tokens += int(batch["attention_mask"].sum()) * world
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        for group in optimizer.param_groups:  # linear warm-up, then constant (a function of the step: resumable)
            group["lr"] = cfg.lr * (min(1.0, (step + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        done = step + 1
        loss = float(accelerator.reduce(loss_sum, "sum")) / max(targets, 1)
        result.update(steps=done, loss=loss)
        result["losses"].append(loss)
        if not math.isfinite(loss):
            raise FloatingPointError(f"sft: loss became {loss} at step {done}; lower the learning rate")
        rate = tokens / max(time.monotonic() - began, 1e-9)
        board.scalars(done, "sft", {"loss": loss, "lr": optimizer.param_groups[0]["lr"], "tokens_per_s": rate})
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}", tokens_per_s=f"{rate:.0f}")
        if cfg.log_every and done % cfg.log_every == 0:
            log(f"sft: step {done}/{cfg.steps} loss {loss:.4f} ({rate:.0f} tokens/s)")
        last = done == cfg.steps
        if eval_examples and ((cfg.eval_every and done % cfg.eval_every == 0) or last) and main:
            result["eval_loss"] = evaluate_loss(
                accelerator.unwrap_model(model), eval_examples, tokenizer.pad_token_id, device, cfg.bf16
            )
            board.scalars(done, "sft", {"eval_loss": result["eval_loss"]})
            log(f"sft: step {done} held-out loss {result['eval_loss']:.4f}")
        if (cfg.save_every and done % cfg.save_every == 0) or last:
            if main:
                result["checkpoint"] = str(_save(accelerator.unwrap_model(model), tokenizer, optimizer, done, cfg, out))
            accelerator.wait_for_everyone()
    board.close()
    bar.close()
    result["tokens_per_s"] = tokens / max(time.monotonic() - began, 1e-9)
    result.setdefault("checkpoint", str(out / f"checkpoint-{result['steps']}"))
    if main:
        (out / "sft_result.json").write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    result = train_sft(parse_config(SFTConfig, argv, __doc__))
    if int(os.environ.get("RANK", "0")) == 0:  # one line, not one per launched process
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
