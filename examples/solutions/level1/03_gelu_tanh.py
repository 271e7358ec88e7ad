"""GELU (tanh approximation) in Triton.

Plan: flat elementwise kernel. tanh is built from exp in an overflow-free form:
tanh(z) = sign(z) * (1 - e) / (1 + e) with e = exp(-2|z|), so large |z| never produces inf.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    z = sqrt_2_over_pi * (x + 0.044715 * x * x * x)
    e = tl.exp(-2.0 * tl.abs(z))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(z >= 0, t, -t)
    y = 0.5 * x * (1.0 + t)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        gelu_tanh_kernel[grid](x, out, n, BLOCK=BLOCK)
        return out
