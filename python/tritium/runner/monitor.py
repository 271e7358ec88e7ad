"""What a candidate's forward really does: Triton launches, and PyTorch compute outside them.

Installed before the candidate's code is loaded. Launches are counted at the class level of
Triton's launch path (compiled JITFunction and the interpreter's InterpretedFunction), and only
kernels defined in the candidate's own file count. A TorchDispatchMode records every ATen op that
runs outside a launch: allocation, views and copies are glue; anything else is PyTorch doing the
work the kernels should do. (The interpreter itself runs torch ops inside a launch; those are not
the candidate's.)
"""

import contextlib
import threading

from torch.utils._python_dispatch import TorchDispatchMode

# ATen ops that move, allocate or reinterpret memory but compute nothing.
GLUE_OPS = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full
    full_like new_zeros new_ones new_full scalar_tensor arange lift_fresh lift_fresh_copy
    view _unsafe_view reshape view_as permute transpose t expand expand_as squeeze unsqueeze
    as_strided slice select split split_with_sizes unbind narrow chunk flatten unflatten movedim
    unfold alias detach clone contiguous copy_ _to_copy to fill_ zero_ resize_ set_ view_as_real
    view_as_complex _reshape_alias sym_size sym_stride sym_numel sym_storage_offset is_contiguous
    _local_scalar_dense item size stride numel dim is_same_size result_type _has_compatible_shallow_copy_type
    """.split()
)


def _op_name(func) -> str:
    """aten.mm.default -> mm"""
    return func._schema.name.split("::")[-1]


class Monitor(TorchDispatchMode):
    """Counts the candidate's launches and records non-glue ATen ops while `recording`."""

    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename
        self.recording = False
        self.in_launch = 0
        self.launches: list[str] = []
        self.torch_ops: dict[str, int] = {}
        self.thread = threading.get_ident()

    def reset(self) -> None:
        self.launches = []
        self.torch_ops = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.recording and not self.in_launch and threading.get_ident() == self.thread:
            name = _op_name(func)
            if name not in GLUE_OPS:
                self.torch_ops[name] = self.torch_ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))

    def launched(self, kernel) -> None:
        fn = getattr(kernel, "fn", None)
        code = getattr(fn, "__code__", None)
        if self.recording and code is not None and code.co_filename == self.filename:
            self.launches.append(fn.__name__)


def _kernel_classes() -> list[type]:
    classes = []
    import triton.runtime.jit as jit

    classes.append(jit.JITFunction)
    with contextlib.suppress(ImportError):
        import triton.runtime.interpreter as interpreter

        classes.append(interpreter.InterpretedFunction)
    return classes


def install_launch_hook(monitor: Monitor) -> None:
    """Wraps each launch class's run(); the originals stay in this closure only."""
    for cls in _kernel_classes():
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            monitor.launched(self)
            monitor.in_launch += 1
            try:
                return _original(self, *args, **kwargs)
            finally:
                monitor.in_launch -= 1

        cls.run = run


@contextlib.contextmanager
def recording(monitor: Monitor):
    """Records launches and torch ops for the duration (one checked forward)."""
    monitor.reset()
    monitor.recording = True
    with monitor:
        try:
            yield monitor
        finally:
            monitor.recording = False
