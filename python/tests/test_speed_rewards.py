"""The speed half of HRD, from verdicts recorded on the H200 (examples/verdicts/h200-demo.jsonl)
through the trainer's own path: rewards and group
advantages (tritium.rewards), then the per-token advantages of one rollout group
(tritium.train.rl._behaviour, then _advantaged) with a real tokenizer and a tiny model. CI has no
GPU, so this is where the speedup reward, which only GPU timing gives, is exercised on every run.

The recording holds one correct kernel per task, so the group below gathers kernels of several
tasks: rewards read only the verdicts, so the group is as real as one of a single task."""

import json
import pathlib

import pytest
import torch

import tritium
from tritium.train import models, rl

ROOT = pathlib.Path(__file__).resolve().parents[2]
ALPHA = 0.1  # the default config's


def recorded(candidate: str, **changes) -> dict:
    for line in (ROOT / "examples" / "verdicts" / "h200-demo.jsonl").read_text().splitlines():
        verdict = json.loads(line)
        if verdict["candidate_id"].endswith(candidate):
            return {**verdict, **changes, "meta": {**verdict["meta"], "group": 0}}
    raise KeyError(candidate)


@pytest.fixture
def group() -> list[dict]:
    """Four correct kernels timed at 4.01x, 1.13x, 0.68x and 0.12x the eager reference, a wrong
    kernel and a cache hack, as judged on the H200."""
    return [
        recorded("level1/05_sum_dim.py"),
        recorded("level1/01_relu.py"),
        recorded("level1/03_gelu_tanh.py"),
        recorded("level1/04_broadcast_add.py"),
        recorded("runtime/wrong_kernel.py"),
        recorded("runtime/cache_second_call.py"),
    ]


def grpo_by_hand(rewards: list[float]) -> list[float]:
    mean = sum(rewards) / len(rewards)
    std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - mean) / (std + 1e-6) for r in rewards]


def test_the_recorded_group_is_what_the_test_says(group):
    assert [v["status"] for v in group] == ["correct"] * 4 + ["incorrect", "hack"]
    assert [round(v["speedup_eager"], 2) for v in group[:4]] == [4.01, 1.13, 0.68, 0.12]
    assert all(v["device"] == "cuda" and not v.get("below_timing_floor") for v in group)


def test_hrd_rewards_plan_tokens_for_speed_and_code_tokens_for_correctness(group):
    scored = tritium.rewards(group)
    plan = [s["reward"]["plan"] for s in scored]
    code = [s["reward"]["code"] for s in scored]
    speedups = [v["speedup_eager"] for v in group[:4]]
    # The plan reward is the clipped speedup (3x at most); the hack's penalty replaces both halves.
    assert plan == pytest.approx([min(s, 3.0) for s in speedups] + [0.0, -1.0])
    assert code == pytest.approx([1.0] * 4 + [0.0, -1.0])
    plan_adv = [s["advantage"]["plan"] for s in scored]
    code_adv = [s["advantage"]["code"] for s in scored]
    assert plan_adv == pytest.approx([ALPHA * a for a in grpo_by_hand(plan)], abs=1e-9)
    assert code_adv == pytest.approx(grpo_by_hand(code), abs=1e-9)
    # Faster kernels' plans are reinforced more; every correct kernel's code alike.
    assert plan_adv[0] > plan_adv[1] > plan_adv[2] > plan_adv[3] > plan_adv[4] > plan_adv[5]
    assert len({round(a, 9) for a in code_adv[:4]}) == 1 and code_adv[0] > 0 > code_adv[4] > code_adv[5]
    # A slower-than-eager kernel's plan still beats a wrong one's, and is pushed down within the group.
    assert plan_adv[3] < 0 < plan_adv[1]


def test_blended_gives_plan_and_code_one_advantage(group):
    scored = tritium.rewards(group, {"scheme": "blended"})
    assert all(s["advantage"]["plan"] == s["advantage"]["code"] for s in scored)
    assert scored[0]["advantage"]["code"] > scored[3]["advantage"]["code"]  # speed moves every token


def test_a_timing_below_the_floor_earns_no_gain_and_a_slow_kernel_none_by_turning_host_bound():
    """The fixture is written after the H200's host-bound sigmoid (docs/engine.md, "Timing floor").
    A kernel slower than the reference that makes itself host-bound (a sleep in its forward: its
    timing falls below the floor) earns what its measured speed earns, not the reference's."""
    floor = json.loads((ROOT / "tests" / "fixtures" / "verdicts" / "below_timing_floor.json").read_text())
    assert floor["below_timing_floor"] and floor["speedup_eager"] < 0.5
    timed = {**floor, "below_timing_floor": False}
    (slow,), (slow_timed,) = tritium.rewards([floor]), tritium.rewards([timed])
    assert slow["reward"]["r_speedup"] == pytest.approx(floor["speedup_eager"])
    assert slow["reward"]["r_speedup"] == slow_timed["reward"]["r_speedup"]
    fast = {**floor, "speedup_eager": 3.0, "runtime_ms": floor["ref_eager_ms"] / 3.0}
    (noise,) = tritium.rewards([fast])
    assert noise["reward"]["speedup"] == pytest.approx(1.0)  # a gain below the floor is noise
    assert noise["reward"]["r_speedup"] == pytest.approx(1.0)  # f(1): as fast as the reference
    assert tritium.rewards([{**fast, "below_timing_floor": False}])[0]["reward"]["r_speedup"] == pytest.approx(3.0)


def test_the_trainers_group_carries_each_segments_advantage_to_its_tokens(group):
    """rl._behaviour then rl._advantaged, as a training step calls them: the rollouts' token ids, the engine's scored
    results, a tiny model; each response's plan tokens get its plan advantage, the rest its code
    advantage, and the prompt nothing."""
    plans = [f"Plan {k}: one pass over the rows, {k} warps." for k in range(len(group))]
    code = "import torch\nimport triton\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    texts = [tritium.format_response(p, code) for p in plans]
    tokenizer = models.train_tokenizer(texts * 4, vocab_size=400)
    model = models.tiny_model(tokenizer)
    prompt_ids = tokenizer("Write a Triton kernel for this task.", add_special_tokens=False)["input_ids"]
    completions = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    scored = [{"verdict": v, **s} for v, s in zip(group, tritium.rewards(group))]
    behaviour = rl._behaviour(
        rl.RLConfig(tasks="", model="", out=""), tokenizer, prompt_ids, completions, model, None, torch.device("cpu")
    )
    tensors, stats = rl._advantaged(tokenizer, prompt_ids, texts, scored, behaviour)
    assert stats["statuses"] == [v["status"] for v in group]
    assert stats["rewards"] == pytest.approx([s["reward"]["scalar"] for s in scored])
    adv, mask = tensors["adv"], tensors["mask"]
    start = len(prompt_ids) - 1  # the shifted position of the first completion token
    for i, (text, s) in enumerate(zip(texts, scored)):
        plan_span = tritium.extract(text)["plan_span"]
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        assert adv[i, :start].abs().sum() == 0 and mask[i, :start].sum() == 0
        for k, (begin, _) in enumerate(offsets):
            segment = "plan" if plan_span[0] <= begin < plan_span[1] else "code"
            assert adv[i, start + k].item() == pytest.approx(s["advantage"][segment], abs=1e-6)
        assert adv[i, start + len(offsets)].item() == pytest.approx(s["advantage"]["code"], abs=1e-6)  # EOS
        assert mask[i, start : start + len(offsets) + 1].all()
    # The fastest kernel's plan tokens are pushed up the most, the hack's whole response down.
    first_plan = [adv[i, start + 1].item() for i in range(len(group))]
    assert max(first_plan) == first_plan[0] and min(first_plan) == first_plan[-1]
