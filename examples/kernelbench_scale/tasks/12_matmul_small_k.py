"""Matrix multiplication with a small inner dimension: C = A @ B with A (32768, 64) and B (64, 32768),
float32 (KernelBench level 1 matmul with small K at its published size): 8 MiB per input, C 4 GiB,
137 GFLOP; bound by writing C."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul(A, B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 32768
N = 32768
K = 64


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
