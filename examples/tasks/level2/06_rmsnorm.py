"""RMS normalization with a learned weight: out = x * rsqrt(mean(x^2, dim=-1) + eps) * weight, on x of shape
(8, 30, 96) with a weight of shape (96,)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Root-mean-square normalization over the last dimension, scaled by a learned weight."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = torch.mean(x * x, dim=-1, keepdim=True)
        return x * torch.rsqrt(ms + self.eps) * self.weight


batch_size = 8
seq_len = 30
dim = 96
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, eps]
