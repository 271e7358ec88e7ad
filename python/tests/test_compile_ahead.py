"""A candidate's kernels compiled before its job is admitted (tritium/runner/compile_ahead.py). The
compile itself needs a GPU (test_engine_gpu.py runs it through the engine); here: which trials it
compiles for, the files it hands over and their bounds, and that only the same job's evaluating
worker starts with them."""

import base64
import os

from tritium.runner import __main__ as runner_main
from tritium.runner import compile_ahead, sandbox, triton_driver


def test_one_meta_call_per_mode_and_input_shape():
    trials = [
        {"index": 0, "mode": "train", "distribution": "task"},
        {"index": 1, "mode": "eval", "distribution": "normal"},
        {"index": 2, "mode": "train", "distribution": "wide"},
        {"index": 3, "mode": "eval", "distribution": "task"},
        {"index": 4, "mode": "train", "distribution": "normal", "variant_spec": ["batch_size", 9]},
    ]
    layouts = compile_ahead._layouts(trials)
    assert [(s["index"], s["mode"], s["variant"]) for s in layouts] == [
        (0, "train", None),
        (1, "eval", None),
        (4, "train", ["batch_size", 9]),
    ]
    assert {s["distribution"] for s in layouts} == {"task"}  # no generator on the meta device


def test_a_meta_draw_allocates_nothing_and_has_the_tasks_shapes():
    import types

    import torch

    from tritium.runner import inputs

    task = types.SimpleNamespace(get_inputs=lambda: [torch.randn(4096, 393216), 3], batch_size=4096)
    values = inputs.trial_values(task, {"index": 0, "distribution": "task"}, 1, "meta")
    assert values[0].device.type == "meta" and list(values[0].shape) == [4096, 393216] and values[1] == 3


def test_the_answer_carries_only_the_files_the_compile_added(tmp_path):
    (tmp_path / "driver").mkdir()
    (tmp_path / "driver" / "cuda_utils.so").write_bytes(b"seeded")
    before = set(triton_driver.cache_paths(str(tmp_path)))
    (tmp_path / "k1").mkdir()
    (tmp_path / "k1" / "add_kernel.cubin").write_bytes(b"\x00cubin")
    files = compile_ahead.cache_files(str(tmp_path), before)
    assert files == {"k1/add_kernel.cubin": base64.b64encode(b"\x00cubin").decode()}
    assert compile_ahead.decoded(files) == {"k1/add_kernel.cubin": b"\x00cubin"}


def test_a_cache_too_large_to_hand_over_gives_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_ahead, "MAX_FILES", 3)
    for i in range(4):
        (tmp_path / f"f{i}").write_bytes(b"x")
    assert compile_ahead.cache_files(str(tmp_path), set()) == {}
    monkeypatch.setattr(compile_ahead, "MAX_BYTES", 10)
    (tmp_path / "big").write_bytes(b"y" * 11)
    assert compile_ahead.cache_files(str(tmp_path), {f"f{i}" for i in range(4)}) == {}


def test_the_runner_keeps_nothing_malformed_from_a_sandboxed_answer():
    good = base64.b64encode(b"ok").decode()
    assert compile_ahead.decoded(["a"]) == {}
    assert compile_ahead.decoded({"a": "not base64!"}) == {}
    assert compile_ahead.decoded({"a": 5}) == {}
    assert compile_ahead.decoded({3: good}) == {}
    assert compile_ahead.decoded({f"k/f{i}": good for i in range(compile_ahead.MAX_FILES + 1)}) == {}
    # only a cache entry's files, and never the driver module the runner seeds itself
    kept = {"k/a.cubin": good, "b.so": good, "k/../../x.so": good, "../k/c": good, "d/cuda_utils.so": good}
    assert compile_ahead.decoded(kept, protected={"d/cuda_utils.so": b"runner's"}) == {"k/a.cubin": b"ok"}


def test_only_the_same_jobs_evaluating_worker_starts_with_its_kernels(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "triton_seed", {})
    monkeypatch.setattr(sandbox, "job_seed", ("", {}))
    for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.chdir(tmp_path)
    job, other = str(tmp_path / "job"), str(tmp_path / "other")
    answer = {"ok": True, "files": {"k/add_kernel.cubin": base64.b64encode(b"cubin").decode()}}
    runner_main._keep_compiled({"op": "compile", "dir": job}, answer)
    assert answer["files"] == 1  # the engine hears how many, not the bytes

    sandbox._private_dir(other)  # another job's worker: nothing of this candidate's
    assert not (tmp_path / "other" / "scratch" / "triton" / "k").exists()
    sandbox._private_dir(job)
    assert (tmp_path / "job" / "scratch" / "triton" / "k" / "add_kernel.cubin").read_bytes() == b"cubin"

    runner_main._keep_compiled({"op": "evaluate", "dir": job}, {"ok": True})
    assert sandbox.job_seed == ("", {})  # the job is over: its kernels go no further

    monkeypatch.setattr(sandbox, "triton_seed", {"d/cuda_utils.so": b"runner's"})
    monkeypatch.setattr(sandbox, "job_seed", (job, {"d/cuda_utils.so": b"candidate's"}))
    sandbox._private_dir(job)  # were one to get through, the runner's driver module is written last
    assert (tmp_path / "job" / "scratch" / "triton" / "d" / "cuda_utils.so").read_bytes() == b"runner's"


# A reference's torch.compile done ahead of its timing, on fake tensors (reference.compile_reference).
# On the CPU Inductor writes C++ kernels, each built into a shared object: a timing's compile that
# finds every one of them built compiled nothing itself.
REFERENCE_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x, scale):
        return torch.relu(self.norm(x)) * scale


def get_inputs():
    return [torch.randn(8, 32), 3]


def get_init_inputs():
    return [32]
"""

AHEAD = """
import json, sys
from tritium.runner import reference
print(json.dumps(reference.compile_reference(
    {"source": open(sys.argv[1]).read(), "filename": sys.argv[1], "device": "cpu", "seed": 5})))
"""

# What time_reference's torch.compile does at its first call (reference._time_references).
TIMING_COMPILE = """
import sys, torch
from tritium.runner import inputs, reference
module, model, _ = reference._build({"source": open(sys.argv[1]).read(), "device": "cpu"}, sys.argv[1], 5)
with torch.no_grad():
    torch.compile(model.eval())(*inputs.fresh_source(module, 5, "fresh", "cpu")(-100))
"""


def _in_process(script: str, task, caches) -> str:
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(caches))
    done = subprocess.run(
        [sys.executable, "-c", script, str(task)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _built_kernels(caches) -> set:
    return {str(p.relative_to(caches)) for p in caches.rglob("*.so")}


def test_a_reference_compiled_on_fake_tensors_leaves_its_timing_nothing_to_build(tmp_path):
    import json

    task, caches = tmp_path / "task.py", tmp_path / "inductor"
    task.write_text(REFERENCE_TASK)
    answer = json.loads(_in_process(AHEAD, task, caches).strip().splitlines()[-1])
    assert answer["ok"] and answer["error"] is None and answer["phases_ms"]["compile"] > 0
    built = _built_kernels(caches)
    assert built, "the compile on fake tensors built no kernel"
    _in_process(TIMING_COMPILE, task, caches)
    assert _built_kernels(caches) == built


def test_a_reference_that_does_not_trace_on_fake_tensors_answers_why(tmp_path):
    import json

    task = tmp_path / "task.py"
    task.write_text(REFERENCE_TASK.replace("return torch.relu(self.norm(x)) * scale", "return x * float(x.sum() > 0)"))
    answer = json.loads(_in_process(AHEAD, task, tmp_path / "inductor").strip().splitlines()[-1])
    assert answer["ok"] and answer["error"]
