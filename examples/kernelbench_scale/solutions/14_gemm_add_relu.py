"""relu(x @ W^T + bias) in one Triton kernel (1024 x 8192 input, nn.Linear(8192, 8192, bias=False) and an
(8192,) bias parameter).

Plan: the tiled GEMM (tl.dot, IEEE precision, float32 accumulation, grouped program order) reads the
nn.Linear weight (N, K) as the (K, N) operand by swapping its strides, so no transpose is made; the
epilogue adds the bias and applies ReLU before the single store. Parameters are registered as in Model
(gemm.weight, then bias) so the engine can copy them in.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_add_relu_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                         stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * grid_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None].to(tl.int64) * stride_xm + rk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :].to(tl.int64) * stride_wn + rk[:, None] * stride_wk,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    out = out_ptr + rm[:, None].to(tl.int64) * stride_om + rn[None, :] * stride_on
    tl.store(out, y, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _block(n: int, cap: int) -> int:
    return max(16, min(cap, triton.next_power_of_2(n)))  # tl.dot needs every block dim >= 16


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)  # parameter holder only; never called
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.gemm.weight
        bias = self.bias.contiguous()
        N, K = w.shape
        x2 = x.reshape(-1, K)
        M = x2.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M, 128), _block(N, 128), _block(K, 32)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        gemm_add_relu_kernel[grid](x2, w, bias, out, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
                                   out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                   BLOCK_K=BLOCK_K, GROUP_M=8, num_warps=8, num_stages=3)
        return out.reshape(*x.shape[:-1], N)
