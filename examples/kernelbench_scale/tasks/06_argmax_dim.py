"""Argmax over dim 1 of a (128, 4096, 4095) float32 tensor (KernelBench level 1 argmax over a dimension
at its published size): 8 GiB in, 4 MiB of int64 out, shape (128, 4095)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.argmax over one dimension (int64 indices; compared exactly)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
