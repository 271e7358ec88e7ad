"""Data-parallel training on the CPU: two processes (torchrun, gloo) take the same steps as one.
The same code runs on GPUs under `accelerate launch` (docs/training.md)."""

import json
import subprocess
import sys

import pytest
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS

import tritium


def launch(processes: int, module: str, *args: str) -> None:
    command = (
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={processes}",
            "-m",
            module,
            *args,
        ]
        if processes > 1
        else [sys.executable, "-m", module, *args]
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def sft_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "sft.jsonl"
    rows = []
    for solution in sorted(EXAMPLE_SOLUTIONS.rglob("*.py"))[:4]:
        task = (EXAMPLE_TASKS / solution.relative_to(EXAMPLE_SOLUTIONS)).read_text()
        rows.append(
            {
                "prompt": tritium.kernel_prompt(task),
                "response": tritium.format_response("One program per block.", solution.read_text()),
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def sft(out, data, processes: int, steps: int = 3) -> dict:
    launch(
        processes,
        "tritium.train.sft",
        "--data",
        str(data),
        "--out",
        str(out),
        "--steps",
        str(steps),
        "--batch-size",
        "4",
        "--grad-accum",
        "2",
        "--lr",
        "3e-3",
        "--max-len",
        "1024",
        "--log-every",
        "0",
        "--tensorboard",
        "false",
        "--device",
        "cpu",
    )
    return json.loads((out / "sft_result.json").read_text())


def test_two_processes_take_the_same_sft_steps_as_one(tmp_path, sft_data):
    one, two = sft(tmp_path / "one", sft_data, 1), sft(tmp_path / "two", sft_data, 2)
    assert one["processes"] == 1 and two["processes"] == 2
    assert one["losses"][0] > one["losses"][-1]  # it learns
    assert two["losses"] == pytest.approx(one["losses"], rel=1e-5)


def test_sft_refuses_a_batch_that_does_not_split_over_the_processes(tmp_path, sft_data):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "tritium.train.sft",
        "--data",
        str(sft_data),
        "--out",
        str(tmp_path),
        "--steps",
        "1",
        "--batch-size",
        "3",
        "--device",
        "cpu",
        "--tensorboard",
        "false",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "does not split over 2 processes" in done.stderr


def test_two_processes_take_the_same_rl_steps_as_one(tmp_path, sft_data):
    sft(tmp_path / "sft", sft_data, 1, steps=6)
    suite = tmp_path / "tasks.jsonl"
    suite.write_text(
        "".join(
            json.dumps({"id": f"level1/{n}", "source": (EXAMPLE_TASKS / "level1" / f"{n}.py").read_text()}) + "\n"
            for n in ("01_relu", "07_softmax")
        )
    )
    histories = []
    for processes in (1, 2):
        out = tmp_path / f"rl{processes}"
        launch(
            processes,
            "tritium.train.rl",
            "--tasks",
            str(suite),
            "--model",
            str(tmp_path / "sft" / "checkpoint-6"),
            "--out",
            str(out),
            "--steps",
            "2",
            "--prompts-per-step",
            "2",
            "--group-size",
            "2",
            "--max-new-tokens",
            "12",
            "--temperature",
            "1.0",
            "--lr",
            "1e-4",
            "--device",
            "cpu",
            "--engine-device",
            "cpu",
            "--tensorboard",
            "false",
        )
        histories.append(json.loads((out / "rl_history.json").read_text()))
    one, two = histories
    for a, b in zip(one, two):
        assert a["statuses"] == b["statuses"] and a["levels"] == b["levels"]
        assert b["completion_tokens_mean"] == a["completion_tokens_mean"]  # the same rollouts
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4, abs=1e-6)
        assert b["entropy_estimate"] == pytest.approx(a["entropy_estimate"], rel=1e-4)
