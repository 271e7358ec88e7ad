"""Linear + GELU (erf) fused in Triton.

Plan: one tiled GEMM kernel computes x @ W^T: the nn.Linear weight (out_features, in_features) is read as
the (K, N) operand simply by swapping its strides, so no transpose is materialized. Tiles accumulate tl.dot
in fp32 (IEEE precision); the epilogue adds the bias and applies the exact GELU
0.5 * y * (1 + erf(y / sqrt(2))) before the single store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_gelu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
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
    y = acc + bias[None, :]
    y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, y, mask=mask)


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
        lead = x.shape[:-1]
        x2 = x.reshape(-1, K)
        M = x2.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M), _block(N), _block(K)
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_gelu_kernel[grid](
            x2, w, b, out, M, N, K,
            x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return out.reshape(*lead, N)
