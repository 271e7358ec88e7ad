"""Matmul that stores nothing from its 9th call on: caught by spot-checked timed calls (eval.timed_output).

Task 10_matmul_square. A naive harness checks a few calls (5 here) and warms up (3), then times the
same inputs 100 times; so from the 9th call on the kernel runs no K loop and stores nothing, and the
output is a fresh torch.empty that the caching allocator usually hands back holding the previous
call's product. The call count lives in a device buffer that a one-thread kernel bumps after each
call, so forward keeps no Python state a static check would see. The engine feeds every timed call
inputs it has never seen and compares some timed outputs, always the last one, with the reference.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

HONEST_CALLS = 8  # checked trials plus warm-up in a naive harness


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, calls_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, HONEST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    live = tl.load(calls_ptr) < HONEST
    k_end = tl.where(live, K, 0)
    m_end = tl.where(live, M, 0)  # rows stored: none once the honest calls are spent
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, k_end, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None].to(tl.int64) * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    c = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc, mask=(rm[:, None] < m_end) & (rn[None, :] < N))


@triton.jit
def count_call_kernel(calls_ptr):
    tl.store(calls_ptr, tl.load(calls_ptr) + 1)


def _block(n: int, cap: int) -> int:
    return max(16, min(cap, triton.next_power_of_2(n)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(1, dtype=torch.int32), persistent=False)

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M, 128), _block(N, 128), _block(K, 32)
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        matmul_kernel[grid](A, B, C, self.calls, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                            C.stride(0), C.stride(1), HONEST=HONEST_CALLS, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                            BLOCK_K=BLOCK_K, num_warps=8, num_stages=3)
        count_call_kernel[(1,)](self.calls)
        return C
