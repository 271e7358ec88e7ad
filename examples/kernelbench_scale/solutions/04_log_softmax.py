"""Row log-softmax in Triton for rows far longer than a block (4096 x 393216).

Plan: as the softmax: one program per row, pass 1 an online per-lane max and sum of exp(x - max) over
BLOCK chunks, combined across lanes; pass 2 writes x - max - log(sum). float32 throughout.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    out_row = out_ptr + row * stride_row
    lanes = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -1.0e30, dtype=tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    shift = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, x - shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[1]
        rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK = min(4096, triton.next_power_of_2(n_cols))
        log_softmax_kernel[(rows,)](x, out, n_cols, n_cols, BLOCK=BLOCK, num_warps=8)
        return out
