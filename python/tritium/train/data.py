"""SFT examples as token ids with response-only labels."""

from __future__ import annotations

import json
import pathlib

import torch

IGNORE = -100  # label of a token the loss skips (the prompt's, the padding)


def read_jsonl(path: str | pathlib.Path) -> list[dict]:
    rows = []
    for n, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row.get("prompt"), str) or not isinstance(row.get("response"), str):
                raise ValueError(f'{path}:{n}: expected {{"prompt": str, "response": str}}')
            rows.append(row)
    return rows


def write_jsonl(path: str | pathlib.Path, rows: list[dict]) -> None:
    """One JSON document per line (tasks, verdicts)."""
    pathlib.Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def prompt_text(tokenizer, prompt: str) -> str:
    """The prompt as the model sees it: through the chat template when the tokenizer has one."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
    return prompt + "\n\n"


def encode(tokenizer, prompt: str, response: str, max_len: int) -> dict | None:
    """input_ids and labels (IGNORE on the prompt) of one example; None when the prompt alone
    does not leave room for at least one response token."""
    p = tokenizer(prompt_text(tokenizer, prompt), add_special_tokens=False)["input_ids"]
    r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    if len(p) >= max_len:
        return None
    ids = (p + r)[:max_len]
    return {"input_ids": ids, "labels": ([IGNORE] * len(p) + r)[:max_len]}


def collate(batch: list[dict], pad_id: int) -> dict:
    width = max(len(b["input_ids"]) for b in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, b in enumerate(batch):
        n = len(b["input_ids"])
        ids[i, :n] = torch.tensor(b["input_ids"])
        labels[i, :n] = torch.tensor(b["labels"])
        mask[i, :n] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}
