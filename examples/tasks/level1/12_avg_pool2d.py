"""2D average pooling: nn.AvgPool2d(kernel_size=3, stride=2, padding=1) (zero padding counted in the
average) applied to x of shape (3, 5, 20, 18), giving (3, 5, 10, 9)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Average pooling over square windows; padded zeros are included in the average (PyTorch default)."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 3
channels = 5
height = 20
width = 18
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
