"""Convolution, ReLU, then a learned per-channel bias added: out = relu(conv2d(x)) + bias with
nn.Conv2d(3, 8, kernel_size=3) (no padding) on x of shape (2, 3, 18, 16), bias of shape (8, 1, 1),
giving (2, 8, 16, 14)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d -> ReLU -> + per-channel bias parameter."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


batch_size = 2
in_channels = 3
out_channels = 8
height = 18
width = 16
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
