"""One-pass row statistics: a fusion-plan rewrite of the graph (``fusion.Choice`` kind 'onepass').

A layer norm computes its row statistics in two passes over the row: the mean
``M[i] = sum_r a(i, r)``, then ``V[i] = sum_r (a(i, r) - b(i))^2`` where ``b`` is computed from
``M`` (the mean). The one-pass form computes both from one sweep, shifted by the row's first
element ``K(i) = a(i, 0)`` so that large means do not cancel::

    S1, S2 = sum_r (a - K), sum_r (a - K)^2       (one reduction with two accumulators)
    M = S1 + N K,     V = S2 - 2 (b - K) S1 + N (b - K)^2        (N: the extent of r)

which is exact algebra for any ``b`` that does not depend on ``r``. A softmax's normalizer is
likewise ``L[i] = sum_r exp(a - b)`` after ``X[i] = max_r a``; its one-pass form (the online
normalizer) keeps a running maximum and a sum rescaled whenever the maximum grows::

    (m, l) = reduce_r (a, 1) with (m1, l1) + (m2, l2) = (max, l1 e^(m1 - max) + l2 e^(m2 - max))
    X = m,     L = l e^(m - b)

Both are offered where the graph holds the pattern (the second reduction reading the first
through elementwise ops, its summand the same expression of the row) and applied only by a
plan (schedules/rewrites.py): measured, and answer-checked, like any plan. ``a`` and ``b`` may be any
elementwise expressions (a residual sum, a scaled and masked score).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dsl import dtypes as dt
from ..dsl.expr import Expr, IterVar, binary, cast, const, select, substitute, unary, walk
from ..dsl.ops import Op
from ..dsl.tensor import ComputeOp, Graph, Tensor, comm_reducer, compute, reduce_axis
from .fusion_rules import ROW_STAT

#: loads of elementwise stages expanded while matching, at most (beyond: no match)
EXPAND_MAX = 256


class _Bail(Exception):
    pass


def _sum2_combine(a, b):
    return binary(Op.ADD, a[0], b[0]), binary(Op.ADD, a[1], b[1])


#: two sums in one loop (componentwise adds: a SIMD reduction per accumulator)
sum2 = comm_reducer(_sum2_combine, lambda d: (const(0, d[0]), const(0, d[1])), "sum2")


def rescale(x: Expr, m: Expr) -> Expr:
    """``exp(x - m)``, the factor a sum kept under running maximum ``x`` takes under ``m``; 1 where
    the maximum did not move (which also keeps ``exp(-inf - -inf)`` out of empty rows)."""
    return select(binary(Op.EQ, x, m), const(1, x.dtype), unary(Op.EXP, binary(Op.SUB, x, m)))


def _online_combine(a, b):
    m = binary(Op.MAX, a[0], b[0])
    return m, binary(Op.ADD, binary(Op.MUL, a[1], rescale(a[0], m)), binary(Op.MUL, b[1], rescale(b[0], m)))


def _online_identity(d):
    return const(float("-inf"), d[0]), const(0, d[1])


#: the online softmax normalizer: (running maximum, sum of exp(a - running maximum))
online_softmax = comm_reducer(_online_combine, _online_identity, "online_softmax")


@dataclass(frozen=True)
class Match:
    """``second`` reads ``first`` (through elementwise ops) and both reduce the same row
    expression ``a`` (in ``second``'s axes and its reduce axis ``r``); ``b``: the part of
    ``second``'s summand without ``r``; ``kind``: 'var' or 'softmax'."""

    kind: str
    first: ComputeOp
    second: ComputeOp
    a: Expr
    b: Expr


def _reduction(op, ufunc: str):
    """(value, reduce axis) of a one-output, one-axis, unmasked float reduction by ``ufunc``."""
    if not isinstance(op, ComputeOp) or not op.is_reduction or op.num_outputs != 1:
        return None
    spec = op.body[0].arg
    d = op.body[0].dtype
    if spec.reducer.ufunc != ufunc or spec.where is not None or len(spec.axes) != 1 or \
            not d.is_float or d.is_narrow_float:
        return None
    return op.body[0].src[0], spec.axes[0]


def _expand(e: Expr, stop: set) -> Expr:
    """``e`` with loads of elementwise one-output stages replaced by their bodies."""
    count = [0]

    def load(x, src):
        t = x.arg
        op = getattr(t, "op", None)
        if not isinstance(op, ComputeOp) or id(op) in stop or op.is_reduction or op.num_outputs != 1:
            return None
        count[0] += 1
        if count[0] > EXPAND_MAX:
            raise _Bail
        return substitute(op.body[0], dict(zip(op.axis, src)), load)
    return substitute(e, {}, load)


def _same(a: Expr, b: Expr, memo: dict) -> bool:
    """Structural equality, variables and tensors by identity."""
    if a is b:
        return True
    key = (id(a), id(b))
    if key in memo:
        return memo[key]
    ok = a.op is b.op and a.dtype == b.dtype and len(a.src) == len(b.src)
    if ok:
        if a.op is Op.VAR:
            ok = a.arg is b.arg
        elif a.op is Op.LOAD:
            ok = (id(a.arg.op), a.arg.value_index) == (id(b.arg.op), b.arg.value_index) \
                if isinstance(a.arg, Tensor) and isinstance(b.arg, Tensor) else a.arg is b.arg
        elif a.op is Op.CONST:
            ok = repr(a.arg) == repr(b.arg)
        elif a.op is Op.REDUCE:
            ok = False
        else:
            ok = a.arg == b.arg
        ok = ok and all(_same(x, y, memo) for x, y in zip(a.src, b.src))
    memo[key] = ok
    return ok


def _mentions(e: Expr, v: IterVar) -> bool:
    return any(x.op is Op.VAR and x.arg is v for x in walk([e]))


def _square_of(e: Expr) -> Expr | None:
    if e.op is Op.MUL and _same(e.src[0], e.src[1], {}) or e.op is Op.POW and e.src[1].op is Op.CONST and e.src[1].arg == 2:
        u = e.src[0]
    else:
        return None
    return u.src[0] if u.op is Op.ABS else u


def _first_of(b: Expr, second: ComputeOp, a: Expr, r: IterVar, ufunc: str, stop: set):
    """The reduction by ``ufunc`` that ``b`` loads at ``second``'s own indices and whose
    summand is ``a`` (its reduce axis renamed ``r``), or None."""
    for x in walk([b]):
        if x.op is not Op.LOAD or not isinstance(x.arg, Tensor) or id(x.arg.op) in stop:
            continue
        op = x.arg.op
        got = _reduction(op, ufunc)
        if got is None or op.shape != second.shape or len(x.src) != len(second.axis) or \
                not all(i.op is Op.VAR and i.arg is v for i, v in zip(x.src, second.axis)):
            continue
        val, rf = got
        if rf.extent != r.extent:
            continue
        mine = substitute(_expand(val, stop), {**{v: w.var for v, w in zip(op.axis, second.axis)}, rf: r.var})
        if _same(mine, a, {}):
            return op
    return None


def _match(op: ComputeOp, stop: set) -> Match | None:
    """A one-pass opportunity whose second reduction (a sum) is ``op``."""
    got = _reduction(op, "add")
    if got is None:
        return None
    val, r = got
    try:
        e = _expand(val, stop)
    except _Bail:
        return None
    u = _square_of(e)
    kind, first_ufunc = "var", "add"
    if u is None and e.op is Op.EXP:
        u, kind, first_ufunc = e.src[0], "softmax", "maximum"
    if u is None or u.op is not Op.SUB:
        return None
    a, b = u.src
    if not _mentions(a, r) or _mentions(b, r):
        return None
    try:
        first = _first_of(b, op, a, r, first_ufunc, stop)
    except _Bail:
        return None
    return Match(kind, first, op, a, b) if first is not None else None


def matches(g: Graph) -> list[Match]:
    """Every one-pass opportunity of ``g``, in topological order of the second reduction; a
    reduction takes part in one match at most."""
    stop = {id(t.op) for t in g.inputs}
    out, used = [], set()
    for op in g.compute_ops:
        m = _match(op, stop)
        if m is not None and id(m.first) not in used and id(m.second) not in used:
            used |= {id(m.first), id(m.second)}
            out.append(m)
    return out


def _fresh(m: Match):
    """``(r, at)``: the second reduction's reduce axis, and ``at(e, idx, k)``, expression ``e`` of
    its axes (and of ``r``) at indices ``idx`` (and reduce index ``k``) of new ops."""
    second = m.second
    r = second.body[0].arg.axes[0]

    def at(e, idx, k=None):
        mp = {v: i for v, i in zip(second.axis, idx)}
        if k is not None:
            mp[r] = k
        return substitute(e, mp)
    return r, at


def one_pass(m: Match) -> dict[Tensor, Tensor]:
    """The replacements (old tensor -> new) that compute match ``m`` in one pass."""
    r, at = _fresh(m)
    n = r.extent
    d = m.second.body[0].dtype
    name = m.second.name
    if m.kind == "var":
        def stats(*i):
            k = reduce_axis(n, "r")
            x = binary(Op.SUB, at(m.a, i, k.var), at(m.a, i, const(0, dt.index)))
            return sum2((x, binary(Op.MUL, x, x)), axis=k)
        s = compute(m.second.shape, stats, f"{name}_stats")
        shift = (lambda i: at(m.a, i, const(0, dt.index)))
        first = compute(m.first.shape, lambda *i: cast(
            binary(Op.ADD, s[0][i], binary(Op.MUL, const(n, d), shift(i))), d), m.first.name, ROW_STAT)

        def var(*i):
            c = binary(Op.SUB, at(m.b, i), shift(i))
            two = binary(Op.MUL, binary(Op.MUL, const(2, d), c), s[0][i])
            return cast(binary(Op.ADD, binary(Op.SUB, s[1][i], two),
                               binary(Op.MUL, const(n, d), binary(Op.MUL, c, c))), d)
        second = compute(m.second.shape, var, name, ROW_STAT)
    else:
        def stats(*i):
            k = reduce_axis(n, "r")
            return online_softmax((at(m.a, i, k.var), const(1, d)), axis=k)
        s = compute(m.second.shape, stats, f"{name}_stats")
        first = compute(m.first.shape, lambda *i: cast(s[0][i], d), m.first.name)
        second = compute(m.second.shape, lambda *i: cast(binary(Op.MUL, s[1][i], unary(
            Op.EXP, binary(Op.SUB, s[0][i], at(m.b, i)))), d), name)
    return {m.first.output(0): first, m.second.output(0): second}


__all__ = ["Match", "matches", "one_pass", "online_softmax", "rescale", "sum2"]
