"""Mean squared error of two (32768, 32768) float32 tensors (KernelBench level 1 MSELoss at its published
size): 4 GiB per input, a scalar out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean((predictions - targets) ** 2)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


batch_size = 32768
dim = 32768


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
