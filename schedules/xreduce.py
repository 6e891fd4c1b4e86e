"""Cross-work-item reductions: a reduction loop bound to ``local.*`` (or ``threadIdx.*``).

For a stage whose outermost reduction loop ``kl`` (extent ``L``, a power of two) is bound to a
work-item index and whose other loops inside it are reductions too, each output becomes::

    red = alloc(dtype[L], shared)
    for kl (bound):                      # work-item kl folds k = ..kl.. over the inner loops
        acc = identity
        for inner reduction loops: acc = combine(acc, value)
        red[kl] = acc
    barrier()
    for half in L/2, L/4, ..., 1:        # a tree over the work-group, log2(L) steps
        for kl (bound): if kl < half: red[kl] = combine(red[kl], red[kl + half])
        barrier()
    for kl (bound): if kl == 0: out[idx] = red[0]
    barrier()                            # before an enclosing loop refills red

Run serially (one iteration of every bound loop after another) the steps give the same sums, so
the nest is also the reference meaning of the schedule.
"""

from __future__ import annotations

from ..dsl import dtypes as dt
from ..dsl.expr import AxisKind, IterVar, as_expr, binary, substitute
from ..dsl.ops import Op
from .loops import Allocate, Assign, Barrier, Buffer, For, If, Let, LoopKind, Stmt, Store, Thread, seq
from .stage import Stage, check


def bound_reduce_axis(st: Stage) -> IterVar | None:
    """The reduction leaf bound to a work-item index, if any."""
    vs = [v for v in st.leaf if v.kind is AxisKind.REDUCE and isinstance(st.annotations.get(v), Thread)]
    check(len(vs) <= 1, f"bind: stage '{st.name}' binds {len(vs)} reduction loops; bind at most one")
    return vs[0] if vs else None


def cross_item_reduce(lw, st: Stage, kl: IterVar, bufs, store_idx, vals, spec, loop_ext, guards,
                      guarded) -> Stmt:
    """The statements for one output of ``st`` reduced across the work-items of ``kl`` (see the
    module docstring); ``lw`` is the lowerer (for ``wrap``)."""
    red = spec.reducer
    first = next(k for k, v in enumerate(st.leaf) if v.kind is AxisKind.REDUCE)
    rest = st.leaf[first + 1:]
    thread = st.annotations[kl]
    check(st.leaf[first] is kl and all(v.kind is AxisKind.REDUCE for v in rest),
          f"bind: reduction loop '{kl.name}' of '{st.name}' bound to {thread} must be the outermost "
          "reduction loop with only reduction loops inside it")
    check(not any(st.annotations.get(v) is LoopKind.VECTORIZE for v in rest),
          f"vectorize: a reduction loop inside '{kl.name}' of '{st.name}', which is bound to work-items; "
          "unroll it instead")
    check(len(bufs) == 1, f"bind: '{st.name}' has a {len(bufs)}-value reducer; a reduction across "
          "work-items takes single-value reducers (sum, prod, max, min, ...)")
    n = loop_ext[kl]
    L = int(n.arg) if n.op is Op.CONST else 0
    check(L >= 1 and L & (L - 1) == 0, f"bind: reduction loop '{kl.name}' of '{st.name}' needs a constant "
          "power-of-two extent (split the reduction axis by a power of two)")
    d = bufs[0].dtype
    buf = Buffer(f"{st.name}_red", d, (L,), "shared")
    acc = IterVar(f"{st.name}_acc", 0, AxisKind.PARAM, d)

    def combine(a, b):
        return substitute(red.combine[0], {red.lhs[0]: a, red.rhs[0]: b})

    def lane(tag: str) -> IterVar:
        return IterVar(f"{kl.name}.{tag}", L, AxisKind.DATA)

    update: Stmt = Assign(acc, combine(acc.var, vals[0]))
    if spec.where is not None:
        update = If(lw.to_buffers(spec.where), update)
    ident = lw.to_buffers(red.identity[0])
    fold = Let(acc, ident, seq(lw.wrap(st, rest, guarded(update, True), loop_ext), Store(buf, (kl.var,), acc.var)))
    out = [For(kl, n, LoopKind.BIND, fold, thread=thread), Barrier()]
    half = L // 2
    while half >= 1:
        v = lane(f"h{half}")
        step = Store(buf, (v.var,), combine(buf.load((v.var,)), buf.load((binary(Op.ADD, v.var, half),))))
        out += [For(v, as_expr(L, dt.index), LoopKind.BIND, If(binary(Op.LT, v.var, half), step), thread=thread), Barrier()]
        half //= 2
    v = lane("out")
    final = If(binary(Op.EQ, v.var, 0), guarded(Store(bufs[0], store_idx, buf.load((as_expr(0, dt.index),))), False))
    out += [For(v, as_expr(L, dt.index), LoopKind.BIND, final, thread=thread), Barrier()]
    return Allocate(buf, seq(*out))


__all__ = ["bound_reduce_axis", "cross_item_reduce"]
