"""rollout_bench's --profile on the CPU with the tiny model: one call under torch.profiler, its
decode steps counted and its costliest host operations named (and, for a model on a GPU, kernels)."""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import rollout_bench  # noqa: E402 - the benchmark's own profile

from tritium.train import models  # noqa: E402


def test_a_profiled_call_counts_its_decode_steps_and_names_its_costliest_operations(capsys):
    model, tokenizer = models.load("tiny", corpus=["def forward(x): return torch.relu(x)"])
    prompts = [tokenizer("def forward(x):")["input_ids"], tokenizer("return torch.relu(x)")["input_ids"]]
    args = argparse.Namespace(group=2, max_new_tokens=6, profile="generate")
    torch.manual_seed(0)
    result = rollout_bench.profile(model, prompts, args, tokenizer.eos_token_id, tokenizer.pad_token_id, seed=0)
    assert 1 <= result["steps"] <= 6 and result["call"]["tokens"] > 0
    assert result["host"] and all(e["us"] >= 0 and e["calls"] > 0 for e in result["host"])
    assert any("mm" in e["name"] or "linear" in e["name"] for e in result["host"])  # the model's own work
    out = capsys.readouterr().out
    assert f"{result['steps']} decode steps" in out and "host operations" in out
    assert "kernels, by device time" not in out  # the model ran on the CPU: no kernel to list
