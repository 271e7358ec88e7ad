"""Conv2d + ReLU + per-channel bias add, fused in Triton.

Plan: implicit-GEMM convolution: out[oc, p] = sum_k W[oc, k] * X[k, p] with k = (c, kh, kw) and
p = (n, oh, ow) over all output pixels of the batch. Each program owns a BLOCK_OC x BLOCK_P tile, gathers the
im2col tile of the input on the fly (padding taps masked to zero) and the contiguous weight rows, and
accumulates tl.dot in fp32 (IEEE precision). The epilogue adds the conv bias, applies ReLU, then adds the
extra per-channel bias parameter, and stores once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_relu_bias_kernel(
    x_ptr, w_ptr, cb_ptr, eb_ptr, out_ptr,
    N, C, H, W, OC, OH, OW, KH, KW,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    HAS_CONV_BIAS: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_K: tl.constexpr,
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
        ih = oh[None, :] * stride_h - pad_h + (r // KW)[:, None] * dil_h
        iw = ow[None, :] * stride_w - pad_w + (r % KW)[:, None] * dil_w
        x_mask = k_mask[:, None] & p_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        xt = tl.load(x_ptr + ((n[None, :] * C + c[:, None]) * H + ih) * W + iw, mask=x_mask, other=0.0)
        wt = tl.load(w_ptr + oc[:, None] * KDIM + k[None, :], mask=oc_mask[:, None] & k_mask[None, :], other=0.0)
        acc += tl.dot(wt, xt, input_precision="ieee")
    if HAS_CONV_BIAS:
        acc += tl.load(cb_ptr + oc, mask=oc_mask, other=0.0).to(tl.float32)[:, None]
    y = tl.maximum(acc, 0.0)
    y = y + tl.load(eb_ptr + oc, mask=oc_mask, other=0.0).to(tl.float32)[:, None]
    out_offs = (n[None, :] * OC + oc[:, None]) * (OH * OW) + pix[None, :]
    tl.store(out_ptr + out_offs, y, mask=oc_mask[:, None] & p_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        # same parameters, same order, as the reference; the conv module is never called in forward
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv = self.conv
        if conv.groups != 1 or isinstance(conv.padding, str) or conv.padding_mode != "zeros":
            raise NotImplementedError("only groups=1 with explicit zero padding")
        OC = conv.out_channels
        if self.bias.numel() != OC or self.bias.dim() != 3 or self.bias.shape[0] != OC:
            raise NotImplementedError("the extra bias must be per-channel, shaped (out_channels, 1, 1)")
        x = x.contiguous()
        w = conv.weight.contiguous()
        N, C, H, W = x.shape
        _, _, KH, KW = w.shape
        sh, sw = conv.stride
        ph, pw = conv.padding
        dh, dw = conv.dilation
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
        out = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        has_cb = conv.bias is not None
        cb = conv.bias.contiguous() if has_cb else w  # dummy pointer when the conv has no bias
        eb = self.bias.contiguous()
        BLOCK_OC = max(16, min(triton.next_power_of_2(OC), 64))  # tl.dot needs block dims >= 16
        BLOCK_P = 128
        BLOCK_K = 32
        grid = (triton.cdiv(OC, BLOCK_OC), triton.cdiv(N * OH * OW, BLOCK_P))
        conv2d_relu_bias_kernel[grid](
            x, w, cb, eb, out,
            N, C, H, W, OC, OH, OW, KH, KW,
            sh, sw, ph, pw, dh, dw,
            HAS_CONV_BIAS=has_cb, BLOCK_OC=BLOCK_OC, BLOCK_P=BLOCK_P, BLOCK_K=BLOCK_K,
        )
        return out
