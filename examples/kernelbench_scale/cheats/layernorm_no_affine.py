"""LayerNorm that never reads weight and bias: caught by the perturbed parameters (eval.mismatch).

Task 07_layernorm. The same chunked statistics as the honest solution, but the last kernel writes
(x - mean) * rstd and skips two loads per element (32 MiB of weight and bias per call). A naive
harness builds Model and ModelNew after the same seed, so weight is all ones and bias all zeros and
the missing affine is an identity. The engine perturbs every floating parameter of the reference
before it copies them into ModelNew, so every trial differs.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_chunk_stats_kernel(x_ptr, sum_ptr, m2_ptr, D, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = offs < D
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0).to(tl.float32)
    count = tl.minimum(D - chunk * CHUNK, CHUNK).to(tl.float32)
    total = tl.sum(x, axis=0)
    d = tl.where(mask, x - total / count, 0.0)
    tl.store(sum_ptr + row * n_chunks + chunk, total)
    tl.store(m2_ptr + row * n_chunks + chunk, tl.sum(d * d, axis=0))


@triton.jit
def ln_combine_kernel(sum_ptr, m2_ptr, mean_ptr, rstd_ptr, D, n_chunks, eps,
                      CHUNK: tl.constexpr, BLOCK_P: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK_P)
    acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    for p0 in range(0, n_chunks, BLOCK_P):
        p = p0 + lanes
        acc += tl.load(sum_ptr + row * n_chunks + p, mask=p < n_chunks, other=0.0)
    mean = tl.sum(acc, axis=0) / D
    acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    for p0 in range(0, n_chunks, BLOCK_P):
        p = p0 + lanes
        mask = p < n_chunks
        s = tl.load(sum_ptr + row * n_chunks + p, mask=mask, other=0.0)
        m2 = tl.load(m2_ptr + row * n_chunks + p, mask=mask, other=0.0)
        count = tl.maximum(tl.minimum(D - p * CHUNK, CHUNK), 1).to(tl.float32)
        dev = s / count - mean
        acc += tl.where(mask, m2 + count * dev * dev, 0.0)
    var = tl.sum(acc, axis=0) / D
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


@triton.jit
def ln_normalize_kernel(x_ptr, mean_ptr, rstd_ptr, out_ptr, D, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * CHUNK + tl.arange(0, CHUNK)
    mask = offs < D
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * D + offs, (x - mean) * rstd, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # parameters exist (and get copied), never read

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        D = math.prod(self.ln.normalized_shape)
        rows = x.numel() // D
        CHUNK = min(4096, triton.next_power_of_2(D))
        n_chunks = triton.cdiv(D, CHUNK)
        sums = torch.empty((rows, n_chunks), dtype=torch.float32, device=x.device)
        m2s = torch.empty((rows, n_chunks), dtype=torch.float32, device=x.device)
        mean = torch.empty((rows,), dtype=torch.float32, device=x.device)
        rstd = torch.empty((rows,), dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        ln_chunk_stats_kernel[(rows, n_chunks)](x, sums, m2s, D, n_chunks, CHUNK=CHUNK, num_warps=8)
        BLOCK_P = min(1024, triton.next_power_of_2(n_chunks))
        ln_combine_kernel[(rows,)](sums, m2s, mean, rstd, D, n_chunks, float(self.ln.eps),
                                   CHUNK=CHUNK, BLOCK_P=BLOCK_P, num_warps=4)
        ln_normalize_kernel[(rows, n_chunks)](x, mean, rstd, out, D, CHUNK=CHUNK, num_warps=8)
        return out
