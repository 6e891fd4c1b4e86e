"""``reduce`` and ``reduce-window`` with any ``to_apply`` computation.

The ``to_apply`` root becomes the combiner. add/multiply/maximum/minimum (and and/or on pred)
of the two parameters use the built-in ``dsl.sum/prod/max/min``; anything else (variadic
argmax, ...) becomes a ``dsl.comm_reducer``. XLA folds the init value into the result:
``result = combine(init, reduce(...))``. When the init is a constant equal to the built-in's
identity it is skipped; a constant init of a custom combiner is its start value; otherwise
a second compute combines it (a custom combiner then carries a "seen" flag as identity).
Taps of a reduce-window in padding or base-dilation holes are skipped, as in XLA's evaluator
and CPU emitter: ``result = combine(init, fold(in-bounds taps))``, ``init`` if there are none.
"""

from __future__ import annotations

import math

from ...dsl import dtypes as dt
from ...dsl.expr import AxisKind, IterVar, binary, const, select
from ...dsl.ops import Op
from ...dsl.tensor import SCAN_STEP, comm_reducer, compute, limit_value, reduce_axis
from ...dsl.tensor import max as dsl_max
from ...dsl.tensor import min as dsl_min
from ...dsl.tensor import prod as dsl_prod
from ...dsl.tensor import sum as dsl_sum
from .common import all_of, const_value, dims_of, ew, ints, load, reduce_compute, unsupported, window_tap

_BUILTIN_OPS = (Op.ADD, Op.MUL, Op.MAX, Op.MIN, Op.AND, Op.OR)


def _builtin(fn, d):
    """(reducer, identity) when ``fn`` is a built-in binary op of its two parameters."""
    a, b = IterVar("a", 0, AxisKind.PARAM, d), IterVar("b", 0, AxisKind.PARAM, d)
    r = fn([a.var, b.var])
    if len(r) != 1 or r[0].op not in _BUILTIN_OPS:
        return None
    src = r[0].src
    if not all(s.op is Op.VAR for s in src) or {s.arg for s in src} != {a, b}:
        return None
    op = r[0].op
    if op in (Op.AND, Op.OR) and d.is_bool:
        op = Op.MIN if op is Op.AND else Op.MAX
    if op is Op.ADD:
        return dsl_sum, limit_value(d, "zero")
    if op is Op.MUL:
        return dsl_prod, limit_value(d, "one")
    if op is Op.MAX:
        return dsl_max, limit_value(d, "lowest")
    if op is Op.MIN:
        return dsl_min, limit_value(d, "highest")
    ident = 0 if op is Op.OR else (-1 if d.kind == "i" else (1 << d.bits) - 1)
    red = comm_reducer(lambda x, y: (binary(op, x[0], y[0]),), lambda ds: (const(ident, ds[0]),),
                       "bitor" if op is Op.OR else "bitand")
    return red, ident


class _Reduction:
    """How one reduce/reduce-window instruction folds: ``reduce(values, axes, valid)`` gives the
    reduce exprs, ``build`` the compute(s). ``masked``: some taps may be invalid (padding or
    base-dilation holes of a reduce-window); XLA skips them, so they contribute the identity
    (built-ins) or a false "seen" flag (custom combiners)."""

    def __init__(self, ctx, instr, inits, masked: bool = False):
        self.fn = ctx.scalar_fn(instr.attr("to_apply"), instr)
        self.inits, n = inits, len(inits)
        self.dtypes = [t.dtype for t in inits]
        consts = [const_value(t) for t in inits]
        self.single = n == 1
        b = _builtin(self.fn, self.dtypes[0]) if self.single else None
        self.flag = False
        if b is not None:
            self.reducer, self.identity = b
            self.fold_init = not (consts[0] is not None and consts[0] == self.identity)
        elif all(c is not None for c in consts) and not masked:
            dts = self.dtypes
            self.reducer = comm_reducer(lambda x, y: self.fn(list(x) + list(y)),
                                        lambda ds: tuple(const(c, d) for c, d in zip(consts, dts)),
                                        "reducer")
            self.fold_init = False
        else:
            def comb(x, y):
                c = self.fn(list(x[:n]) + list(y[:n]))
                return tuple(select(x[n], select(y[n], c[k], x[k]), y[k]) for k in range(n)) + \
                    (binary(Op.OR, x[n], y[n]),)
            self.reducer = comm_reducer(comb, lambda ds: tuple(const(0, d) for d in ds[:n]) +
                                        (const(False, dt.bool_),), "reducer_seen")
            self.fold_init, self.flag = True, True
        self.masked_flag = self.flag and masked

    def reduce(self, values, axes, valid=None):
        if self.flag:
            seen = const(True, dt.bool_) if valid is None else valid
            r = self.reducer(tuple(values) + (seen,), axis=axes)
            return r if self.masked_flag else r[:len(values)]
        if valid is not None:
            values = [select(valid, v, const(self.identity, v.dtype)) for v in values]
        if self.reducer in (dsl_sum, dsl_prod, dsl_max, dsl_min):
            return self.reducer(values[0], axis=axes)
        r = self.reducer(tuple(values), axis=axes)
        return r[0] if self.single else r

    def build(self, instr, shape, f):
        """The reduce compute(s) of ``f(*i) -> reduce exprs``, then the init fold if needed:
        ``combine(init, r)`` (``init`` where no tap was valid)."""
        n = len(self.inits)
        name = f"{instr.name}.partial" if self.fold_init else instr.name
        part = reduce_compute(shape, f, name, instr.opcode)
        parts = [part] if not isinstance(part, tuple) else list(part)
        if not self.fold_init:
            return parts[0] if self.single else tuple(parts)

        def fold(*i):
            init = [load(t, ()) for t in self.inits]
            res = self.fn(init + [load(p, i) for p in parts[:n]])
            if self.masked_flag:
                seen = load(parts[n], i)
                res = tuple(select(seen, r, v) for r, v in zip(res, init))
            return res
        res = compute(shape, fold, name=instr.name, tag=instr.opcode)
        return res[0] if self.single else tuple(res)


def _broadcast_init(instr, inits, shape):
    outs = tuple(ew(instr, shape, lambda *i, t=t: load(t, ())) for t in inits)
    return outs[0] if len(outs) == 1 else outs


def lower_reduce(ctx, instr, operands):
    """``reduce`` over ``dimensions`` with ``to_apply`` (variadic: tuples of operands and inits):
    https://openxla.org/xla/operation_semantics#reduce"""
    n = len(operands) // 2
    xs, inits = operands[:n], operands[n:]
    dims = ints(instr, "dimensions")
    rank = len(xs[0].shape)
    keep = [d for d in range(rank) if d not in dims]
    shape = tuple(xs[0].shape[d] for d in keep)
    if any(xs[0].shape[d] == 0 for d in dims):
        return _broadcast_init(instr, inits, shape)
    red = _Reduction(ctx, instr, inits)
    if not dims:  # nothing to reduce: combine(init, x) elementwise
        res = compute(shape, lambda *i: red.fn([load(t, ()) for t in inits] + [load(x, i) for x in xs]),
                      name=instr.name, tag="reduce")
        return res[0] if n == 1 else tuple(res)
    ks = [reduce_axis(xs[0].shape[d], f"r{d}") for d in dims]

    def f(*i):
        idx = [None] * rank
        for k, d in enumerate(keep):
            idx[d] = i[k]
        for k, d in zip(ks, dims):
            idx[d] = k
        return red.reduce([load(x, idx) for x in xs], ks)
    return red.build(instr, shape, f)


#: the ops a prefix scan may run as log-step combinations (associative, with an identity)
_SCAN_OPS = {"sum": Op.ADD, "prod": Op.MUL, "max": Op.MAX, "min": Op.MIN, "bitor": Op.OR, "bitand": Op.AND}


def _scan_axis(size, stride, pad, bdil, wdil, shape) -> tuple[int, bool] | None:
    """``(axis, reverse)`` when the window is a cumulative one along one axis: it spans the
    axis (size n) with n - 1 elements of padding before it (a prefix: ``out[i]`` folds
    ``x[0..i]``) or after it (a suffix, ``reverse``), stride and dilation 1, size 1 elsewhere."""
    if any(v != 1 for v in (*stride, *bdil, *wdil)):
        return None
    axes = [d for d, k in enumerate(size) if k != 1 or pad[d] != (0, 0)]
    if len(axes) != 1:
        return None
    a = axes[0]
    n = shape[a]
    if n < 2 or size[a] != n or pad[a] not in ((n - 1, 0), (0, n - 1)):
        return None
    return a, pad[a] == (0, n - 1)


def _log_step_scan(instr, x, red: _Reduction, axis: int, reverse: bool):
    """The cumulative fold of ``x`` along ``axis`` in ceil(log2 n) elementwise steps (Hillis and
    Steele): step ``d`` combines each element with the one ``d`` before it (after it when
    ``reverse``), or with the identity where there is none. O(n log n) work instead of the
    window's O(n^2); each step is its own stage (``SCAN_STEP``). Then the init fold as usual."""
    op = _SCAN_OPS[red.reducer.__name__]
    shape = tuple(x.shape)
    n, d, cur = shape[axis], 1, x
    while d < n:
        def step(*i, cur=cur, d=d):
            j = list(i)
            # clamped into the axis (the select discards it there): every load stays in bounds,
            # also where the reference evaluates both sides of the select
            j[axis] = binary(Op.MIN, i[axis] + d, n - 1) if reverse else binary(Op.MAX, i[axis] - d, 0)
            has = binary(Op.LT, i[axis], n - d) if reverse else binary(Op.GE, i[axis], d)
            other = select(has, load(cur, j), const(red.identity, cur.dtype))
            return binary(op, load(cur, i), other)
        cur = compute(shape, step, name=f"{instr.name}.scan{d}", tag=SCAN_STEP)
        d *= 2
    if not red.fold_init:
        return cur
    return compute(shape, lambda *i: red.fn([load(red.inits[0], ()), load(cur, i)])[0], name=instr.name,
                   tag=instr.opcode)


def lower_reduce_window(ctx, instr, operands):
    """``reduce-window`` (size, stride, padding, base and window dilation); taps in padding or
    dilation holes are skipped: https://openxla.org/xla/operation_semantics#reducewindow. A
    cumulative window (a prefix or suffix fold along one axis, as ``jnp.cumsum`` lowers) with a
    built-in reducer runs as a log-step scan."""
    n = len(operands) // 2
    xs, inits = operands[:n], operands[n:]
    win = instr.attr("window") or {}
    rank = len(xs[0].shape)

    def wf(key, default):
        v = tuple(win.get(key, ()))
        return v if len(v) == rank else (default,) * rank
    size, stride, pad = wf("size", 1), wf("stride", 1), wf("pad", (0, 0))
    bdil, wdil = wf("lhs_dilate", 1), wf("rhs_dilate", 1)
    shape = dims_of(instr) if not instr.shape.is_tuple else tuple(instr.shape.elements[0].dims)
    if math.prod(size) == 0 or any(s == 0 for s in xs[0].shape):
        return _broadcast_init(instr, inits, shape)
    if any(s < 1 for s in stride + bdil + wdil):
        raise unsupported(ctx, instr, "window strides and dilations must be positive")
    scan = _scan_axis(size, stride, pad, bdil, wdil, xs[0].shape) if n == 1 and shape == tuple(xs[0].shape) else None
    if scan is not None:
        red = _Reduction(ctx, instr, inits, masked=True)
        if not red.flag and getattr(red.reducer, "__name__", "") in _SCAN_OPS:
            return _log_step_scan(instr, xs[0], red, *scan)
    ks = [reduce_axis(size[d], f"w{d}") for d in range(rank)]
    masked = any(p != (0, 0) for p in pad) or any(b > 1 for b in bdil)
    red = _Reduction(ctx, instr, inits, masked)

    def f(*i):
        conds, idx = [], []
        for d in range(rank):
            c, x = window_tap(i[d], ks[d], stride[d], wdil[d], pad[d][0], shape[d], size[d], xs[0].shape[d],
                              bdil[d])
            conds += c
            idx.append(x)
        return red.reduce([load(x, idx) for x in xs], ks, all_of(conds))
    return red.build(instr, shape, f)


HANDLERS = {"reduce": lower_reduce, "reduce-window": lower_reduce_window}
