"""Every shipped training config names only stages and fields that `tritium train` knows: a typo
must fail here, not minutes into a GPU call."""

import dataclasses
import inspect
import tomllib

import pytest
from conftest import ROOT

from tritium.train.__main__ import STAGES
from tritium.train.evaluate import evaluate_model
from tritium.train.rl import RLConfig
from tritium.train.sft import SFTConfig

CONFIGS = sorted((ROOT / "configs").glob("*.toml"))
KNOWN = {"sft": {f.name for f in dataclasses.fields(SFTConfig)},
         "rl": {f.name for f in dataclasses.fields(RLConfig)},
         "data": {"count", "difficulty", "ops", "heldout", "device"},
         # the eval stage passes its fields to evaluate_model; `model` (evaluated alone) and `base` are its own
         "eval": {"model", "base"} | set(inspect.signature(evaluate_model).parameters) - {"model_dir", "tasks", "out",
                                                                                            "seed", "log"}}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_a_config_names_known_stages_and_fields(path):
    config = tomllib.loads(path.read_text())
    assert set(config.get("stages", [])) <= set(STAGES)
    for section, fields in KNOWN.items():
        unknown = set(config.get(section, {})) - fields
        assert not unknown, f"[{section}] has fields tritium train does not know: {sorted(unknown)}"
    assert not set(config) - {"out", "seed", "stages", *KNOWN}, "unknown top-level keys"


def test_the_configs_are_found():
    assert len(CONFIGS) >= 3
