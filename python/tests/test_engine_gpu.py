"""The engine on a real GPU (scripts/gpu-check.sh runs these on the H200; skipped without CUDA)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS, FIXTURES, ROOT

import tritium

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

RUNTIME = FIXTURES / "runtime"
EXPECTED = json.loads((RUNTIME / "expected.json").read_text())
BIG_RELU = RUNTIME / "tasks" / "big_relu.py"


def item(name, task=None, **extra):
    task = task or ROOT / EXPECTED[name]["task"]
    return {"id": name, "task": task.read_text(), "code": (RUNTIME / name).read_text(), **extra}


@pytest.fixture(scope="module")
def engine():
    return tritium.Engine(device="cuda", static_check=False, timeout_s=60, memory_gb=4)


def test_example_solutions_are_correct_and_timed(engine):
    batch = [
        {
            "id": str(s.relative_to(EXAMPLE_SOLUTIONS)),
            "task": (EXAMPLE_TASKS / s.relative_to(EXAMPLE_SOLUTIONS)).read_text(),
            "code": s.read_text(),
        }
        for s in sorted(EXAMPLE_SOLUTIONS.rglob("*.py"))
    ]
    verdicts = engine.evaluate(batch)
    for v in verdicts:
        assert v["status"] == "correct", (v["candidate_id"], v["message"])
        assert v["runtime_ms"] > 0 and v["ref_eager_ms"] > 0 and v["speedup_eager"] > 0
        assert v["runtime_stats"]["n"] >= 20 and 0 < v["coverage"] <= 1
        assert "triton_driver" in v["phases_ms"]  # made before the share (runner/triton_driver.py)
        for side in ("", "reference.", "reference_timing."):  # each ended its context under a share
            assert v["phases_ms"][side + "teardown"] >= 0, (side, v["phases_ms"])
            assert not {side + "teardown_unshared", side + "teardown_cuda_error"} & set(v["phases_ms"])
        assert v["device"] == "cuda"
        assert v["sandbox"]["root"] == "private" and v["sandbox"]["seccomp"] == "on", v["sandbox"]


def test_lazy_reference_timing_times_only_tasks_with_a_correct_candidate():
    """RL's engines time a task's references only once a candidate of it is correct; by default
    every task's are timed beside the checks. Either way the correct candidate gets its speedups."""
    relu, leaky = EXAMPLE_TASKS / "level1" / "01_relu.py", EXAMPLE_TASKS / "level1" / "02_leaky_relu.py"
    batch = [
        item("honest_relu.py"),
        {"id": "wrong", "task": leaky.read_text(), "code": (RUNTIME / "wrong_kernel.py").read_text()},
    ]
    assert relu.exists() and leaky.exists()
    for lazy, timed in ((True, 1), (False, 2)):
        engine = tritium.Engine(device="cuda", static_check=False, timeout_s=60, lazy_reference_timing=lazy)
        honest, wrong = engine.evaluate(batch)
        assert honest["status"] == "correct" and honest["speedup_eager"] > 0, honest["message"]
        assert wrong["status"] != "correct" and wrong["speedup_eager"] is None
        assert engine.info()["reference_timings"] == timed and engine.info()["lazy_reference_timing"] is lazy
        del engine


def test_an_engine_run_as_an_ordinary_user_judges_on_the_gpu():
    """As root the sandbox switches uid; an ordinary user's goes through a user namespace, which
    failed on the H200 (2026-12-01: every worker's unshare got EINVAL; the message now says how many
    threads the worker had)."""
    if os.geteuid() != 0:
        pytest.skip("as_user.py needs root to switch to an ordinary user")
    from test_sandbox_escape import evaluate_as_user

    (verdict,) = evaluate_as_user([item("honest_relu.py")], device="cuda")
    assert verdict["status"] == "correct", verdict["message"]
    assert verdict["sandbox"]["user"] == "user namespace, no capabilities", verdict["sandbox"]


def test_runtime_fixtures_get_their_statuses_on_the_gpu(engine):
    names = [n for n in EXPECTED if n not in ("fork_bomb.py", "memory_bomb.py", "stdout_flood.py", "infinite_loop.py")]
    for v in engine.evaluate([item(n) for n in names]):
        assert v["status"] in EXPECTED[v["candidate_id"]]["status"], (v["candidate_id"], v["message"])


@pytest.mark.parametrize("queues", [None, "8"])
def test_a_side_stream_kernel_is_not_timed_faster_than_the_honest_one(queues, monkeypatch):
    """With the runners' one work queue a context (the default) as with the driver's 8 (the caller's
    CUDA_DEVICE_MAX_CONNECTIONS), the current stream's events do not wait for a side stream's
    kernel (measured on an H100), and the timer falls back to the device's time. The honest kernel is timed
    before and after: interference can only slow a timing down, so the faster of the two is the honest kernel's
    time. The second is judged again (`rerun`), not a copy."""
    if queues:
        monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues)
    engine = tritium.Engine(device="cuda", static_check=False, timeout_s=60, memory_gb=4)
    honest, side, again = engine.evaluate(
        [
            item("honest_relu.py", BIG_RELU),
            item("side_stream.py", BIG_RELU),
            item("honest_relu.py", BIG_RELU, id="honest_relu.py#2", rerun=True),
        ]
    )
    assert honest["status"] == side["status"] == again["status"] == "correct"
    fastest = min(honest, again, key=lambda v: v["runtime_ms"])
    keys = ("median_ms", "timed_to", "round_trip_ms", "hidden_ms")
    seen = [{k: v["runtime_stats"].get(k) for k in keys} for v in (side, honest, again)]
    assert side["runtime_ms"] >= 0.9 * fastest["runtime_ms"], seen
    assert fastest["runtime_stats"]["timed_to"] == "stream", seen
    assert side["runtime_stats"]["timed_to"] == "device", seen


def test_a_kernel_slowed_on_the_host_earns_its_slowdown_not_the_references_speed(engine):
    """A correct ReLU that sleeps 50 ms in every forward: the GPU waits for the host in every timed
    call, so its timing is below the floor. Counted as untimed (the rule until 2026-12-05), it
    earned f(1), the reference's speed; a measured slowdown now stands."""
    (verdict,) = engine.evaluate([item("sleep_kernel_cpu.py", BIG_RELU)])
    assert verdict["status"] == "correct" and verdict["below_timing_floor"], verdict["timing_note"]
    assert verdict["runtime_ms"] > 40 and verdict["speedup_eager"] < 0.05
    (scored,) = tritium.rewards([verdict])
    assert scored["reward"]["r_speedup"] == pytest.approx(verdict["speedup_eager"])


def test_a_background_thread_kernel_is_caught(engine):
    (verdict,) = engine.evaluate([item("background_thread.py", BIG_RELU)])
    assert verdict["status"] in ("invalid_functionality", "hack", "incorrect")


def test_bombs_are_contained_on_the_gpu_machine():
    engine = tritium.Engine(device="cuda", static_check=False, timeout_s=15, memory_gb=2, jobs=4)
    names = ["fork_bomb.py", "memory_bomb.py", "stdout_flood.py", "infinite_loop.py", "honest_relu.py"]
    verdicts = {v["candidate_id"]: v for v in engine.evaluate([item(n) for n in names])}
    for name in names[:-1]:
        assert verdicts[name]["status"] in EXPECTED[name]["status"] + ["timeout"], verdicts[name]["message"]
    assert verdicts["honest_relu.py"]["status"] == "correct"


@pytest.fixture
def lock_dir(monkeypatch):
    # Under /tmp, not pytest's tmp_path: the sandbox's uids must reach the locks, and pytest's
    # directories are closed to others.
    path = Path(tempfile.mkdtemp(prefix="tritium-test-locks-", dir="/tmp"))
    path.chmod(0o1777)
    monkeypatch.setenv("TRITIUM_LOCK_DIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_timer_waits_for_another_process_on_the_gpu(lock_dir):
    # Engines of other processes share the machine-wide lock: while another process holds a share
    # of the GPU (as another engine's candidate does while it runs), this engine's timer waits.
    engine = tritium.Engine(device="cuda", static_check=False, timeout_s=60, memory_gb=4)
    (warm,) = engine.evaluate([item("honest_relu.py", BIG_RELU)])  # reference made and timed, kernel compiled
    assert warm["status"] == "correct", warm["message"]
    locks = sorted(lock_dir.glob("gpu-*.lock"))  # one per visible GPU
    assert len(locks) == torch.cuda.device_count() and not any("index" in lock.name for lock in locks)  # UUIDs
    hold = (
        "import fcntl, sys, time; held = [open(p) for p in sys.argv[1:]]; "
        "[fcntl.flock(f, fcntl.LOCK_SH) for f in held]; print(1, flush=True); time.sleep(20)"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, *map(str, locks)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        (verdict,) = engine.evaluate([item("honest_relu.py", BIG_RELU, id="again")])
    finally:
        holder.kill()
    assert verdict["status"] == "correct", verdict["message"]
    assert verdict["phases_ms"]["lock_wait"] >= 5000, verdict["phases_ms"]
    assert verdict["runtime_stats"]["exclusive"] is True


def test_a_trainer_finds_the_lock_the_engine_times_each_gpu_under(lock_dir):
    # A trainer decoding on a GPU takes a share of this lock (train/rollout.py): it must be the engine's.
    from tritium.runner.timing import device_lock_path

    assert all(device_lock_path(i) is None for i in range(torch.cuda.device_count()))  # no engine yet
    tritium.Engine(device="cuda", static_check=False, timeout_s=60, memory_gb=4)
    locks = sorted(str(lock) for lock in lock_dir.glob("gpu-*.lock"))
    assert sorted(device_lock_path(i) for i in range(torch.cuda.device_count())) == locks


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's engine runs candidates under other uids")
def test_a_lock_directory_the_sandbox_cannot_reach_is_refused(tmp_path, monkeypatch):
    # Every candidate would otherwise fail on opening its GPU's lock, each with a PermissionError.
    monkeypatch.setenv("TRITIUM_LOCK_DIR", str(tmp_path / "locks"))
    with pytest.raises(RuntimeError, match="closed to other users"):
        tritium.Engine(device="cuda", static_check=False)
