"""LayerNorm (affine) in Triton.

Plan: flatten the normalized shape to D features and everything before it to rows. Each program owns
BLOCK_M rows and makes three streaming passes over the D features in BLOCK_N chunks: (1) sum -> mean,
(2) sum of squared deviations -> biased variance (two-pass for accuracy), (3) normalize with
rsqrt(var + eps) and apply the flattened weight and bias. All statistics are fp32.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, D, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < D)
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x
    mean = tl.sum(acc, axis=1) / D
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < D)
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean[:, None], 0.0)
        acc += d * d
    var = tl.sum(acc, axis=1) / D
    rstd = tl.math.rsqrt(var + eps)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * D + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)  # parameter holder only; never called in forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        D = math.prod(self.ln.normalized_shape)
        M = x.numel() // D
        out = torch.empty_like(x)
        w = self.ln.weight.contiguous()
        b = self.ln.bias.contiguous()
        BLOCK_M = 8
        BLOCK_N = min(triton.next_power_of_2(D), 512)
        grid = (triton.cdiv(M, BLOCK_M),)
        layernorm_kernel[grid](x, w, b, out, M, D, float(self.ln.eps), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
        return out
