"""LayerNorm with elementwise affine over normalized_shape (64, 256, 256) of a (16, 64, 256, 256)
float32 input (KernelBench level 1 LayerNorm at its published size): 256 MiB in and out, 16 MiB for
each of weight and bias; each of the 16 rows normalizes 4,194,304 elements."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm(normalized_shape) (eps 1e-5, weight and bias)."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
