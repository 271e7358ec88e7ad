"""Row softmax in Triton for rows far longer than a block (4096 x 393216).

Plan: one program per row. Pass 1 streams the row in BLOCK chunks and keeps, per lane, an online
running max m and a running sum s of exp(x - m), rescaling s when m grows; the lanes are then combined
into the row's max and sum. Pass 2 streams the row again and writes exp(x - max) / sum. Two reads and
one write of the row; the running max starts at a finite -1e30 so that masked lanes never compute
exp(-inf - -inf). float32 throughout.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
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
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv = 1.0 / row_sum
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + cols, tl.exp(x - row_max) * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[1]
        rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK = min(4096, triton.next_power_of_2(n_cols))
        softmax_kernel[(rows,)](x, out, n_cols, n_cols, BLOCK=BLOCK, num_warps=8)
        return out
