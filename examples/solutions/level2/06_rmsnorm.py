"""RMSNorm in Triton.

Plan: view the input as (rows, D). Each program owns BLOCK_M rows: pass 1 streams the row in BLOCK_N
chunks accumulating x^2 in fp32 to get rsqrt(mean(x^2) + eps); pass 2 streams it again and writes
x * rstd * weight.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, M, D, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < D)
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.math.rsqrt(tl.sum(acc, axis=1) / D + eps)
    for n0 in range(0, D, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * D + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        D = x.shape[-1]
        M = x.numel() // D
        out = torch.empty_like(x)
        BLOCK_M = 16
        BLOCK_N = min(triton.next_power_of_2(D), 512)
        grid = (triton.cdiv(M, BLOCK_M),)
        rmsnorm_kernel[grid](x, self.weight.contiguous(), out, M, D, float(self.eps), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
        return out
