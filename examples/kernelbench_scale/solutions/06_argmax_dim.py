"""Argmax over one dimension in Triton, for a long middle dimension (128 x 4096 x 4095, dim 1).

Plan: the same (outer, R, inner) view and tiling as the sum: each program owns one outer index and
BLOCK_C inner columns and loops over R in BLOCK_R-row tiles, keeping per column the best value and its
index. A tile's max and its first index come from one tl.max(..., return_indices=True); a later tile
replaces the best only when strictly greater, so ties go to the first index, as torch.argmax does.
Masked elements load as -inf. int64 indices out.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_dim_kernel(x_ptr, out_ptr, R, inner, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < inner
    base = x_ptr + outer * R * inner
    best = tl.full((BLOCK_C,), float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros((BLOCK_C,), dtype=tl.int32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < R) & col_mask[None, :]
        x = tl.load(base + rows[:, None].to(tl.int64) * inner + cols[None, :], mask=mask,
                    other=float("-inf")).to(tl.float32)
        tile_max, tile_idx = tl.max(x, axis=0, return_indices=True, return_indices_tie_break_left=True)
        better = tile_max > best
        best = tl.where(better, tile_max, best)
        best_idx = tl.where(better, r0 + tile_idx, best_idx)
    tl.store(out_ptr + outer * inner + cols, best_idx.to(tl.int64), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        outer, R, inner = math.prod(x.shape[:d]), x.shape[d], math.prod(x.shape[d + 1:])
        shape = list(x.shape[:d]) + list(x.shape[d + 1:])
        out = torch.empty(shape, dtype=torch.int64, device=x.device)
        BLOCK_C = min(128, triton.next_power_of_2(inner))
        BLOCK_R = 32
        grid = (outer, triton.cdiv(inner, BLOCK_C))
        argmax_dim_kernel[grid](x, out, R, inner, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=4)
        return out
