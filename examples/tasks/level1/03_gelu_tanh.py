"""GELU with the tanh approximation applied elementwise:
out = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), on a (8, 2500) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise GELU, tanh approximation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh")


batch_size = 8
dim = 2500


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
