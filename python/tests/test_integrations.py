"""The RL framework hooks (tritium.integrations) with the real engine, in-process and over HTTP."""

import importlib.util
import sys

import pytest
from conftest import EXAMPLE_TASKS, FIXTURES
from test_serve import NO_KERNEL, RELU, Server

from tritium.integrations import RewardClient
from tritium.integrations import client as client_module
from tritium.integrations import trl as trl_hook
from tritium.integrations import verl as verl_hook

TASK = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
RESPONSE = "<think>one program per block of 1024 elements</think>\n```python\n" + RELU + "```\n"
HACK = (FIXTURES / "runtime" / "network_connect.py").read_text()  # imports socket: a hack


@pytest.fixture(scope="module")
def local():
    return RewardClient(device="cpu", python=sys.executable, tasks=str(EXAMPLE_TASKS))


def test_in_process_scores_follow_the_config(local):
    scored = local.score(
        [{"response": RESPONSE, "task": TASK, "group": 0}, {"code": HACK, "task_id": "level1/01_relu", "group": 0}]
    )
    assert [s["verdict"]["status"] for s in scored] == ["correct", "hack"]
    assert scored[0]["reward"]["scalar"] == pytest.approx(1.1)  # HRD: 1 + 0.1 * f(1), untimed on the CPU
    assert scored[1]["reward"]["scalar"] == -1.0 and scored[1]["reward"]["penalty"] == "hack"
    assert scored[0]["advantage"]["code"] > 0 > scored[1]["advantage"]["code"]


def test_a_bad_config_fails_at_construction():
    with pytest.raises(ValueError, match="scheme"):
        RewardClient(config={"scheme": "nope"}, device="cpu")


def test_verl_compute_score_contract(monkeypatch, local):
    monkeypatch.setattr(client_module, "_default", local)
    result = verl_hook.compute_score("kernelbench", RESPONSE, TASK, {"index": 0})
    assert result == {"score": pytest.approx(1.1), "correct": 1.0, "valid": 1.0, "speedup": 0.0, "engine_error": 0.0}
    by_id = verl_hook.compute_score("kernelbench", "no code at all", "level1/01_relu")
    assert by_id["score"] == 0.0 and by_id["valid"] == 0.0 and by_id["engine_error"] == 0.0
    # verl passes its reward_kwargs (and routers their own) as keywords
    assert verl_hook.compute_score("kernelbench", RESPONSE, TASK, {}, reward_router_address=None)["correct"] == 1.0


def test_verl_loads_the_file_by_path_as_its_loader_does(monkeypatch, local):
    """verl's custom_reward_function.path: spec_from_file_location under a name of no package."""
    monkeypatch.setattr(client_module, "_default", local)
    spec = importlib.util.spec_from_file_location("custom_module", verl_hook.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.compute_score("kernelbench", RESPONSE, TASK, {"index": 0})["correct"] == 1.0


def test_verl_batch_scores_a_group_together_and_flags_what_the_engine_could_not_judge(monkeypatch, local):
    monkeypatch.setattr(client_module, "_default", local)
    scores = verl_hook.compute_score_batch(
        data_sources=["kb"] * 3,
        solution_strs=[RESPONSE, "I cannot.", RESPONSE],
        ground_truths=[TASK, TASK, "level1/no_such_task"],
        extra_infos=[{}] * 3,
        some_reward_kwarg=1,
    )
    assert [s["correct"] for s in scores] == [1.0, 0.0, 0.0]
    assert [s["engine_error"] for s in scores] == [0.0, 0.0, 1.0]  # an unknown task: not the model's fault
    assert scores[0]["score"] == pytest.approx(1.1) and scores[2]["score"] == 0.0


def test_trl_reward_function_contract(monkeypatch, local):
    monkeypatch.setattr(client_module, "_default", local)
    prompt = [{"role": "user", "content": f"Rewrite with Triton:\n```python\n{TASK}```"}]
    completions = [[{"role": "assistant", "content": RESPONSE}], [{"role": "assistant", "content": "I cannot."}]]
    rewards = trl_hook.triton_reward(prompts=[prompt, prompt], completions=completions, completion_ids=[[1], [2]])
    assert rewards == pytest.approx([1.1, 0.0])
    assert trl_hook.triton_reward.__name__ == "triton_reward"
    by_column = trl_hook.make_reward(local)(
        prompts=["p", "p"], completions=[RESPONSE, NO_KERNEL], task_id=["level1/01_relu", "level1/01_relu"]
    )
    assert by_column == pytest.approx([1.1, 0.0])


def test_trl_tells_what_the_engine_could_not_judge_from_a_wrong_answer(local):
    columns = {"prompts": ["p", "p"], "completions": [RESPONSE, RESPONSE], "task_id": ["level1/01_relu", "level1/nope"]}
    assert trl_hook.make_reward(local)(**columns) == [pytest.approx(1.1), None]  # TRL leaves None out
    assert trl_hook.make_reward(local, on_error="zero")(**columns) == [pytest.approx(1.1), 0.0]
    with pytest.raises(RuntimeError, match="could not judge"):
        trl_hook.make_reward(local, on_error="raise")(**columns)
    with pytest.raises(ValueError, match="on_error"):
        trl_hook.make_reward(local, on_error="ignore")


def test_remote_endpoints_fail_over_to_a_live_server():
    server = Server()
    try:
        dead = "http://127.0.0.1:9"  # discard port: nothing listens
        client = RewardClient([dead, f"http://127.0.0.1:{server.port}"], config={"scheme": "correct"}, retries=2)
        scored = client.score([{"response": RESPONSE, "task_id": "level1/01_relu"}, {"code": NO_KERNEL, "task": TASK}])
        assert [s["reward"]["scalar"] for s in scored] == [1.0, 0.0]
        with pytest.raises(ValueError, match="HTTP 413"):
            RewardClient([f"http://127.0.0.1:{server.port}"]).score([{"code": "x"}] * 2000)
        with pytest.raises(RuntimeError, match="no tritium serve endpoint answered"):
            RewardClient([dead], retries=1).score([{"code": "x"}])
    finally:
        server.stop()


def _missing(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is None for m in modules)


@pytest.mark.skipif(_missing("trl"), reason="trl is not installed (make integrations installs it)")
def test_real_trl_grpo_steps_call_the_documented_reward_function(tmp_path, monkeypatch, local):
    """Two GRPOTrainer steps on a tiny random Llama: TRL itself calls triton_reward (docs/integrations.md's
    recipe, the client from the environment) with its batch and dataset columns at every step."""
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel()
    bpe.train_from_iterator(
        [TASK, RELU] * 4, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<pad>", "<eos>"])
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    calls = []
    monkeypatch.setattr(client_module, "_default", local)  # what TRITIUM_DEVICE=cpu TRITIUM_TASKS=... would build

    def triton_reward(prompts, completions, **kwargs):
        rewards = trl_hook.triton_reward(prompts, completions, **kwargs)
        calls.append((len(prompts), sorted(kwargs), rewards))
        return rewards

    data = Dataset.from_list(
        [{"prompt": f"Rewrite with Triton:\n```python\n{TASK}```\n", "task_id": "level1/01_relu"}] * 2
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=LlamaForCausalLM(config),
        reward_funcs=[triton_reward],
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
    trainer.train()
    assert len(calls) == 2, "TRL should call the reward function once a step"
    for n, columns, rewards in calls:
        assert n == 2 and "task_id" in columns and rewards == [0.0, 0.0]  # random tokens hold no code


@pytest.mark.skipif(
    _missing("verl", "omegaconf", "ray"), reason="verl is not installed (make integrations installs it)"
)
@pytest.mark.parametrize("name", ["compute_score", "compute_score_batch"])
def test_real_verls_loader_takes_the_documented_path_and_name(monkeypatch, local, name):
    """verl's own get_custom_reward_fn on docs/integrations.md's settings: the file's path, the
    function's name, reward_kwargs; the function it returns scores like ours."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    monkeypatch.setattr(client_module, "_default", local)
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": verl_hook.__file__,
                    "name": name,
                    "reward_kwargs": {"from_config": 1},
                }
            }
        }
    )
    fn = get_custom_reward_fn(config)
    if name == "compute_score":
        assert fn(data_source="kb", solution_str=RESPONSE, ground_truth=TASK, extra_info={})["correct"] == 1.0
    else:
        scores = fn(
            data_sources=["kb"] * 2,
            solution_strs=[RESPONSE, "no code"],
            ground_truths=[TASK, TASK],
            extra_infos=[{}, {}],
        )
        assert [s["correct"] for s in scores] == [1.0, 0.0]
