"""One decode step's attention over a static KV cache, as a Triton kernel that reads only the keys a
row attends to (rollout.TRITON_DECODE).

A static cache is as long as the prompt's padded width plus max_new_tokens, and SDPA reads all of
it at every decode step of every layer, the slots not yet written included: on an H100 a compiled
step of 256 sequences took 11.7 ms over a 1,280-slot cache and about 21 ms over RL's 3,200 (45 s
for 2,176 steps), so the cache's length, not the model, set the cost. Here each (sequence,
key/value head) program loops over the keys from the row's first attended one (after its left
padding) to its last (the current position), found in the mask on the device: the loop bounds are
data, so a CUDA graph replays the same kernel at every step while the work grows with the text.
The query heads that share a key/value head (grouped-query attention) are one block of the kernel's
matrix products, padded to the 16 rows tl.dot needs, so each key and value is read once for them;
the products are in float32 (Triton's interpreter, which CI runs, multiplies bfloat16 blocks wrong).
The mask is applied inside the loop too: the bounds only prune, they decide nothing.
With it (H100, 2026-12-06): the compiled benchmark 19,768 tokens/s against 11,802, RL's generation
16.6-19.3 s instead of 45 (docs/results/2026-12-06-h100-triton-decode.md).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_KEYS = 64


@triton.jit
def _decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    mask_ptr,
    out_ptr,
    keys_total,
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_mb,
    stride_ob,
    stride_oh,
    SCALE: tl.constexpr,  # a constant: as an argument under torch.compile it came as float64
    GROUP: tl.constexpr,
    GROUP_ROWS: tl.constexpr,
    DIM: tl.constexpr,
    BLOCK: tl.constexpr,
    SCAN: tl.constexpr,
    PRECISION: tl.constexpr,
):
    row = tl.program_id(0)
    kv_head = tl.program_id(1)
    heads = kv_head * GROUP + tl.arange(0, GROUP_ROWS)
    in_group = tl.arange(0, GROUP_ROWS) < GROUP
    dims = tl.arange(0, DIM)
    q = tl.load(q_ptr + row * stride_qb + heads[:, None] * stride_qh + dims[None, :], mask=in_group[:, None], other=0.0)
    # The row's attended keys lie within [first, last): where its left padding ends, and one past its
    # current position. Found here (a scan of the row's mask bytes), not by torch ops around the launch,
    # which cost more launches per layer than the kernel itself.
    first = tl.zeros([], tl.int32) + keys_total  # tensors from the start: loop-carried values keep one type
    last = tl.zeros([], tl.int32)
    for start in range(0, keys_total, SCAN):
        keys = start + tl.arange(0, SCAN)
        attended = tl.load(mask_ptr + row * stride_mb + keys, mask=keys < keys_total, other=0) != 0
        first = tl.minimum(first, tl.min(tl.where(attended, keys, keys_total)))
        last = tl.maximum(last, tl.max(tl.where(attended, keys + 1, 0)))
    top = tl.full([GROUP_ROWS], float("-inf"), tl.float32)
    total = tl.zeros([GROUP_ROWS], tl.float32)
    acc = tl.zeros([GROUP_ROWS, DIM], tl.float32)
    k_row = k_ptr + row * stride_kb + kv_head * stride_kh
    v_row = v_ptr + row * stride_vb + kv_head * stride_vh
    for start in range(first, last, BLOCK):
        keys = start + tl.arange(0, BLOCK)
        attended = tl.load(mask_ptr + row * stride_mb + keys, mask=keys < last, other=0) != 0  # none past last
        k = tl.load(k_row + keys[:, None] * stride_kn + dims[None, :], mask=attended[:, None], other=0.0)
        v = tl.load(v_row + keys[:, None] * stride_vn + dims[None, :], mask=attended[:, None], other=0.0)
        scores = tl.dot(q.to(tl.float32), tl.trans(k.to(tl.float32)), input_precision=PRECISION) * SCALE
        scores = tl.where(attended[None, :], scores, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, axis=1))
        safe_top = tl.where(new_top == float("-inf"), 0.0, new_top)  # a block with no attended key
        weights = tl.exp(scores - safe_top[:, None])
        rescale = tl.exp(top - safe_top)
        total = total * rescale + tl.sum(weights, axis=1)
        acc = acc * rescale[:, None] + tl.dot(weights, v.to(tl.float32), input_precision=PRECISION)
        top = new_top
    out = acc / tl.where(total > 0, total, 1.0)[:, None]
    tl.store(
        out_ptr + row * stride_ob + heads[:, None] * stride_oh + dims[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=in_group[:, None],
    )


def applies(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None) -> bool:
    """A decode step this kernel takes: one query token, a boolean mask shared by the heads
    (batch, 1, 1, keys), head dims a power of two of 16 or more, rows of contiguous elements."""
    batch, heads, tokens, dim = query.shape
    return (
        tokens == 1
        and mask is not None
        and mask.dtype == torch.bool
        and mask.shape == (batch, 1, 1, key.shape[2])
        and heads % key.shape[1] == 0
        and dim >= 16
        and dim & (dim - 1) == 0
        and query.stride(-1) == key.stride(-1) == value.stride(-1) == 1
    )


def decode_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    block: int = BLOCK_KEYS,
    warps: int = 4,
    stages: int = 3,
) -> torch.Tensor:
    """softmax(q k^T * scale) v over the keys `mask` lets each row attend, for `query` (batch, heads,
    1, dim) against the cache's `key`/`value` (batch, kv_heads, keys, dim); returns (batch, 1, heads,
    dim), as transformers' attention functions do. Only for calls `applies` accepts. `block` (keys a
    loop iteration), `warps` and `stages` (the launch's): rollout_bench --attention-check times others."""
    batch, heads, _, dim = query.shape
    kv_heads, keys = key.shape[1], key.shape[2]
    group = heads // kv_heads
    attended = mask.reshape(batch, keys)
    if attended.stride(-1) != 1:
        attended = attended.contiguous()
    out = torch.empty(batch, 1, heads, dim, dtype=query.dtype, device=query.device)
    _decode_kernel[(batch, kv_heads)](
        query,
        key,
        value,
        attended,
        out,
        keys,
        query.stride(0),
        query.stride(1),
        key.stride(0),
        key.stride(1),
        key.stride(2),
        value.stride(0),
        value.stride(1),
        value.stride(2),
        attended.stride(0),
        out.stride(0),
        out.stride(2),
        SCALE=scale,
        GROUP=group,
        GROUP_ROWS=max(16, triton.next_power_of_2(group)),
        DIM=dim,
        BLOCK=block,
        SCAN=1024,
        PRECISION="ieee" if query.dtype == torch.float32 else "tf32",  # tf32 holds bfloat16 and float16 exactly
        num_warps=warps,
        num_stages=stages,
    )
    return out
