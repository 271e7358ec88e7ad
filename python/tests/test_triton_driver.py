"""Triton's driver module, built once per candidate runner and written into each worker's private
cache (tritium/runner/triton_driver.py). The build itself needs a GPU toolchain (the GPU tests run
it through the engine); here: its failure without one, the seed's files and where they may go."""

import os

import pytest

from tritium.runner import sandbox, triton_driver


def test_the_build_gives_the_driver_module_on_a_gpu_and_nothing_without_one():
    import torch

    files = triton_driver.build_driver_files(timeout_s=120)
    if torch.cuda.is_available():  # the GPU machine: Triton's CUDA driver module, compiled
        assert any("cuda_utils" in name for name in files), sorted(files)
    else:  # no libcuda, no GPU toolchain: nothing, and no exception
        assert files == {}


def test_the_seed_writes_the_cache_files_it_was_given(tmp_path):
    built = tmp_path / "built"
    (built / "abc123").mkdir(parents=True)
    (built / "abc123" / "cuda_utils.so").write_bytes(b"\x7fELF module")
    (built / "abc123" / "__grp__cuda_utils.json").write_text("{}")
    files = triton_driver._cache_files(str(built))
    assert files == {"abc123/cuda_utils.so": b"\x7fELF module", "abc123/__grp__cuda_utils.json": b"{}"}

    seed = triton_driver.DriverSeed(build=lambda: files)
    private = tmp_path / "worker" / "triton"
    assert triton_driver.seed_cache(str(private), seed.files()) == 2
    assert (private / "abc123" / "cuda_utils.so").read_bytes() == b"\x7fELF module"


def test_the_seed_never_writes_outside_the_cache(tmp_path):
    private = tmp_path / "triton"
    files = {"../escaped.so": b"x", "/etc/absolute.so": b"y", "ok/inside.so": b"z"}
    assert triton_driver.seed_cache(str(private), files) == 1
    assert not (tmp_path / "escaped.so").exists() and (private / "ok" / "inside.so").exists()


def test_a_workers_private_dir_starts_with_the_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "triton_seed", {"k/cuda_utils.so": b"module"})
    for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.chdir(tmp_path)
    sandbox._private_dir(str(tmp_path / "job"))
    scratch = tmp_path / "job" / "scratch"  # the candidate's one writable place (a tmpfs in the sandbox)
    assert os.environ["TRITON_CACHE_DIR"] == str(scratch / "triton")
    assert os.environ["HOME"] == os.environ["TMPDIR"] == str(scratch) and os.getcwd() == str(tmp_path / "job")
    assert (scratch / "triton" / "k" / "cuda_utils.so").read_bytes() == b"module"


@pytest.mark.parametrize("build", [lambda: {}, lambda: {"a/b.so": b"1"}])
def test_the_seed_hands_over_what_its_build_made(build):
    seed = triton_driver.DriverSeed(build=build)
    assert seed.files() == build() and seed.done()


def test_nothing_waits_for_a_build_still_running():
    import threading

    release = threading.Event()
    seed = triton_driver.DriverSeed(build=lambda: release.wait(30) and {"a/b.so": b"1"})
    assert not seed.done()  # the runner forks workers without the seed meanwhile
    release.set()
    assert seed.files() == {"a/b.so": b"1"} and seed.done()


def test_the_zygotes_shared_seed_ends_with_the_module_on_a_gpu_and_nothing_without_one(tmp_path):
    """zygote.py builds the driver once for every candidate runner it forks, in a process of its own
    (no thread in a process that forks); a runner reads the files once the marker is there."""
    import time

    import torch

    seed = triton_driver.SharedDriverSeed(str(tmp_path / "driver"))
    assert seed.files() == {}  # not built yet: nothing, and no wait
    deadline = time.time() + triton_driver.BUILD_TIMEOUT_S
    while not seed.done() and time.time() < deadline:
        time.sleep(0.1)
    assert seed.done()
    files = seed.files()
    if torch.cuda.is_available():
        assert any("cuda_utils" in name for name in files), sorted(files)
    else:
        assert files == {} and (tmp_path / "driver" / "built").read_text() == "failed"


def test_tritons_key_is_computed_once_before_the_runner_forks_and_a_worker_inherits_it(monkeypatch):
    """warm_cache_key() in the parent: a forked child finds Triton's key of its own build already
    computed (hashing libtriton is not done again at its first launch); under the interpreter,
    which compiles nothing, it is not computed."""
    from triton.runtime.cache import triton_key

    triton_key.cache_clear()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    triton_driver.warm_cache_key()
    assert triton_key.cache_info().currsize == 0
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    triton_driver.warm_cache_key()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, b"1" if triton_key.cache_info().currsize == 1 else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)
    os.close(write)
