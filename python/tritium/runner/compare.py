"""The trusted comparer: a candidate's outputs against the reference's, on the device, one set at a time.

Runs beside each candidate's worker, in a trusted runner (it never loads candidate code). It builds
the task's reference model after the engine's seed (the very model, perturbed parameters
included, that the reference planned with), and for each output set the worker ships through the
channel (channel.py) it makes that set's inputs and expected outputs again on the device,
compares, and lets the worker go on. Expected outputs therefore never leave this process, and a
GPU-size set is compared where it lies, by the GPU, instead of through gigabytes of files.

The rules are the engine's (docs/engine.md, "Tolerance profiles"): same shape and dtype; a
floating element matches when |actual - expected| <= atol + rtol * |expected|, a NaN needs a NaN
and an inf the same inf; integers and bools are exact. Where the task's own dtype cannot meet the
profile on the task's own inputs (the reference measured its float32 outputs against float64:
`reference_error` in the plan), atol becomes ILL_CONDITIONED_FACTOR times that error: a kernel
that sums in another order errs as much as the reference, a precision downgrade (TF32, bf16)
hundreds of times more.
"""

import contextlib
import time

import torch

from . import inputs as trial_inputs
from . import reference
from .channel import ChannelError, ComparerEnd
from .phases import add_since, phase
from .tasks import TaskFailure, note_peak, release_cached, synchronize

CHUNK = 1 << 24  # elements compared at once: bounded scratch memory whatever the tensor's size
# An honest kernel that sums in another order errs like the reference, up to a few times more: one
# that adds BLOCK_K-wide dots into its accumulator in sequence (K = 32768 on this CPU) erred 3.3x
# torch's own error against float64. TF32 or bf16 inputs (10 or 7 mantissa bits) err ~1000x.
ILL_CONDITIONED_FACTOR = 16.0


def _chunk_stats(x: torch.Tensor, y: torch.Tensor, atol: float, rtol: float) -> dict:
    """Counts and extremes of one chunk (x expected, y actual, both on the comparer's device)."""
    if x.is_floating_point() or y.is_floating_point():
        x, y = x.double(), y.double()
        d = (y - x).abs()
    else:  # exact: values of one sign subtract without overflow, of opposite signs in double (never 0)
        x, y = x.long(), y.long()
        same_sign = (x >= 0) == (y >= 0)
        d = torch.where(same_sign, (y - x).abs().double(), (y.double() - x.double()).abs())
    ax = x.abs().double()
    finite = torch.isfinite(d)
    bad = finite & ~(d <= atol + rtol * ax)
    if not bool(finite.all()):
        nonfinite = ~finite
        same = (torch.isnan(x) & torch.isnan(y)) | (x == y)  # NaN for NaN, the same inf
        bad |= nonfinite & ~same
        unexpected = int((torch.isfinite(x) & ~torch.isfinite(y)).sum())
    else:
        unexpected = 0
    stats = {"bad": int(bad.sum()), "unexpected": unexpected, "max_abs": 0.0, "max_rel": 0.0, "worst": None}
    if bool(finite.any()):
        dd = torch.where(finite, d, torch.zeros((), dtype=d.dtype, device=d.device))
        stats["max_abs"] = float(dd.max())
        relevant = finite & (ax > atol)
        if bool(relevant.any()):
            stats["max_rel"] = float((dd / ax.clamp_min(atol if atol > 0 else 1e-300))[relevant].max())
    if stats["bad"]:
        below = torch.full((), -1.0, dtype=d.dtype, device=d.device)
        score = torch.where(bad, torch.nan_to_num(d, nan=float("inf")), below)
        i = int(score.argmax())
        stats["worst"] = (i, float(score[i]), x[i].item(), y[i].item())
    return stats


class Tally:
    """The comparison of one output, fed piece by piece (expected slice, actual slice)."""

    def __init__(self, atol: float, rtol: float):
        self.atol, self.rtol = atol, rtol
        self.n = self.bad = self.unexpected = 0
        self.max_abs = self.max_rel = 0.0
        self.worst = None

    def add(self, expected: torch.Tensor, actual: torch.Tensor) -> None:
        actual = actual.to(expected.device)
        if not (expected.is_cuda and expected.is_floating_point() and self._fused(expected, actual)):
            for start in range(0, expected.numel(), CHUNK):
                stop = min(expected.numel(), start + CHUNK)
                self._count(_chunk_stats(expected[start:stop], actual[start:stop], self.atol, self.rtol), start)
        self.n += expected.numel()

    def _fused(self, expected: torch.Tensor, actual: torch.Tensor) -> bool:
        """One kernel over the slice (compare_kernel.py); False where it found a mismatch, whose
        worst element the torch rule then finds."""
        from .compare_kernel import slice_stats

        s = slice_stats(expected, actual, self.atol, self.rtol)
        if s["bad"]:
            return False
        self._count({**s, "worst": None}, 0)
        return True

    def _count(self, s: dict, start: int) -> None:
        self.bad += s["bad"]
        self.unexpected += s["unexpected"]
        self.max_abs, self.max_rel = max(self.max_abs, s["max_abs"]), max(self.max_rel, s["max_rel"])
        if s["worst"] and (self.worst is None or s["worst"][1] > self.worst[1]):
            self.worst = (self.n + start + s["worst"][0], *s["worst"][1:])

    def result(self) -> dict:
        """{"match", "message", "max_abs", "max_rel"}."""
        out = {"match": not self.bad, "max_abs": self.max_abs, "max_rel": self.max_rel}
        if not self.bad:
            return {
                **out,
                "message": f"{self.n} elements within atol {self.atol:g}, rtol {self.rtol:g} "
                f"(max abs err {self.max_abs:.4g})",
            }
        parts = []
        if self.worst:
            i, err, want, got = self.worst
            parts.append(f"largest differing abs err {err:.4g} at index {i}, expected {want}, got {got}")
        parts.append(f"max abs err {self.max_abs:.4g}")
        if self.unexpected:
            parts.append(f"{self.unexpected} unexpected non-finite")
        return {**out, "message": f"{self.bad} of {self.n} elements differ ({'; '.join(parts)})"}


def compare_tensor(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float) -> dict:
    """Two tensors of the same shape, in one process (the reference's conditioning check)."""
    tally = Tally(atol, rtol)
    tally.add(expected.reshape(-1), actual.reshape(-1))
    return tally.result()


def _wrong_layout(expected: list[torch.Tensor], layout: list) -> str:
    if len(layout) != len(expected):
        return f"{len(expected)} output(s) expected, got {len(layout)}"
    for i, (e, (dtype, shape)) in enumerate(zip(expected, layout)):
        want = str(e.dtype).removeprefix("torch.")
        wrong = []
        if dtype != want:
            wrong.append(f"dtype {want} expected, got {dtype}")
        if list(shape) != list(e.shape):
            wrong.append(f"shape {list(e.shape)} expected, got {list(shape)}")
        if wrong:
            return f"output {i}: {'; '.join(wrong)}"
    return ""


def receive_set(
    end: ComparerEnd,
    expected: list[torch.Tensor],
    layout: list,
    tolerances: dict,
    deadline: float | None,
    own_error: list | None = None,
) -> dict:
    """A shipped set against the expected outputs: the first mismatch names the output. `own_error`:
    the reference's own float32 error per output, where the task is ill-conditioned."""
    result = {"match": True, "message": "", "max_abs": None, "max_rel": None}
    wrong = _wrong_layout(expected, layout)
    end.answer(not wrong, deadline, expected[0].device if expected else None)
    if wrong:
        return {**result, "match": False, "message": wrong}
    for i, e in enumerate(expected):
        atol, rtol = tolerances.get(str(e.dtype).removeprefix("torch."), (0.0, 0.0))
        if own_error and i < len(own_error) and e.is_floating_point():
            atol = max(float(atol), ILL_CONDITIONED_FACTOR * float(own_error[i]))
        tally = Tally(float(atol), float(rtol))
        for want, got in end.pieces(e, deadline):
            tally.add(want, got)
        c = tally.result()
        result["max_abs"] = max(result["max_abs"] or 0.0, c["max_abs"])
        result["max_rel"] = max(result["max_rel"] or 0.0, c["max_rel"])
        if not c["match"] and result["match"]:
            result.update(match=False, message=f"output {i}: {c['message']}")
    return result


def _specs(request: dict) -> dict:
    """(kind, index) -> the spec that makes that set's inputs again."""
    specs = {("trial", int(t["index"])): trial_inputs.planned(t) for t in request["trials"]}
    for k in range(int(request.get("spots", 0))):
        specs[("spot", k)] = reference.spot_spec(k)
    return specs


def _own_errors(request: dict) -> dict:
    """(kind, index) -> the reference's own float32 error per output, for the sets of an
    ill-conditioned task: each such trial's, and for the spot sets (the task's own inputs, drawn
    again) the largest of the trials on the task's own inputs."""
    errors, spot = {}, []
    for t in request["trials"]:
        if t.get("reference_error"):
            errors[("trial", int(t["index"]))] = t["reference_error"]
            if t.get("distribution") == "task" and not t.get("variant_spec"):
                spot = [max(pair) for pair in zip(spot, t["reference_error"])] if spot else list(t["reference_error"])
    if spot:
        errors.update({("spot", k): spot for k in range(int(request.get("spots", 0)))})
    return errors


def compare(request: dict) -> dict:
    """Serves one candidate's channel until its worker is done or gone; answers every set's result.
    Everything it held is let go before it returns ("released" false where the channel's buffer
    could not be: a comparer serving many jobs in one process then ends)."""
    answer = {"ok": False, "sets": [], "done": False, "ill_conditioned_factor": ILL_CONDITIONED_FACTOR, "phases_ms": {}}
    if "forked_at" in request:
        add_since(answer["phases_ms"], "startup", request["forked_at"])
    try:
        end = ComparerEnd(request["channel"])
    except OSError as exc:
        return {**answer, "error": f"the comparer could not start: {exc}"}
    try:
        with _torch_settings_kept():
            result = _serve(request, end, answer)
    except BaseException:
        end.close()
        raise
    result["released"] = end.close()
    return result


@contextlib.contextmanager
def _torch_settings_kept():
    """torch's process-wide settings restored after the job: the task's module runs here when it is
    loaded and may change them (a default dtype of float64 made the next task's expected outputs
    float64), and this process compares its slot's next job too."""
    cuda, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = (
        torch.get_default_dtype(),
        torch.get_default_device(),
        torch.is_grad_enabled(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.get_float32_matmul_precision(),
        torch.get_num_threads(),
        cuda.allow_tf32,
        cudnn.allow_tf32,
        cudnn.benchmark,
        cudnn.deterministic,
    )
    try:
        yield
    finally:
        dtype, device, grad, deterministic, warn_only, precision, threads, *flags = saved
        torch.set_default_dtype(dtype)
        if torch.get_default_device() != device:  # None, for the CPU: no device mode left installed
            torch.set_default_device(None if device.type == "cpu" else device)
        torch.set_grad_enabled(grad)
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.set_float32_matmul_precision(precision)
        torch.set_num_threads(threads)
        cuda.allow_tf32, cudnn.allow_tf32, cudnn.benchmark, cudnn.deterministic = flags


def _serve(request: dict, end: ComparerEnd, answer: dict) -> dict:
    phases = answer["phases_ms"]
    deadline = time.monotonic() + float(request.get("timeout_s", 600))
    try:
        with phase(phases, "build"):
            module, model, _, device, seed, context, gpu = reference.build(request)
        phases.update(context)
    except (TaskFailure, OSError) as exc:
        return {**answer, "error": f"the comparer could not start: {exc}"}
    try:
        with phase(phases, "build"), gpu.shared():  # the parameters' copy must not run into a timed call
            model = model.to(device)
    except Exception as exc:  # out of memory beside other jobs: the comparer's failure, not the candidate's
        return {**answer, "error": f"the comparer could not start: {exc}"}
    if device.startswith("cuda"):
        with phase(phases, "pin"):
            answer["pinned"] = end.pin()
    specs, tolerances, own_errors = _specs(request), request.get("tolerances", {}), _own_errors(request)
    model.eval()
    try:
        while (message := end.receive(deadline)) is not None:
            if message.get("done") is True:
                answer["done"] = True
                break
            key = (message.get("kind"), message.get("index"))
            result = {"kind": key[0], "index": key[1]}
            if key not in specs:
                result.update(match=False, message=f"an output set the plan does not have: {key}")
            else:
                # A share for the whole set, the worker's copies included (it holds none meanwhile);
                # none between sets: the candidate may want the GPU to itself.
                waiting = time.perf_counter()
                with gpu.shared():
                    add_since(phases, "lock_wait", waiting)
                    with phase(phases, "expected"):
                        _, outputs = reference.expected(module, model, specs[key], seed, device)
                        synchronize(device)
                    with phase(phases, "yield"):  # a queued timer's drain need not wait for the set to cross
                        gpu.yield_to_timers()
                    with phase(phases, "receive"):
                        result.update(
                            receive_set(
                                end, outputs, ComparerEnd.layout(message), tolerances, deadline, own_errors.get(key)
                            )
                        )
                    del outputs
                    with phase(phases, "release"):
                        release_cached(device)  # nothing held while the worker goes on
            answer["sets"].append(result)
            end.go(result.get("match") is not False)
        if end.device_buffer is not None:  # the sets crossed the device (the phase marks it in verdicts)
            answer["device_halves"] = end.device_buffer.size
            phases["offer"] = end.offer_ms
        elif end.device_refused:
            answer["device_refused"] = end.device_refused
    except ChannelError as exc:
        answer["channel_error"] = str(exc)
        with contextlib.suppress(OSError):
            end.send({"abort": str(exc)})  # a worker waiting for an answer fails now, not at its deadline
    except Exception as exc:  # the comparer's own failure (out of memory beside other jobs): not the candidate's
        with contextlib.suppress(OSError):
            end.send({"abort": f"the comparer failed: {exc}"})
        raise
    answer["ok"] = True
    gpu.report(phases)
    note_peak(phases, "peak", device)
    return answer
