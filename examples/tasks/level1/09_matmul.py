"""Matrix multiplication of two inputs: out = torch.matmul(A, B) with A of shape (100, 120) and
B of shape (120, 72), giving (100, 72)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Plain dense matrix product C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 100
K = 120
N = 72


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
