"""LeakyReLU applied elementwise: out = x if x >= 0 else negative_slope * x, on a (12, 3, 700) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise leaky rectified linear unit with a configurable negative slope."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 12
channels = 3
length = 700
negative_slope = 0.05


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [negative_slope]
