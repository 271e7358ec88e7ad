"""Linear + ReLU + row sum, fused in Triton.

Plan: each program owns BLOCK_M rows of x and sweeps all output features in BLOCK_N tiles. For each tile
it runs the K loop of a GEMM against W^T (read through swapped strides), adds the bias, applies ReLU,
zeroes the columns past out_features, and folds the tile into a per-row fp32 running sum. Only the
(M, 1) result is written: the (M, N) activation never touches memory, and no atomics are needed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_sum_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(
                x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk,
                mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0,
            )
            b = tl.load(
                w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn,
                mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0,
            )
            acc += tl.dot(a, b, input_precision="ieee")
        bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
        y = tl.maximum(acc + bias[None, :], 0.0)
        y = tl.where(rn[None, :] < N, y, 0.0)
        row_sum += tl.sum(y, axis=1)
    tl.store(out_ptr + rm, row_sum, mask=rm < M)


def _block(n: int) -> int:
    return max(16, min(triton.next_power_of_2(n), 64))  # tl.dot needs block dims >= 16


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameter holder only; never called in forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.linear.weight
        b = self.linear.bias.contiguous()
        N, K = w.shape
        M = x.shape[0]
        out = torch.empty((M, 1), dtype=x.dtype, device=x.device)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M), _block(N), _block(K)
        grid = (triton.cdiv(M, BLOCK_M),)
        linear_relu_sum_kernel[grid](
            x, w, b, out, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return out
