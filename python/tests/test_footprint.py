"""runner/footprint.py: a task's trial counted on the meta device, by which the engine reserves a
reference's device memory. Meta tensors cost nothing, so the suite's tasks are sized at their
published sizes here."""

import pytest
import torch
from conftest import ROOT

from tritium.runner import footprint
from tritium.runner.tasks import load_module

GIB = 2**30
SCALE_TASKS = ROOT / "examples" / "kernelbench_scale" / "tasks"


def _task(source: str):
    return load_module(source, "<task>")


def _measure(name: str) -> footprint.Footprint:
    module = load_module((SCALE_TASKS / name).read_text(), name)
    return footprint.measure(module, list(module.get_init_inputs()), 0)


def test_live_bytes_counts_temporaries_while_alive_and_views_of_inputs_not_at_all():
    x = torch.empty(1024, device="meta")  # 4 KiB
    with torch.device("meta"), footprint.LiveBytes(known=[x]) as live:
        y = x.view(32, 32).t()  # a view of the input: no new storage
        assert live.now == 0
        a = x * 2
        b = a + 1  # a and b alive: 8 KiB
        del a
        b.relu_()  # in place: nothing new
        c = b.sum()
        del b
    assert live.peak == 8192 and live.now == c.numel() * 4
    del y


def test_an_mse_like_forward_peaks_at_its_two_temporaries_and_its_draw_at_its_inputs():
    module = _task(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        return torch.mean((a - b) ** 2)\n"
        "def get_inputs():\n"
        "    return [torch.randn(1024, 1024), torch.randn(1024, 1024)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    need = footprint.measure(module, [], 0)
    mib = 1 << 20
    assert (need.inputs, need.outputs, need.params) == (8 * mib, 4, 0)
    assert need.draw_peak == 8 * mib and need.forward_peak == 8 * mib  # a - b and its square
    assert need.largest_input_elements == 1 << 20
    # The float64 check: 3 x the trial's tensors and twice the temporaries (in float64).
    assert need.reference_peak() == 3 * (8 * mib + 4) + 2 * (8 * mib - 4)


def test_the_scale_suites_references_are_sized_by_what_they_hold():
    """Against the peaks measured on an H100 (2026-12-07): elementwise 36.0 GiB, MSE 40.0, hinge 44.0,
    sum 26.0; the engine adds a tenth and a GiB to these."""
    relu, mse, hinge, total = (
        _measure(n) for n in ("01_relu.py", "08_mse_loss.py", "09_hinge_loss.py", "05_sum_dim.py")
    )
    assert relu.reference_peak() == 36 * GIB
    assert round(mse.reference_peak() / GIB, 2) == 40.0
    assert hinge.draw_peak == 16 * GIB  # randint's int64 (8 GiB) and its float copy, beside the predictions
    assert round(hinge.reference_peak() / GIB, 2) == 40.0
    assert round(total.reference_peak() / GIB, 1) == 24.0
    for peak, measured in ((relu, 36.0), (mse, 40.0), (hinge, 44.0), (total, 26.0)):
        assert peak.reference_peak() * 1.1 + GIB >= measured * GIB


def test_a_task_that_does_not_run_on_the_meta_device_is_not_sized():
    module = _task(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x[x > 0]\n"  # data-dependent: meta cannot tell its size
        "def get_inputs():\n"
        "    return [torch.randn(8)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    assert footprint.measure(module, [], 0) is None


def test_the_reference_runner_answers_the_footprint_the_engine_reserves_by():
    from tritium.runner import reference

    answer = reference.footprint({"source": (SCALE_TASKS / "01_relu.py").read_text(), "seed": 0})
    assert answer == {"ok": True, "bytes": 12 * GIB, "peak_bytes": 36 * GIB}
    assert reference.footprint({"source": "raise ValueError('no')"}) == {"ok": True, "bytes": None, "peak_bytes": None}


@pytest.mark.parametrize("name", sorted(p.name for p in SCALE_TASKS.glob("*.py")))
def test_every_scale_task_is_sized(name):
    need = _measure(name)
    assert need is not None and need.reference_peak() >= 3 * (need.inputs + need.outputs)
