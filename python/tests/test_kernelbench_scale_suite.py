"""The KernelBench-size suite (examples/kernelbench_scale) checked at its reduced sizes on the CPU.

Each task's module-level size constants are rewritten to the small values of suite.json (the same
rewrite `engine_bench.py scale --small` uses), so the very kernels that run at KernelBench's sizes on
a GPU run here under Triton's interpreter. Three independent views:
- an in-process harness, written here: every honest solution matches its reference (perturbed
  parameters copied in, task/normal/signed/wide inputs, train and eval mode, a batch-size variant);
- a naive harness, as KernelBench's (same seed, no parameter copy, the task's own inputs, 5 checked
  calls then unchecked ones): every run-time cheat passes it, so only run-time checks catch it;
- the real engine, `tritium.Engine(device="cpu")` with its defaults, one batch: every honest
  solution `correct`, every cheat one of its expected statuses (never `correct`), with a finding of
  the rule suite.json names for it.
"""

import copy
import os
import pathlib
import sys
import types

import pytest
import torch
from conftest import ROOT

sys.path.insert(0, str(ROOT / "python" / "benchmarks"))
import engine_bench  # noqa: E402 - the suite's loader and size rewrite, shared with the benchmark

SCALE = ROOT / "examples" / "kernelbench_scale"
SUITE = engine_bench.scale_suite()
TASKS = sorted(SUITE["tasks"])
CHEATS = sorted(SUITE["cheats"])
RUNTIME_CHEATS = [c for c in CHEATS if not SUITE["cheats"][c]["static"]]
ATOL = RTOL = 1e-4  # the engine's default (kernelbench) profile for float32
CONDITION_MARGIN = 0.25  # a distribution counts only where float32 itself is this close to float64
NAIVE_CHECKED, NAIVE_UNCHECKED = 5, 12
# The in-process harnesses run interpreted on the CPU, or compiled on a GPU when TRITON_INTERPRET=0.
DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") == "0" and torch.cuda.is_available() else "cpu"


def _module(source: str, name: str, filename: str | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = filename or f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _small_task(name: str, **override) -> types.ModuleType:
    sizes = {**SUITE["tasks"][name]["small"], **override}
    return _module(engine_bench.resize((SCALE / "tasks" / f"{name}.py").read_text(), sizes), f"task_{name}")


def _candidate(path: pathlib.Path) -> types.ModuleType:
    return _module(path.read_text(), f"candidate_{path.stem}", str(path))


class _Launches:
    """Counts Triton launches (interpreted or compiled) while active."""

    def __enter__(self):
        import triton.runtime.interpreter as interpreter
        import triton.runtime.jit as jit

        self.count, self._patched = 0, []
        for cls in (interpreter.InterpretedFunction, jit.JITFunction):
            original = cls.run

            def run(fn_self, *args, _original=original, **kwargs):
                self.count += 1
                return _original(fn_self, *args, **kwargs)

            self._patched.append((cls, original))
            cls.run = run
        return self

    def __exit__(self, *_):
        for cls, original in self._patched:
            cls.run = original


def _to_device(values: list) -> list:
    return [v.to(DEVICE) if isinstance(v, torch.Tensor) else v for v in values]


def _redraw(x, distribution: str, generator: torch.Generator):
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or distribution == "task":
        return x
    if distribution == "normal":
        values = torch.randn(x.shape, generator=generator)
    elif distribution == "signed":
        values = torch.rand(x.shape, generator=generator) * 4 - 2
    else:  # wide: sign x 10^U[-2, 2)
        sign = torch.where(torch.rand(x.shape, generator=generator) < 0.5, -1.0, 1.0)
        values = sign * torch.pow(10.0, torch.rand(x.shape, generator=generator) * 4 - 2)
    return values.to(x.dtype)


def _perturb(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                scale = float(p.pow(2).mean().sqrt()) * 0.5 or 0.1
                p.add_(torch.randn(p.shape, generator=generator) * scale)


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _well_conditioned(expected: list, exact: list) -> bool:
    margin = ATOL * CONDITION_MARGIN
    return all(
        torch.allclose(e.double(), x.double(), atol=margin, rtol=margin)
        for e, x in zip(expected, exact)
        if e.is_floating_point()
    )


def _same(actual: list, expected: list) -> str | None:
    """Why `actual` does not match `expected`, or None."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if type(a) is not torch.Tensor or a.shape != e.shape or a.dtype != e.dtype:
            return (
                f"output {i}: {type(a).__name__} {getattr(a, 'shape', None)} {getattr(a, 'dtype', None)}, "
                f"expected {tuple(e.shape)} {e.dtype}"
            )
        if not torch.allclose(a, e, atol=ATOL, rtol=RTOL, equal_nan=True):
            return f"output {i}: max abs error {(a.double() - e.double()).abs().max().item():.3g}"
    return None


def test_the_suite_has_12_tasks_with_honest_solutions_and_6_runtime_cheats():
    tasks = sorted(p.stem for p in (SCALE / "tasks").glob("*.py"))
    assert tasks == TASKS, "suite.json lists exactly the tasks in tasks/"
    assert sorted(p.stem for p in (SCALE / "solutions").glob("*.py")) == tasks
    assert sorted(p.name for p in (SCALE / "cheats").glob("*.py")) == CHEATS
    assert len(TASKS) >= 12
    assert len([c for c in RUNTIME_CHEATS if not SUITE["cheats"][c]["gpu_only"]]) >= 6
    for cheat, meta in SUITE["cheats"].items():
        assert meta["task"] in TASKS and meta["expect"] and "correct" not in meta["expect"], cheat
        first_line = _candidate(SCALE / "cheats" / cheat).__doc__.splitlines()[0]
        assert "caught by" in first_line, f"{cheat}: the docstring's first line says which check catches it"


@pytest.mark.parametrize("name", TASKS)
def test_small_sizes_rewrite_only_the_size_constants(name):
    full = _module((SCALE / "tasks" / f"{name}.py").read_text(), "full")
    small = _small_task(name)
    for constant, value in SUITE["tasks"][name]["small"].items():
        assert getattr(small, constant) == value
        assert getattr(full, constant) > value, f"{constant}: the published size is the larger"
    torch.manual_seed(0)
    shapes = [tuple(x.shape) for x in small.get_inputs() if isinstance(x, torch.Tensor)]
    assert max(torch.Size(s).numel() for s in shapes) < 200_000, "small enough for the interpreter"


def _batch_variant(name: str) -> dict:
    """The engine's shape variant: the first of its batch-size names, halved plus one."""
    small = SUITE["tasks"][name]["small"]
    for constant in ("batch_size", "batch", "N", "B"):
        if constant in small:
            return {constant: small[constant] // 2 + 1}
    return {}


@pytest.mark.parametrize("name", TASKS)
def test_honest_solution_matches_its_reference_at_small_size(name):
    variant = _batch_variant(name)
    solution = _candidate(SCALE / "solutions" / f"{name}.py")
    checked = 0
    for sizes in ({}, variant) if variant else ({},):
        task = _small_task(name, **sizes)
        init = task.get_init_inputs()
        torch.manual_seed(0)
        model = task.Model(*init)
        _perturb(model, seed=1)
        torch.manual_seed(0)
        model_new = solution.ModelNew(*init).to(DEVICE)
        theirs, ours = list(model.parameters()), list(model_new.parameters())
        assert [p.shape for p in ours] == [p.shape for p in theirs], "parameters match by order and shape"
        with torch.no_grad():
            for p, q in zip(ours, theirs):
                p.copy_(q)
        model64 = copy.deepcopy(model).double().to(DEVICE)
        model = model.to(DEVICE)
        for trial, distribution in enumerate(("task", "normal", "signed", "wide")):
            for mode in ("train", "eval"):
                for m in (model, model64, model_new):
                    getattr(m, mode)()
                torch.manual_seed(100 + trial)
                generator = torch.Generator().manual_seed(200 + trial)
                inputs = _to_device([_redraw(x, distribution, generator) for x in task.get_inputs()])
                kept = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                with torch.no_grad():
                    expected = _outputs(model(*inputs))
                    exact = _outputs(
                        model64(
                            *[
                                x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                for x in inputs
                            ]
                        )
                    )
                    if distribution != "task" and not _well_conditioned(expected, exact):
                        continue  # float32 itself misses the tolerance here: the engine drops such inputs too
                    with _Launches() as launches:
                        actual = _outputs(model_new(*inputs))
                assert launches.count, f"{name}: forward launched no Triton kernel"
                problem = _same(actual, expected)
                assert problem is None, f"{name} {sizes or 'task sizes'} {distribution} {mode}: {problem}"
                assert all(torch.equal(x, k) for x, k in zip(inputs, kept) if isinstance(x, torch.Tensor))
                checked += 1
    assert checked >= 4, f"{name}: only {checked} trials were well-conditioned"


@pytest.mark.parametrize("cheat", RUNTIME_CHEATS)
def test_runtime_cheat_passes_a_naive_harness(cheat):
    """As naive_eval.py: Model and ModelNew built after the same seed (no parameter copy), the task's
    own inputs, 5 checked calls; then the unchecked calls a timing loop makes. All pass."""
    task = _small_task(SUITE["cheats"][cheat]["task"])
    candidate = _candidate(SCALE / "cheats" / cheat)
    init = task.get_init_inputs()
    torch.manual_seed(0)
    model = task.Model(*init).to(DEVICE)
    torch.manual_seed(0)
    model_new = candidate.ModelNew(*init).to(DEVICE)
    with torch.no_grad():
        for trial in range(NAIVE_CHECKED):
            torch.manual_seed(trial)
            inputs = _to_device(task.get_inputs())
            expected, actual = model(*inputs), model_new(*inputs)
            assert torch.allclose(expected, actual, atol=ATOL, rtol=RTOL), f"{cheat}: naive trial {trial} fails"
        for _ in range(NAIVE_UNCHECKED):
            model_new(*inputs)


def test_static_verdicts_leave_runtime_cheats_to_the_runtime_checks():
    import tritium

    for name in TASKS:
        task = (SCALE / "tasks" / f"{name}.py").read_text()
        verdict = tritium.verify((SCALE / "solutions" / f"{name}.py").read_text(), task)
        assert verdict["status"] == "valid", (name, verdict["findings"])
    for cheat, meta in SUITE["cheats"].items():
        task = (SCALE / "tasks" / f"{meta['task']}.py").read_text()
        verdict = tritium.verify((SCALE / "cheats" / cheat).read_text(), task)
        if meta["static"]:
            assert verdict["status"] in meta["expect"], (cheat, verdict["findings"])
        else:
            assert verdict["status"] == "valid", (cheat, verdict["findings"])


@pytest.fixture(scope="module")
def engine_verdicts():
    import tritium

    batch = engine_bench.scale_batch(small=True)
    engine = tritium.Engine(device="cpu")
    verdicts = engine.evaluate([{"id": e["id"], "task": e["task"], "code": e["code"]} for e in batch])
    return list(zip(batch, verdicts))


def test_the_engine_passes_every_honest_solution_at_small_size(engine_verdicts):
    wrong = [
        (e["id"], v["status"], v.get("message"))
        for e, v in engine_verdicts
        if e["kind"] == "honest" and v["status"] != "correct"
    ]
    assert not wrong


def test_the_engine_catches_every_cheat_at_small_size_by_its_check(engine_verdicts):
    missed = []
    for entry, verdict in engine_verdicts:
        if entry["kind"] != "cheat":
            continue
        rule = SUITE["cheats"][entry["id"].removeprefix("cheats/")]["rule"]
        rules = {f.get("rule") for f in verdict.get("findings") or []}
        if verdict["status"] == "correct" or verdict["status"] not in entry["expect"] or rule not in rules:
            missed.append(
                (entry["id"], verdict["status"], entry["expect"], rule, sorted(map(str, rules)), verdict.get("message"))
            )
    assert not missed
    assert sum(e["kind"] == "cheat" and not e["gpu_only"] for e, _ in engine_verdicts) >= 6
