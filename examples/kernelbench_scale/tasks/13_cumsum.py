"""Inclusive cumulative sum over dim 1 of a (32768, 32768) float32 tensor (KernelBench level 1 cumsum at
its published size): 4 GiB in, 4 GiB out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.cumsum(x, dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 32768
input_dim = 32768
scan_dim = 1


def get_inputs():
    return [torch.rand(batch_size, input_dim)]


def get_init_inputs():
    return [scan_dim]
