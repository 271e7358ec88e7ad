"""What one trial of a task holds, counted on the meta device (nothing is allocated): its tensors,
and the most bytes alive at once while get_inputs() draws them and while the forward runs. The
engine reserves a reference's device memory by it (footprint(), engine.cc), and a task that cannot
fit the device at all is refused by it (reference._require_fit)."""

import dataclasses
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .tasks import flatten_outputs


class LiveBytes(TorchDispatchMode):
    """The most storage bytes alive at once among those the ops under it make (`peak`), a storage
    counted from its first tensor until its last one is gone. Storages of `known` tensors (the
    inputs of a forward, its parameters) were there before: views of them cost nothing."""

    def __init__(self, known=()):
        super().__init__()
        self.known = {t.untyped_storage()._cdata for t in known if isinstance(t, torch.Tensor)}
        self.alive = {}  # storage -> [bytes, tensors of it alive]
        self.now = self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._track(t)
        return out

    def _track(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata  # the storage's own address, unique while it lives (a meta data_ptr is 0)
        if key in self.known:
            return
        entry = self.alive.get(key)
        if entry is None:
            entry = self.alive[key] = [storage.nbytes(), 0]
            self.now += entry[0]
            self.peak = max(self.peak, self.now)
        entry[1] += 1
        weakref.finalize(tensor, self._drop, key)

    def _drop(self, key) -> None:
        entry = self.alive[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.now -= entry[0]
            del self.alive[key]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@dataclasses.dataclass(frozen=True)
class Footprint:
    """One trial's bytes: its inputs, outputs and parameters; the draw's peak (get_inputs()'s
    temporaries and its inputs, plus a byte an element of the largest input: inputs.redraw's
    scratch for the "wide" distribution); the forward's peak beyond its inputs (its outputs and the
    temporaries alive beside them)."""

    inputs: int
    outputs: int
    params: int
    draw_peak: int
    forward_peak: int
    largest_input_elements: int

    @property
    def trial(self) -> int:
        return self.inputs + self.outputs + self.params

    def reference_peak(self) -> int:
        """What the reference (reference._trial) holds at its peak: the float64 check, which makes
        the trial's inputs again and their float64 twins beside them (3 x inputs), runs the twin
        (2 x (inputs + outputs + temporaries)), rounds its outputs to float32 (3 x outputs), then
        makes the trial again beside them (inputs + 2 x outputs + temporaries); or a second draw
        beside a trial (the reproducibility check); plus the parameters and their float64 twin.
        Measured on an H100 (2026-12-07, engine_bench.py scale) when the check held the trial's
        float32 tensors beside the twin's (3 x (inputs + outputs) + 2 x temporaries, then counted
        so): elementwise over 6 GiB 36.0 GiB (36.0 counted), MSE 40.0 (40.0), hinge 44.0 (40.0),
        sum and argmax 26.0 (24.0), cumsum 25.1 (24.0)."""
        temporaries = max(0, self.forward_peak - self.outputs)
        draw = self.draw_peak + self.largest_input_elements
        checked = max(
            3 * self.inputs,
            2 * (self.inputs + self.outputs + temporaries),
            3 * self.outputs,
            self.inputs + 2 * self.outputs + temporaries,
        )
        return 3 * self.params + max(checked, self.inputs + self.outputs + draw, self.inputs + self.forward_peak)


def measure(module, init_inputs: list, seed: int) -> Footprint | None:
    """The task's trial on the meta device; None when its code does not run there (data-dependent ops)."""
    try:
        with torch.device("meta"), torch.no_grad():
            torch.manual_seed(seed)
            with LiveBytes() as draw:
                values = list(module.get_inputs())
            model = module.Model(*init_inputs).eval()
            known = [*values, *model.parameters(), *model.buffers()]
            with LiveBytes(known) as forward:
                outputs = flatten_outputs(model(*values))
            floating = [v.numel() for v in values if isinstance(v, torch.Tensor) and v.is_floating_point()]
            in_bytes, out_bytes = _nbytes(values), _nbytes(outputs)
            return Footprint(
                inputs=in_bytes,
                outputs=out_bytes,
                params=_nbytes(model.parameters()),
                draw_peak=max(draw.peak, in_bytes),
                forward_peak=max(forward.peak, out_bytes),
                largest_input_elements=max(floating, default=0),
            )
    except Exception:  # noqa: BLE001 - then the memory is found out by running it
        return None
