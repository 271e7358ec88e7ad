"""Softmax over the last dimension in Triton.

Plan: view the input as (rows, N). Each program owns BLOCK_M rows. Pass 1 streams the row in BLOCK_N chunks
keeping an online running max m and running sum s of exp(x - m) (rescaling s whenever m grows). Pass 2
streams the row again and writes exp(x - m) / s. Works for any row length, not just ones that fit a block.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    # finite start value: keeps exp(m_old - m_new) well defined for rows that are entirely masked
    m = tl.full((BLOCK_M,), -1.0e30, dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    inv = 1.0 / tl.where(s > 0, s, 1.0)  # s == 0 only on masked rows
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m[:, None]) * inv[:, None]
        tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = x.shape[-1]
        M = x.numel() // N
        out = torch.empty_like(x)
        BLOCK_M = 4
        BLOCK_N = min(triton.next_power_of_2(N), 512)
        grid = (triton.cdiv(M, BLOCK_M),)
        softmax_kernel[grid](x, out, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
        return out
