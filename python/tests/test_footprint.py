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
    # The float64 check: the twin's forward, its inputs, outputs and temporaries twice as large.
    assert need.reference_peak() == 2 * (8 * mib + 4 + 8 * mib - 4)


def test_the_scale_suites_references_are_sized_by_what_they_hold():
    """The float64 check holds the twin's tensors without the trial's float32 ones beside them:
    an elementwise task's inputs and outputs twice (their float64 twins), where it held them three
    times (36.0 GiB measured on an H100, 2026-12-07); the sum's peak is its float64 inputs made
    beside a draw (3 x 8 GiB) either way."""
    relu, mse, hinge, total, cumsum = (
        _measure(n) for n in ("01_relu.py", "08_mse_loss.py", "09_hinge_loss.py", "05_sum_dim.py", "13_cumsum.py")
    )
    assert relu.reference_peak() == 24 * GIB
    assert round(mse.reference_peak() / GIB, 2) == 32.0
    assert hinge.draw_peak == 16 * GIB  # randint's int64 (8 GiB) and its float copy, beside the predictions
    assert round(hinge.reference_peak() / GIB, 2) == 32.0
    assert round(total.reference_peak() / GIB, 1) == 24.0
    assert round(cumsum.reference_peak() / GIB, 1) == 16.0


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
    assert answer == {"ok": True, "bytes": 12 * GIB, "peak_bytes": 24 * GIB}
    assert reference.footprint({"source": "raise ValueError('no')"}) == {"ok": True, "bytes": None, "peak_bytes": None}


@pytest.mark.parametrize("name", sorted(p.name for p in SCALE_TASKS.glob("*.py")))
def test_every_scale_task_is_sized(name):
    need = _measure(name)
    assert need is not None and need.reference_peak() >= 2 * (need.inputs + need.outputs)


def test_the_reference_runs_its_float64_twin_with_none_of_the_trials_float32_tensors_alive(monkeypatch):
    """reference._trial on the CPU, every storage it makes counted: the twin's forward starts with
    nothing of the trial alive, its outputs come back as float32, and the trial's own tensors are
    made again after them; up to then it held at most the twin's float64 inputs and outputs (the
    CPU's comparison, in float64 chunks, holds more after: the GPU's compares in a kernel)."""
    from tritium.runner import reference

    n = 1 << 20  # 4 MiB a float32 set
    module = _task(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x)\n"
        f"def get_inputs():\n"
        f"    return [torch.randn({n})]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    model = module.Model()
    twin = reference._float64_twin(model)
    alive, peaks = [], []
    real = reference._exact

    def counted(*args, **kwargs):
        alive.append(live.now)
        exact = real(*args, **kwargs)
        alive.append(live.now)
        peaks.append(live.peak)
        return exact

    monkeypatch.setattr(reference, "_exact", counted)
    spec = {"index": 0, "distribution": "task", "mode": "eval"}
    with footprint.LiveBytes() as live:
        values, outputs, used, own_error = reference._trial(module, model, spec, 0, "cpu", twin, 1e-4)
    assert used == "task" and own_error is None
    assert alive == [0, 4 * n]  # nothing before the twin; after it, its outputs in float32
    assert torch.equal(outputs[0], torch.relu(values[0]))  # the trial made again, the same
    assert peaks == [8 * n + 8 * n]  # the twin's float64 input and output


def test_the_trial_made_again_after_the_twin_leaves_a_batchnorm_updated_once_as_its_twin():
    """A train-mode BatchNorm updates its running statistics at each forward: the trial made again
    after the float64 twin starts from the buffers the first forward found, so the model and its
    twin stay in step (the next eval-mode trial's check compares them)."""
    from tritium.runner import reference

    module = _task(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.bn = torch.nn.BatchNorm1d(4)\n"
        "    def forward(self, x):\n"
        "        return self.bn(x)\n"
        "def get_inputs():\n"
        "    return [torch.randn(64, 4) * 3 + 1]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    model = module.Model()
    twin = reference._float64_twin(model)
    spec = {"index": 0, "distribution": "task", "mode": "train"}
    _, _, used, own_error = reference._trial(module, model, spec, 0, "cpu", twin, 1e-4)
    assert used == "task" and own_error is None
    assert int(model.bn.num_batches_tracked) == int(twin.bn.num_batches_tracked) == 1
    assert torch.allclose(model.bn.running_mean.double(), twin.bn.running_mean, atol=1e-6)
    assert torch.allclose(model.bn.running_var.double(), twin.bn.running_var, atol=1e-6)
