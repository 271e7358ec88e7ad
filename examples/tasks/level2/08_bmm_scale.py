"""Batched matrix multiplication followed by a constant scale: out = torch.bmm(A, B) * scale with A of shape
(4, 50, 40) and B of shape (4, 40, 60), giving (4, 50, 60)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matmul, then multiplication by a scalar."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B) * self.scale


batch_size = 4
M = 50
K = 40
N = 60
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return [scale]
