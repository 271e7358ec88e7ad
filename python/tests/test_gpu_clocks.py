"""gpu_clocks.GpuClocks: the GPU's clock over a window of wall-clock time, which the scale benchmark
reads over each exclusive hold (python/benchmarks/gpu_clocks.py)."""

import shutil
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "python" / "benchmarks"))
import gpu_clocks  # noqa: E402 - the benchmark's own sampler


def test_a_window_gives_the_lowest_clock_and_every_reason_inside_it():
    clocks = gpu_clocks.GpuClocks()
    clocks.samples = [(100.0, 1980, 300.0, 0x0, 40), (110.0, 1755, 690.0, 0x4, 55), (120.0, 1830, 650.0, 0x20, 60)]
    window = clocks.during(105.0, 125.0)
    assert window == {
        "samples": 2,
        "sm_mhz_min": 1755,
        "sm_mhz_max": 1830,
        "power_w_max": 690.0,
        "temp_c_max": 60,
        "reasons": ["sw_power_cap", "sw_thermal"],
    }
    # A hold shorter than the sampling period: the sample just before it stands for it.
    assert clocks.during(111.0, 112.0)["sm_mhz_min"] == 1755
    assert clocks.during(50.0, 60.0) is None  # before any sample: nothing known


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine has NVML")
def test_without_nvml_nothing_is_sampled_and_the_block_still_runs():
    with gpu_clocks.GpuClocks(every_s=0.001) as clocks:
        pass
    assert clocks.samples == [] and clocks.during(0.0, 1e18) is None
