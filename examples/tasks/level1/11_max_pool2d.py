"""2D max pooling: nn.MaxPool2d(kernel_size=3, stride=2, padding=1) applied to x of shape
(2, 8, 21, 19), giving (2, 8, 11, 10)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Max pooling over square windows with stride and implicit -inf padding."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 8
height = 21
width = 19
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
