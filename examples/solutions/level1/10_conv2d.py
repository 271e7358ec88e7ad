"""Conv2d (with bias) in Triton.

Plan: implicit GEMM. The convolution is a matrix product out[oc, p] = sum_k W[oc, k] * X[k, p], where
k = (c, kh, kw) runs over the C*KH*KW reduction and p = (n, oh, ow) over every output pixel of the batch.
Each program owns a BLOCK_OC x BLOCK_P tile of that product. Per BLOCK_K step it gathers the im2col tile of
X directly from the input (padding taps masked to zero, nothing materialized in memory), loads the matching
weight tile (the weight is contiguous, so row oc is simply W.flat[oc*Kdim : (oc+1)*Kdim]) and accumulates
tl.dot in fp32 (IEEE precision). Bias is added in the epilogue. Stride, padding and dilation come from the
module; groups must be 1.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_igemm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    N, C, H, W, OC, OH, OW, KH, KW,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    HAS_BIAS: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_oc = tl.program_id(0)
    pid_p = tl.program_id(1)
    oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    oc_mask = oc < OC
    P = N * OH * OW
    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    p_mask = p < P
    n = p // (OH * OW)
    pix = p % (OH * OW)
    oh = pix // OW
    ow = pix % OW
    KDIM = C * KH * KW
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    for k0 in range(0, KDIM, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_mask = k < KDIM
        c = k // (KH * KW)
        r = k % (KH * KW)
        kh = r // KW
        kw = r % KW
        ih = oh[None, :] * stride_h - pad_h + kh[:, None] * dil_h
        iw = ow[None, :] * stride_w - pad_w + kw[:, None] * dil_w
        x_mask = k_mask[:, None] & p_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_offs = ((n[None, :] * C + c[:, None]) * H + ih) * W + iw
        xt = tl.load(x_ptr + x_offs, mask=x_mask, other=0.0)
        wt = tl.load(w_ptr + oc[:, None] * KDIM + k[None, :], mask=oc_mask[:, None] & k_mask[None, :], other=0.0)
        acc += tl.dot(wt, xt, input_precision="ieee")
    if HAS_BIAS:
        bv = tl.load(b_ptr + oc, mask=oc_mask, other=0.0).to(tl.float32)
        acc += bv[:, None]
    out_offs = (n[None, :] * OC + oc[:, None]) * (OH * OW) + pix[None, :]
    tl.store(out_ptr + out_offs, acc, mask=oc_mask[:, None] & p_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        # parameter holder only (same init as the reference); never called in forward
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv = self.conv
        if conv.groups != 1 or isinstance(conv.padding, str) or conv.padding_mode != "zeros":
            raise NotImplementedError("only groups=1 with explicit zero padding")
        x = x.contiguous()
        w = conv.weight.contiguous()
        N, C, H, W = x.shape
        OC, _, KH, KW = w.shape
        sh, sw = conv.stride
        ph, pw = conv.padding
        dh, dw = conv.dilation
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
        out = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        has_bias = conv.bias is not None
        b = conv.bias.contiguous() if has_bias else w  # dummy pointer when there is no bias
        BLOCK_OC = max(16, min(triton.next_power_of_2(OC), 64))  # tl.dot needs every block dim >= 16
        BLOCK_P = 128
        BLOCK_K = 32
        grid = (triton.cdiv(OC, BLOCK_OC), triton.cdiv(N * OH * OW, BLOCK_P))
        conv2d_igemm_kernel[grid](
            x, w, b, out,
            N, C, H, W, OC, OH, OW, KH, KW,
            sh, sw, ph, pw, dh, dw,
            HAS_BIAS=has_bias, BLOCK_OC=BLOCK_OC, BLOCK_P=BLOCK_P, BLOCK_K=BLOCK_K,
        )
        return out
