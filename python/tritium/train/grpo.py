"""The GRPO objective with token-level advantages, so that Hierarchical Reward Decomposition can
reinforce plan tokens for speed and code tokens for correctness (docs/rewards.md, docs/training.md).

Advantages come from Tritium's reward module (tritium.rewards / segment advantages) and are spread
over a response's tokens through the tokenizer's character offsets (tritium.token_advantages).
"""

from __future__ import annotations

import torch


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """log p(token t | tokens < t) for t = 1..T-1: shape [batch, T-1]."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> torch.Tensor:
    """The clipped surrogate per token, min(r A, clip(r, 1-eps, 1+eps) A) with r = p / p_old, plus
    kl_coef times the k3 estimate of KL(policy || reference) when reference log-probs are given;
    averaged over each sequence's response tokens (`mask`), then over sequences, as GRPO does.
    All tensors are [batch, T]; `advantages` carries each token's own advantage."""
    ratio = torch.exp(logprobs - old_logprobs)
    surrogate = torch.minimum(ratio * advantages, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    per_token = -surrogate
    if ref_logprobs is not None and kl_coef:
        delta = ref_logprobs - logprobs
        per_token = per_token + kl_coef * (torch.exp(delta) - delta - 1)
    mask = mask.to(per_token.dtype)
    per_sequence = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_sequence.mean()


def response_advantages(tokenizer, prompt_len: int, response: str, advantage: dict, length: int) -> torch.Tensor:
    """A [length] row of per-token advantages for prompt + response token ids: 0 on the prompt,
    and on each response token the plan or code advantage by where its characters lie."""
    from .. import api

    encoded = tokenizer(response, add_special_tokens=False, return_offsets_mapping=True)
    per_token = api.token_advantages(response, encoded["offset_mapping"], advantage)
    row = torch.zeros(length)
    end = min(length, prompt_len + len(per_token))
    row[prompt_len:end] = torch.tensor(per_token[: end - prompt_len])
    if prompt_len + len(per_token) < length:  # the EOS closes the code
        row[prompt_len + len(per_token)] = advantage["code"]
    return row
