"""Mean over the last dimension: out = torch.mean(x, dim=-1) for x of shape (10, 17, 333), giving (10, 17)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Averages a tensor over its last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1)


batch_size = 10
rows = 17
dim = 333


def get_inputs():
    return [torch.randn(batch_size, rows, dim)]


def get_init_inputs():
    return []
