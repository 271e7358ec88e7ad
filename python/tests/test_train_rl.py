"""A few GRPO steps end to end on the CPU: the tiny model, real rollouts, rewards from the engine."""

import json

from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS

import tritium
from tritium.train.rl import RLConfig, train_rl
from tritium.train.sft import SFTConfig, train_sft


def test_a_few_rl_steps_run_end_to_end(tmp_path):
    task = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    solution = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()
    sft = tmp_path / "sft.jsonl"
    sft.write_text(json.dumps({"prompt": tritium.kernel_prompt(task),
                               "response": tritium.format_response("One program per block.", solution)}) + "\n")
    train_sft(SFTConfig(data=str(sft), out=str(tmp_path / "sft"), steps=10, batch_size=1, lr=3e-3, max_len=1024,
                        log_every=0), log=lambda _: None)
    suite = tmp_path / "tasks.jsonl"
    suite.write_text(json.dumps({"id": "level1/01_relu", "source": task}) + "\n")
    logs = []
    result = train_rl(RLConfig(tasks=str(suite), model=str(tmp_path / "sft" / "checkpoint-10"), out=str(tmp_path / "rl"),
                               steps=2, prompts_per_step=1, group_size=2, max_new_tokens=16, lr=1e-4,
                               kl_coef=0.05, engine_device="cpu"), log=logs.append)
    assert len(result["history"]) == 2 and len(logs) == 2
    for record in result["history"]:
        assert sum(record["statuses"].values()) == 2  # every sample got a verdict
        assert record["loss"] == record["loss"]  # finite, not NaN
    assert (tmp_path / "rl" / "checkpoint-2" / "config.json").exists()
    assert json.loads((tmp_path / "rl" / "rl_history.json").read_text())[1]["step"] == 2
