"""The channel between a candidate's worker and its comparer, in-process: a real memfd and real
pipes opened through /proc, as the engine makes them, with a buffer far smaller than the sets so
that every set streams through many halves."""

import os
import threading
import time

import pytest
import torch

from tritium.runner.channel import CandidateEnd, ChannelError, ComparerEnd
from tritium.runner.compare import compare_tensor, receive_set

TOLERANCES = {"float32": (1e-4, 1e-4), "float64": (1e-4, 1e-4)}


@pytest.fixture
def spec():
    """What the engine's Channel::spec() names, for a 2 x 256-byte buffer."""
    buffer = os.memfd_create("test-outputs")
    os.ftruncate(buffer, 512)
    ready, go = os.pipe(), os.pipe()
    fds = [buffer, *ready, *go]
    yield {
        "pid": os.getpid(),
        "bytes": 512,
        "buffer": buffer,
        "ready_r": ready[0],
        "ready_w": ready[1],
        "go_r": go[0],
        "go_w": go[1],
        "inodes": {"buffer": os.fstat(buffer).st_ino, "ready": os.fstat(ready[0]).st_ino, "go": os.fstat(go[0]).st_ino},
    }
    for fd in fds:
        os.close(fd)


def ship_in_thread(spec, sets):
    """The worker's side: ships each (what, outputs) and records what went wrong, if anything."""
    errors = []

    def work():
        end = CandidateEnd(spec)
        try:
            for what, outputs in sets:
                end.ship(what, outputs, deadline=None)
        except ChannelError as exc:
            errors.append(str(exc))
        end.send({"done": True})

    thread = threading.Thread(target=work)
    thread.start()
    return thread, errors


def serve(spec, expected_sets):
    end = ComparerEnd(spec)
    results = []
    for expected in expected_sets:
        message = end.receive(None)
        results.append(receive_set(end, expected, ComparerEnd.layout(message), TOLERANCES, None))
        end.go()
    assert end.receive(None) == {"done": True}
    return results


def test_sets_larger_than_the_buffer_stream_through_and_are_judged_whole(spec):
    x = torch.randn(1000)
    wrong = x.clone()
    wrong[997] += 1.0  # in the last half of the last chunk
    ints = torch.arange(300, dtype=torch.int64)
    thread, errors = ship_in_thread(
        spec, [({"kind": "trial", "index": 0}, [x, ints]), ({"kind": "trial", "index": 1}, [wrong, ints])]
    )
    first, second = serve(spec, [[x, ints], [x, ints]])
    thread.join()
    assert not errors
    assert first["match"] and first["max_abs"] == 0.0
    assert not second["match"] and "1 of 1000 elements differ" in second["message"]
    assert "at index 997" in second["message"] and second["message"].startswith("output 0:")


def test_a_wrong_shape_or_dtype_is_judged_on_the_layout_without_its_data(spec):
    thread, errors = ship_in_thread(
        spec,
        [
            ({"kind": "trial", "index": 0}, [torch.zeros(10, 100)]),
            ({"kind": "trial", "index": 1}, [torch.zeros(1000, dtype=torch.float64)]),
            ({"kind": "trial", "index": 2}, [torch.zeros(1000), torch.zeros(1)]),
        ],
    )
    shape, dtype, count = serve(spec, [[torch.zeros(1000)]] * 3)
    thread.join()
    assert not errors
    assert "shape [1000] expected, got [10, 100]" in shape["message"]
    assert "dtype float32 expected, got float64" in dtype["message"]
    assert count["message"] == "1 output(s) expected, got 2"


def test_nan_needs_nan_and_inf_the_same_inf():
    e = torch.tensor([float("nan"), float("inf"), 1.0, 2.0])
    assert compare_tensor(e, e.clone(), 1e-4, 1e-4)["match"]
    flipped = torch.tensor([float("nan"), float("-inf"), 1.0, 2.0])
    result = compare_tensor(e, flipped, 1e-4, 1e-4)
    assert not result["match"] and "1 of 4" in result["message"]
    unexpected = compare_tensor(torch.ones(3), torch.tensor([1.0, float("nan"), 1.0]), 1e-4, 1e-4)
    assert "1 unexpected non-finite" in unexpected["message"]


def test_hostile_messages_are_refused_not_trusted(spec):
    worker = CandidateEnd(spec)
    end = ComparerEnd(spec)
    worker.send({"kind": "trial", "index": 0, "outputs": [{"dtype": "float32", "shape": [64]}]})
    message = end.receive(None)
    end.answer(True, None)
    worker.send({"chunk": 0, "bytes": 10_000})  # beyond a half of the buffer
    with pytest.raises(ChannelError, match="outside the buffer"):
        list(end.pieces(torch.zeros(64), None))
    for bad in ({"outputs": "no"}, {"outputs": [{"dtype": "float32", "shape": [-1]}]}, {"outputs": [{"shape": [1]}]}):
        with pytest.raises(ChannelError):
            ComparerEnd.layout(bad)
    assert message["kind"] == "trial"


def test_a_channel_whose_descriptors_were_reused_is_refused(spec):
    stale = {**spec, "inodes": {**spec["inodes"], "buffer": spec["inodes"]["buffer"] + 1}}
    with pytest.raises(ChannelError, match="no longer this job's"):
        CandidateEnd(stale)


def test_the_bound_is_atol_plus_rtol_times_the_expected_and_inclusive():
    e = torch.tensor([2.0, -2.0], dtype=torch.float64)  # bound 0.5 + 0.25 * 2 = 1, exact in binary
    assert compare_tensor(e, torch.tensor([3.0, -1.0], dtype=torch.float64), 0.5, 0.25)["match"]
    past = torch.tensor(
        [torch.nextafter(torch.tensor(3.0, dtype=torch.float64), torch.tensor(4.0, dtype=torch.float64)), -1.0],
        dtype=torch.float64,
    )
    assert compare_tensor(e, past, 0.5, 0.25)["message"].startswith("1 of 2 elements differ")
    one = torch.ones(1)
    assert compare_tensor(one, torch.tensor([1.00015]), 1e-4, 1e-4)["match"]
    assert not compare_tensor(one, torch.tensor([1.00025]), 1e-4, 1e-4)["match"]


def test_errors_name_the_worst_element_and_relative_errors_skip_tiny_expected_values():
    e, a = torch.full((16,), 1.25), torch.full((16,), 1.25)
    a[3], a[12] = 1.2, 0.75
    c = compare_tensor(e, a, 1e-4, 1e-4)
    assert c["message"].startswith(
        "2 of 16 elements differ (largest differing abs err 0.5 at index 12, expected 1.25, got 0.75"
    )
    assert c["max_abs"] == 0.5 and c["max_rel"] == pytest.approx(0.4)
    r = compare_tensor(torch.tensor([0.0, 2.0]), torch.tensor([0.5, 3.0]), 1.0, 0.0)
    assert r["match"] and r["max_abs"] == 1.0 and r["max_rel"] == 0.5


def test_integers_compare_exactly_beyond_double_precision():
    big = 1 << 53
    c = compare_tensor(torch.tensor([big, 5]), torch.tensor([big + 1, 5]), 0, 0)
    assert not c["match"] and "at index 0, expected 9007199254740992, got 9007199254740993" in c["message"]
    lo, hi = torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).max
    extremes = compare_tensor(torch.tensor([lo]), torch.tensor([hi]), 0, 0)
    assert not extremes["match"] and extremes["max_abs"] == 2.0**64
    assert compare_tensor(torch.tensor([True, False]), torch.tensor([True, False]), 0, 0)["match"]
    assert not compare_tensor(torch.tensor([0], dtype=torch.uint8), torch.tensor([255], dtype=torch.uint8), 0, 0)[
        "match"
    ]


FAILING_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("CUDA out of memory. Tried to allocate 6.40 GiB")


def get_inputs():
    return [torch.randn(8)]


def get_init_inputs():
    return []
"""


def test_a_comparer_that_fails_tells_the_waiting_worker_at_once(spec):
    """Its own failure (out of memory beside other jobs) must not leave the worker waiting for an
    answer until its timeout: it is told, and the comparer's error (which the engine retries alone
    on) goes up."""
    from tritium.runner.compare import compare

    thread, errors = ship_in_thread(spec, [({"kind": "trial", "index": 0}, [torch.zeros(8)])])
    request = {
        "source": FAILING_TASK,
        "filename": "failing.py",
        "device": "cpu",
        "seed": 3,
        "channel": spec,
        "trials": [{"index": 0, "mode": "eval", "distribution": "task"}],
        "spots": 0,
        "tolerances": {"float32": [1e-4, 1e-4]},
        "timeout_s": 60,
    }
    with pytest.raises(Exception, match="out of memory"):
        compare(request)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert errors and "comparer" in errors[0]


def test_a_job_with_a_socket_on_the_cpu_keeps_its_sets_in_host_memory(spec, tmp_path):
    """The socket only matters on a GPU: on the CPU no device halves are offered, the worker's
    listener stays unused, and every set crosses the host buffer as before."""
    spec = {**spec, "socket": str(tmp_path / "outputs.sock"), "device_bytes": 4 << 20}
    x = torch.randn(1000)
    thread, errors = ship_in_thread(spec, [({"kind": "trial", "index": 0}, [x])])
    (result,) = serve(spec, [[x]])
    thread.join()
    assert not errors and result["match"]
    assert (tmp_path / "outputs.sock").is_socket()


def test_a_socket_path_that_cannot_be_bound_leaves_the_worker_without_a_listener(spec, tmp_path):
    worker = CandidateEnd({**spec, "socket": str(tmp_path / "missing" / "outputs.sock"), "device_bytes": 4 << 20})
    assert worker.listener is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_sets_cross_device_halves_the_comparer_hands_over(spec, tmp_path):
    """The comparer allocates the halves (driver VMM), passes their descriptor over the worker's
    socket, and both sides then stream and compare on the device: every element still judged."""
    spec = {**spec, "socket": str(tmp_path / "outputs.sock"), "device_bytes": 4 << 20}
    x = torch.randn(3_000_000, device="cuda")  # 12 MB: several 2 MB halves
    wrong = x.clone()
    wrong[2_999_999] += 1.0
    worker_end = []

    def work():
        end = CandidateEnd(spec)
        worker_end.append(end)
        for k, outputs in enumerate(([x], [wrong])):
            end.ship({"kind": "trial", "index": k}, outputs, deadline=None)
        end.send({"done": True})

    thread = threading.Thread(target=work)
    thread.start()
    end = ComparerEnd(spec)
    results = []
    for _ in range(2):
        message = end.receive(None)
        results.append(receive_set(end, [x], ComparerEnd.layout(message), TOLERANCES, None))
        end.go()
    assert end.receive(None) == {"done": True}
    thread.join()
    assert end.device_buffer is not None, end.device_refused
    assert worker_end[0].device_buffer is not None
    assert results[0]["match"] and results[0]["max_abs"] == 0.0
    assert not results[1]["match"] and "at index 2999999" in results[1]["message"]


def test_an_announced_offer_that_never_arrives_is_refused_not_waited_for(spec, tmp_path, monkeypatch):
    """The comparer says the halves are on their way only once they are queued at the socket: a
    worker that finds nothing there answers no at once (the halves stay on the host) instead of
    blocking, with its comparer holding a share of the GPU, until the job's timeout."""
    import tritium.runner.channel as channel

    monkeypatch.setattr(channel, "ADOPT_WAIT_S", 0.2)
    spec = {**spec, "socket": str(tmp_path / "outputs.sock"), "device_bytes": 4 << 20}
    x, deadline = torch.randn(1000), time.monotonic() + 10
    thread, errors = ship_in_thread(spec, [({"kind": "trial", "index": 0}, [x])])
    end = ComparerEnd(spec)
    message = end.receive(deadline)
    end.send({"send": True, "device": True})  # announced, never connected
    reply = end.receive(deadline)
    assert reply["device"] is False and "no offer reached the socket within 0.2 s" in reply["why"]
    assert "bound inode" in reply["why"]
    for want, got in end.pieces(x, deadline):
        assert torch.equal(want, got)
    end.go()
    thread.join(timeout=10)
    assert not thread.is_alive() and not errors
    assert message["kind"] == "trial"


def test_only_the_candidates_worker_opens_the_candidate_end(spec, tmp_path):
    """A forked worker opens the candidate's end (and binds its socket) for an `evaluate` request
    alone. A comparer that did too bound the worker's socket path again, so its offers of device
    halves reached itself and the worker waited for them (6 of 22 jobs on the H200, 2026-12-03),
    and it held the worker's pipe ends open past the worker's death."""
    from tritium.runner.worker import run_in_worker

    spec = {**spec, "socket": str(tmp_path / "outputs.sock"), "device_bytes": 4 << 20}

    def seen(request):
        return {"ok": True, "end": "channel_end" in request, "bound": os.path.exists(spec["socket"])}

    compared = run_in_worker(seen, {"op": "compare", "channel": spec})
    assert (compared["end"], compared["bound"]) == (False, False)
    evaluated = run_in_worker(seen, {"op": "evaluate", "channel": spec})
    assert (evaluated["end"], evaluated["bound"]) == (True, True)
