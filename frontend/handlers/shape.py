"""Data-movement HLO ops: constant, iota, broadcast, reshape, bitcast, transpose, reverse,
slice, concatenate, pad, copy.

Values are logical row-major arrays: layouts matter only to ``bitcast``, which reinterprets the
physical buffer (logical -> physical by the operand layout, a row-major reshape, physical ->
logical by the result layout).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from ...dsl import dtypes as dt
from ...dsl.expr import binary, bitcast, cast, const, select, substitute
from ...dsl.ops import Op
from ...dsl.tensor import ComputeOp, compute, extern
from .common import all_of, clip, dims_of, dtype_of, ew, ints, load, reshape_index, unsupported

#: array constants up to this many elements become a select chain, larger ones an extern op
SMALL_CONSTANT = 16


def _py(v, d):
    return bool(v) if d.is_bool else int(v) if d.is_int else complex(v) if d.is_complex else float(v)


def _array_constant(ctx, instr, arr: np.ndarray, shape):
    d = dtype_of(ctx, instr, shape)
    arr = np.asarray(arr).astype(d.np).reshape(shape.dims)
    flat = arr.reshape(-1)
    bits = flat.view(np.uint8).reshape(flat.size, d.np.itemsize if d.np.itemsize else -1)
    if flat.size and np.all(bits == bits[0]):  # a splat (bitwise: NaN and -0.0 included)
        v = _py(flat[0], d)
        return compute(tuple(shape.dims), lambda *i: const(v, d), name=instr.name, tag="constant")
    if flat.size <= SMALL_CONSTANT:
        def f(*i):
            lin = const(0, dt.index)
            for k, n in enumerate(shape.dims):
                lin = lin * n + i[k]
            out = const(_py(flat[-1], d), d) if flat.size else const(0, d)
            for k in range(flat.size - 2, -1, -1):
                out = select(binary(Op.EQ, lin, k), const(_py(flat[k], d), d), out)
            return out
        return compute(tuple(shape.dims), f, name=instr.name, tag="constant")
    digest = hashlib.sha1(arr.tobytes()).hexdigest()[:16]
    (t,) = extern(instr.name, "constant", (), [shape.dims], [d], lambda arrays, run: (arr,),
                  attrs=(("sha1", digest),))
    return t


def lower_constant(ctx, instr, operands):
    """``constant``: a splat becomes a constant compute, a small array a select chain on the
    linear index, a large one an extern op returning the literal:
    https://openxla.org/xla/operation_semantics#constant"""
    lit = instr.literal
    if lit is None:
        raise unsupported(ctx, instr, "the constant's literal is elided ({...}); dump HLO with "
                                      "literals printed")
    if instr.shape.is_tuple:
        return tuple(_array_constant(ctx, instr, a, s) for a, s in zip(lit, instr.shape.elements))
    return _array_constant(ctx, instr, lit, instr.shape)


def lower_iota(ctx, instr, operands):
    """``iota``: https://openxla.org/xla/operation_semantics#iota"""
    d = ints(instr, "iota_dimension", (0,))[0]
    return ew(instr, dims_of(instr), lambda *i: cast(i[d], dtype_of(ctx, instr)))


def lower_broadcast(ctx, instr, operands):
    """``broadcast`` (``dimensions`` maps operand dims to result dims):
    https://openxla.org/xla/operation_semantics#broadcastindim"""
    (x,) = operands
    dims = ints(instr, "dimensions")
    return _view(ew(instr, dims_of(instr), lambda *i: _through(x, [i[d] for d in dims])))


def lower_reshape(ctx, instr, operands):
    """``reshape`` (row-major): https://openxla.org/xla/operation_semantics#reshape"""
    (x,) = operands
    out = dims_of(instr)
    if math.prod(out) == 0:
        return ew(instr, out, lambda *i: const(0, x.dtype))
    return _view(ew(instr, out, lambda *i: _through(x, reshape_index(i, out, x.shape))))


#: views that keep the elements' row-major order (what JAX chains: broadcast_in_dim of a reshape
#: in one form is a reshape, an identity broadcast and a reshape in the other)
_ORDERED_VIEWS = ("reshape", "broadcast")


def _chained(t):
    """The LOAD that defines ``t`` when ``t`` is a reshape or broadcast made here, else None."""
    op = t.op
    if isinstance(op, ComputeOp) and op.tag in _ORDERED_VIEWS and op.num_outputs == 1 and \
            not op.reduce_axis and op.body[0].op is Op.LOAD and hasattr(op.body[0].arg, "value_index"):
        return op.body[0]
    return None


def _through(x, idx):
    """``x[idx]``, read through the reshape or broadcast that made ``x`` (its source at the
    composed indices), so a chain of them is one view of its source however it was spelled."""
    body = _chained(x)
    if body is None:
        return load(x, idx)
    return substitute(body, dict(zip(x.op.axis, idx)))


def _view(t):
    """``t``, or its source when ``t`` reads the whole source in order (an identity view)."""
    body = _chained(t)
    if body is None:
        return t
    src = body.arg
    same = src.shape == t.shape and src.dtype is t.dtype and len(body.src) == len(t.op.axis) and \
        all(e.op is Op.VAR and e.arg is v for e, v in zip(body.src, t.op.axis))
    return src if same else t


def _major_to_minor(shape) -> tuple[int, ...]:
    m2m = shape.layout if shape.layout is not None else tuple(range(len(shape.dims) - 1, -1, -1))
    return tuple(reversed(m2m))


def lower_bitcast(ctx, instr, operands):
    """``bitcast``: reinterpret the physical buffer under the operand's and result's layouts
    (https://openxla.org/xla/shapes#minor-to-major_dimension_ordering)."""
    (x,) = operands
    src = ctx.operand_instr(instr, 0).shape
    out_dims, d = dims_of(instr), dtype_of(ctx, instr)
    if d.bits != x.dtype.bits:
        raise unsupported(ctx, instr, f"bitcast from {x.dtype} to {d} changes the element size")
    if math.prod(out_dims) != math.prod(x.shape):
        raise unsupported(ctx, instr, f"bitcast from {list(x.shape)} to {list(out_dims)} changes "
                                      "the element count")
    if math.prod(out_dims) == 0:
        return ew(instr, out_dims, lambda *i: const(0, d))
    mo, mi = _major_to_minor(instr.shape), _major_to_minor(src)
    po, pi = [out_dims[k] for k in mo], [x.shape[k] for k in mi]

    def f(*i):
        phys = reshape_index([i[k] for k in mo], po, pi)
        idx = [None] * len(pi)
        for j, k in enumerate(mi):
            idx[k] = phys[j]
        v = load(x, idx)
        return v if d is x.dtype else bitcast(v, d)
    return ew(instr, out_dims, f)


def lower_transpose(ctx, instr, operands):
    """``transpose`` (result dim k is operand dim ``dimensions[k]``):
    https://openxla.org/xla/operation_semantics#transpose"""
    (x,) = operands
    perm = ints(instr, "dimensions")

    def f(*i):
        idx = [None] * len(perm)
        for k, p in enumerate(perm):
            idx[p] = i[k]
        return load(x, idx)
    return ew(instr, dims_of(instr), f)


def lower_reverse(ctx, instr, operands):
    """``reverse``: https://openxla.org/xla/operation_semantics#rev_reverse"""
    (x,) = operands
    dims = set(ints(instr, "dimensions"))
    return ew(instr, dims_of(instr),
              lambda *i: load(x, [x.shape[k] - 1 - v if k in dims else v for k, v in enumerate(i)]))


def lower_slice(ctx, instr, operands):
    """``slice`` (start:limit:stride per dim): https://openxla.org/xla/operation_semantics#slice"""
    (x,) = operands
    sl = instr.attr("slice")
    return ew(instr, dims_of(instr), lambda *i: load(x, [s + v * st for v, (s, _, st) in zip(i, sl)]))


def lower_copy(ctx, instr, operands):
    """``copy``: the identity on logical values (it may change the layout):
    https://openxla.org/xla/operation_semantics#copy"""
    (x,) = operands
    if isinstance(x, tuple):
        return x
    return ew(instr, dims_of(instr), lambda *i: load(x, i))


def lower_concatenate(ctx, instr, operands):
    """``concatenate`` along ``dimensions={d}``: a select chain on dim d; every load is clamped
    into its operand: https://openxla.org/xla/operation_semantics#concatenate"""
    d = ints(instr, "dimensions")[0]
    out = dims_of(instr)
    parts = [(t, off) for t, off in zip(operands, np.cumsum([0] + [t.shape[d] for t in operands]))
             if t.shape[d] > 0]
    if not parts:
        return ew(instr, out, lambda *i: const(0, dtype_of(ctx, instr)))

    def f(*i):
        res = None
        for t, off in reversed(parts):
            off, n = int(off), t.shape[d]
            j = clip(i[d] - off, 0, n - 1, (-off, out[d] - 1 - off))
            v = load(t, [j if k == d else v for k, v in enumerate(i)])
            res = v if res is None else select(binary(Op.LT, i[d], off + n), v, res)
        return res
    return ew(instr, out, f)


def lower_pad(ctx, instr, operands):
    """``pad`` with low/high (possibly negative) and interior padding; taps outside the operand
    read the padding value: https://openxla.org/xla/operation_semantics#pad"""
    x, pv = operands
    cfg = instr.attr("padding")
    out = dims_of(instr)
    if any(n == 0 for n in x.shape):
        return ew(instr, out, lambda *i: load(pv, ()))

    def f(*i):
        conds, idx = [], []
        for k, (lo, _hi, interior) in enumerate(cfg):
            n, step = x.shape[k], interior + 1
            t = i[k] - lo
            rng = (-lo, out[k] - 1 - lo)
            if rng[0] < 0:
                conds.append(binary(Op.GE, t, 0))
            if rng[1] > (n - 1) * step:
                conds.append(binary(Op.LE, t, (n - 1) * step))
            if step == 1:
                idx.append(clip(t, 0, n - 1, rng))
            else:
                conds.append(binary(Op.EQ, t % step, 0))
                idx.append(clip(t // step, 0, n - 1))
        v = load(x, idx)
        c = all_of(conds)
        return v if c is None else select(c, v, load(pv, ()))
    return ew(instr, out, f)


def lower_get_dimension_size(ctx, instr, operands):
    """``get-dimension-size`` of a static shape, a constant:
    https://openxla.org/xla/operation_semantics#getdimensionsize"""
    n = operands[0].shape[ints(instr, "dimensions")[0]]
    return ew(instr, (), lambda: const(n, dtype_of(ctx, instr)))


HANDLERS = {
    "constant": lower_constant, "iota": lower_iota, "broadcast": lower_broadcast,
    "reshape": lower_reshape, "bitcast": lower_bitcast, "transpose": lower_transpose,
    "reverse": lower_reverse, "slice": lower_slice, "copy": lower_copy,
    "concatenate": lower_concatenate, "pad": lower_pad,
    "get-dimension-size": lower_get_dimension_size,
}
