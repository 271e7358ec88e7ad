"""The tracer (tritium.runner.trace): example tasks as catalog DAGs, and fragment search end to end."""

import json

import pytest
import torch
from conftest import EXAMPLE_TASKS, FIXTURES
from test_cli import run

from tritium.runner.tasks import load_module
from tritium.runner.trace import trace_source, trace_task

LEVEL2 = EXAMPLE_TASKS / "level2"

# What each example maps onto: catalog ops in order, or the nodes left unmapped.
EXPECTED = {
    "01_linear_gelu": ["linear", "gelu"],
    "02_conv2d_relu_bias_add": None,
    "03_linear_relu_sum": ["linear", "relu", "sum"],
    "04_scaled_softmax": ["mul_scalar", "softmax"],
    "05_layernorm_residual_relu": ["layer_norm", "add", "relu"],
    "06_rmsnorm": ["mul", "mean", "add_scalar", "rsqrt", "mul", "mul"],
    "07_swish_channel_bias": ["sigmoid", "mul", "add"],
    "08_bmm_scale": ["bmm", "mul_scalar"],
}


def trace(name: str) -> dict:
    path = LEVEL2 / f"{name}.py"
    return trace_source(path.read_text(), str(path))


def test_every_level2_example_is_covered():
    assert sorted(p.stem for p in LEVEL2.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_level2_examples_map_onto_the_catalog(name):
    dag = trace(name)
    expected = EXPECTED[name]
    if expected is None:
        assert dag["unmapped"] and dag["unmapped"][0]["target"] == "Conv2d"
        assert "no Triton form" in dag["unmapped"][0]["why"]
        return
    assert dag["unmapped"] == []
    assert [n["op"] for n in dag["nodes"]] == expected


@pytest.mark.parametrize("name", [n for n, ops in EXPECTED.items() if ops])
def test_shapes_are_the_models_own(name):
    path = LEVEL2 / f"{name}.py"
    module = load_module(path.read_text(), str(path))
    torch.manual_seed(0)
    inputs = module.get_inputs()
    out = module.Model(*module.get_init_inputs())(*inputs)
    dag = trace(name)
    assert dag["inputs"] == [list(x.shape) for x in inputs]
    assert [dag["nodes"][k]["shape"] for k in dag["outputs"]] == [list(out.shape)]
    assert dag["params"] == [list(p.shape) for p in module.Model(*module.get_init_inputs()).parameters()]


def test_attributes_are_solved():
    nodes = trace("06_rmsnorm")["nodes"]
    assert nodes[1]["attrs"] == {"dim": 2, "keepdim": True}  # dim=-1 of a rank-3 tensor
    assert nodes[2]["attrs"] == {"scalar": 1e-6}
    assert nodes[0]["operands"] == [{"input": 0}, {"input": 0}]
    assert nodes[5]["operands"] == [{"node": 4}, {"param": 0}]
    assert trace("04_scaled_softmax")["nodes"][1]["attrs"] == {"dim": 3}
    assert trace("01_linear_gelu")["nodes"][0]["attrs"] == {"vars": {"k": 120, "n": 80}}
    assert trace("01_linear_gelu")["init_args"] == ["in_features", "out_features"]


def test_parameters_keep_the_models_creation_order():
    path = FIXTURES / "traces" / "init_order.py"
    dag = trace_source(path.read_text(), str(path))
    # Model.parameters(): shift (Model's own come first), norm's two, linear's two
    assert dag["param_tensors"] == [{"shape": [48], "init": 0}]
    assert [(n["op"], n.get("init")) for n in dag["nodes"]] == [
        ("linear", 3),
        ("add", None),
        ("layer_norm", 1),
        ("tanh", None),
    ]
    assert dag == json.loads((FIXTURES / "traces" / "init_order.json").read_text())  # the C++ tests' fixture


def test_kernels_of_a_task_with_modules_out_of_order_are_correct(tmp_path):
    r = run(
        "search",
        "--task",
        FIXTURES / "traces" / "init_order.py",
        "--generator",
        "emitter",
        "--out",
        tmp_path,
        "--device",
        "cpu",
        "--json",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    statuses = [t["status"] for t in json.loads(r.stdout)["tried"] if t["stage"] == "fragments"]
    assert len(statuses) >= 2 and set(statuses) == {"correct"}


def test_a_task_that_does_not_load_is_a_failure_not_a_dag():
    answer = trace_task({"source": "class Model(:\n", "filename": "broken.py"})
    assert answer["ok"] is False and answer["stage"] == "load"


def test_fragment_search_on_an_example_task(tmp_path):
    out = tmp_path / "search"
    r = run(
        "search",
        "--task",
        LEVEL2 / "01_linear_gelu.py",
        "--generator",
        "emitter",
        "--out",
        out,
        "--device",
        "cpu",
        "--json",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    fragments = [t for t in result["tried"] if t["stage"] == "fragments"]
    # linear -> gelu: the default fusion (gelu in the matmul's epilogue) and the split (two kernels)
    assert [t["note"] for t in fragments] == ["the emitter's default fusion", "fragments 1+1"]
    assert all(t["status"] == "correct" for t in fragments)
    assert result["first"] == fragments[0]["index"] and result["best"] is not None
    best = (out / "best.py").read_text()
    assert "class ModelNew" in best and "@triton.jit" in best
    lines = [json.loads(line) for line in (out / "search.jsonl").read_text().splitlines()]
    assert sum(line.get("stage") == "fragments" and "verdict" in line for line in lines) == 2
    assert not [line for line in lines if "error" in line]  # no best-of-N: the emitter has no solution to give


def test_synthesized_tasks_trace_to_their_own_operators(tmp_path):
    suite = tmp_path / "synth.jsonl"
    r = run(
        "synth",
        "--count",
        80,
        "--difficulty",
        "1-5",
        "--seed",
        4,
        "--with-solutions",
        "--ops",
        "unary,binary,scalar,select,reduction,softmax,norm,linalg,shape",
        "--out",
        suite,
    )
    assert r.returncode == 0, r.stderr
    traced, untraceable, solvable = 0, [], 0
    for row in map(json.loads, suite.read_text().splitlines()):
        dag = trace_source(row["source"], row["id"])
        if not row["meta"]["has_solution"]:  # group or batch norm: no Triton form, so unmapped
            assert dag["unmapped"], row["id"]
            continue
        solvable += 1
        if dag["unmapped"]:
            untraceable.append(dag["unmapped"][0]["why"])
            continue
        traced += 1
        assert [n["op"] for n in dag["nodes"]] == row["meta"]["ops"], row["id"]
    # reshape(*x.shape[:-1], a, b) unpacks a proxy, which torch.fx cannot trace
    assert all("Proxy object cannot be iterated" in why for why in untraceable), untraceable
    assert traced >= 0.9 * solvable
