"""The operator DAG of a KernelBench-format task, for the emitter's fragment search (docs/search.md).

Trusted side only: it runs the task's module (Model, get_inputs, get_init_inputs), never a
candidate. torch.fx traces Model(*get_init_inputs()), ShapeProp runs it on get_inputs(), and every
node is mapped onto an operator of the synthesizer's catalog (cpp/src/synth/catalog.cc) with its
attributes and solved shapes. A node with no catalog form is listed under "unmapped" with the
reason; the C++ side then emits no solution (ModelNew may not leave compute to PyTorch).
"""

import inspect
import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from .tasks import TaskFailure, load_module, require, run_stage

# Elementwise unary operators by the callable, module type or method name that spells them.
_UNARY = {
    "relu": [torch.relu, F.relu, nn.ReLU, "relu"],
    "sigmoid": [torch.sigmoid, F.sigmoid, nn.Sigmoid, "sigmoid"],
    "tanh": [torch.tanh, F.tanh, nn.Tanh, "tanh"],
    "silu": [F.silu, nn.SiLU],
    "mish": [F.mish, nn.Mish],
    "hardsigmoid": [F.hardsigmoid, nn.Hardsigmoid],
    "hardswish": [F.hardswish, nn.Hardswish],
    "abs": [torch.abs, operator.abs, "abs"],
    "neg": [torch.neg, operator.neg, "neg"],
    "exp": [torch.exp, "exp"],
    "log": [torch.log, "log"],
    "sqrt": [torch.sqrt, "sqrt"],
    "rsqrt": [torch.rsqrt, "rsqrt"],
    "square": [torch.square, "square"],
    "sin": [torch.sin, "sin"],
    "cos": [torch.cos, "cos"],
    "erf": [torch.erf, "erf"],
}
_BINARY = {  # tensor op tensor, and the catalog op for tensor op number
    "add": ([operator.add, torch.add, "add"], "add_scalar"),
    "sub": ([operator.sub, torch.sub, "sub"], "add_scalar"),
    "mul": ([operator.mul, torch.mul, "mul"], "mul_scalar"),
    "div": ([operator.truediv, torch.div, "div"], "div_scalar"),
    "maximum": ([torch.maximum, "maximum"], None),
    "minimum": ([torch.minimum, "minimum"], None),
}
_REDUCTIONS = {
    "sum": [torch.sum, "sum"],
    "mean": [torch.mean, "mean"],
    "amax": [torch.amax, "amax"],
    "amin": [torch.amin, "amin"],
    "logsumexp": [torch.logsumexp, "logsumexp"],
    "var": [torch.var, "var"],
    "std": [torch.std, "std"],
}
_WITH_INDICES = {"max": [torch.max, "max"], "min": [torch.min, "min"]}  # (values, indices): .values maps
_SOFTMAX = {
    "softmax": [torch.softmax, F.softmax, nn.Softmax, "softmax"],
    "log_softmax": [torch.log_softmax, F.log_softmax, nn.LogSoftmax, "log_softmax"],
}


class Unmapped(Exception):
    """A node with no catalog operator (or one the emitter cannot take as written)."""


def _lookup(table: dict, target):
    for name, spellings in table.items():
        if target in (spellings[0] if isinstance(spellings, tuple) else spellings):
            return name
    return None


def _target(node: torch.fx.Node, model: nn.Module):
    """What a call node calls: the function, the module's type, or the method's name."""
    if node.op == "call_module":
        return type(model.get_submodule(node.target))
    return node.target


def _arg(node: torch.fx.Node, index: int, name: str, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _norm_dim(dim, rank: int) -> int:
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            raise Unmapped(f"a reduction over {len(dim)} dims (the catalog reduces one)")
        dim = dim[0]
    if not isinstance(dim, int):
        raise Unmapped("a reduction without a dim (the catalog reduces one dim)")
    return dim % rank


class _Mapper:
    """Maps fx nodes onto catalog operators, collecting the DAG as it goes."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.owners = {}  # parameter id -> the name of the module that holds it ("": Model itself)
        for module_name, module in model.named_modules():
            for p in module.parameters(recurse=False):
                self.owners.setdefault(id(p), module_name)
        self.param_order = [id(p) for p in model.parameters()]
        self.refs = {}  # fx node -> {"input": i} | {"node": k} | {"param": j}
        self.nodes, self.param_tensors, self.unmapped = [], [], []
        self.inputs = []
        self.module_uses = set()
        # Nodes that map only with their reader: x > 0 in torch.where, x < lo in masked_fill, a Linear's
        # weight.t() and bias in torch.matmul or torch.addmm.
        # Node -> (kind, attributes, operand).
        self.deferred = {}

    # -- operands
    def operand(self, value):
        if isinstance(value, torch.fx.Node) and value in self.refs:
            return self.refs[value]
        if isinstance(value, torch.fx.Node):
            raise Unmapped(f"it reads {value.name}, which is unmapped")
        raise Unmapped(f"operand {value!r} is not a tensor of the graph")

    def shape(self, node: torch.fx.Node) -> list:
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise Unmapped("its result is not one tensor")
        if meta.dtype != torch.float32:
            raise Unmapped(f"its result is {meta.dtype}, the emitter writes float32")
        return list(meta.shape)

    def rank(self, value) -> int:
        return len(self.shape(value))

    # -- placeholders and parameters
    def placeholder(self, node: torch.fx.Node) -> None:
        shape = self.shape(node)
        self.refs[node] = {"input": len(self.inputs)}
        self.inputs.append(shape)

    def get_attr(self, node: torch.fx.Node) -> None:
        value = self.model.get_parameter(node.target) if node.target in dict(self.model.named_parameters()) else None
        if value is None:
            raise Unmapped(f"self.{node.target} is not a parameter (buffers and constants have no catalog form)")
        if self.owners.get(id(value)) != "":  # an nn.Linear's weight or bias in an explicit matmul or addmm
            module, _, name = node.target.rpartition(".")
            self.deferred[node] = (name, {"module": module}, None)
            return
        init = self.param_order.index(id(value))
        known = [j for j, p in enumerate(self.param_tensors) if p["init"] == init]  # read twice: created once
        self.refs[node] = {"param": known[0] if known else len(self.param_tensors)}
        if not known:
            self.param_tensors.append({"shape": list(value.shape), "init": init})

    # -- calls
    def call(self, node: torch.fx.Node) -> None:
        if node in self.refs or self.defer(node):  # already mapped: the .values of a torch.max(x, dim)
            return
        self.add(node, *self.classify(node))

    def add(self, node: torch.fx.Node, op: str, attrs: dict, operands: list, init, shaped: torch.fx.Node = None):
        self.refs[node] = {"node": len(self.nodes)}
        entry = {"name": node.name, "op": op, "operands": operands, "shape": self.shape(shaped or node), "attrs": attrs}
        if init is not None:
            entry["init"] = init
        self.nodes.append(entry)

    def values_of(self, node: torch.fx.Node, name: str) -> bool:
        """torch.max/min(x, dim) read only through .values (or [0]) maps where it stands, its readers
        being the same tensor (fx may place the readers later, out of the Model's order)."""
        users = list(node.users)
        if not users or not all(u.target in (getattr, operator.getitem) and u.args[1] in ("values", 0) for u in users):
            return False
        self.add(node, name, self.reduced(node, 1), [self.operand(node.args[0])], None, shaped=users[0])
        for u in users:
            self.refs[u] = self.refs[node]
        return True

    def classify(self, node: torch.fx.Node):
        target = _target(node, self.model)
        if node.op == "call_module":
            return self.module_op(node, target)
        x = node.args[0] if node.args else None
        if (name := _lookup(_UNARY, target)) is not None:
            return name, {}, [self.operand(x)], None
        if (name := _lookup(_BINARY, target)) is not None:
            return self.binary(name, node)
        if (name := _lookup(_REDUCTIONS, target)) is not None:
            if name in ("var", "std") and (set(node.kwargs) - {"dim", "keepdim"} or len(node.args) > 3):
                raise Unmapped(f"{name} with a correction other than the default (the kernel divides by R - 1)")
            return name, self.reduced(node, 1), [self.operand(x)], None
        if (name := _lookup(_SOFTMAX, target)) is not None:
            return name, {"dim": _norm_dim(_arg(node, 1, "dim"), self.rank(x))}, [self.operand(x)], None
        return self.function_op(node, target, x)

    def reduced(self, node: torch.fx.Node, at: int) -> dict:
        """dim and keepdim of a reduction whose dim is argument `at`."""
        dim = _norm_dim(_arg(node, at, "dim"), self.rank(node.args[0]))
        return {"dim": dim, "keepdim": bool(_arg(node, at + 1, "keepdim", False))}

    def defer(self, node: torch.fx.Node) -> bool:
        target, x = node.target, node.args[0] if node.args else None
        if node.op == "call_module" or not isinstance(x, torch.fx.Node):
            return False
        if _lookup(_WITH_INDICES, target) is not None and _arg(node, 1, "dim") is not None:
            return self.values_of(node, _lookup(_WITH_INDICES, target))
        if target == "t" and self.deferred.get(x, ("",))[0] == "weight":
            self.deferred[node] = ("weight_t", self.deferred[x][1], None)
        elif target in (operator.gt, torch.gt, "gt") and _arg(node, 1, "other") == 0:
            self.deferred[node] = ("positive", {}, x)
        elif target in (operator.lt, torch.lt, "lt") and isinstance(_arg(node, 1, "other"), (int, float)):
            self.deferred[node] = ("below", {"lo": float(_arg(node, 1, "other"))}, x)
        else:
            return False
        return True

    def completes(self, node: torch.fx.Node, target):
        """A reader that completes a deferred node into a catalog op, or None."""
        if target in (torch.matmul, torch.addmm):
            return self.linear_of(node, target)
        src = node.args[1] if target == "masked_fill" and len(node.args) > 1 else node.args[0]
        kind, attrs, x = self.deferred.get(src, (None, None, None))
        if kind == "positive" and target is torch.where and node.args[1] is x:
            return "where_positive", {}, [self.operand(x), self.operand(node.args[2])], None
        if kind == "below" and target == "masked_fill" and node.args[0] is x and _arg(node, 2, "value") == 0:
            return "masked_fill", attrs, [self.operand(x)], None
        return None

    def linear_of(self, node: torch.fx.Node, target):
        """torch.matmul(x, m.weight.t()) and torch.addmm(m.bias, x, m.weight.t()) of an nn.Linear m."""
        addmm = target is torch.addmm
        if node.kwargs or len(node.args) != (3 if addmm else 2):
            return None
        kind, attrs, _ = self.deferred.get(node.args[-1], ("", {}, None))
        if kind != "weight_t":
            return None
        module = self.model.get_submodule(attrs["module"])
        if not isinstance(module, nn.Linear) or (module.bias is not None) != addmm:
            return None
        if addmm and self.deferred.get(node.args[0], ("", {}))[:2] != ("bias", attrs):
            return None
        sizes = {"vars": {"k": module.in_features, "n": module.out_features}}
        return self.use_module(attrs["module"], "addmm" if addmm else "matmul", sizes, [self.operand(node.args[-2])])

    def use_module(self, name: str, op: str, attrs: dict, operands: list):
        """A catalog op that creates module `name` in ModelNew: once, in the Model's order."""
        if name in self.module_uses:
            raise Unmapped(f"self.{name} is used twice (ModelNew would create its parameters twice)")
        self.module_uses.add(name)
        params = list(self.model.get_submodule(name).parameters(recurse=False))
        return op, attrs, operands, self.param_order.index(id(params[0])) if params else None

    def binary(self, name: str, node: torch.fx.Node):
        a, b = node.args[0], node.args[1]
        if len(node.args) > 2 or node.kwargs:
            raise Unmapped(f"{name} with extra arguments (alpha, out, rounding_mode)")
        scalar_op = _BINARY[name][1]
        if isinstance(b, (int, float)) and isinstance(a, torch.fx.Node):
            if scalar_op is None:
                raise Unmapped(f"{name} with a number")
            return scalar_op, {"scalar": float(-b if name == "sub" else b)}, [self.operand(a)], None
        if isinstance(a, (int, float)) and name in ("add", "mul"):  # commutes: 2.0 * x
            return scalar_op, {"scalar": float(a)}, [self.operand(b)], None
        return name, {}, [self.operand(a), self.operand(b)], None

    def function_op(self, node: torch.fx.Node, target, x):
        if node.args and (completed := self.completes(node, target)) is not None:
            return completed
        if target in (torch.linalg.vector_norm,) and _arg(node, 1, "ord", 2) == 2:
            return "norm", self.reduced(node, 2), [self.operand(x)], None
        if (view := self.view_op(node, target, x)) is not None:
            return view
        if target in (F.gelu, "gelu"):
            approximate = _arg(node, 1, "approximate", "none")
            return ("gelu_tanh" if approximate == "tanh" else "gelu"), {}, [self.operand(x)], None
        if target in (F.leaky_relu,):
            return "leaky_relu", {"scalar": float(_arg(node, 1, "negative_slope", 0.01))}, [self.operand(x)], None
        if target in (F.elu,) and _arg(node, 1, "alpha", 1.0) == 1.0:
            return "elu", {}, [self.operand(x)], None
        if target in (F.hardtanh,) and (_arg(node, 1, "min_val", -1.0), _arg(node, 2, "max_val", 1.0)) == (-1.0, 1.0):
            return "hardtanh", {}, [self.operand(x)], None
        if target in (F.softplus,) and (_arg(node, 1, "beta", 1.0), _arg(node, 2, "threshold", 20.0)) == (1.0, 20.0):
            return "softplus", {}, [self.operand(x)], None
        if target in (torch.clamp, "clamp"):
            lo, hi = _arg(node, 1, "min"), _arg(node, 2, "max")
            if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
                raise Unmapped("clamp needs both numeric bounds (min and max)")
            return "clamp", {"lo": float(lo), "hi": float(hi)}, [self.operand(x)], None
        if target in (torch.pow, operator.pow, "pow"):
            power = _arg(node, 1, "exponent")
            if not isinstance(power, int) or not 2 <= power <= 4:
                raise Unmapped("pow with an exponent other than the integers 2-4")
            return "pow_scalar", {"power": power}, [self.operand(x)], None
        if target in (torch.bmm, torch.matmul, operator.matmul, "bmm", "matmul"):
            return self.batched_matmul(node)
        raise Unmapped(f"{getattr(target, '__name__', target)} has no operator in the catalog")

    def view_op(self, node: torch.fx.Node, target, x):
        """transpose, permute and flatten(1), the catalog's views; None for anything else."""
        if target in (torch.transpose, "transpose"):
            rank = self.rank(x)
            dims = {"dim": _arg(node, 1, "dim0") % rank, "dim2": _arg(node, 2, "dim1") % rank}
            return "transpose", dims, [self.operand(x)], None
        if target in (torch.permute, "permute"):
            dims = node.args[1] if len(node.args) == 2 and isinstance(node.args[1], (list, tuple)) else node.args[1:]
            return "permute", {"perm": [d % self.rank(x) for d in dims]}, [self.operand(x)], None
        if target is torch.cat and len(node.args[0]) == 2:
            operands = [self.operand(t) for t in node.args[0]]
            return "cat", {"dim": _arg(node, 1, "dim", 0) % self.rank(node.args[0][0])}, operands, None
        if target in (torch.flatten, "flatten"):
            if _arg(node, 1, "start_dim", 0) != 1 or _arg(node, 2, "end_dim", -1) not in (-1, self.rank(x) - 1):
                raise Unmapped("flatten other than from dim 1 to the end")
            return "flatten", {}, [self.operand(x)], None
        return None

    def batched_matmul(self, node: torch.fx.Node):
        a, b = node.args[0], node.args[1]
        if self.rank(a) != 3 or self.rank(b) != 3 or self.shape(a)[0] != self.shape(b)[0]:
            raise Unmapped("matmul of other than two (B, M, K) @ (B, K, N) tensors")
        return "bmm", {}, [self.operand(a), self.operand(b)], None

    def module_op(self, node: torch.fx.Node, cls):
        module = self.model.get_submodule(node.target)
        x = self.operand(node.args[0])
        init = self.use_module(node.target, "", {}, [])[3]
        if (name := _lookup(_UNARY, cls)) is not None:
            return name, {}, [x], None
        if (name := _lookup(_SOFTMAX, cls)) is not None:
            return name, {"dim": _norm_dim(module.dim, self.rank(node.args[0]))}, [x], None
        if cls is nn.GELU:
            return ("gelu_tanh" if module.approximate == "tanh" else "gelu"), {}, [x], None
        if cls is nn.Linear:
            k, n = module.in_features, module.out_features
            return ("linear" if module.bias is not None else "matmul"), {"vars": {"k": k, "n": n}}, [x], init
        if cls is nn.LayerNorm:
            return self.norm(module, "layer_norm", 1e-5, node), {"vars": {"n": module.normalized_shape[0]}}, [x], init
        if cls is getattr(nn, "RMSNorm", None):
            return self.norm(module, "rms_norm", 1e-6, node), {"vars": {"n": module.normalized_shape[0]}}, [x], init
        raise Unmapped(f"{cls.__name__} has no Triton form in the emitter")

    def norm(self, module: nn.Module, name: str, eps: float, node: torch.fx.Node) -> str:
        """The row kernel normalises over the last dim with the catalog's eps and an affine weight."""
        if len(module.normalized_shape) != 1 or not module.elementwise_affine or module.eps != eps:
            raise Unmapped(f"{name} other than over the last dim, with affine weights and eps={eps}")
        if name == "layer_norm" and module.bias is None:
            raise Unmapped("layer_norm without a bias")
        return name


def _outputs(graph: torch.fx.Graph, mapper: _Mapper) -> list:
    """The returned nodes, which must be exactly the unconsumed ones in creation order (as the
    emitter returns them)."""
    out_node = next(n for n in graph.nodes if n.op == "output")
    returned = out_node.args[0]
    returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    indices = []
    for value in returned:
        ref = mapper.refs.get(value) if isinstance(value, torch.fx.Node) else None
        if ref is None or "node" not in ref:
            raise Unmapped("forward returns something other than computed tensors")
        indices.append(ref["node"])
    consumed = {o["node"] for entry in mapper.nodes for o in entry["operands"] if "node" in o}
    unconsumed = [k for k in range(len(mapper.nodes)) if k not in consumed]
    if indices != unconsumed:
        raise Unmapped("forward's outputs are not exactly its unconsumed results in order of computation")
    return indices


def trace_model(model: nn.Module, inputs: list, init_args: list) -> dict:
    """The DAG of `model` on `inputs`: inputs, parameters, catalog nodes, outputs and the unmapped."""
    gm = torch.fx.symbolic_trace(model)
    ShapeProp(gm).propagate(*inputs)
    mapper = _Mapper(model)
    for node in gm.graph.nodes:
        if node.op == "output":
            continue
        visit = {"placeholder": mapper.placeholder, "get_attr": mapper.get_attr}.get(node.op, mapper.call)
        try:
            visit(node)
        except Unmapped as why:
            target = _target(node, model) if node.op.startswith("call") else node.target
            name = getattr(target, "__name__", str(target))
            mapper.unmapped.append({"name": node.name, "target": name, "why": str(why)})
    outputs = []
    if not mapper.unmapped:
        try:
            outputs = _outputs(gm.graph, mapper)
        except Unmapped as why:
            mapper.unmapped.append({"name": "output", "target": "return", "why": str(why)})
    used = {p["init"] for p in mapper.param_tensors} | {n["init"] for n in mapper.nodes if "init" in n}
    if not mapper.unmapped and _creators(model) != used:
        mapper.unmapped.append(
            {
                "name": "parameters",
                "target": "Model.__init__",
                "why": "Model holds parameters that forward does not use through a mapped operator",
            }
        )
    return _dag(
        init_args,
        mapper.inputs,
        [list(p.shape) for p in model.parameters()],
        mapper.param_tensors,
        mapper.nodes,
        outputs,
        mapper.unmapped,
    )


def _dag(init_args, inputs, params, param_tensors, nodes, outputs, unmapped) -> dict:
    return {
        "ok": True,
        "init_args": init_args,
        "inputs": inputs,
        "params": params,
        "param_tensors": param_tensors,
        "nodes": nodes,
        "outputs": outputs,
        "unmapped": unmapped,
    }


def _creators(model: nn.Module) -> set:
    """The first parameter index of each creator: a free nn.Parameter or a module with parameters."""
    order = [id(p) for p in model.parameters()]
    firsts = set()
    for module in model.modules():
        own = list(module.parameters(recurse=False))
        if module is model:
            firsts |= {order.index(id(p)) for p in own}
        elif own:
            firsts.add(order.index(id(own[0])))
    return firsts


def _init_arg_names(model_cls) -> list:
    params = list(inspect.signature(model_cls.__init__).parameters.values())[1:]
    return [("*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else "") + p.name for p in params]


def trace_source(source: str, filename: str) -> dict:
    """Loads a task's source and traces its Model; a task that cannot even run is a TaskFailure."""
    torch.manual_seed(0)
    module = load_module(source, filename)
    model_cls = require(module, "Model", "class Model")
    get_inputs = require(module, "get_inputs", "get_inputs()")
    get_init_inputs = require(module, "get_init_inputs", "get_init_inputs()")
    init_inputs = run_stage("init", "get_init_inputs() raised", filename, get_init_inputs)
    model = run_stage("init", "Model(*get_init_inputs()) raised", filename, lambda: model_cls(*init_inputs))
    inputs = run_stage("inputs", "get_inputs() raised", filename, get_inputs)
    if not all(isinstance(x, torch.Tensor) for x in inputs):
        raise TaskFailure("inputs", "get_inputs() returns non-tensors; the tracer takes tensor inputs only")
    try:
        with torch.no_grad():
            return trace_model(model, list(inputs), _init_arg_names(model_cls))
    except Exception as exc:  # noqa: BLE001 - fx cannot trace data-dependent control flow, and more
        why = f"not traceable: {type(exc).__name__}: {exc}"
        return _dag([], [], [], [], [], [], [{"name": "forward", "target": "torch.fx", "why": why}])


def trace_task(request: dict) -> dict:
    """Runner op "trace_task": {source, filename} -> the DAG, or {ok: false, stage, error}."""
    filename = request.get("filename") or request.get("id", "<task>")
    try:
        return trace_source(request["source"], filename)
    except TaskFailure as failure:
        return {"ok": False, "stage": failure.stage, "error": str(failure)}


if __name__ == "__main__":  # python -m tritium.runner.trace TASK.py: the DAG as JSON, for people
    import json
    import sys

    with open(sys.argv[1], encoding="utf-8") as f:
        print(json.dumps(trace_source(f.read(), sys.argv[1]), indent=1))
