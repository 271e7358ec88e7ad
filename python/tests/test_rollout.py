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


def test_the_decode_attention_reads_each_key_value_head_for_its_own_query_heads(tiny):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from tritium.train.rollout import _gqa_decode_attention

    model, _, _ = tiny
    layer = model.model.layers[0].self_attn
    assert layer.num_key_value_groups == 2  # the tiny model's 4 query heads share 2 key/value heads
    torch.manual_seed(0)
    batch, keys, dim = 3, 11, layer.head_dim
    key, value = torch.randn(batch, 2, keys, dim), torch.randn(batch, 2, keys, dim)
    mask = torch.ones(batch, 1, 1, keys, dtype=torch.bool)
    mask[0, ..., :4] = False  # left padding
    mask[1, ..., 7:] = False  # a static cache's slots not yet written
    for queries in (1, 5):  # a decode step, then a prefill (delegated as it is)
        query = torch.randn(batch, 4, queries, dim)
        step_mask = mask.expand(batch, 1, queries, keys)
        ours, _ = _gqa_decode_attention(layer, query, key, value, step_mask, scaling=layer.scaling)
        theirs, _ = sdpa_attention_forward(layer, query, key, value, step_mask, scaling=layer.scaling)
        assert ours.shape == theirs.shape == (batch, queries, 4, dim)
        torch.testing.assert_close(ours, theirs)
    # Query head h reads key/value head h // 2: with the heads paired the other way the outputs differ.
    swapped, _ = _gqa_decode_attention(layer, query[:, [0, 2, 1, 3], :1], key, value, mask, scaling=layer.scaling)
    assert not torch.allclose(swapped[:, :, [0, 2, 1, 3]], theirs[:, :1])


def test_compiled_rollouts_decode_through_the_gqa_attention_and_give_the_model_its_own_back(tiny):
    from transformers import AttentionInterface

    from tritium.train import rollout

    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:n] for p, n in zip(prompts, (20, 33, 47))]  # a padded batch
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    packed_steps = []

    def counted(module, query, *args, **kwargs):
        packed_steps.append(query.shape[2] == 1)
        return rollout._triton_decode_attention(module, query, *args, **kwargs)

    AttentionInterface.register(rollout.TRITON_DECODE, counted)
    try:
        ours = completion_ids(model, encoded, 1, 12, 0.0, 1.0, eos, pad, "compiled")
    finally:
        AttentionInterface.register(rollout.TRITON_DECODE, rollout._triton_decode_attention)
    assert model.config._attn_implementation == "sdpa"
    theirs = completion_ids(
        model, encoded, 1, 12, 0.0, 1.0, eos, pad, "compiled", options={"attn_implementation": "sdpa"}
    )
    assert sum(packed_steps) >= 11 * len(model.model.layers)  # every decode step of every layer
    assert ours == theirs
    with pytest.raises(ValueError, match="unknown options"):
        completion_ids(model, encoded, 1, 4, 0.0, 1.0, eos, pad, "compiled", options={"use_cuda_graph": False})


def test_decoding_lets_a_waiting_timer_have_the_gpu_between_its_steps(tiny, tmp_path, monkeypatch):
    import multiprocessing as mp
    import time

    from tritium.runner.timing import GpuLock
    from tritium.train import rollout

    lock = tmp_path / "gpu-0.lock"
    lock.touch()
    (tmp_path / "gpu-0.lock.gate").touch()
    # The decoder's share of the lock, as a GPU's decoding takes it (here without a GPU to synchronize).
    monkeypatch.setattr(rollout, "_timers_lock", lambda device: GpuLock(str(lock), gate_wait_s=float("inf")))
    steps = []  # each decode step's moment
    yielding = rollout._YieldToTimers.__call__
    ctx = mp.get_context("fork")
    decoding = ctx.Event()

    def counted(self, input_ids, scores):
        steps.append(time.monotonic())
        decoding.set()
        time.sleep(0.01)  # a decode step that takes its time, as on a GPU
        return yielding(self, input_ids, scores)

    monkeypatch.setattr(rollout._YieldToTimers, "__call__", counted)
    log = ctx.Queue()

    def timer():  # a candidate's timing in another process, once the decoding holds its share
        assert decoding.wait(60)
        time.sleep(0.1)
        gpu = GpuLock(str(lock), wait_s=5.0)
        with gpu.exclusive() as held:
            log.put(("in", held, time.monotonic()))
            time.sleep(0.2)
            log.put(("out", held, time.monotonic()))

    process = ctx.Process(target=timer)
    model, tokenizer, prompts = tiny
    process.start()
    torch.manual_seed(0)  # a sample that runs to its limit here
    rollouts(model, tokenizer, prompts[:1], 1, 120, 1.0, 1.0, "generate")
    process.join(10)
    (_, held, began), (_, _, ended) = log.get(timeout=1), log.get(timeout=1)
    assert held  # exclusive: the decoder let go instead of making the timer wait out its share
    assert began - max(t for t in steps if t < began) < 0.5  # at the step after it queued
    assert not [t for t in steps if began < t < ended]  # no decode step while it timed
    assert [t for t in steps if t > ended]  # and the decoding went on after it


def test_the_deferred_stop_check_reaches_cuda_devices_for_the_call_alone_and_changes_no_token(tiny):
    from transformers.generation import utils as generation

    from tritium.train import rollout

    model, tokenizer, prompts = tiny
    encoded = [tokenizer(p)["input_ids"][:n] for p, n in zip(prompts, (20, 33, 47))]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    library = generation.DeferredStopCheck.__dict__["is_supported"]
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert not generation.DeferredStopCheck.is_supported(cuda, None, False, False)  # the library's: MPS only
    with rollout._stop_check_deferred(True):
        assert generation.DeferredStopCheck.is_supported(cuda, None, False, False)
        assert not generation.DeferredStopCheck.is_supported(cuda, None, False, True)  # an assistant model: never
        assert not generation.DeferredStopCheck.is_supported(cpu, None, False, False)  # no events on the CPU
    assert generation.DeferredStopCheck.__dict__["is_supported"] is library  # given back
    torch.manual_seed(3)
    plain = completion_ids(model, encoded, 2, 10, 1.0, 1.0, eos, pad, "compiled")
    torch.manual_seed(3)
    deferred = completion_ids(model, encoded, 2, 10, 1.0, 1.0, eos, pad, "compiled", options={"defer_stop_check": True})
    assert deferred == plain  # on the CPU the library's own check runs: the option changes nothing here
    assert generation.DeferredStopCheck.__dict__["is_supported"] is library


@pytest.mark.parametrize("options, deferred", [(None, True), ({"defer_stop_check": False}, False)])
def test_the_compiled_generator_defers_the_stop_check_unless_told_not_to(tiny, monkeypatch, options, deferred):
    from transformers.generation import utils as generation

    model, tokenizer, prompts = tiny
    encoded = [tokenizer(prompts[0])["input_ids"][:20]]
    seen, generate = [], model.generate

    def generate_and_look(*args, **kwargs):  # what a CUDA device would be told during the call
        seen.append(generation.DeferredStopCheck.is_supported(torch.device("cuda"), None, False, False))
        return generate(*args, **kwargs)

    monkeypatch.setattr(model, "generate", generate_and_look)
    completion_ids(model, encoded, 1, 4, 1.0, 1.0, tokenizer.eos_token_id, tokenizer.pad_token_id, "compiled", options)
    assert seen == [deferred]
    assert not generation.DeferredStopCheck.is_supported(torch.device("cuda"), None, False, False)  # given back


def test_the_compiled_generator_gives_generate_the_compile_mode_asked_for_and_refuses_others(tiny, monkeypatch):
    model, tokenizer, prompts = tiny
    encoded = [tokenizer(prompts[0])["input_ids"][:20]]
    seen, generate = [], model.generate

    def generate_and_look(*args, **kwargs):
        seen.append(kwargs.get("compile_config"))
        return generate(*args, **kwargs)

    monkeypatch.setattr(model, "generate", generate_and_look)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    for options in (None, {"compile_mode": "max-autotune"}):
        torch.manual_seed(5)
        done = completion_ids(model, encoded, 2, 4, 1.0, 1.0, eos, pad, "compiled", options)
        assert len(done) == 2 and all(0 < len(c) <= 4 for c in done)
    assert seen[0] is None  # the library's own CompileConfig
    assert seen[1].mode == "max-autotune" and seen[1].backend == "inductor"
    with pytest.raises(ValueError, match="compile_mode 'fastest': expected one of default, reduce-overhead"):
        completion_ids(model, encoded, 1, 4, 1.0, 1.0, eos, pad, "compiled", {"compile_mode": "fastest"})
