"""Softmax without the max-subtraction: caught by the wide-range input trials (eval.mismatch).

Task 03_softmax. Pass 1 sums exp(x) straight away, pass 2 writes exp(x) / sum: one running value
instead of a running max and sum, and no rescaling. Exact enough on the task's own randn inputs (the
largest of 393,216 normals is about 5, far from float32's exp overflow at 88.7), which is all a naive
harness that draws from get_inputs() ever sees. The engine also draws wide-range inputs
(sign x 10^U[-2, 2)): exp(100) is inf, inf / inf is NaN, and the reference is finite.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_no_max_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    out_row = out_ptr + row * stride_row
    lanes = tl.arange(0, BLOCK)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(x)
    inv = 1.0 / tl.sum(s, axis=0)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + cols, tl.exp(x) * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[1]
        rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK = min(4096, triton.next_power_of_2(n_cols))
        softmax_no_max_kernel[(rows,)](x, out, n_cols, n_cols, BLOCK=BLOCK, num_warps=8)
        return out
