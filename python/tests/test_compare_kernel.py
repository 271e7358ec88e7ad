"""The comparer's one-kernel rule (compare_kernel.py) against its torch rule (compare._chunk_stats),
element for element: the kernel runs under Triton's interpreter here, compiled on a GPU."""

import os

import pytest
import torch

from tritium.runner.compare import Tally, _chunk_stats
from tritium.runner.compare_kernel import BLOCK, slice_stats

INF, NAN = float("inf"), float("nan")
COMPILED = os.environ.get("TRITON_INTERPRET") != "1"  # conftest sets it unless told otherwise
DEVICE = "cuda" if COMPILED else "cpu"
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, from the interpreter's NaN and inf


def _hostile(dtype: torch.dtype, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Expected and actual slices with every case the rule tells apart, spread over several blocks."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g, dtype=torch.float64)
    y = x + torch.randn(n, generator=g, dtype=torch.float64) * 1e-5
    cases = [
        (NAN, NAN),  # NaN for NaN: fine
        (INF, INF),  # the same inf: fine
        (-INF, INF),  # the other inf
        (1.0, NAN),  # unexpected non-finite
        (1.0, INF),
        (NAN, 1.0),
        (0.0, 1e-4),  # on the bound (atol only)
        (1.0, 1.0002),  # on the bound (atol + rtol)
        (1.0, 1.01),  # past it
        (1e-30, 3e-30),  # tiny expected value: no relative error counted
        (-5.0, 5.0),
    ]
    for k, (want, got) in enumerate(cases):
        i = (k * 977) % n
        x[i], y[i] = want, got
    return x.to(DEVICE, dtype), y.to(DEVICE, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1, BLOCK - 1, 3 * BLOCK + 17])
def test_the_kernel_counts_what_the_torch_rule_counts(dtype, n):
    x, y = _hostile(dtype, n)
    for atol, rtol in [(1e-4, 1e-4), (0.0, 0.0), (1e-2, 0.0)]:
        want = _chunk_stats(x, y, atol, rtol)
        got = slice_stats(x, y, atol, rtol)
        assert got["bad"] == want["bad"] and got["unexpected"] == want["unexpected"], (dtype, n, atol, rtol)
        assert got["max_abs"] == pytest.approx(want["max_abs"], rel=1e-12, abs=0)
        assert got["max_rel"] == pytest.approx(want["max_rel"], rel=1e-12, abs=0)


def test_a_matching_slice_counts_nothing_bad_and_its_extremes():
    x = torch.linspace(-3, 3, 2 * BLOCK + 5, device=DEVICE)
    y = x.clone()
    y[7] += 2e-5
    s = slice_stats(x, y, 1e-4, 1e-4)
    assert s["bad"] == 0 and s["unexpected"] == 0
    assert s["max_abs"] == pytest.approx(abs(float(y[7]) - float(x[7])), rel=1e-9)


def test_an_all_nan_slice_where_nan_is_expected_matches():
    x = torch.full((BLOCK + 3,), NAN, device=DEVICE)
    s = slice_stats(x, x.clone(), 1e-4, 1e-4)
    assert s == {"bad": 0, "unexpected": 0, "max_abs": 0.0, "max_rel": 0.0}


@pytest.mark.skipif(not COMPILED, reason="the fused path of Tally runs on a GPU, compiled")
def test_on_a_gpu_the_tally_gives_the_torch_rules_verdict_and_worst_element():
    x, y = _hostile(torch.float32, 5 * BLOCK + 1)
    for pair in [(x, y), (x, x.clone())]:
        on_gpu, on_cpu = Tally(1e-4, 1e-4), Tally(1e-4, 1e-4)
        on_gpu.add(*pair)
        on_cpu.add(pair[0].cpu(), pair[1].cpu())
        assert on_gpu.result() == on_cpu.result()
