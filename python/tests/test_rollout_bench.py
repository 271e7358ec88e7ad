"""rollout_bench on the CPU with the tiny model: --profile's one call under torch.profiler, its
decode steps counted and its costliest host operations named (and, for a model on a GPU, kernels);
a generator's own dtype beside the baseline's."""

import argparse
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import rollout_bench  # noqa: E402 - the benchmark's own profile

from tritium.train import models  # noqa: E402


def test_a_profiled_call_counts_its_decode_steps_and_names_its_costliest_operations(capsys):
    model, tokenizer = models.load("tiny", corpus=["def forward(x): return torch.relu(x)"])
    prompts = [tokenizer("def forward(x):")["input_ids"], tokenizer("return torch.relu(x)")["input_ids"]]
    args = argparse.Namespace(group=2, max_new_tokens=6, profile="generate")
    torch.manual_seed(0)
    result = rollout_bench.profile(
        rollout_bench.Policies(model), prompts, args, tokenizer.eos_token_id, tokenizer.pad_token_id, seed=0
    )
    assert 1 <= result["steps"] <= 6 and result["call"]["tokens"] > 0
    assert result["host"] and all(e["us"] >= 0 and e["calls"] > 0 for e in result["host"])
    assert any("mm" in e["name"] or "linear" in e["name"] for e in result["host"])  # the model's own work
    out = capsys.readouterr().out
    assert f"{result['steps']} decode steps" in out and "host operations" in out
    assert "kernels, by device time" not in out  # the model ran on the CPU: no kernel to list


def test_a_generator_given_a_dtype_decodes_with_a_cast_policy_and_leaves_the_baselines_alone():
    model, tokenizer = models.load("tiny", corpus=["def forward(x): return torch.relu(x)"])
    prompts = [tokenizer("def forward(x):")["input_ids"]]
    policies = rollout_bench.Policies(model)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    base, _ = rollout_bench.run(policies, prompts, 2, 4, eos, pad, "generate", seed=0)
    cast, _ = rollout_bench.run(policies, prompts, 2, 4, eos, pad, "generate[dtype=bfloat16]", seed=0)
    assert base["tokens"] > 0 and cast["tokens"] > 0
    assert next(policies("bfloat16").parameters()).dtype == torch.bfloat16
    assert next(model.parameters()).dtype == torch.float32  # the baseline's policy is not the cast copy
    assert policies("bfloat16") is policies("bfloat16") and policies(None) is model
    # "generate" takes no options of its own: only the dtype may be given to it
    assert rollout_bench.split_dtype({"dtype": "bfloat16"}) == ("bfloat16", None)
    assert rollout_bench.split_dtype({"dtype": "float16", "warmup": False}) == ("float16", {"warmup": False})


def test_the_random_models_eos_is_drawn_with_the_stop_share_at_every_position_unless_turned_off():
    model, tokenizer = models.load("tiny", corpus=["def forward(x): return torch.relu(x)"])
    eos = model.lm_head.out_features - 1
    ids = torch.tensor([tokenizer("def forward(x): return")["input_ids"]])
    before = model(ids).logits
    chance = rollout_bench.StopChance(model, eos, 0.25)
    probs = model(ids).logits.softmax(-1)
    torch.testing.assert_close(probs[..., eos], torch.full(probs.shape[:2], 0.25))
    # the other ids keep their odds against each other
    torch.testing.assert_close(probs[..., :eos] / probs[..., :eos].sum(-1, keepdim=True), before[..., :eos].softmax(-1))
    chance.active = False
    torch.testing.assert_close(model(ids).logits, before)
    with pytest.raises(ValueError, match="last id"):
        rollout_bench.StopChance(model, 0, 0.25)
