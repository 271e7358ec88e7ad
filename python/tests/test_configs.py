"""Every shipped training config passes `tritium train`'s schema (tritium/train/schema.py), and the
schema refuses what a typo makes, naming the table and key: a typo must fail before any work, not
minutes into a GPU call."""

import tomllib

import pytest
from conftest import ROOT

from tritium.train import schema

CONFIGS = sorted((ROOT / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_a_shipped_config_passes_the_schema(path):
    assert schema.problems(tomllib.loads(path.read_text())) == []


def test_the_configs_are_found():
    assert len(CONFIGS) >= 3


def test_typos_and_wrong_types_are_named_with_their_table():
    found = schema.problems(
        {
            "stagse": ["sft"],
            "stf": {"steps": 1},
            "stages": ["sft", "dance"],
            "sft": {"stpes": 3, "steps": "100", "lr": 1, "tiny": {"hidden_size": 64}},
            "rl": {"curriculum": 1, "model": "m", "matmul_precision": "tf32"},
            "eval": {"base": True, "samples": 4.5},
        }
    )
    assert found == [
        "stagse key: unknown; did you mean stages?",
        "[stf] table: unknown; did you mean [sft]?",
        "stages: unknown stage 'dance'; use ['data', 'sft', 'rl', 'eval']",
        "[sft] stpes key: unknown; did you mean steps?",
        "[sft] steps: expected int, got '100'",
        "[rl] curriculum: expected true/false, got 1",
        "[rl] matmul_precision: expected one of 'highest', 'high', 'medium', got 'tf32'",
        "[eval] samples: expected int, got 4.5",
    ]


def test_the_schema_follows_the_code_it_configures():
    tables = schema.tables()
    assert {"steps", "lora_rank", "model"} <= set(tables["sft"]) and "data" not in tables["sft"]
    assert {"group_size", "reward", "model"} <= set(tables["rl"]) and "tasks" not in tables["rl"]
    assert {"samples", "model", "base"} <= set(tables["eval"]) and "log" not in tables["eval"]
