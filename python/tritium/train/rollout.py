"""Sampling completions from the policy: what RL's rollouts, its curriculum checks and the eval
stage all draw on. Three generators, one contract (per prompt, `samples` completions, the EOS kept
where one ended it):
- "generate": one left-padded static batch through transformers' `generate`, as long as its
  longest sample; the default ("auto"), because it was the fastest measured (below);
- "continuous": transformers' continuous batching (`generate_batch`: a paged KV cache, finished
  sequences replaced by waiting ones at every step), so no sample waits on the slowest one;
- "compiled": the static batch over a static KV cache, whose decode step transformers compiles
  (torch.compile with CUDA graphs) once per shape; prompt widths are padded to steps of
  WIDTH_STEP so that the calls of one config repeat their shapes. Its attention is GQA_DECODE:
  transformers' SDPA attention, except that a decode step reads the cache's key/value heads as they
  are instead of copies repeated to the query heads' count (see _gqa_decode_attention): on an H100
  (2026-12-05, bfloat16, 256 sequences, the benchmark below) 11,694 tokens/s against 5,923 with
  transformers' own attention (1.97x) and float32 `generate`'s 2,032 (5.8x). On a GPU its decode steps
  now run TRITON_DECODE (decode_attention's kernel: each row's attended keys only, not the whole
  static cache): 19,768 tokens/s against GQA_DECODE's 11,802 in one run, 9.9x float32 `generate`
  (H100, 2026-12-06); with generate's stop check read a step late (_stop_check_deferred, the
  default), 27,407 tokens/s, 14.5x float32 `generate`'s 1,892 in one run (H100, 2026-12-06).
On the H200 (2026-12-02; transformers 5.17, torch 2.11, float32, SmolLM2-135M's architecture,
no flash-attention package, up to 512 new tokens, python/benchmarks/rollout_bench.py), tokens/s:
64 sequences: generate 1,363; compiled 469 on its first call (the compile) and 1,616 on the next;
continuous (CONTINUOUS) 570 against generate's 1,103 in its run. 256: generate 2,143, compiled's
first call 784; continuous 608 against 2,117. 512: generate 2,177. Continuous batching is slow here
because, without flash-attention's paged kernels, each step attends every query to the whole
batch's cached keys through a dense mask: ~90% of its time is that forward on the GPU (53 ms a step
at 64 sequences, 195 ms at 256). With the policy in bfloat16, compiled's second call made 5,143
tokens/s at 64 sequences (generate in bfloat16: 506). So generate stays the default.
On a GPU, "generate" and "compiled" decode holding a share of the GPU's timing lock, the one that
engines on the machine time kernels under (runner.timing.GpuLock), and let it go between decode steps
for a timer that waits: a kernel an engine times while the policy decodes (RL's scoring beside the
next step's generation) then has the GPU to itself. Without it an H100's engine timed every correct
kernel above the timing floor while a model decoded beside it, and below it alone (2026-12-06).
All sample with torch's global generator, so a seed set before the call makes them repeatable,
without a top-k cut; greedy decoding (temperature 0) gives them the same tokens up to
floating-point ties. An eval's greedy answers can share its sampled answers' static batch
(`greedy_too`): one call compiles and decodes once where two calls of 320 and 80 sequences took
170 s and 97 s on an H100 (a static batch lasts as long as its longest sample).
"""

from __future__ import annotations

import contextlib
import logging

import torch
from transformers import AttentionInterface, AttentionMaskInterface, LogitsProcessor, LogitsProcessorList
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from ..runner import timing
from . import data, decode_attention

GENERATORS = ("auto", "continuous", "compiled", "generate")
WIDTH_STEP = 256  # "compiled": prompt widths are padded to multiples of it
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # torch.compile's
# "continuous": transformers' ContinuousBatchingConfig fields for generate_batch, and the attention it runs
# with: the fastest of the settings tried on the H200 (64 sequences of up to 64 new tokens: 561 tokens/s,
# the library's defaults 439, paged|sdpa with CUDA graphs 321, without them 468). No warm-up: it would
# run one step at the largest shapes. The KV cache is sized to the call (_continuous), not to the free
# device memory.
CONTINUOUS: dict = {
    "attn_implementation": "paged|eager",
    "use_cuda_graph": True,
    "max_batch_tokens": 2048,
    "warmup": False,
}


GQA_DECODE = "tritium_gqa_decode"  # the attention "compiled" decodes with (registered below)


def _gqa_decode_attention(
    module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs
):
    """transformers' SDPA attention, except for one query token of grouped-query attention (a decode
    step): the query heads that share a key/value head are given to SDPA as that head's queries,
    (batch, kv_heads, group, dim), so it reads the cache as it is. transformers instead repeats each
    key/value head to the query heads' count whenever a mask is given (always in a padded batch), and
    under torch.compile: a copy of the whole static cache (its padded length included), 3 times its size
    for SmolLM2, written and read again at every step of every layer."""
    groups = getattr(module, "num_key_value_groups", 1)
    one_token = query.shape[2] == 1
    mask_shared = attention_mask is None or (attention_mask.ndim == 4 and attention_mask.shape[1] == 1)
    if groups == 1 or not one_token or not mask_shared or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    batch, heads, _, dim = query.shape
    out = torch.nn.functional.scaled_dot_product_attention(  # the mask, (batch, 1, 1, keys), fits every group
        query.reshape(batch, heads // groups, groups, dim),  # head h reads key/value head h // groups, as repeated
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
    )
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None  # (batch, 1, heads, dim)


AttentionInterface.register(GQA_DECODE, _gqa_decode_attention)
AttentionMaskInterface.register(GQA_DECODE, AttentionMaskInterface()["sdpa"])  # it takes SDPA's masks

TRITON_DECODE = "tritium_triton_decode"  # GQA_DECODE whose decode steps on a GPU read only the attended keys


def _triton_decode_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """GQA_DECODE, except that a decode step on a GPU runs decode_attention's Triton kernel, which
    reads each row's keys from its first attended one to its current position instead of the whole
    static cache (see that module)."""
    if query.is_cuda and dropout == 0.0 and decode_attention.applies(query, key, value, attention_mask):
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        return decode_attention.decode_attention(query, key, value, attention_mask, scale), None
    return _gqa_decode_attention(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


AttentionInterface.register(TRITON_DECODE, _triton_decode_attention)
AttentionMaskInterface.register(TRITON_DECODE, AttentionMaskInterface()["sdpa"])


def resolve(generator: str) -> str:
    if generator not in GENERATORS:
        raise ValueError(f"rollout generator {generator!r}: expected one of {', '.join(GENERATORS)}")
    return "generate" if generator == "auto" else generator


def yields_to_timers(generator: str) -> bool:
    """Whether `generator` lets a waiting engine timer have the GPU between its decode steps
    (_YieldToTimers): the static batches do; continuous batching runs its own loop and does not."""
    return resolve(generator) != "continuous"


def _sampling(temperature: float, top_p: float) -> dict:
    # Temperature 0 is greedy decoding (an eval's pass@1 without sampling noise). top_k 0: no top-k
    # cut (generate's default cuts at 50, continuous batching's none; both now sample alike).
    if temperature > 0:
        return dict(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
    return dict(do_sample=False)


def _until_eos(row: list[int], eos: int | list[int] | None, pad: int | None) -> list[int]:
    stops = set(eos) if isinstance(eos, list) else {eos}
    for i, token in enumerate(row):
        if token in stops:
            return row[: i + 1]  # keep the EOS: it is a chosen token
    while row and pad is not None and row[-1] == pad:
        row = row[:-1]
    return row


class _GreedyRows(LogitsProcessor):
    """Some rows of a sampled batch decoded greedily: all their logits but the largest are masked,
    so sampling can only pick the token greedy decoding would (the warpers, temperature and top-p,
    keep the largest logit the largest)."""

    def __init__(self, rows: torch.Tensor):
        self.rows = rows  # one bool per sequence

    def __call__(self, input_ids, scores):
        only_top = torch.full_like(scores, float("-inf")).scatter_(1, scores.argmax(dim=-1, keepdim=True), 0.0)
        return torch.where(self.rows[:, None], only_top, scores)


class _YieldToTimers(LogitsProcessor):
    """Called once a decode step, between steps: where a timer waits for the GPU, lets this
    process's share go (after its queued work) and takes it back after the timer's round."""

    def __init__(self, lock: timing.GpuLock):
        self.lock = lock

    def __call__(self, input_ids, scores):
        self.lock.yield_to_timers()
        return scores


def _timers_lock(device: torch.device) -> timing.GpuLock:
    """A share of `device`'s timing lock for decoding on it; a no-op lock on the CPU, or while no
    engine on this machine has made the GPU's lock. Its gate wait is unbounded: a decoder waits out
    every queued timer (each bounded by its job's limit), where the engine's own sharers give up
    after GATE_WAIT_S in all."""
    path = timing.device_lock_path(device.index or 0) if device.type == "cuda" else None
    return timing.GpuLock.for_device(device.type, path, gate_wait_s=float("inf"))


@torch.no_grad()
def _static(
    model,
    encoded: list[list[int]],
    samples: int,
    max_new_tokens: int,
    sampling: dict,
    eos,
    pad: int,
    compiled: bool = False,
    greedy_too: bool = False,
    min_width: int = 0,
    attention: str | None = None,
    defer_stop_check: bool | None = False,
    compile_mode: str | None = None,
) -> list[list[int]]:
    width = max(len(ids) for ids in encoded)
    if compiled:  # prompt widths in steps of WIDTH_STEP, at least min_width: calls of one config repeat their shapes
        width = -(-max(width, min_width) // WIDTH_STEP) * WIDTH_STEP
    per_prompt = samples + greedy_too
    rows = [ids for ids in encoded for _ in range(per_prompt)]
    device = next(model.parameters()).device
    inputs = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    extra = {"cache_implementation": "static"} if compiled else {}
    if compile_mode:  # else the library's CompileConfig, whose mode is "reduce-overhead" (CUDA graphs)
        from transformers import CompileConfig

        extra["compile_config"] = CompileConfig(mode=compile_mode)
    lock = _timers_lock(device)
    processors = LogitsProcessorList([_YieldToTimers(lock)] if lock.lock else [])
    if greedy_too and sampling.get("do_sample"):  # each prompt's last row
        greedy = torch.tensor([k == samples for _ in encoded for k in range(per_prompt)], device=device)
        processors.append(_GreedyRows(greedy))
    with _attention(model, attention), _stop_check_deferred(defer_stop_check), lock.shared():
        out = model.generate(
            input_ids=inputs,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            pad_token_id=pad,
            eos_token_id=eos,
            logits_processor=processors,
            **sampling,
            **extra,
        )
    return [_until_eos(row, eos, pad) for row in out[:, width:].tolist()]


@contextlib.contextmanager
def _stop_check_deferred(enabled: bool | None):
    """generate's check that some sequence is unfinished, read one step late on a GPU too while
    enabled (None: where the installed transformers can). The check reads a device value on the host:
    at every step the host waited for the device before it could queue the next step (4 waits of a
    compiled step's 7.5 ms on an H100, the device idle 42% of it; rollout_bench --profile, 2026-12-06).
    transformers' DeferredStopCheck copies the value asynchronously and reads it a step later (one
    extra forward, undone), but only on Apple's MPS devices; this lets CUDA devices use it for the
    call. On an H100 it made the compiled path 1.29x faster, the same texts (2026-12-06)."""
    if enabled is False:
        yield
        return
    from transformers.generation import utils as generation

    deferred = getattr(generation, "DeferredStopCheck", None)
    if deferred is None or not hasattr(deferred, "is_supported"):
        if enabled is None:  # the default: without it, as before
            yield
            return
        raise ValueError("rollout option defer_stop_check: this transformers has no DeferredStopCheck")
    library = deferred.__dict__["is_supported"]

    def is_supported(device, cache, cache_is_returned, is_assistant):
        on_cuda = device.type == "cuda" and not is_assistant
        if on_cuda:  # the library's own conditions, with the device's kind set aside
            return cache is None or cache.is_croppable or not cache_is_returned
        return library.__func__(device, cache, cache_is_returned, is_assistant)

    deferred.is_supported = staticmethod(is_supported)
    try:
        yield
    finally:
        deferred.is_supported = library


@contextlib.contextmanager
def _attention(model, implementation: str | None):
    """The model runs with `implementation` (None: its own) and gets its own back, also where the
    library switched it during the call (continuous batching may): training needs it."""
    own = model.config._attn_implementation
    if implementation and implementation != own:
        model.set_attn_implementation(implementation)
    try:
        yield
    finally:
        if model.config._attn_implementation != own:
            model.set_attn_implementation(own)


def _compiled(
    model, encoded, samples, max_new_tokens, sampling, eos, pad, greedy_too=False, min_width=0, options=None
) -> list[list[int]]:
    """A static batch over a static KV cache: on a GPU, transformers compiles the decode step
    (torch.compile, CUDA graphs), once per shape: prompts padded to `min_width` or more keep the
    calls of a run at one shape. A model whose attention is SDPA's decodes with TRITON_DECODE (which
    stands in for SDPA alone), unless `options` give another `attn_implementation` (benchmarks:
    "sdpa", transformers' own; GQA_DECODE). `options["defer_stop_check"]`: generate's stop check
    read a step late on a GPU (_stop_check_deferred); on by default where transformers has it.
    `options["compile_mode"]`: torch.compile's mode for the decode step (COMPILE_MODES; "max-autotune"
    tunes its matmuls' kernels, minutes of compile) in place of the library's "reduce-overhead"."""
    options = options or {}
    unknown = set(options) - {"attn_implementation", "defer_stop_check", "compile_mode"}
    if unknown:
        raise ValueError(f"rollout generator 'compiled': unknown options {sorted(unknown)}")
    mode = options.get("compile_mode")
    if mode is not None and mode not in COMPILE_MODES:
        raise ValueError(f"rollout option compile_mode {mode!r}: expected one of {', '.join(COMPILE_MODES)}")
    default = TRITON_DECODE if model.config._attn_implementation == "sdpa" else None
    attention = options.get("attn_implementation", default)
    defer = options.get("defer_stop_check")  # None: where the library can
    defer = None if defer is None else bool(defer)
    return _static(
        model,
        encoded,
        samples,
        max_new_tokens,
        sampling,
        eos,
        pad,
        compiled=True,
        greedy_too=greedy_too,
        min_width=min_width,
        attention=attention,
        defer_stop_check=defer,
        compile_mode=mode,
    )


@torch.no_grad()
def _continuous(
    model,
    encoded: list[list[int]],
    samples: int,
    max_new_tokens: int,
    sampling: dict,
    eos,
    pad: int,
    options: dict | None = None,
) -> list[list[int]]:
    """`options`: transformers' ContinuousBatchingConfig fields, and `attn_implementation` (the attention the
    model runs the call with); CONTINUOUS where None."""
    from transformers.generation import ContinuousBatchingConfig, GenerationConfig

    settings = dict(CONTINUOUS if options is None else options)
    attn = settings.pop("attn_implementation", None)
    warmup = settings.pop("warmup", True)
    fit = "num_blocks" not in settings  # None: the library's own sizing, from the free device memory
    config = GenerationConfig(max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=pad, **sampling)
    rows = [ids for ids in encoded for _ in range(samples)]
    batching = ContinuousBatchingConfig(**settings)
    if fit:  # a KV cache with room for every sequence at its longest, no more
        page = getattr(batching, "page_size", None) or batching.block_size
        batching.num_blocks = sum(-(-(len(r) + max_new_tokens) // page) + 1 for r in rows)
    # The library logs its cache sizing and attention choice at every call (to its own logger, which does
    # not propagate): once per RL step is noise.
    quiet = [logging.getLogger(n) for n in ("ContinuousBatchingLogger", "transformers.generation.continuous_batching")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        with _attention(model, attn):
            results = model.generate_batch(
                rows, generation_config=config, continuous_batching_config=batching, progress_bar=False, warmup=warmup
            )
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)
    # Request ids are "req_<n>" in submission order; a failed request is an error, never a short sample.
    ordered = sorted(results.values(), key=lambda r: int(str(r.request_id).rsplit("_", 1)[-1]))
    failed = [r for r in ordered if getattr(r, "error", None)]
    if len(ordered) != len(rows) or failed:
        raise RuntimeError(
            f"continuous batching returned {len(ordered)} of {len(rows)} completions"
            + (f"; {failed[0].request_id}: {failed[0].error}" if failed else "")
        )
    return [_until_eos(list(r.generated_tokens), eos, None) for r in ordered]


def completion_ids(
    model,
    encoded: list[list[int]],
    samples: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    eos: int | list[int] | None,
    pad: int,
    generator: str = "auto",
    options: dict | None = None,
    greedy_too: bool = False,
    min_width: int = 0,
) -> list[list[int]]:
    """`samples` completions of each prompt (token ids, prompt-major), EOS kept, no padding; `eos`
    one stop token or several. The model is in eval mode for the call and back in its former mode
    after it. `options` (benchmarks): "continuous", its settings in place of CONTINUOUS; "compiled",
    {"attn_implementation": NAME} in place of TRITON_DECODE, {"defer_stop_check": false} (on by default),
    {"compile_mode": MODE}.
    `greedy_too`: each prompt's `samples` completions are followed by a greedy one, decoded in the
    same static batch ("continuous": in a second call). `min_width`: "compiled" only, the prompts
    padded to at least that many tokens (one shape, one compile, for all of a run's calls)."""
    run = {"continuous": _continuous, "compiled": _compiled, "generate": _static}[resolve(generator)]
    extra = {"min_width": min_width} if run is _compiled and min_width else {}
    if options is not None:
        if run is _static:
            raise ValueError(f"rollout generator {generator!r} takes no options")
        extra["options"] = options
    training = model.training
    model.eval()
    try:
        sampling = _sampling(temperature, top_p)
        if not greedy_too:
            return run(model, encoded, samples, max_new_tokens, sampling, eos, pad, **extra)
        if run is not _continuous:
            return run(model, encoded, samples, max_new_tokens, sampling, eos, pad, greedy_too=True, **extra)
        drawn = run(model, encoded, samples, max_new_tokens, sampling, eos, pad, **extra)
        greedy = run(model, encoded, 1, max_new_tokens, _sampling(0.0, top_p), eos, pad, **extra)
        return [c for i, g in enumerate(greedy) for c in (*drawn[i * samples : (i + 1) * samples], g)]
    finally:
        model.train(training)


def prompt_ids(tokenizer, prompt: str) -> list[int]:
    """A prompt's token ids as the model reads it (its chat template)."""
    return tokenizer(data.prompt_text(tokenizer, prompt), add_special_tokens=False)["input_ids"]


def rollouts(
    model,
    tokenizer,
    prompts: list[str],
    group_size: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    generator: str = "auto",
    greedy_too: bool = False,
    min_width: int = 0,
) -> list[tuple[list[int], list[list[int]], list[str]]]:
    """`group_size` samples of each prompt (and a greedy one after them with `greedy_too`): per
    prompt, its ids, each sample's completion ids and the completion texts (without the EOS).
    `min_width`: see completion_ids."""
    encoded = [prompt_ids(tokenizer, p) for p in prompts]
    eos = tokenizer.eos_token_id
    completions = completion_ids(
        model,
        encoded,
        group_size,
        max_new_tokens,
        temperature,
        top_p,
        eos,
        tokenizer.pad_token_id,
        generator,
        greedy_too=greedy_too,
        min_width=min_width,
    )
    texts = [tokenizer.decode([t for t in c if t != eos]) for c in completions]
    n = group_size + greedy_too
    return [(encoded[i], completions[i * n : (i + 1) * n], texts[i * n : (i + 1) * n]) for i in range(len(prompts))]
