"""LogSoftmax over dim 1 of a (4096, 393216) float32 tensor (KernelBench level 1 LogSoftmax at its
published size): 6 GiB in, 6 GiB out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row log-softmax."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
