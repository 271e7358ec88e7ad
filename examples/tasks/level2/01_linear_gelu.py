"""Linear layer followed by exact (erf) GELU: out = gelu(x @ W^T + b) with nn.Linear(120, 80) applied
to x of shape (48, 120), giving (48, 80)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear then GELU (erf form)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        return torch.nn.functional.gelu(x)


batch_size = 48
in_features = 120
out_features = 80


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
