"""The decode-step attention kernel (a real Triton kernel, under the interpreter here) against
transformers' SDPA attention, and the rollouts' attention that routes to it."""

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from tritium.train import decode_attention, rollout


class Layer:  # what sdpa_attention_forward reads of an attention module
    is_causal = True
    training = False

    def __init__(self, groups: int):
        self.num_key_value_groups = groups


def cache(batch: int, kv_heads: int, keys: int, dim: int, dtype=torch.float32):
    return torch.randn(batch, kv_heads, keys, dim).to(dtype), torch.randn(batch, kv_heads, keys, dim).to(dtype)


def decode_mask(batch: int, keys: int) -> torch.Tensor:
    mask = torch.ones(batch, 1, 1, keys, dtype=torch.bool)
    mask[0, ..., :70] = False  # left padding past a whole block of keys
    mask[1, ..., 100:] = False  # a static cache's slots not yet written
    mask[2, ..., :7] = False
    mask[2, ..., 120:] = False
    if batch > 3:
        mask[3, ..., 50] = False  # a hole: the bounds only prune, the mask decides
    return mask


BATCH, KEYS, DIM = 4, 150, 64


def decode_step(seed: int, heads: int = 9, kv_heads: int = 3, dtype=torch.float32):
    """A decode step's query, the cache's keys and values, and decode_mask's mask, drawn from `seed`."""
    torch.manual_seed(seed)
    query = torch.randn(BATCH, heads, 1, DIM).to(dtype)
    return (query, *cache(BATCH, kv_heads, KEYS, DIM, dtype), decode_mask(BATCH, KEYS))


@pytest.mark.parametrize(("heads", "kv_heads"), [(9, 3), (4, 4), (8, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_decode_step_attends_as_sdpa_does_over_the_keys_its_mask_allows(heads, kv_heads, dtype):
    query, key, value, mask = decode_step(0, heads, kv_heads, dtype)
    assert decode_attention.applies(query, key, value, mask)
    ours = decode_attention.decode_attention(query, key, value, mask, DIM**-0.5)
    theirs, _ = sdpa_attention_forward(Layer(heads // kv_heads), query, key, value, mask, scaling=DIM**-0.5)
    assert ours.shape == theirs.shape == (BATCH, 1, heads, DIM) and ours.dtype == dtype
    tolerance = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 1e-2, "rtol": 1e-2}
    torch.testing.assert_close(ours, theirs, **tolerance)


def test_keys_outside_the_mask_change_nothing_however_large():
    query, key, value, mask = decode_step(1)
    before = decode_attention.decode_attention(query, key, value, mask, DIM**-0.5)
    poisoned_key, poisoned_value = key.clone(), value.clone()
    hidden = ~mask[:, 0, 0, :]
    poisoned_key.permute(0, 2, 1, 3)[hidden] = 1e4  # a key no row attends would dominate its softmax
    poisoned_value.permute(0, 2, 1, 3)[hidden] = float("nan")
    after = decode_attention.decode_attention(query, poisoned_key, poisoned_value, mask, DIM**-0.5)
    torch.testing.assert_close(after, before)


def test_only_a_one_token_step_with_a_shared_boolean_mask_is_taken():
    query, (key, value) = torch.randn(2, 9, 1, 64), cache(2, 3, 20, 64)
    mask = torch.ones(2, 1, 1, 20, dtype=torch.bool)
    assert decode_attention.applies(query, key, value, mask)
    assert not decode_attention.applies(torch.randn(2, 9, 3, 64), key, value, mask.expand(2, 1, 3, 20))  # prefill
    assert not decode_attention.applies(query, key, value, None)
    assert not decode_attention.applies(query, key, value, torch.zeros(2, 1, 1, 20))  # an additive float mask
    assert not decode_attention.applies(query, key, value, mask.expand(2, 9, 1, 20))  # a mask per head
    odd = torch.randn(2, 9, 1, 48)
    assert not decode_attention.applies(odd, *cache(2, 3, 20, 48), mask)  # no power-of-two head dim


def test_the_rollouts_triton_attention_falls_back_to_gqa_decode_off_the_gpu():
    torch.manual_seed(2)
    query, (key, value) = torch.randn(3, 9, 1, 64), cache(3, 3, 150, 64)
    mask = decode_mask(3, 150)
    layer = Layer(3)
    ours, _ = rollout._triton_decode_attention(layer, query, key, value, mask, scaling=0.125)
    theirs, _ = rollout._gqa_decode_attention(layer, query, key, value, mask, scaling=0.125)
    assert torch.equal(ours, theirs)  # CPU tensors: SDPA's path, not the kernel


@pytest.mark.parametrize("block", [16, 32, 128])
def test_the_keys_a_loop_iteration_reads_change_no_output(block):
    query, key, value, mask = decode_step(4)
    default = decode_attention.decode_attention(query, key, value, mask, DIM**-0.5)
    other = decode_attention.decode_attention(query, key, value, mask, DIM**-0.5, block=block, warps=2, stages=2)
    torch.testing.assert_close(other, default, atol=1e-6, rtol=1e-5)
