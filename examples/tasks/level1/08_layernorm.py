"""Layer normalization over the last two dimensions with affine weight and bias:
nn.LayerNorm((12, 25)) applied to x of shape (16, 6, 12, 25)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalization (elementwise affine) over a multi-dimensional normalized shape."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
groups = 6
height = 12
width = 25


def get_inputs():
    return [torch.randn(batch_size, groups, height, width) * 2.0 + 0.5]


def get_init_inputs():
    return [(height, width)]
