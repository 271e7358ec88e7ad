"""Sum over dim 1 (keepdim) of a (128, 4096, 4095) float32 tensor (KernelBench level 1 sum reduction
over a dimension at its published size): 8 GiB in, 2 MiB out, shape (128, 1, 4095)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sum over one dimension, keeping it."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
