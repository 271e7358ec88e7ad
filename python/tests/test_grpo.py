"""The GRPO/HRD loss against hand-computed values, and per-token advantages from real offsets."""

import math

import pytest
import torch

import tritium
from tritium.train import grpo, models


def test_on_policy_loss_is_minus_the_mean_advantage_per_sequence():
    lp = torch.log(torch.tensor([[0.5, 0.25, 0.1], [0.2, 0.2, 0.2]]))
    adv = torch.tensor([[1.0, 1.0, 3.0], [-2.0, -2.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])  # the third token of row 0 is padding
    loss = grpo.grpo_loss(lp, lp.clone(), adv, mask)
    # row 0: -(1 + 1) / 2 = -1; row 1: -(-2 - 2 + 0) / 3 = 4/3; mean = (-1 + 4/3) / 2
    assert loss.item() == pytest.approx((-1 + 4 / 3) / 2)


def test_clipping_by_hand():
    old = torch.log(torch.tensor([[0.2, 0.2, 0.2, 0.2]]))
    new = torch.log(torch.tensor([[0.3, 0.1, 0.3, 0.1]]))  # ratios 1.5, 0.5, 1.5, 0.5
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0]])
    mask = torch.ones(1, 4)
    # min(1.5, 1.2) = 1.2; min(-0.5, -0.8) = -0.8; min(-1.5, -1.2) = -1.5; min(0.5, 0.8) = 0.5
    expected = -(1.2 - 0.8 - 1.5 + 0.5) / 4
    assert grpo.grpo_loss(new, old, adv, mask, clip_eps=0.2).item() == pytest.approx(expected)


def test_kl_term_is_the_k3_estimator():
    lp = torch.log(torch.tensor([[0.5, 0.5]]))
    ref = torch.log(torch.tensor([[0.25, 0.5]]))
    mask = torch.ones(1, 2)
    zero_adv = torch.zeros(1, 2)
    # token 0: delta = log 0.5, exp(delta) - delta - 1 = 0.5 - log 0.5 - 1; token 1: 0
    k3 = 0.5 - math.log(0.5) - 1
    loss = grpo.grpo_loss(lp, lp, zero_adv, mask, ref_logprobs=ref, kl_coef=0.1)
    assert loss.item() == pytest.approx(0.1 * k3 / 2)


def test_gradients_flow_only_through_unclipped_masked_tokens():
    old = torch.log(torch.tensor([[0.2, 0.2, 0.2]]))
    new = torch.log(torch.tensor([[0.3, 0.2, 0.2]])).requires_grad_()
    adv = torch.tensor([[1.0, 1.0, 5.0]])
    mask = torch.tensor([[1, 1, 0]])
    grpo.grpo_loss(new, old, adv, mask).backward()
    assert new.grad[0, 0] == 0  # clipped: ratio 1.5 > 1.2 with a positive advantage
    assert new.grad[0, 1] == pytest.approx(-0.5)  # d(-r A / 2)/d log p = -r A / 2 with r = 1
    assert new.grad[0, 2] == 0  # masked


def test_hrd_gives_plan_tokens_and_code_tokens_their_own_advantages():
    response = tritium.format_response("Fuse everything into one pass.", "import torch\nx = 1\n")
    tokenizer = models.train_tokenizer([response] * 5, vocab_size=300)
    advantage = {"plan": 0.05, "code": -1.0}
    prompt_len = 3
    ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    row = grpo.response_advantages(tokenizer, prompt_len, response, advantage, prompt_len + len(ids) + 1)
    assert row[:prompt_len].tolist() == [0.0] * prompt_len
    offsets = tokenizer(response, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    plan = tritium.extract(response)["plan_span"]
    for k, (begin, _) in enumerate(offsets):
        expected = advantage["plan"] if plan[0] <= begin < plan[1] else advantage["code"]
        assert row[prompt_len + k].item() == pytest.approx(expected)
    assert {round(v, 4) for v in row[prompt_len:].tolist()} == {0.05, -1.0}  # both segments present
    assert row[-1].item() == -1.0  # the EOS belongs to the code
