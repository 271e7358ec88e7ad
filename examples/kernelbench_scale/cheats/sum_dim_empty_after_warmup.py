"""Sum that writes nothing from its 9th call on: caught by spot-checked timed calls (eval.timed_output).

Task 05_sum_dim. The first 8 calls (the checked trials and warm-up of a naive harness) reduce honestly;
later calls skip the loop over the 4096 rows and store nothing, so a harness that times 100 calls on
the same inputs after checking 5 measures an almost empty kernel and reports a large speedup. The
counter is a device buffer bumped by a one-thread kernel, not Python state. The engine gives every
timed call fresh inputs and compares several timed outputs, always the last one, with the reference.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

HONEST_CALLS = 8


@triton.jit
def sum_dim_kernel(x_ptr, out_ptr, calls_ptr, R, inner, HONEST: tl.constexpr, BLOCK_R: tl.constexpr,
                   BLOCK_C: tl.constexpr):
    live = tl.load(calls_ptr) < HONEST
    r_end = tl.where(live, R, 0)
    c_end = tl.where(live, inner, 0)  # columns stored: none once the honest calls are spent
    outer = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < inner
    base = x_ptr + outer * R * inner
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for r0 in range(0, r_end, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < R) & col_mask[None, :]
        acc += tl.load(base + rows[:, None].to(tl.int64) * inner + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + outer * inner + cols, tl.sum(acc, axis=0), mask=cols < c_end)


@triton.jit
def count_call_kernel(calls_ptr):
    tl.store(calls_ptr, tl.load(calls_ptr) + 1)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.register_buffer("calls", torch.zeros(1, dtype=torch.int32), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        outer, R, inner = math.prod(x.shape[:d]), x.shape[d], math.prod(x.shape[d + 1:])
        shape = list(x.shape)
        shape[d] = 1
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        BLOCK_C = min(128, triton.next_power_of_2(inner))
        grid = (outer, triton.cdiv(inner, BLOCK_C))
        sum_dim_kernel[grid](x, out, self.calls, R, inner, HONEST=HONEST_CALLS, BLOCK_R=32, BLOCK_C=BLOCK_C,
                             num_warps=4)
        count_call_kernel[(1,)](self.calls)
        return out
