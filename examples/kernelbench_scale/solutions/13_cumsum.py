"""Inclusive cumsum along the last dimension (32768 x 32768, dim 1) in Triton.

Plan: one program per row; the row is scanned in BLOCK-element chunks with tl.cumsum, each chunk
offset by the running total of the chunks before it. The scan and the running total are kept in
float64 and rounded to float32 once per element: a float32 carry over 32768 elements of mixed sign
errs by up to ~1e-4 near zero crossings (a random walk of ~181 in magnitude), the tolerance itself,
while torch's CPU cumsum accumulates in double. Memory-bound (one read, one write), so the float64
arithmetic is hidden.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    out_row = out_ptr + row * n_cols
    lanes = tl.arange(0, BLOCK)
    carry = tl.zeros((1,), dtype=tl.float64)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float64)
        scan = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + cols, scan.to(tl.float32), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim % x.dim() != x.dim() - 1:
            raise ValueError(f"this kernel scans the last dimension; got dim={self.dim} for a {x.dim()}-d input")
        x = x.contiguous()
        n_cols = x.shape[-1]
        rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK = min(2048, triton.next_power_of_2(n_cols))
        cumsum_kernel[(rows,)](x, out, n_cols, BLOCK=BLOCK, num_warps=8)
        return out
