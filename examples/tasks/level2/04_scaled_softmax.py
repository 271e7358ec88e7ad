"""Scaled softmax, as on attention scores: out = softmax(x * scale, dim=-1) with scale = 0.125 (1/sqrt(64)),
on x of shape (4, 8, 5, 77): batch 4, 8 heads, 5 queries, 77 keys."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies by a constant scale, then takes the softmax over the last dimension."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * self.scale
        return torch.softmax(x, dim=-1)


batch_size = 4
heads = 8
queries = 5
keys = 77
scale = 0.125


def get_inputs():
    return [torch.randn(batch_size, heads, queries, keys) * 8.0]


def get_init_inputs():
    return [scale]
