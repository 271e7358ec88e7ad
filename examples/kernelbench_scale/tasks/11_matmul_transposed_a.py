"""Matrix multiplication with A transposed: C = A.T @ B with A of shape (8192, 2048) and B of shape
(8192, 4096), float32 (KernelBench level 1 matmul with transposed A at its published size): A 64 MiB,
B 128 MiB, C (2048, 4096) 32 MiB, 137 GFLOP."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul(A.T, B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


M = 2048
K = 8192
N = 4096


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
