"""Graph rewrites: replace tensors by others and rebuild every op that reads them.

``replace(graph, {old: new})`` returns the graph whose ops read ``new`` wherever they read
``old`` (element for element: ``new`` has ``old``'s shape and dtype). The new tensors' own ops
are rebuilt too, so a replacement may be defined in terms of the tensors it replaces' readers'
inputs, including other replaced tensors. Ops that read nothing replaced are kept as they
are (same objects), so workload keys of untouched kernels do not move.
"""

from __future__ import annotations

from .errors import DSLError
from .expr import Expr, substitute
from .ops import Op
from .tensor import ComputeOp, ExternOp, Graph, Tensor


def _k(t: Tensor) -> tuple[int, int]:
    return id(t.op), t.value_index


def replace(graph: Graph, mapping: dict[Tensor, Tensor], origin: dict | None = None) -> Graph:
    """``graph`` with each key of ``mapping`` replaced by its value (see the module docstring).
    Inputs stay the same tensors; outputs that are replaced become their replacements.
    ``origin`` (a dict), when given, receives id(new op) -> the op of ``graph`` it stands for
    (rebuilt ops and replacements of one output of an op)."""
    new = {_k(o): n for o, n in mapping.items()}
    for o, n in mapping.items():
        if tuple(o.shape) != tuple(n.shape) or o.dtype != n.dtype:
            raise DSLError(f"replace: {o.name} {list(o.shape)} {o.dtype} cannot become "
                           f"{n.name} {list(n.shape)} {n.dtype}")
    stop = {id(t.op) for t in graph.inputs}
    rebuilt: dict[int, object] = {}     # id(op) -> the op it became
    busy: set[int] = set()

    def tensor(t: Tensor) -> Tensor:
        seen: set = set()
        while _k(t) in new:                 # chains of replacements
            if _k(t) in seen:
                raise DSLError(f"replace: {t.name} is replaced by itself")
            seen.add(_k(t))
            t = new[_k(t)]
        op = t.op if id(t.op) in stop else rebuild(t.op)
        return t if op is t.op else op.output(t.value_index)

    def rebuild(op):
        if id(op) in rebuilt:
            return rebuilt[id(op)]
        if isinstance(op, ExternOp):
            if any(_k(t) in new for t in op.inputs):
                raise DSLError(f"replace: extern op '{op.name}' reads a replaced tensor")
            rebuilt[id(op)] = op
            return op
        if not isinstance(op, ComputeOp):
            rebuilt[id(op)] = op
            return op
        if id(op) in busy:
            raise DSLError(f"replace: '{op.name}' reads itself through the replacements")
        busy.add(id(op))

        def load(e: Expr, src):
            if not isinstance(e.arg, Tensor):
                return None
            t = tensor(e.arg)
            if t is e.arg and all(a is b for a, b in zip(src, e.src)):
                return e
            return Expr(Op.LOAD, t.dtype, tuple(src), t)

        body = tuple(substitute(b, {}, load) for b in op.body)
        busy.discard(id(op))
        same = all(a is b for a, b in zip(body, op.body))
        out = op if same else ComputeOp(op.name, op.axis, op.reduce_axis, body, op.tag)
        rebuilt[id(op)] = out
        return out

    outs = [tensor(t) for t in graph.outputs]
    if origin is not None:
        for op in graph.ops:
            if id(op) in rebuilt:
                origin[id(rebuilt[id(op)])] = op
        for o, n in mapping.items():
            got = tensor(n).op
            origin.setdefault(id(got), o.op)
    return Graph(outs, list(graph.inputs))


__all__ = ["replace"]
