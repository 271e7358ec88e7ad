"""Swish (SiLU) then a learned per-channel bias: out = x * sigmoid(x) + bias, with x of shape (4, 12, 30, 30)
and bias of shape (12, 1, 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(x) plus a per-channel bias parameter."""

    def __init__(self, bias_shape: tuple):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + self.bias


batch_size = 4
channels = 12
height = 30
width = 30
bias_shape = (channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 5.0]


def get_init_inputs():
    return [bias_shape]
