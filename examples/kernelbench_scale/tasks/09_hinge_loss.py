"""Hinge loss of (32768, 32768) float32 predictions against +-1 targets of the same shape (KernelBench
level 1 HingeLoss at its published size; KernelBench's targets are (batch,) broadcast along the last dim,
here they have the predictions' shape): 4 GiB per input, a scalar out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean(torch.clamp(1 - predictions * targets, min=0))."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
dim = 32768


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randint(0, 2, (batch_size, dim)).float() * 2 - 1
    return [predictions, targets]


def get_init_inputs():
    return []
