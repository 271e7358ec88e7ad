"""Binary add with broadcasting: out = x + y with x of shape (6, 1, 250) and y of shape (1, 20, 250),
giving a (6, 20, 250) result."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise addition of two tensors that broadcast against each other."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


batch = 6
rows = 20
cols = 250


def get_inputs():
    return [torch.randn(batch, 1, cols), torch.randn(1, rows, cols)]


def get_init_inputs():
    return []
