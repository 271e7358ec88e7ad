"""LayerNorm + residual add + ReLU, fused in Triton.

Plan: view x and residual as (rows, D). Each program owns BLOCK_M rows and streams the D features in
BLOCK_N chunks three times: (1) mean, (2) biased variance from squared deviations (two-pass, fp32),
(3) normalize with rsqrt(var + eps), apply LayerNorm's weight and bias, add the residual, ReLU, store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_residual_relu_kernel(
    x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, M, D, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < D)
        acc += tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=1) / D
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < D)
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean[:, None], 0.0)
        acc += d * d
    rstd = tl.math.rsqrt(tl.sum(acc, axis=1) / D + eps)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * D + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        res = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        y = tl.maximum(y + res, 0.0)
        tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)  # parameter holder only; never called in forward

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.expand_as(x).contiguous()
        D = x.shape[-1]
        M = x.numel() // D
        out = torch.empty_like(x)
        BLOCK_M = 8
        BLOCK_N = min(triton.next_power_of_2(D), 512)
        grid = (triton.cdiv(M, BLOCK_M),)
        layernorm_residual_relu_kernel[grid](
            x, residual, self.norm.weight.contiguous(), self.norm.bias.contiguous(), out,
            M, D, float(self.norm.eps), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return out
