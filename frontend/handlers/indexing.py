"""Data-dependent indexing: dynamic-slice, dynamic-update-slice, gather (computes) and scatter
(one window: computes; more: an extern op that the cpu compiles as a loop nest,
schedules/scatter.py, with a numpy implementation for other devices).

Start indices are clamped as XLA does: into ``[0, operand_dim - slice_size]``.
"""

from __future__ import annotations

import numpy as np

from ...dsl.expr import AxisKind, Expr, IterVar, binary, const, select
from ...dsl.ops import Op
from ...dsl.tensor import Scatter, extern
from .common import all_of, as_index, clip, dims_of, eval_scalar, ew, ints, load, unsupported


def _starts(ctx, instr, starts, rank) -> list[Expr]:
    """Start index expressions: one scalar operand per dimension (or one rank-1 operand)."""
    if len(starts) == rank and not any(s.shape for s in starts):
        return [as_index(load(s, ())) for s in starts]
    if len(starts) == 1 and starts[0].shape == (rank,):  # older form: one index vector
        return [as_index(load(starts[0], [k])) for k in range(rank)]
    raise unsupported(ctx, instr, "start indices must be one scalar per operand dimension")


def lower_dynamic_slice(ctx, instr, operands):
    """``dynamic-slice``; each start is clamped to ``[0, dim - size]``:
    https://openxla.org/xla/operation_semantics#dynamicslice"""
    x, *starts = operands
    sizes = ints(instr, "dynamic_slice_sizes", dims_of(instr))

    def f(*i):
        st = _starts(ctx, instr, starts, len(x.shape))
        return load(x, [clip(s, 0, n - z) + v for s, n, z, v in zip(st, x.shape, sizes, i)])
    return ew(instr, dims_of(instr), f)


def lower_dynamic_update_slice(ctx, instr, operands):
    """``dynamic-update-slice``; starts clamped to ``[0, dim - update_dim]``:
    https://openxla.org/xla/operation_semantics#dynamicupdateslice"""
    x, upd, *starts = operands

    def f(*i):
        st = [clip(s, 0, n - u) for s, n, u in zip(_starts(ctx, instr, starts, len(x.shape)),
                                                   x.shape, upd.shape)]
        if any(u == 0 for u in upd.shape):
            return load(x, i)
        conds, uidx = [], []
        for v, s, u in zip(i, st, upd.shape):
            t = v - s
            conds += [binary(Op.GE, t, 0), binary(Op.LT, t, u)]
            uidx.append(clip(t, 0, u - 1))
        return select(all_of(conds), load(upd, uidx), load(x, i))
    out = ew(instr, dims_of(instr), f)
    if all(upd.shape) and x.shape:      # what an in-place loop state needs (dsl.tensor.LoopState)
        ctx.updates[out.op] = (x, upd, [clip(s, 0, n - u) for s, n, u in
                                        zip(_starts(ctx, instr, starts, len(x.shape)), x.shape, upd.shape)])
    return out


def lower_gather(ctx, instr, operands):
    """``gather`` with general dimension numbers (batching dims included); start indices are
    clamped so that each slice lies in the operand:
    https://openxla.org/xla/operation_semantics#gather"""
    x, ind = operands
    out = dims_of(instr)
    od, csd = ints(instr, "offset_dims"), ints(instr, "collapsed_slice_dims")
    sim, ss = ints(instr, "start_index_map"), ints(instr, "slice_sizes")
    obd, sibd = ints(instr, "operand_batching_dims"), ints(instr, "start_indices_batching_dims")
    ivd = instr.attr("index_vector_dim", len(ind.shape))
    batch_out = [k for k in range(len(out)) if k not in od]
    ind_batch = [k for k in range(len(ind.shape)) if k != ivd]
    offset_operand = [k for k in range(len(x.shape)) if k not in csd and k not in obd]
    if len(ind_batch) != len(batch_out) or len(offset_operand) != len(od):
        raise unsupported(ctx, instr, "inconsistent gather dimension numbers")

    def f(*i):
        g = [i[k] for k in batch_out]
        full: list = [const(0, as_index(0).dtype)] * len(x.shape)
        for c, k in enumerate(sim):
            idx = list(g)
            if ivd < len(ind.shape):
                idx.insert(ivd, c)
            full[k] = clip(as_index(load(ind, idx)), 0, x.shape[k] - ss[k])
        for ob, sb in zip(obd, sibd):
            full[ob] = g[ind_batch.index(sb)]
        for m, k in enumerate(offset_operand):
            full[k] = full[k] + i[od[m]]
        return load(x, full)
    return ew(instr, out, f)


# ----------------------------------------------------------------------------- scatter

def _scatter_positions(x_shape, ind, upd_shape, dn):
    """Operand positions (one array per operand dim) and an in-bounds mask for every update
    element; a window partly outside the operand is skipped whole (as XLA)."""
    uwd, iwd, sdod, ivd, ibd, sibd = dn
    grid = np.indices(upd_shape).reshape(len(upd_shape), int(np.prod(upd_shape)))
    scat = [k for k in range(len(upd_shape)) if k not in uwd]
    ind_batch = [k for k in range(ind.ndim) if k != ivd]
    g = [grid[k] for k in scat]
    pos = [np.zeros(grid.shape[1], np.int64) for _ in x_shape]
    for c, k in enumerate(sdod):
        idx = list(g)
        if ivd < ind.ndim:
            idx.insert(ivd, np.full(grid.shape[1], c))
        pos[k] = pos[k] + ind[tuple(idx)].astype(np.int64)
    for ob, sb in zip(ibd, sibd):
        pos[ob] = pos[ob] + g[ind_batch.index(sb)]
    window_dims = [k for k in range(len(x_shape)) if k not in iwd and k not in ibd]
    wsize = {k: upd_shape[uwd[m]] for m, k in enumerate(window_dims)}
    ok = np.ones(grid.shape[1], bool)
    for k in range(len(x_shape)):
        ok &= (pos[k] >= 0) & (pos[k] <= x_shape[k] - wsize.get(k, 1))
    for m, k in enumerate(window_dims):
        pos[k] = pos[k] + grid[uwd[m]]
    return [p[ok] for p in pos], ok


def _one_window(ctx, instr, xs, ind, upds, dn, fn):
    """A scatter of a single update window (``x.at[i].set(v)``, ``x.at[i, :].add(v)``) as
    computes, or None: ``out[i] = fn(x[i], upd[i - start])`` inside the window, ``x[i]``
    elsewhere, and ``x`` whole when the window is not entirely in bounds (XLA skips it). The
    results are registered as in-place updates (``ctx.updates``) with their window region, so
    that a loop carrying ``x`` writes only the window."""
    uwd, iwd, sdod, ivd, ibd, sibd = dn
    x0, ush = xs[0], upds[0].shape
    rank = len(x0.shape)
    wdims = [k for k in range(rank) if k not in iwd]
    if ibd or sibd or not rank or int(np.prod([d for k, d in enumerate(ind.shape) if k != ivd])) != 1 or \
            len(wdims) != len(uwd) or any(k >= rank for k in (*iwd, *sdod)) or not all(ush):
        return None
    wsize = [1] * rank
    for m, k in enumerate(wdims):
        wsize[k] = ush[uwd[m]]
    starts = [const(0, as_index(0).dtype)] * rank
    for c, k in enumerate(sdod):
        idx = [0] * len(ind.shape)
        if ivd < len(ind.shape):
            idx[ivd] = c
        starts[k] = as_index(load(ind, idx))
    if any(w > n for w, n in zip(wsize, x0.shape)):
        return None
    valid = all_of([binary(Op.AND, binary(Op.GE, s, const(0, s.dtype)), binary(Op.LE, s, const(n - w, s.dtype)))
                    for s, n, w in zip(starts, x0.shape, wsize)])
    corner = [clip(s, 0, n - w) for s, n, w in zip(starts, x0.shape, wsize)]

    def upd_index(off):
        """The update element at window offset ``off`` (one per operand dim)."""
        u = [0] * len(ush)
        for m, k in enumerate(wdims):
            u[uwd[m]] = off[k]
        return u

    def out_fn(k):
        def f(*i):
            off = [clip(v - s, 0, w - 1) for v, s, w in zip(i, corner, wsize)]
            inside = all_of([binary(Op.AND, binary(Op.GE, v - s, 0), binary(Op.LT, v - s, w))
                             for v, s, w in zip(i, corner, wsize)])
            new = fn([load(x, i) for x in xs] + [load(u, upd_index(off)) for u in upds])[k]
            return select(binary(Op.AND, valid, inside), new, load(xs[k], i))
        return f

    def region_fn(k):
        def f(*r):
            at = [s + v for s, v in zip(corner, r)]
            new = fn([load(x, at) for x in xs] + [load(u, upd_index(list(r))) for u in upds])[k]
            return select(valid, new, load(xs[k], at))
        return f

    outs = []
    for k, x in enumerate(xs):
        out = ew(instr, x.shape, out_fn(k), x.dtype)
        ctx.updates[out.op] = (x, ew(instr, tuple(wsize), region_fn(k), x.dtype), corner)
        outs.append(out)
    return outs


def lower_scatter(ctx, instr, operands):
    """``scatter``: a single update window as computes (``_one_window``); otherwise an extern
    op: updates combine into the operand with ``to_apply`` (add/multiply/max/min run as numpy
    ``ufunc.at``; other combiners apply in rounds of distinct positions):
    https://openxla.org/xla/operation_semantics#scatter"""
    n = (len(operands) - 1) // 2
    xs, ind, upds = list(operands[:n]), operands[n], list(operands[n + 1:])
    fn = ctx.scalar_fn(instr.attr("to_apply"), instr)
    dn = (ints(instr, "update_window_dims"), ints(instr, "inserted_window_dims"),
          ints(instr, "scatter_dims_to_operand_dims"),
          instr.attr("index_vector_dim", len(ind.shape)),
          ints(instr, "input_batching_dims"), ints(instr, "scatter_indices_batching_dims"))
    one = _one_window(ctx, instr, xs, ind, upds, dn, fn)
    if one is not None:
        return one[0] if n == 1 and not instr.shape.is_tuple else tuple(one)
    lhs = [IterVar(f"acc{k}", 0, AxisKind.PARAM, t.dtype) for k, t in enumerate(xs)]
    rhs = [IterVar(f"upd{k}", 0, AxisKind.PARAM, t.dtype) for k, t in enumerate(upds)]
    comb = fn([v.var for v in lhs] + [v.var for v in rhs])
    ufunc = None
    if n == 1 and comb[0].op in (Op.ADD, Op.MUL, Op.MAX, Op.MIN) and \
            {s.arg for s in comb[0].src if s.op is Op.VAR} == {lhs[0], rhs[0]}:
        ufunc = {Op.ADD: np.add, Op.MUL: np.multiply, Op.MAX: np.maximum, Op.MIN: np.minimum}[comb[0].op]

    def run_scatter(arrays, run):
        outs = [np.array(a, copy=True) for a in arrays[:n]]
        ind_a, ups = np.asarray(arrays[n]), arrays[n + 1:]
        pos, ok = _scatter_positions(outs[0].shape, ind_a, ups[0].shape, dn)
        vals = [np.asarray(u).reshape(-1)[ok] for u in ups]
        if ufunc is not None:
            ufunc.at(outs[0], tuple(pos), vals[0])
            return tuple(outs)
        lin = np.ravel_multi_index(tuple(pos), outs[0].shape) if pos else np.zeros(len(vals[0]), np.int64)
        order = np.argsort(lin, kind="stable")
        lin_s = lin[order]
        first = np.r_[True, lin_s[1:] != lin_s[:-1]] if len(lin_s) else np.zeros(0, bool)
        rank = np.arange(len(lin_s)) - np.maximum.accumulate(np.where(first, np.arange(len(lin_s)), 0))
        flat = [o.reshape(-1) for o in outs]
        for r in range(int(rank.max()) + 1 if len(rank) else 0):
            sel = order[rank == r]
            where = lin[sel]
            env = {v: f[where] for v, f in zip(lhs, flat)}
            env.update({v: u[sel] for v, u in zip(rhs, vals)})
            res = [eval_scalar(c, env) for c in comb]
            for f_, r_ in zip(flat, res):
                f_[where] = r_
        return tuple(outs)

    shapes = [t.shape for t in xs]
    spec = Scatter(n, dn, tuple(lhs), tuple(rhs), tuple(comb), run_scatter)
    res = extern(instr.name, "scatter", (*xs, ind, *upds), shapes, [t.dtype for t in xs],
                 spec, attrs=(("dn", dn), ("to_apply", instr.attr("to_apply"))))
    return res[0] if n == 1 and not instr.shape.is_tuple else tuple(res)


HANDLERS = {
    "dynamic-slice": lower_dynamic_slice, "dynamic-update-slice": lower_dynamic_update_slice,
    "gather": lower_gather, "scatter": lower_scatter,
}
