"""A few GRPO steps end to end on the CPU: the tiny model, real rollouts, rewards from the engine."""

import json
import shutil

import pytest
import torch
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS

import tritium
from tritium import api
from tritium.train import rl
from tritium.train.rl import RLConfig, train_rl
from tritium.train.sft import SFTConfig, latest_checkpoint, train_sft


def test_a_few_rl_steps_run_end_to_end(tmp_path, monkeypatch):
    made = []  # the engines' options: engine_jobs reaches the engine
    monkeypatch.setattr(api, "Engine", lambda Real=api.Engine, **o: made.append(o) or Real(**o))
    task = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    solution = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()
    sft = tmp_path / "sft.jsonl"
    sft.write_text(
        json.dumps(
            {
                "prompt": tritium.kernel_prompt(task),
                "response": tritium.format_response("One program per block.", solution),
            }
        )
        + "\n"
    )
    train_sft(
        SFTConfig(data=str(sft), out=str(tmp_path / "sft"), steps=10, batch_size=1, lr=3e-3, max_len=1024, log_every=0),
        log=lambda _: None,
    )
    suite = tmp_path / "tasks.jsonl"
    suite.write_text(json.dumps({"id": "level1/01_relu", "source": task}) + "\n")
    earlier = [tmp_path / "rl" / name for name in ("checkpoint-9", "partial-checkpoint-10")]  # a longer run's
    for path in earlier:
        path.mkdir(parents=True)
        (path / "config.json").write_text("{}")
    logs = []
    result = train_rl(
        RLConfig(
            tasks=str(suite),
            model=str(tmp_path / "sft" / "checkpoint-10"),
            out=str(tmp_path / "rl"),
            steps=2,
            prompts_per_step=1,
            group_size=2,
            max_new_tokens=16,
            lr=1e-4,
            kl_coef=0.05,
            engine_device="cpu",
            engine_jobs=1,
            engine_memory_gb=2.0,
        ),
        log=logs.append,
    )
    assert [o["jobs"] for o in made] == [1]
    assert len(result["history"]) == 2 and len(logs) == 3  # a line per step, then the learning signal
    for record in result["history"]:
        assert sum(record["statuses"].values()) == 2  # every sample got a verdict
        assert record["groups"] == 1 and record["groups_with_signal"] in (0, 1)
        assert record["loss"] == record["loss"]  # finite, not NaN
    assert logs[-1].startswith(f"rl: {sum(r['groups_with_signal'] for r in result['history'])} of 2 prompt groups")
    assert (tmp_path / "rl" / "checkpoint-2" / "config.json").exists()
    assert not any(path.exists() for path in earlier)
    assert latest_checkpoint(tmp_path / "rl", "config.json") == tmp_path / "rl" / "checkpoint-2"
    assert json.loads((tmp_path / "rl" / "rl_history.json").read_text())[1]["step"] == 2
    samples = [json.loads(line) for line in (tmp_path / "rl" / "rollouts.jsonl").read_text().splitlines()]
    assert [s["step"] for s in samples] == [1, 1, 2, 2] and {s["task"] for s in samples} == {"level1/01_relu"}
    for step, record in enumerate(result["history"], 1):
        mine = [s for s in samples if s["step"] == step]
        assert sorted(s["status"] for s in mine) == sorted(k for k, n in record["statuses"].items() for _ in range(n))
        assert all(0 < s["tokens"] <= 16 and s["cut"] == (s["tokens"] == 16) and s["text"] for s in mine)
        assert record["cut_at_limit"] == sum(s["cut"] for s in mine)
        assert all(s["speedup_eager"] is None and s["below_timing_floor"] is False for s in mine)  # CPU: untimed
    record = result["history"][0]
    assert record["kl"] >= 0 and record["entropy_estimate"] > 0 and 0 < record["completion_tokens_mean"] <= 16
    assert record["reward_components"]["scalar"] == record["reward_mean"]
    assert set(record["seconds"]) == {"generate", "score", "update"} and min(record["seconds"].values()) > 0
    assert record["generate_tokens_per_s"] > 0 and record["update_tokens_per_s"] > 0
    assert isinstance(record["score_phases_s"], dict)  # empty when no sample reached the engine's runners
    # The engine's room for jobs, set when it started: what its admissions waited for.
    assert record["engine"]["jobs"] == 1 and record["engine"]["memory_budget_gb"] == 2.0  # as configured
    assert record["engine"]["memory_waits"] >= 0 and "GB for its jobs" in logs[0]
    # TensorBoard holds the same figures, one scalar per step.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(tmp_path / "rl" / "tensorboard"))
    board.Reload()
    tags = set(board.Tags()["scalars"])
    assert {
        "rl/loss",
        "rl/reward_mean",
        "rl/kl",
        "rl/entropy_estimate",
        "rl/completion_tokens_mean",
        "rl/reward_components/code",
    } <= tags, tags
    assert any(t.startswith("rl/status_share/") for t in tags)
    assert [e.step for e in board.Scalars("rl/loss")] == [1, 2]
    assert abs(board.Scalars("rl/loss")[0].value - record["loss"]) < 1e-5
    sft_board = EventAccumulator(str(tmp_path / "sft" / "tensorboard"))
    sft_board.Reload()
    assert len(sft_board.Scalars("sft/loss")) == 10 and "sft/lr" in sft_board.Tags()["scalars"]


def test_a_run_refuses_to_start_from_a_checkpoint_it_would_remove(tmp_path):
    start = tmp_path / "rl" / "checkpoint-4"
    start.mkdir(parents=True)
    (start / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="copy it out first"):
        train_rl(RLConfig(tasks=str(tmp_path / "none.jsonl"), model=str(start), out=str(tmp_path / "rl"), steps=1))
    assert start.is_dir()  # nothing removed


def test_a_run_uses_its_matmul_precision_and_gives_the_process_back_its_own(tmp_path, monkeypatch):
    from tritium.train import rl
    from tritium.train.cli import parse_config

    seen = []
    monkeypatch.setattr(rl, "_train_rl", lambda cfg, log: seen.append(torch.get_float32_matmul_precision()) or {})
    cfg = dict(tasks="t.jsonl", model="m", out=str(tmp_path / "rl"))
    assert torch.get_float32_matmul_precision() == "highest"
    train_rl(RLConfig(**cfg, matmul_precision="high"))
    with pytest.raises(ValueError, match="expected one of highest, high, medium"):
        train_rl(RLConfig(**cfg, matmul_precision="tf32"))  # torch itself only warns
    assert seen == ["high"] and torch.get_float32_matmul_precision() == "highest"
    assert parse_config(RLConfig, ["--tasks", "t", "--model", "m", "--out", "o"], "").matmul_precision == "highest"
    with pytest.raises(SystemExit):  # argparse names the choices
        parse_config(RLConfig, ["--tasks", "t", "--model", "m", "--out", "o", "--matmul-precision", "tf32"], "")


def test_a_checkpoint_cut_off_mid_save_is_never_the_latest(tmp_path, monkeypatch):
    from tritium.train import models
    from tritium.train.rl import save_checkpoint

    model, tokenizer = models.load(
        "tiny",
        corpus=[(EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()],
        tiny={
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "intermediate_size": 64,
        },
    )
    save_checkpoint(model, tokenizer, tmp_path / "checkpoint-1")

    def killed(*args, **kwargs):  # the weights are written, the tokenizer never is
        raise KeyboardInterrupt

    monkeypatch.setattr(type(tokenizer), "save_pretrained", killed)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(model, tokenizer, tmp_path / "checkpoint-2")
    assert (tmp_path / "partial-checkpoint-2" / "config.json").exists()
    assert latest_checkpoint(tmp_path, "config.json") == tmp_path / "checkpoint-1"
    loaded, _ = models.load(str(latest_checkpoint(tmp_path, "config.json")))
    assert loaded.config.hidden_size == 32


def test_the_curriculum_opens_the_next_level_from_held_out_pass_at_1(tmp_path):
    from tritium.train import models

    sources = {
        lv: (EXAMPLE_TASKS / f"level{lv}" / name).read_text() for lv, name in ((1, "01_relu.py"), (2, "06_rmsnorm.py"))
    }
    model, tokenizer = models.load("tiny", corpus=list(sources.values()))
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    suite, heldout = tmp_path / "tasks.jsonl", tmp_path / "heldout.jsonl"
    suite.write_text(
        "".join(json.dumps({"id": f"t{lv}", "source": s, "level": lv}) + "\n" for lv, s in sources.items())
    )
    heldout.write_text(json.dumps({"id": "h1", "source": sources[1], "level": 1}) + "\n")
    logs = []
    # promote_at 0: any held-out pass@1 (the untrained model's is 0) opens level 2 at the first check.
    result = train_rl(
        RLConfig(
            tasks=str(suite),
            model=str(tmp_path / "tiny"),
            out=str(tmp_path / "rl"),
            steps=2,
            prompts_per_step=2,
            group_size=2,
            max_new_tokens=8,
            engine_device="cpu",
            curriculum=True,
            curriculum_every=1,
            promote_at=0.0,
            heldout=str(heldout),
        ),
        log=logs.append,
    )
    first, second = result["history"]
    assert first["levels"] == {1: 2} and first["open_levels"] == [1]
    assert first["curriculum"] == {"level": 1, "pass_at_1": 0.0, "samples": 1, "opened": True}
    assert second["open_levels"] == [1, 2] and second["curriculum"]["level"] == 2
    assert any("level 2 opens" in line for line in logs)


def test_prompts_generated_together_match_prompts_generated_alone():
    from tritium.train import models
    from tritium.train.rollout import rollouts

    sources = [(EXAMPLE_TASKS / "level1" / f"{n}.py").read_text() for n in ("01_relu", "07_softmax", "09_matmul")]
    prompts = [tritium.kernel_prompt(s) for s in sources]
    model, tokenizer = models.load("tiny", corpus=prompts)
    alone = [rollouts(model, tokenizer, [p], 1, 24, 0.0, 1.0, "generate")[0] for p in prompts]
    together = rollouts(model, tokenizer, prompts, 1, 24, 0.0, 1.0, "generate")
    assert len({len(a[0]) for a in alone}) == 3  # different prompt lengths: left padding is exercised
    assert [a[1] for a in alone] == [t[1] for t in together]
    assert [a[0] for a in alone] == [t[0] for t in together]


def test_prompts_rolled_out_in_one_batch_give_each_group_its_own_rollouts_and_verdicts():

    import torch

    from tritium.integrations import RewardClient
    from tritium.train import models
    from tritium.train.rl import _finish, _launch

    tasks = [{"id": n, "source": (EXAMPLE_TASKS / "level1" / f"{n}.py").read_text()} for n in ("01_relu", "07_softmax")]
    model, tokenizer = models.load("tiny", corpus=[t["source"] for t in tasks])
    cfg = RLConfig(tasks="", model="", out="", group_size=2, max_new_tokens=12, temperature=0.0)
    client = RewardClient(device="cpu")
    cpu = torch.device("cpu")
    # Greedy decoding: a batch of both prompts must give each group what it gets alone, with the
    # prompt's own tokens and the verdicts of its own samples.

    def rolled_out(tasks: list[dict], first: int):  # one batch, generated then judged, as a step does
        return _finish(
            cfg, tokenizer, _launch(cfg, model, tokenizer, client, [(first, tasks)], 1, None, cpu, None, None), False
        )

    together = rolled_out(tasks, 0)
    alone = [rolled_out([t], g) for g, t in enumerate(tasks)]
    assert len(together[0]) == 2 and torch.equal(together[0][0]["ids"][0], together[0][0]["ids"][1])
    assert not torch.equal(together[0][0]["ids"][0], together[0][1]["ids"][0])  # the prompts differ
    for g, (groups, stats) in enumerate(alone):
        assert torch.equal(together[0][g]["ids"], groups[0]["ids"])
        assert torch.equal(together[0][g]["mask"], groups[0]["mask"])
        assert torch.allclose(together[0][g]["old"], groups[0]["old"], atol=1e-5)
        assert together[1][g]["statuses"] == stats[0]["statuses"] and together[1][g]["lengths"] == stats[0]["lengths"]


def test_a_steps_score_phases_give_each_phase_its_median_and_sum_over_the_jobs_that_had_it():
    stats = [
        {"phases": [{"engine.job": 3000.0, "cuda_init": 1400.0, "mem.job_reserved_mib": 512.0, "gpu.holds": 3.0}, {}]},
        {"phases": [{"engine.job": 1000.0, "cuda_init": 600.0}, {"engine.job": 2000.0}]},
    ]
    phases = rl._score_phases(stats)
    assert phases == {
        "cuda_init": {"median": 1.0, "sum": 2.0, "jobs": 2},
        "engine.job": {"median": 2.0, "sum": 6.0, "jobs": 3},
    }


def test_the_learning_signal_counts_groups_whose_samples_earned_different_rewards():
    """A group of equal rewards has zero advantages: `make demo` says so when every group was one."""
    same = {"components": [{"plan": 1.0, "code": 1.0}] * 4}
    faster = {"components": [{"plan": 1.2, "code": 1.0}] + [{"plan": 1.0, "code": 1.0}] * 3}
    wrong = {"components": [{"plan": 0.0, "code": 0.0}] + [{"plan": 1.0, "code": 1.0}] * 3}
    assert [rl._has_signal(g) for g in (same, faster, wrong)] == [False, True, True]
    flat = rl.signal_summary([{"groups": 2, "groups_with_signal": 0}, {"groups": 2, "groups_with_signal": 0}])
    assert flat.startswith("rl: 0 of 4 prompt groups") and "RL changed nothing" in flat
    assert "changed nothing" not in rl.signal_summary([{"groups": 2, "groups_with_signal": 1}])


def test_a_rollout_copy_samples_in_its_dtype_and_follows_the_policy_after_an_update():
    import pytest
    import torch

    from tritium.train import models
    from tritium.train.rl import RolloutCopy
    from tritium.train.rollout import rollouts

    prompt = tritium.kernel_prompt((EXAMPLE_TASKS / "level1" / "01_relu.py").read_text())
    model, tokenizer = models.load("tiny", corpus=[prompt])
    copied = RolloutCopy(model, "bfloat16")
    assert {p.dtype for p in copied.sampler.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # the policy itself is untouched
    kept = [p for p in copied.sampler.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.tensor([tokenizer(prompt)["input_ids"][:32]])
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    stale = [not torch.equal(mine, theirs.to(torch.bfloat16)) for mine, theirs in zip(kept, model.parameters())]
    assert any(stale)  # the update moved the policy away from the copy
    copied.refresh()
    for mine, theirs, before in zip(copied.sampler.parameters(), model.parameters(), kept):
        assert mine is before  # refreshed in place: a compiled generator's graphs stay valid
        assert torch.equal(mine, theirs.detach().to(torch.bfloat16))
    (prompt_ids, completions, texts) = rollouts(copied.sampler, tokenizer, [prompt], 2, 8, 1.0, 1.0, "generate")[0]
    assert len(completions) == 2 and all(0 < len(c) <= 8 for c in completions)
    with pytest.raises(ValueError, match="not a floating torch dtype"):
        RolloutCopy(model, "int8")


def test_scoring_overlapped_with_the_next_batchs_generation_gives_the_same_step():
    import concurrent.futures
    import threading

    import torch

    from tritium.integrations import RewardClient
    from tritium.train import models
    from tritium.train.rl import _finish, _launch

    tasks = [{"id": n, "source": (EXAMPLE_TASKS / "level1" / f"{n}.py").read_text()} for n in ("01_relu", "07_softmax")]
    model, tokenizer = models.load("tiny", corpus=[t["source"] for t in tasks])
    client = RewardClient(device="cpu")
    scored_in = []
    score = client.score
    client.score = lambda items: scored_in.append(threading.current_thread().name) or score(items)
    batches, cpu = [(0, tasks[:1]), (1, tasks[1:])], torch.device("cpu")
    steps = {}
    for overlap in (False, True):
        cfg = RLConfig(tasks="", model="", out="", group_size=2, max_new_tokens=12, overlap_scoring=overlap)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="rl-score") as scorer:
            launched = _launch(cfg, model, tokenizer, client, batches, 1, None, cpu, None, scorer if overlap else None)
            steps[overlap] = _finish(cfg, tokenizer, launched, overlap)
        assert ("score_wait" in launched.clock) == overlap and launched.clock["score"] > 0
    assert scored_in[:2] == ["MainThread"] * 2 and all(name.startswith("rl-score") for name in scored_in[2:])
    (alone_groups, alone_stats), (overlapped_groups, overlapped_stats) = steps[False], steps[True]
    for a, b in zip(alone_groups, overlapped_groups, strict=True):
        assert torch.equal(a["ids"], b["ids"]) and torch.equal(a["mask"], b["mask"])
        assert torch.allclose(a["old"], b["old"], atol=1e-6)
    assert [s["statuses"] for s in alone_stats] == [s["statuses"] for s in overlapped_stats]


def test_minibatches_take_one_optimizer_step_per_slice_of_the_steps_groups():
    """A step's groups in `minibatches` slices: that many AdamW steps a pass, each on its slice's
    mean loss; a single slice is the whole step's mean, as before."""
    import torch
    from accelerate import Accelerator

    from tritium.train import grpo, models

    prompt = tritium.kernel_prompt((EXAMPLE_TASKS / "level1" / "01_relu.py").read_text())
    model, tokenizer = models.load("tiny", corpus=[prompt])
    ids = torch.tensor([tokenizer(prompt)["input_ids"][:24]] * 2)
    attention = torch.ones_like(ids)
    with torch.no_grad():
        old = grpo.token_logprobs(model, ids, attention)
    groups = [
        {
            "ids": ids,
            "attention": attention,
            "old": old,
            "adv": torch.full_like(old, a),
            "mask": torch.ones_like(old),
            "ref": None,
        }
        for a in (1.0, -0.5, 0.25, 2.0)
    ]
    accelerator = Accelerator(cpu=True)
    for minibatches, updates in ((1, 1), (2, 1), (4, 2)):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        cfg = RLConfig(tasks="", model="", out="", prompts_per_step=4, minibatches=minibatches, updates=updates)
        loss = rl._update(cfg, accelerator, model, optimizer, groups, total_groups=4)
        steps = {int(state["step"]) for state in optimizer.state.values()}
        assert steps == {minibatches * updates} and loss == loss
    with pytest.raises(ValueError, match="each must split into minibatches 3 equal slices"):
        rl._check_minibatches(RLConfig(tasks="", model="", out="", prompts_per_step=4, minibatches=3), 1, 1)
    with pytest.raises(ValueError, match=r"gives the 2 processes \[2, 1\] prompt groups"):
        rl._check_minibatches(RLConfig(tasks="", model="", out="", prompts_per_step=3, minibatches=2), 2, 1)
    with pytest.raises(ValueError, match="update_micro_batch -1: expected 0"):
        rl._check_minibatches(RLConfig(tasks="", model="", out="", update_micro_batch=-1), 1, 1)
    rl._check_minibatches(RLConfig(tasks="", model="", out="", prompts_per_step=3), 2, 1)  # one slice: uneven is fine
    rl._check_minibatches(RLConfig(tasks="", model="", out="", prompts_per_step=8, minibatches=2), 2, 2)


def test_a_trainer_and_engine_that_together_want_more_than_the_gpu_get_one_warning_with_the_fix():
    """The H100 run's figures: the trainer's 77 GB beside the engine's 48.9 GB room on a 79.2 GB GPU."""
    engine = {"jobs": 8, "gpus": 1, "memory_budget_gb": 48.9, "memory_waits": 0, "memory_retries": 0}
    warning = rl._crowded(engine, 77.0, 79.2)
    assert "peaked at 77.0 GB" in warning and "48.9 GB of the GPU's 79.2 GB" in warning
    assert "update_micro_batch" in warning and "engine_memory_gb to at most 2" in warning
    assert rl._crowded(engine, 30.0, 79.2) is None  # room for both
    assert rl._crowded({**engine, "gpus": 2, "memory_budget_gb": 97.8}, 30.0, 79.2) is None  # a room over 2 GPUs
    assert rl._crowded({**engine, "gpus": 2, "memory_budget_gb": 97.8}, 40.0, 79.2) is not None
    assert rl._crowded(None, 77.0, 79.2) is None  # scored by tritium serve: no room known


def test_micro_batches_give_the_groups_old_log_probs_loss_and_gradient_a_few_rollouts_a_pass():
    """`update_micro_batch` rollouts per forward and backward, each slice cut after its longest
    rollout: the same old log-probs, loss and gradient as the whole group in one pass."""
    from accelerate import Accelerator

    from tritium.train import models

    prompt = tritium.kernel_prompt((EXAMPLE_TASKS / "level1" / "01_relu.py").read_text())
    model, tokenizer = models.load("tiny", corpus=[prompt])
    words = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    prompt_ids = words[:12]
    completions = [words[12 + k : 12 + k + n] + [tokenizer.eos_token_id] for k, n in enumerate((3, 17, 9, 30, 12))]
    generator = torch.Generator().manual_seed(0)
    accelerator = Accelerator(cpu=True)
    results = {}
    for micro in (0, 1, 2, 3, 5, 8):
        cfg = RLConfig(tasks="", model="", out="", update_micro_batch=micro, kl_coef=0.1)
        group = rl._behaviour(cfg, tokenizer, prompt_ids, completions, model, model, torch.device("cpu"))
        generator.manual_seed(0)
        group["adv"] = torch.randn(group["mask"].shape, generator=generator) * group["mask"]
        slices = rl._slices(group, cfg)
        rows = [len(part["ids"]) for part, _ in slices]
        assert rows == {0: [5], 1: [1] * 5, 2: [2, 2, 1], 3: [3, 2], 5: [5], 8: [5]}[micro]
        assert sum(share for _, share in slices) == pytest.approx(1.0)
        for part, _ in slices:  # cut after the slice's longest rollout, not the group's
            assert part["ids"].shape[1] == int(part["attention"].sum(dim=1).max())
            assert part["attention"][:, -1].any() and part["old"].shape[1] == part["ids"].shape[1] - 1
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # the gradient stays to be read
        loss = rl._minibatch_step(cfg, accelerator, model, optimizer, [group], 1.0)
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results[micro] = (group["old"] * group["mask"], float(loss), grads)
    old, loss, grads = results[0]
    assert grads.abs().sum() > 0
    for micro, (other_old, other_loss, other_grads) in results.items():
        assert torch.allclose(other_old, old, atol=1e-5), micro
        assert other_loss == pytest.approx(loss, rel=1e-5, abs=1e-7), micro
        assert torch.allclose(other_grads, grads, rtol=1e-4, atol=1e-7), micro


def test_overlapped_steps_sample_the_next_step_before_this_update_and_take_its_ratio_against_the_sampler(
    tmp_path, monkeypatch
):
    """overlap_steps: step k+1's rollouts are generated (by the policy before update k) while step
    k's are judged, and its clipped ratio is taken against that policy's log-probs, not the updated one's."""
    import copy
    import threading

    import torch

    from tritium.integrations import RewardClient
    from tritium.train import grpo, models

    task = (EXAMPLE_TASKS / "level1" / "01_relu.py").read_text()
    suite = tmp_path / "tasks.jsonl"
    suite.write_text(json.dumps({"id": "level1/01_relu", "source": task}) + "\n")
    model, tokenizer = models.load("tiny", corpus=[tritium.kernel_prompt(task)])
    model.save_pretrained(tmp_path / "start")
    tokenizer.save_pretrained(tmp_path / "start")
    events, samplers, scored_in = [], {}, []
    generate, update = rl._generate, rl._update

    def generating(cfg, sampler, tokenizer, tasks, first, step, clock):
        events.append(f"generate {step}")
        samplers[step] = copy.deepcopy(sampler).eval()  # the policy as it samples this step
        return generate(cfg, sampler, tokenizer, tasks, first, step, clock)

    def updating(cfg, accelerator, model, optimizer, groups, total_groups):
        step = sum(e.startswith("update") for e in events) + 1
        events.append(f"update {step}")
        for g in groups:  # the ratio's denominator: the sampling policy's log-probs
            with torch.no_grad():
                sampled = grpo.token_logprobs(samplers[step], g["ids"], g["attention"])
            assert torch.allclose(g["old"], sampled, atol=1e-5)
        return update(cfg, accelerator, model, optimizer, groups, total_groups)

    monkeypatch.setattr(rl, "_generate", generating)
    monkeypatch.setattr(rl, "_update", updating)
    cfg = dict(tasks=str(suite), model=str(tmp_path / "start"), steps=3, prompts_per_step=1, group_size=2)
    cfg.update(max_new_tokens=12, lr=1e-2, engine_device="cpu", tensorboard=False)
    score = RewardClient.score  # the client train_rl makes: which thread judges each batch
    monkeypatch.setattr(
        RewardClient,
        "score",
        lambda self, items: scored_in.append(threading.current_thread().name) or score(self, items),
    )
    result = train_rl(RLConfig(out=str(tmp_path / "rl"), overlap_steps=True, **cfg), log=lambda _: None)
    assert events == ["generate 1", "generate 2", "update 1", "generate 3", "update 2", "update 3"]
    assert all(name.startswith("rl-score") for name in scored_in) and len(scored_in) == 3
    assert [r["step"] for r in result["history"]] == [1, 2, 3]
    assert all("score_wait" in r["seconds"] for r in result["history"])
    # the policy moved between the samplers of steps 2 and 3: the ratio's denominators differ
    moved = [not torch.equal(a, b) for a, b in zip(samplers[2].parameters(), samplers[3].parameters())]
    assert any(moved)
    with pytest.raises(ValueError, match="needs overlap_scoring"):
        train_rl(RLConfig(out=str(tmp_path / "no"), overlap_steps=True, overlap_scoring=False, **cfg))


def test_compiled_rollouts_are_padded_to_the_tasks_widest_prompt(tmp_path, monkeypatch):
    """With the compiled generator every step's generate call has the shape of the tasks' widest
    prompt (one compile a run), unless prompt_width says more."""
    from tritium.train import models
    from tritium.train.rollout import prompt_ids

    sources = [(EXAMPLE_TASKS / "level1" / f"{n}.py").read_text() for n in ("01_relu", "09_matmul")]
    suite = tmp_path / "tasks.jsonl"
    suite.write_text("".join(json.dumps({"id": f"t{i}", "source": s}) + "\n" for i, s in enumerate(sources)))
    model, tokenizer = models.load("tiny", corpus=[tritium.kernel_prompt(s) for s in sources])
    model.save_pretrained(tmp_path / "start")
    tokenizer.save_pretrained(tmp_path / "start")
    widths, generate = [], rl._generate
    monkeypatch.setattr(rl, "_generate", lambda cfg, *a: widths.append(cfg.prompt_width) or generate(cfg, *a))
    cfg = dict(tasks=str(suite), model=str(tmp_path / "start"), prompts_per_step=1, group_size=2, max_new_tokens=4)
    cfg.update(engine_device="cpu", tensorboard=False, generator="compiled")
    train_rl(RLConfig(out=str(tmp_path / "a"), steps=2, **cfg), log=lambda _: None)
    widest = max(len(prompt_ids(tokenizer, tritium.kernel_prompt(s))) for s in sources)
    assert widths == [widest, widest]
    train_rl(RLConfig(out=str(tmp_path / "b"), steps=1, prompt_width=4096, **cfg), log=lambda _: None)
    assert widths[-1] == 4096


def _tiny_start(tmp_path):
    """A tiny model saved as a checkpoint: RL's starting point."""
    from tritium.train import models
    from tritium.train.rl import save_checkpoint

    corpus = [(EXAMPLE_TASKS / "level1" / name).read_text() for name in ("01_relu.py", "02_leaky_relu.py")]
    tiny = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2}
    model, tokenizer = models.load("tiny", corpus=corpus, tiny={**tiny, "intermediate_size": 64})
    save_checkpoint(model, tokenizer, tmp_path / "start")
    suite = tmp_path / "tasks.jsonl"
    suite.write_text(
        "".join(
            json.dumps({"id": f"level1/{n}", "source": c}) + "\n" for n, c in zip(("01_relu", "02_leaky_relu"), corpus)
        )
    )
    return str(tmp_path / "start"), str(suite)


@pytest.mark.parametrize("overlap_steps", [False, True])
def test_a_run_stopped_after_a_checkpoint_resumes_as_the_uninterrupted_run_goes_on(tmp_path, overlap_steps):
    start, suite = _tiny_start(tmp_path)

    class Killed(Exception):
        pass

    def run(out, steps, kill_at=0):
        config = RLConfig(
            tasks=suite, model=start, out=str(tmp_path / out), steps=steps, prompts_per_step=2, group_size=2,
            rollout_batch=2, max_new_tokens=8, lr=1e-3, save_every=1, overlap_steps=overlap_steps,
            engine_device="cpu", engine_jobs=1, tensorboard=False, seed=3,
            # every sample pushed down by its own reward: a gradient at each step, whatever the statuses
            reward=json.dumps({"advantage": "none", "penalties": {"invalid_syntax": -1.0}}),
        )  # fmt: skip
        logs = []

        def log(line):  # killed after logging step `kill_at`, before its checkpoint (and, overlapped,
            logs.append(line)  # after the next step's rollouts were drawn)
            if line.startswith(f"rl: step {kill_at}/"):
                raise Killed

        return train_rl(config, log=log), logs

    whole, _ = run("whole", 4)
    with pytest.raises(Killed):
        run("cut", 4, kill_at=3)
    (tmp_path / "cut" / "partial-checkpoint-3").mkdir()  # a save the kill interrupted
    resumed, logs = run("cut", 4)
    assert logs[0] == f"rl: resuming from {tmp_path / 'cut' / 'checkpoint-2'} at step 2"
    assert [r["step"] for r in resumed["history"]] == [1, 2, 3, 4]
    samples = {
        out: [json.loads(line) for line in (tmp_path / out / "rollouts.jsonl").read_text().splitlines()]
        for out in ("whole", "cut")
    }
    # Every step drew the same tasks; the optimizer's state came back with the weights.
    assert [(s["step"], s["task"]) for s in samples["cut"]] == [(s["step"], s["task"]) for s in samples["whole"]]
    assert not (tmp_path / "cut" / "partial-checkpoint-3").exists()
    states = sorted(p.parent.name for p in (tmp_path / "cut").glob("checkpoint-*/trainer_state.pt"))
    assert states == ["checkpoint-4"]  # the optimizer's state is kept in the newest checkpoint only
    if not overlap_steps:  # overlapped, the first resumed step samples from the newest policy instead
        assert [s["text"] for s in samples["cut"]] == [s["text"] for s in samples["whole"]]
        for mine, theirs in zip(resumed["history"], whole["history"]):
            assert mine["statuses"] == theirs["statuses"] and mine["loss"] == pytest.approx(theirs["loss"], abs=1e-6)
            assert mine["loss"] != 0
        from tritium.train import models

        a, b = (models.load(str(tmp_path / out / "checkpoint-4"))[0] for out in ("whole", "cut"))
        assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(a.parameters(), b.parameters()))
    again, logs = run("cut", 3)  # past its steps already: nothing to do
    assert again["checkpoint"].endswith("checkpoint-4") and len(again["history"]) == 4 and "past steps 3" in logs[0]


@pytest.mark.parametrize("overlap_steps", [False, True])
def test_a_time_limit_ends_the_stage_after_a_whole_step_with_its_checkpoint_and_a_later_run_resumes(
    tmp_path, overlap_steps
):
    start, suite = _tiny_start(tmp_path)

    def run(time_limit_s):
        config = RLConfig(
            tasks=suite, model=start, out=str(tmp_path / "run"), steps=3, prompts_per_step=2, group_size=2,
            rollout_batch=2, max_new_tokens=8, lr=1e-3, overlap_steps=overlap_steps, engine_device="cpu",
            engine_jobs=1, tensorboard=False, seed=3, time_limit_s=time_limit_s,
        )  # fmt: skip
        logs = []
        return train_rl(config, log=logs.append), logs

    cut, logs = run(1e-3)  # no step fits: the first runs (nothing to judge a step's length by), and with
    stop = 2 if overlap_steps else 1  # overlap_steps the second too, its rollouts drawn during the first
    assert cut["steps"] == stop and cut["stopped_by_time_limit"] and len(cut["history"]) == stop
    assert any(line.startswith(f"rl: stopping after step {stop} of 3: another, as long as this one") for line in logs)
    # saved though save_every is 0 (only at the end): the step the limit ended on is a checkpoint to resume from
    assert cut["checkpoint"] == str(tmp_path / "run" / f"checkpoint-{stop}")
    assert (tmp_path / "run" / f"checkpoint-{stop}" / "trainer_state.pt").exists()
    steps = {json.loads(line)["step"] for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()}
    assert steps == set(range(1, stop + 1))  # no step's rollouts drawn that the limit left no time to judge
    whole, logs = run(0.0)
    assert logs[0] == f"rl: resuming from {tmp_path / 'run' / f'checkpoint-{stop}'} at step {stop}"
    assert whole["steps"] == 3 and not whole["stopped_by_time_limit"] and len(whole["history"]) == 3


def test_a_run_resumes_only_what_started_from_the_same_model(tmp_path):
    start, suite = _tiny_start(tmp_path)
    other = tmp_path / "other"
    shutil.copytree(start, other)  # the same weights elsewhere: a rerun SFT's new checkpoint

    def run(model, steps):
        config = RLConfig(
            tasks=suite, model=model, out=str(tmp_path / "rl"), steps=steps, prompts_per_step=1, group_size=2,
            max_new_tokens=4, save_every=1, engine_device="cpu", engine_jobs=1, tensorboard=False,
        )  # fmt: skip
        logs = []
        return train_rl(config, log=logs.append), logs

    run(start, 1)
    result, logs = run(str(other), 2)
    assert "started from another model" in logs[0] and logs[0].endswith("starting over")
    assert [r["step"] for r in result["history"]] == [1, 2]
    result, logs = run(str(other), 3)  # now its own run: resumed
    assert logs[0].startswith("rl: resuming from") and [r["step"] for r in result["history"]] == [1, 2, 3]
