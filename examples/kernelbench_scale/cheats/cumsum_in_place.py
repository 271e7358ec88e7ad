"""Cumsum written in place into its input, which it returns: caught by the inputs-unchanged check (eval.input_mutated).

Task 13_cumsum. Each row is scanned chunk by chunk and every chunk is stored back over the chunk it
was loaded from, which is safe within the program, so the returned values are right. A naive harness
computes the reference first and then calls the candidate on the same tensors, so it never sees
that the caller's input was destroyed. The engine keeps the inputs as they were and compares them,
bit for bit, after every call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_in_place_kernel(x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    lanes = tl.arange(0, BLOCK)
    carry = tl.zeros((1,), dtype=tl.float64)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float64)
        tl.store(x_row + cols, (tl.cumsum(x, axis=0) + carry).to(tl.float32), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()  # x itself when it is contiguous: the kernel writes into the caller's tensor
        n_cols = x.shape[-1]
        rows = x.numel() // n_cols
        BLOCK = min(2048, triton.next_power_of_2(n_cols))
        cumsum_in_place_kernel[(rows,)](x, n_cols, BLOCK=BLOCK, num_warps=8)
        return x
