"""`tritium data sft`: verified SFT traces from synthesized reference solutions or from responses."""

import json

from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS, FIXTURES
from test_cli import run

import tritium

RELU = (EXAMPLE_SOLUTIONS / "level1" / "01_relu.py").read_text()


def test_sft_from_synthesized_solutions(tmp_path):
    tasks, sft = tmp_path / "tasks.jsonl", tmp_path / "sft.jsonl"
    run("synth", "--count", "8", "--difficulty", "1-2", "--seed", "3", "--with-solutions", "--out", str(tasks))
    with_solution = sum(json.loads(line)["meta"]["has_solution"] for line in tasks.read_text().splitlines())
    r = run("data", "sft", "--tasks", str(tasks), "--out", str(sft), "--device", "cpu", "--json")
    stats = json.loads(r.stdout)
    assert stats["kept"] == with_solution > 0 and stats["dropped"].get("no_solution", 0) == 8 - with_solution
    sources = {t["id"]: t["source"] for t in map(json.loads, tasks.read_text().splitlines())}
    for line in sft.read_text().splitlines():
        example = json.loads(line)
        assert example["prompt"] == tritium.kernel_prompt(sources[example["task_id"]])
        extracted = tritium.extract(example["response"])
        assert extracted["has_code"] and extracted["plan"] and tritium.verify(extracted["code"])["status"] == "valid"
        assert example["meta"]["difficulty"] in (1, 2)


def test_sft_from_responses_keeps_only_correct_ones(tmp_path):
    responses, sft = tmp_path / "responses.jsonl", tmp_path / "sft.jsonl"
    hack = (FIXTURES / "runtime" / "network_connect.py").read_text()
    wrong = (FIXTURES / "runtime" / "wrong_kernel.py").read_text()
    lines = [
        {"task_id": "level1/01_relu", "response": tritium.format_response("One pass.", RELU)},
        {"task_id": "level1/01_relu", "response": tritium.format_response("Sneaky.", hack)},
        {"task_id": "level1/01_relu", "response": tritium.format_response("Off by one.", wrong)},
        {"task_id": "no/such", "response": "x"},
    ]
    responses.write_text("\n".join(json.dumps(line) for line in lines) + "\n{broken\n")
    r = run(
        "data",
        "sft",
        "--tasks",
        EXAMPLE_TASKS,
        "--responses",
        str(responses),
        "--out",
        str(sft),
        "--device",
        "cpu",
        "--json",
    )
    stats = json.loads(r.stdout)
    assert stats["kept"] == 1 and stats["dropped"] == {"bad_line": 2, "hack": 1, "incorrect": 1}
    (example,) = [json.loads(line) for line in sft.read_text().splitlines()]
    assert example["task_id"] == "level1/01_relu" and "One pass." in example["response"]
    # Without the engine, the wrong kernel passes the static verifier.
    r = run(
        "data",
        "sft",
        "--tasks",
        EXAMPLE_TASKS,
        "--responses",
        str(responses),
        "--out",
        str(sft),
        "--no-evaluate",
        "--json",
    )
    assert json.loads(r.stdout)["kept"] == 2


def test_nothing_kept_is_a_failure(tmp_path):
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"task_id": "level1/01_relu", "response": "no code"}) + "\n")
    r = run(
        "data",
        "sft",
        "--tasks",
        EXAMPLE_TASKS,
        "--responses",
        str(responses),
        "--out",
        str(tmp_path / "o.jsonl"),
        "--no-evaluate",
    )
    assert r.returncode == 1 and "0 of 1" in r.stdout
