"""Sum reduction over a middle dimension: out = torch.sum(x, dim=1, keepdim=True) for x of shape
(12, 230, 21), giving (12, 1, 21)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Sums a tensor over one dimension, keeping that dimension with size 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 12
reduce_size = 230
inner = 21
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, reduce_size, inner)]


def get_init_inputs():
    return [reduce_dim]
