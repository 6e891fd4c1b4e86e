"""``select-and-scatter`` (the gradient of max/min pooling).

XLA's semantics: the output starts as ``init`` everywhere; for each window of the operand (in
row-major order over the source), the window's in-bounds elements are scanned in row-major order
and ``select(chosen, candidate)`` keeps the chosen one while it returns true; the source value of
the window is then combined into the output at the chosen position with ``scatter``.

When ``select`` compares its parameters with GE/GT/LE/LT (pooling), the choice is an arg-max
(arg-min) with ties to the first tap, which lowers to two computes: a reduction picking each
window's tap, and for each output element a masked reduction over the windows covering it, folded
into ``init`` with ``scatter``'s built-in reducer. Any other pair of computations runs as an
extern op implementing the sequential definition in numpy (:func:`select_and_scatter_numpy`).
https://openxla.org/xla/operation_semantics#selectandscatter
"""

from __future__ import annotations

import itertools

import numpy as np

from ...dsl import dtypes as dt
from ...dsl.expr import AxisKind, IterVar, binary, const, select
from ...dsl.ops import Op
from ...dsl.tensor import comm_reducer, compute, reduce_axis
from .common import all_of, dims_of, eval_scalar, load, unsupported
from .control import _extern_result
from .reduce import _builtin

_ORDERS = (Op.GE, Op.GT, Op.LE, Op.LT)


def _window(ctx, instr, rank: int):
    win = instr.attr("window") or {}

    def field(key, default):
        v = tuple(win.get(key, ()))
        return v if len(v) == rank else (default,) * rank
    size, stride, pad = field("size", 1), field("stride", 1), field("pad", (0, 0))
    if any(d != 1 for d in field("lhs_dilate", 1) + field("rhs_dilate", 1)):
        raise unsupported(ctx, instr, "select-and-scatter takes no dilation")
    if any(s < 1 for s in size + stride):
        raise unsupported(ctx, instr, "window sizes and strides must be positive")
    return size, stride, pad


def _ordering(fn, d):
    """The comparison op when ``select(a, b)`` is ``a OP b`` on its two parameters, else None."""
    a, b = IterVar("a", 0, AxisKind.PARAM, d), IterVar("b", 0, AxisKind.PARAM, d)
    (r,) = fn([a.var, b.var])
    if r.op in _ORDERS and [s.op for s in r.src] == [Op.VAR, Op.VAR] and \
            (r.src[0].arg, r.src[1].arg) == (a, b):
        return r.op
    return None


def lower_select_and_scatter(ctx, instr, operands):
    """``select-and-scatter(operand, source, init)``, ``window``, ``select``, ``scatter``:
    https://openxla.org/xla/operation_semantics#selectandscatter"""
    x, src, init = operands
    rank = len(x.shape)
    size, stride, pad = _window(ctx, instr, rank)
    out_shape = tuple((x.shape[d] + pad[d][0] + pad[d][1] - size[d]) // stride[d] + 1
                      for d in range(rank))
    if src.shape != out_shape or init.shape or init.dtype is not src.dtype or dims_of(instr) != x.shape:
        raise unsupported(ctx, instr, f"source {list(src.shape)} must be the window grid "
                                      f"{list(out_shape)} of operand {list(x.shape)} and init a scalar "
                                      f"of its type; the result has the operand's shape")
    sel_fn = ctx.scalar_fn(instr.attr("select"), instr)
    sc_fn = ctx.scalar_fn(instr.attr("scatter"), instr)
    order = _ordering(sel_fn, x.dtype)
    builtin = _builtin(sc_fn, src.dtype)
    if order is None or builtin is None or 0 in x.shape or 0 in src.shape:
        return _extern(ctx, instr, x, src, init, size, stride, pad, sel_fn, sc_fn)
    chosen = _chosen_tap(instr, x, src.shape, size, stride, pad, order)
    return _scatter_into(instr, x, src, init, chosen, size, stride, pad, builtin, sc_fn)


def _chosen_tap(instr, x, grid, size, stride, pad, order):
    """For each window, the row-major tap index of the element ``select`` keeps (first wins)."""
    rank = len(grid)

    def combine(a, b):   # (value, tap, seen); ties and order resolved by tap: the earlier stays
        a_first = binary(Op.LT, a[1], b[1])
        f = [select(a_first, u, v) for u, v in zip(a, b)]
        s = [select(a_first, v, u) for u, v in zip(a, b)]
        keep = binary(order, f[0], s[0])
        both = [select(keep, u, v) for u, v in zip(f, s)]
        return tuple(select(a[2], select(b[2], w, u), v) for u, v, w in zip(a, b, both))

    def identity(dts):
        return const(0, dts[0]), const(-1, dts[1]), const(False, dt.bool_)
    red = comm_reducer(combine, identity, "select_tap")
    ks = [reduce_axis(size[k], f"w{k}") for k in range(rank)]

    def f(*w):
        conds, idx, tap = [], [], const(0, dt.index)
        for k in range(rank):
            p = w[k] * stride[k] + ks[k] - pad[k][0]
            conds += [binary(Op.GE, p, 0), binary(Op.LT, p, x.shape[k])]
            idx.append(binary(Op.MIN, binary(Op.MAX, p, 0), x.shape[k] - 1))
            tap = tap * size[k] + ks[k]
        return red((load(x, idx), tap, all_of(conds)), axis=ks)
    return compute(grid, f, name=f"{instr.name}.select", tag=instr.opcode)[1]


def _scatter_into(instr, x, src, init, chosen, size, stride, pad, builtin, sc_fn):
    """out[p] = scatter(init, fold of src[w] over the windows w that chose p)."""
    rank = len(x.shape)
    reducer, ident = builtin
    ks = [reduce_axis(size[k], f"k{k}") for k in range(rank)]

    def f(*p):
        conds, widx, tap = [], [], const(0, dt.index)
        for k in range(rank):
            q = p[k] + pad[k][0] - ks[k]          # = w * stride for the window w holding p at tap k
            w = q // stride[k] if stride[k] > 1 else q
            conds += [binary(Op.GE, q, 0), binary(Op.LT, q, src.shape[k] * stride[k])]
            if stride[k] > 1:
                conds.append(binary(Op.EQ, q % stride[k], 0))
            widx.append(binary(Op.MIN, binary(Op.MAX, w, 0), src.shape[k] - 1))
            tap = tap * size[k] + ks[k]
        conds.append(binary(Op.EQ, load(chosen, widx), tap))
        v = select(all_of(conds), load(src, widx), const(ident, src.dtype))
        return reducer(v, axis=ks)
    part = compute(x.shape, f, name=f"{instr.name}.scatter", tag=instr.opcode)
    return compute(x.shape, lambda *p: sc_fn([load(init, ()), load(part, p)])[0], name=instr.name,
                   tag=instr.opcode)


def select_and_scatter_numpy(x, src, init, size, stride, pad, select_fn, scatter_fn):
    """The sequential definition: windows in row-major order, taps in row-major order."""
    out = np.full(x.shape, init, dtype=src.dtype)
    for w in itertools.product(*(range(n) for n in src.shape)):
        best = None
        for k in itertools.product(*(range(n) for n in size)):
            p = tuple(w[d] * stride[d] + k[d] - pad[d][0] for d in range(x.ndim))
            inside = all(0 <= p[d] < x.shape[d] for d in range(x.ndim))
            if inside and (best is None or not select_fn(x[best], x[p])):
                best = p
        if best is not None:
            out[best] = scatter_fn(out[best], src[w])
    return out


def _extern(ctx, instr, x, src, init, size, stride, pad, sel_fn, sc_fn):
    pa = [IterVar(f"s{k}", 0, AxisKind.PARAM, x.dtype) for k in range(2)]
    pb = [IterVar(f"c{k}", 0, AxisKind.PARAM, src.dtype) for k in range(2)]
    sel = sel_fn([v.var for v in pa])[0]
    sc = sc_fn([v.var for v in pb])[0]

    def run(arrays, run_graph):
        xa, sa, ia = (np.asarray(a) for a in arrays)
        return (select_and_scatter_numpy(
            xa, sa, ia.reshape(()), size, stride, pad,
            lambda a, b: bool(eval_scalar(sel, {pa[0]: a, pa[1]: b})),
            lambda a, b: eval_scalar(sc, {pb[0]: a, pb[1]: b})),)
    attrs = (("window", (size, stride, pad)), ("select", instr.attr("select")),
             ("scatter", instr.attr("scatter")))
    return _extern_result(ctx, instr, "select-and-scatter", [x, src, init], run, attrs)


HANDLERS = {"select-and-scatter": lower_select_and_scatter}

__all__ = ["HANDLERS", "select_and_scatter_numpy"]
