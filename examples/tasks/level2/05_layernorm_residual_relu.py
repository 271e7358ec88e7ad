"""Layer normalization, residual add, ReLU: out = relu(LayerNorm(x) + residual) with nn.LayerNorm(200) on
x and residual of shape (40, 200)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm over the last dimension, plus a residual input, then ReLU."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = self.norm(x)
        x = x + residual
        return torch.relu(x)


batch_size = 40
hidden = 200
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, hidden) * 3.0 - 1.0, torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden, eps]
