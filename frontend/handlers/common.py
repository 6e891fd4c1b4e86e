"""Helpers shared by the HLO op handlers: types, attributes, loads and index arithmetic."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...dsl import dtypes as dt
from ...dsl.dtypes import DType
from ...dsl.errors import UnsupportedOpError
from ...dsl.expr import Expr, as_expr, binary, cast, const, substitute
from ...dsl.ops import Op
from ...dsl.reference import eval_op
from ...dsl.tensor import ComputeOp, PlaceholderOp, Tensor, compute
from ..ast import ELEMENT_TYPES

SEMANTICS = "https://openxla.org/xla/operation_semantics"

#: HLO element type -> DSL dtype (every type with a numpy dtype: all but token and opaque).
ELEMENT_DTYPES: dict[str, DType] = {name: dt.dtype(npd) for name, npd in ELEMENT_TYPES.items()
                                    if npd is not None}


def unsupported(ctx, instr, detail: str = "") -> UnsupportedOpError:
    """An UnsupportedOpError located at ``instr``."""
    return UnsupportedOpError(instr.opcode, line=instr.line or None, file=ctx.file, detail=detail)


def dtype_of(ctx, instr, shape=None) -> DType:
    """The DSL dtype of an array shape (default: the instruction's own shape)."""
    shape = instr.shape if shape is None else shape
    if shape.is_tuple:
        raise unsupported(ctx, instr, "expected an array shape, got a tuple")
    d = ELEMENT_DTYPES.get(shape.element_type)
    if d is None:
        raise unsupported(ctx, instr, f"element type {shape.element_type} is not supported")
    return d


def dims_of(instr) -> tuple[int, ...]:
    return tuple(instr.shape.dims)


def ints(instr, key: str, default=()) -> tuple[int, ...]:
    """An integer-list attribute (``{1,2}``) as a tuple; a single int becomes a 1-tuple."""
    v = instr.attr(key, default)
    if v is None:
        return tuple(default)
    if isinstance(v, int):
        return (v,)
    return tuple(int(x) for x in v)


def flatten(value) -> list[Tensor]:
    """The leaf tensors of a (nested) tuple value, in order."""
    if isinstance(value, tuple):
        out: list[Tensor] = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]


def const_value(t: Tensor):
    """The python scalar of a tensor whose every element is one constant, else None."""
    op = t.op
    if isinstance(op, ComputeOp) and not op.reduce_axis and op.body[t.value_index].op is Op.CONST:
        return op.body[t.value_index].arg
    return None


def load(t: Tensor, idx: Sequence) -> Expr:
    """``t[idx]``; a constant-filled tensor gives its constant, a rank-0 tensor ignores ``idx``
    (scalar operands of clamp/select broadcast implicitly). An empty tensor has no element to
    read (a tap of it is always masked, e.g. padding around an empty input): it reads 0."""
    c = const_value(t)
    if c is not None:
        return const(c, t.dtype)
    if 0 in t.shape:
        return const(0, t.dtype)
    if not t.shape:
        return t[()]
    return t[tuple(idx)]


def ew(instr, shape, fn, dtype: DType | None = None) -> Tensor:
    """An elementwise compute named after ``instr``; ``fn(*idx)`` gives the value (cast to
    ``dtype`` when given)."""
    def body(*i):
        v = as_expr(fn(*i))
        return cast(v, dtype) if dtype is not None else v
    return compute(tuple(shape), body, name=instr.name, tag=instr.opcode)


def clip(e, lo: int, hi: int, known: tuple[int, int] | None = None) -> Expr:
    """``min(max(e, lo), hi)``, skipping a bound that ``known`` (the range of ``e``) satisfies."""
    e = as_expr(e)
    if known is None or known[0] < lo:
        e = binary(Op.MAX, e, const(lo, e.dtype))
    if known is None or known[1] > hi:
        e = binary(Op.MIN, e, const(hi, e.dtype))
    return e


def as_index(e) -> Expr:
    e = as_expr(e)
    return e if e.dtype is dt.index else cast(e, dt.index)


def all_of(conds: Sequence[Expr]) -> Expr | None:
    """The conjunction of ``conds`` (None when empty)."""
    out = None
    for c in conds:
        out = c if out is None else binary(Op.AND, out, c)
    return out


def reshape_index(out_idx: Sequence, out_dims: Sequence[int], in_dims: Sequence[int]) -> list[Expr]:
    """Row-major reshape: the input index that holds output element ``out_idx``.

    Both shapes are cut into the shortest runs of equal element count, so a reshape that only
    splits, merges or adds unit dimensions gives short index expressions.
    """
    out_dims, in_dims = list(out_dims), list(in_dims)
    res: list[Expr] = [None] * len(in_dims)  # type: ignore[list-item]
    i = j = 0
    while i < len(out_dims) or j < len(in_dims):
        # unit dimensions map to index 0 / are ignored
        if j < len(in_dims) and in_dims[j] == 1:
            res[j] = const(0, dt.index)
            j += 1
            continue
        if i < len(out_dims) and out_dims[i] == 1:
            i += 1
            continue
        i0, j0 = i, j
        po, pi = out_dims[i], in_dims[j]
        i, j = i + 1, j + 1
        while po != pi:
            if po < pi:
                po *= out_dims[i]
                i += 1
            else:
                pi *= in_dims[j]
                j += 1
        lin = const(0, dt.index)
        for k in range(i0, i):
            lin = lin * out_dims[k] + as_expr(out_idx[k])
        stride = math.prod(in_dims[j0:j])
        for k in range(j0, j):
            stride //= in_dims[k]
            e = lin // stride if stride > 1 else lin
            res[k] = e % in_dims[k] if k > j0 else e
    return res


def inline(e: Expr, mapping: dict) -> Expr:
    """Inline loads of reduction-free computes into ``e``; loads of placeholders listed in
    ``mapping`` (PlaceholderOp -> Expr) become those expressions."""
    def load_fn(x: Expr, src):
        t = x.arg
        if isinstance(t.op, PlaceholderOp) and t.op in mapping:
            return mapping[t.op]
        if isinstance(t.op, ComputeOp) and not t.op.reduce_axis:
            body = t.op.body[t.value_index]
            return inline(substitute(body, dict(zip(t.op.axis, src))), mapping)
        return None
    return substitute(e, {}, load_fn)


def eval_scalar(e: Expr, env: dict):
    """Evaluate a scalar expression with numpy; ``env`` binds its variables (reducer
    parameters) to arrays (for the numpy implementations of extern ops)."""
    if e.op is Op.CONST:
        return np.asarray(e.arg, e.dtype.np)
    if e.op is Op.VAR:
        return env[e.arg]
    return eval_op(e.op, e.dtype, [eval_scalar(s, env) for s in e.src])


def reduce_compute(shape, f, name: str, tag: str = ""):
    """``compute(shape, f)`` for a body that is a reduction (``f`` takes the output indices)."""
    return compute(tuple(shape), f, name=name, tag=tag)


def window_tap(o, k, stride: int, wdil: int, pad_lo: int, out_ext: int, size: int, in_ext: int,
               ldil: int) -> tuple[list[Expr], Expr]:
    """The input index read by output position ``o`` at window tap ``k`` (convolution and
    reduce-window): ``p = o * stride + k * wdil - pad_lo`` on the input dilated by ``ldil``.
    Returns the conditions under which ``p`` is a real input element (inside the input, not a
    padding or dilation hole) and the input index ``p / ldil`` clamped into ``[0, in_ext)``."""
    p = o * stride + k * wdil - pad_lo
    lo = -pad_lo
    hi = (out_ext - 1) * stride + (size - 1) * wdil - pad_lo
    extent = (in_ext - 1) * ldil
    conds = []
    if lo < 0:
        conds.append(binary(Op.GE, p, 0))
    if hi > extent:
        conds.append(binary(Op.LE, p, extent))
    if ldil > 1:
        conds.append(binary(Op.EQ, p % ldil, 0))
        return conds, clip(p // ldil, 0, in_ext - 1)
    return conds, clip(p, 0, in_ext - 1, (lo, hi))
