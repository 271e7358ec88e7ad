"""The rollout generators on the CPU with the tiny model: continuous batching (transformers'
generate_batch) and compiled static batches against static batches (generate)."""

import pytest
import torch
from conftest import EXAMPLE_TASKS

import tritium
from tritium.train import models
from tritium.train.rollout import completion_ids, resolve, rollouts


@pytest.fixture(scope="module")
def tiny():
    sources = [(EXAMPLE_TASKS / "level1" / f"{n}.py").read_text() for n in ("01_relu", "07_softmax", "09_matmul")]
    prompts = [tritium.kernel_prompt(s) for s in sources]
    model, tokenizer = models.load("tiny", corpus=prompts)
    return model, tokenizer, prompts


def test_greedy_continuous_batching_decodes_what_static_batches_decode(tiny):
    model, tokenizer, prompts = tiny
    static = rollouts(model, tokenizer, prompts, 2, 24, 0.0, 1.0, "generate")
    continuous = rollouts(model, tokenizer, prompts, 2, 24, 0.0, 1.0, "continuous")
    assert len({len(ids) for ids, _, _ in static}) == 3  # prompts of three lengths
    assert [ids for ids, _, _ in continuous] == [ids for ids, _, _ in static]
    assert [c for _, c, _ in continuous] == [c for _, c, _ in static]
    assert [t for _, _, t in continuous] == [t for _, _, t in static]


def test_sampled_continuous_rollouts_repeat_under_a_seed_and_stop_at_eos_or_the_limit(tiny):
    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:40] for p in prompts]
    eos = tokenizer.eos_token_id

    def sample(seed):
        torch.manual_seed(seed)
        return completion_ids(model, encoded, 4, 20, 1.0, 1.0, eos, tokenizer.pad_token_id, "continuous")

    first = sample(1)
    assert first == sample(1)  # per-call seeds, as the trainer sets them, make rollouts repeatable
    assert first != sample(2)
    assert len(first) == 12
    for row in first:
        assert 0 < len(row) <= 20
        assert eos not in row[:-1]  # nothing after an EOS
        assert len(row) == 20 or row[-1] == eos


def test_compiled_static_batches_decode_what_static_batches_decode(tiny):
    model, tokenizer, prompts = tiny
    static = rollouts(model, tokenizer, prompts, 1, 16, 0.0, 1.0, "generate")
    compiled = rollouts(model, tokenizer, prompts, 1, 16, 0.0, 1.0, "compiled")  # padded wider, static cache
    assert [c for _, c, _ in compiled] == [c for _, c, _ in static]


def test_continuous_batching_options_reach_the_library_and_the_attention_comes_back(tiny):
    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:40] for p in prompts]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    attention = model.config._attn_implementation
    static = completion_ids(model, encoded, 2, 12, 0.0, 1.0, eos, pad, "generate")
    # 32 tokens a step: the 40-token prompts prefill in chunks
    options = {"attn_implementation": "paged|eager", "max_batch_tokens": 32}
    assert completion_ids(model, encoded, 2, 12, 0.0, 1.0, eos, pad, "continuous", options=options) == static
    assert model.config._attn_implementation == attention
    with pytest.raises(ValueError, match="takes no options"):
        completion_ids(model, encoded, 1, 4, 0.0, 1.0, eos, pad, "generate", options=options)


def test_the_generator_is_checked(tiny):
    model, tokenizer, prompts = tiny
    assert resolve("auto") == "generate"
    with pytest.raises(ValueError, match="rollout generator 'vllm'"):
        rollouts(model, tokenizer, prompts[:1], 1, 4, 0.0, 1.0, "vllm")
    model.train()
    rollouts(model, tokenizer, prompts[:1], 1, 4, 0.0, 1.0, "continuous")
    assert model.training  # handed back in the mode it came in


@pytest.mark.parametrize("generator", ["generate", "compiled", "continuous"])
def test_greedy_rows_in_a_sampled_batch_decode_what_greedy_decoding_does(tiny, generator):
    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:40] for p in prompts]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    greedy = completion_ids(model, encoded, 1, 16, 0.0, 1.0, eos, pad, generator)

    def mixed(seed):
        torch.manual_seed(seed)
        return completion_ids(model, encoded, 3, 16, 1.0, 0.9, eos, pad, generator, greedy_too=True)

    first, second = mixed(1), mixed(2)
    assert len(first) == 3 * 4
    assert [first[i * 4 + 3] for i in range(3)] == greedy  # each prompt's last row, under any seed
    assert [second[i * 4 + 3] for i in range(3)] == greedy
    drawn = [first[i * 4 + k] for i in range(3) for k in range(3)]
    assert drawn != [second[i * 4 + k] for i in range(3) for k in range(3)]  # the others are sampled
    assert any(row != greedy[i // 3] for i, row in enumerate(drawn))


def test_compiled_calls_padded_to_a_minimum_width_keep_one_shape_and_their_tokens(tiny):
    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:n] for p, n in zip(prompts, (40, 90, 300))]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    shapes, generate = [], model.generate
    model.generate = lambda **kw: shapes.append(tuple(kw["input_ids"].shape)) or generate(**kw)
    try:
        free = [completion_ids(model, [ids], 1, 8, 0.0, 1.0, eos, pad, "compiled") for ids in encoded]
        fixed = [completion_ids(model, [ids], 1, 8, 0.0, 1.0, eos, pad, "compiled", min_width=300) for ids in encoded]
    finally:
        del model.generate
    assert shapes[:3] == [(1, 256), (1, 256), (1, 512)]  # in steps of WIDTH_STEP, as wide as each call needs
    assert shapes[3:] == [(1, 512)] * 3  # one shape for every call
    assert fixed == free  # left padding changes no token
