"""The engine's input distributions (runner/inputs.py): their ranges, reproducibility, and the
redraw into the task's own tensor that keeps a GPU-size draw at one copy of its inputs."""

import types

import pytest
import torch

from tritium.runner import inputs


def _draw(make, distribution: str, seed: int = 7) -> list:
    return inputs.draw(make, seed, distribution)


@pytest.mark.parametrize(
    ("distribution", "low", "high"),
    [
        ("normal", -8.0, 8.0),
        ("signed_uniform", -2.0, 2.0),
        ("wide", -100.0, 100.0),
        ("normal_abs", 0.0, 8.0),
        ("signed_uniform_abs", 0.0, 2.0),
        ("wide_abs", 0.0, 100.0),
    ],
)
def test_each_distribution_draws_in_its_range(distribution, low, high):
    (x,) = _draw(lambda: [torch.zeros(200_000)], distribution)
    assert x.dtype == torch.float32 and x.shape == (200_000,)
    assert float(x.min()) >= low and float(x.max()) <= high
    if distribution.endswith("_abs"):
        assert float(x.min()) >= 0.0
    else:
        assert 0.45 < float((x < 0).float().mean()) < 0.55  # both signs, evenly
    if distribution.startswith("wide"):
        magnitude = x.abs().log10()
        assert float(magnitude.min()) >= -2.0 - 1e-5 and float(magnitude.max()) <= 2.0 + 1e-5
        assert float(magnitude.std()) > 1.0  # spread over orders of magnitude, not clustered
    if distribution == "normal":
        assert abs(float(x.mean())) < 0.02 and abs(float(x.std()) - 1.0) < 0.02


def test_a_seed_gives_the_same_values_and_another_seed_others():
    make = lambda: [torch.zeros(1000), torch.arange(5)]  # noqa: E731
    first, again, other = (_draw(make, "wide", seed) for seed in (3, 3, 4))
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])
    assert torch.equal(first[1], torch.arange(5))  # integers stay the task's


def test_the_task_distribution_and_integer_inputs_are_left_alone():
    x = torch.full((10,), 0.5)
    (same,) = _draw(lambda: [x], "task")
    assert same is x and torch.equal(same, torch.full((10,), 0.5))


def test_a_lone_tensor_is_redrawn_in_its_own_memory():
    """No second copy of a GPU-size input: the draw writes into the tensor get_inputs() made."""
    made = []

    def make():
        made.append(torch.zeros(4096))
        return [made[-1]]

    (x,) = _draw(make, "wide")
    assert x.data_ptr() == made[-1].data_ptr()
    assert float(x.abs().min()) >= 0.01


def test_inputs_sharing_memory_get_values_of_their_own():
    """The same tensor twice, or a view beside its base: each input drawn apart, and an integer
    view of a float input keeps the task's values (it is not redrawn)."""

    def make():
        x = torch.zeros(64)
        return [x, x, x.view(torch.int32)]

    a, b, bits = _draw(make, "normal")
    assert not torch.equal(a, b)
    assert torch.equal(bits, torch.zeros(64, dtype=torch.int32))


def test_views_and_inputs_that_require_grad_get_fresh_tensors():
    base = torch.zeros(1, 32)

    def make():
        return [base.expand(8, 32), torch.zeros(16, requires_grad=True)]

    expanded, grad = _draw(make, "signed_uniform")
    assert expanded.shape == (8, 32) and expanded.is_contiguous()
    assert not torch.equal(expanded[0], expanded[1])  # every row drawn, not one row broadcast
    assert torch.equal(base, torch.zeros(1, 32))  # the task's tensor untouched
    assert not grad.requires_grad and float(grad.abs().max()) > 0


def test_a_float16_input_is_drawn_in_its_dtype():
    (x,) = _draw(lambda: [torch.zeros(10_000, dtype=torch.float16)], "wide")
    assert x.dtype == torch.float16 and bool(torch.isfinite(x).all())
    assert float(x.abs().min()) >= 0.0099 and float(x.abs().max()) <= 100.1


def test_trial_values_sets_the_batch_variant_for_the_draw_only():
    module = types.SimpleNamespace(batch_size=8)
    module.get_inputs = lambda: [torch.zeros(module.batch_size, 3)]
    (x,) = inputs.trial_values(module, {"index": 1, "distribution": "normal", "variant": ["batch_size", 5]}, 11, "cpu")
    assert x.shape == (5, 3) and module.batch_size == 8
