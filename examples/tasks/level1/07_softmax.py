"""Softmax over the last dimension: out = torch.softmax(x, dim=-1) for x of shape (48, 1000)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise softmax."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 48
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
