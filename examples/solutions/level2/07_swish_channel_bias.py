"""Swish (x * sigmoid(x)) + per-channel bias, fused in Triton.

Plan: flat elementwise kernel over the contiguous input. The channel of a flat index is
(index // inner) % C, where inner is the product of the dimensions after the channel dimension, so the
(C, 1, ..., 1) bias is gathered without being expanded. The sigmoid uses e = exp(-|x|) so it never
overflows: sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) otherwise.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_bias_kernel(x_ptr, b_ptr, out_ptr, n_elements, C, INNER, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ch = (offs // INNER) % C
    b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp(-tl.abs(x))
    sig = tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    tl.store(out_ptr + offs, x * sig + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, bias_shape: tuple):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.bias
        C = bias.shape[0]
        if bias.numel() != C or bias.dim() > x.dim():
            raise NotImplementedError("the bias must be shaped (C, 1, ..., 1)")
        channel_dim = x.dim() - bias.dim()
        if x.shape[channel_dim] != C:
            raise ValueError("bias channels do not match the input")
        x = x.contiguous()
        inner = math.prod(x.shape[channel_dim + 1:])
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        swish_bias_kernel[grid](x, bias.contiguous(), out, n, C, inner, BLOCK=BLOCK)
        return out
