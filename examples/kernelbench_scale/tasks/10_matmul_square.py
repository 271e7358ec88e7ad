"""Square matrix multiplication C = A @ B with A, B of shape (4096, 4096) float32 (KernelBench level 1
square matmul at its published size): 64 MiB per matrix, 137 GFLOP."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul(A, B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
