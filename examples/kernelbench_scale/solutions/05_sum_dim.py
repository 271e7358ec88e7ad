"""Sum over one dimension (keepdim) in Triton, for a long middle dimension (128 x 4096 x 4095, dim 1).

Plan: view the contiguous input as (outer, R, inner) around the reduced dimension. Each program owns one
outer index and BLOCK_C consecutive inner columns (coalesced loads) and loops over R in BLOCK_R-row tiles,
accumulating the tiles elementwise in float32; one tl.sum over the tile's rows at the end. 64-bit offsets
(the input has 2.1e9 elements).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim_kernel(x_ptr, out_ptr, R, inner, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < inner
    base = x_ptr + outer * R * inner
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < R) & col_mask[None, :]
        acc += tl.load(base + rows[:, None].to(tl.int64) * inner + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + outer * inner + cols, total, mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        outer, R, inner = math.prod(x.shape[:d]), x.shape[d], math.prod(x.shape[d + 1:])
        shape = list(x.shape)
        shape[d] = 1
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        BLOCK_C = min(128, triton.next_power_of_2(inner))
        BLOCK_R = 32
        grid = (outer, triton.cdiv(inner, BLOCK_C))
        sum_dim_kernel[grid](x, out, R, inner, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=4)
        return out
