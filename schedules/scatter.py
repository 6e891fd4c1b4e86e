"""A ``scatter`` extern op (``dsl.tensor.Scatter``) as a loop nest, so that it runs compiled
instead of in numpy::

    out_k = x_k                                    (every element)
    for g in the update's scatter dims (row-major, in order: XLA applies windows in turn):
        p[d] = the window's operand corner (indices at g, plus batching dims)
        if every p[d] in [0, dim_d - window_d]:    (a window partly outside is skipped)
            for w in the window:
                new_k = comb_k(out_*[p + w], u_*[g, w]) for every k, then stored

Loops are serial: windows may overlap, and each sees the ones before it.
"""

from __future__ import annotations

from ..dsl import dtypes as dt
from ..dsl.expr import AxisKind, Expr, IterVar, binary, cast, const, substitute
from ..dsl.ops import Op
from ..dsl.tensor import ExternOp, Scatter
from .loops import For, If, Let, LoopKind, LoweredFunc, Store, extern_args, seq


def _nest(extents, body_fn, prefix: str):
    """Serial loops over ``extents`` around ``body_fn(vars)``."""
    vs = [IterVar(f"{prefix}{k}", int(e), AxisKind.DATA, dt.index) for k, e in enumerate(extents)]
    s = body_fn([v.var for v in vs])
    for v in reversed(vs):
        s = For(v, const(v.extent, dt.index), LoopKind.SERIAL, s)
    return s


def _all(conds) -> Expr | None:
    out = None
    for c in conds:
        out = c if out is None else binary(Op.AND, out, c)
    return out


def scatter_func(op: ExternOp, name: str) -> LoweredFunc:
    """The loop nest computing scatter extern op ``op`` (inputs ``x_*, indices, u_*``, outputs
    the scattered ``x_*``)."""
    spec: Scatter = op.fn
    n = spec.n
    uwd, iwd, sdod, ivd, ibd, sibd = spec.dims
    ins, outs = extern_args(op)
    xs, ind, ups = ins[:n], ins[n], ins[n + 1:]
    shape, ushape = outs[0].shape, ups[0].shape
    copy = [_nest(shape, lambda i, k=k: Store(outs[k], tuple(i), xs[k].load(i)), f"c{k}_") for k in range(n)]
    scat = [d for d in range(len(ushape)) if d not in uwd]
    wdims = [d for d in range(len(shape)) if d not in iwd and d not in ibd]
    wsize = {d: ushape[uwd[m]] for m, d in enumerate(wdims)}
    ind_batch = [d for d in range(len(ind.shape)) if d != ivd]

    def window(g):
        pos: list[Expr] = [const(0, dt.index)] * len(shape)
        for c, d in enumerate(sdod):
            at = list(g)
            if ivd < len(ind.shape):
                at.insert(ivd, const(c, dt.index))
            pos[d] = binary(Op.ADD, pos[d], cast(ind.load(at), dt.index))
        for ob, sb in zip(ibd, sibd):
            pos[ob] = binary(Op.ADD, pos[ob], g[ind_batch.index(sb)])
        ok = _all([binary(Op.AND, binary(Op.GE, p, const(0, dt.index)),
                          binary(Op.LE, p, const(shape[d] - wsize.get(d, 1), dt.index)))
                   for d, p in enumerate(pos)])

        def element(w):
            at = list(pos)
            for m, d in enumerate(wdims):
                at[d] = binary(Op.ADD, at[d], w[m])
            u_at: list[Expr] = [const(0, dt.index)] * len(ushape)
            for m, d in enumerate(uwd):
                u_at[d] = w[m]
            for m, d in enumerate(scat):
                u_at[d] = g[m]
            env = {v: outs[k].load(at) for k, v in enumerate(spec.lhs)}
            env.update({v: ups[k].load(u_at) for k, v in enumerate(spec.rhs)})
            news = [IterVar(f"new{k}", 0, AxisKind.PARAM, outs[k].dtype) for k in range(n)]
            body = seq(*[Store(outs[k], tuple(at), news[k].var) for k in range(n)])
            for k in reversed(range(n)):       # every new value from the old ones, then the stores
                body = Let(news[k], cast(substitute(spec.comb[k], env), outs[k].dtype), body)
            return body
        inner = _nest([ushape[d] for d in uwd], element, "w")
        return If(ok, inner) if ok is not None else inner

    return LoweredFunc(name, tuple(ins + outs), len(ins), seq(*copy, _nest([ushape[d] for d in scat], window, "g")))


__all__ = ["scatter_func"]
