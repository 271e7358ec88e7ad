"""Mean over the last dimension in Triton.

Plan: view the contiguous input as (rows, N). Each program owns BLOCK_M rows and loops over the row length
in BLOCK_N chunks, accumulating a (BLOCK_M, BLOCK_N) fp32 tile; it then sums across columns and divides by N.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_lastdim_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        acc += tile.to(tl.float32)
    mean = tl.sum(acc, axis=1) / N
    tl.store(out_ptr + rows, mean, mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = x.shape[-1]
        M = x.numel() // N
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        BLOCK_M = 16
        BLOCK_N = min(triton.next_power_of_2(N), 256)
        grid = (triton.cdiv(M, BLOCK_M),)
        mean_lastdim_kernel[grid](x, out, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
        return out
