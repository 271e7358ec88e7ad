"""ReLU on a never-joined side CUDA stream (GPU-only trick): caught by the static verifier (hack.stream).

Task 01_relu. The side stream first waits for the current one (the input is ready), then runs the
kernel; forward returns at once, and a harness that records its end event on the current stream
measures an empty interval. The values are right once the device is synchronized. With the static
check off (--no-static) the run-time defence is the engine's timer, which synchronizes the whole
device before its second end event: the verdict is then `correct`, timed with the side-stream kernel
(docs/engine.md, Timing). On the CPU there is no stream: a plain launch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._stream = torch.cuda.Stream() if torch.cuda.is_available() else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 4096),)
        if self._stream is not None and x.is_cuda:
            self._stream.wait_stream(torch.cuda.current_stream(x.device))
            with torch.cuda.stream(self._stream):
                relu_kernel[grid](x, out, n, BLOCK=4096, num_warps=8)
        else:
            relu_kernel[grid](x, out, n, BLOCK=4096, num_warps=8)
        return out
