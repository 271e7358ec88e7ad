"""Linear layer, ReLU, then a sum over the feature dimension: out = relu(x @ W^T + b).sum(dim=1, keepdim=True)
with nn.Linear(100, 50) on x of shape (70, 100), giving (70, 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear -> ReLU -> row-wise sum."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.relu(x)
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 70
in_features = 100
out_features = 50


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
