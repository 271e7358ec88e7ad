"""GEMM + bias + ReLU (KernelBench level 2 style, Gemm_Add_ReLU at its published size): nn.Linear(8192,
8192, bias=False) on a (1024, 8192) float32 input, then + a (8192,) bias parameter, then ReLU. Input
32 MiB, weight 256 MiB, output 32 MiB, 137 GFLOP."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W^T + bias)."""

    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        x = x + self.bias
        return torch.relu(x)


batch_size = 1024
in_features = 8192
out_features = 8192
bias_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
