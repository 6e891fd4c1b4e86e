"""Elementwise computes whose body is a large expression DAG (CHLO decompositions, recurrences
such as Clenshaw's): shared subexpressions are computed once, as their own stages.

Renderers and schedule passes see an expression as a tree: a value that a recurrence reads
twice per step (Chebyshev series: ``b0 = x * b1 - b2 + c``) doubles its subtree at every step.
:func:`staged_compute` cuts the DAG at every shared node whose tree would exceed
:data:`STAGE_NODES` nodes: the node becomes a compute of the same shape, read at the same
index. The fusion pass inlines the small ones again and keeps the large ones materialized.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ...dsl.expr import Expr, as_expr, cast, rebuild, substitute, walk
from ...dsl.ops import Op
from ...dsl.tensor import Tensor, compute

__all__ = ["STAGE_NODES", "staged_compute"]

#: the largest tree (nodes, counting repeats) that a shared subexpression may have inside a body
STAGE_NODES = 64


def _cuts(e: Expr) -> set[int]:
    refs: Counter = Counter()
    for x in walk([e]):
        for s in x.src:
            refs[id(s)] += 1
    size: dict[int, int] = {}
    cut: set[int] = set()
    for x in walk([e]):
        n = 1 + sum(size[id(s)] for s in x.src)
        if refs[id(x)] > 1 and n > STAGE_NODES and x.op not in (Op.CONST, Op.VAR, Op.LOAD, Op.REDUCE):
            cut.add(id(x))
            n = 1
        size[id(x)] = n
    return cut


def staged_compute(shape, fn: Callable[..., Expr], name: str, tag: str = "", dtype=None) -> Tensor:
    """``compute(shape, fn)`` (cast to ``dtype`` when given) with large shared subexpressions
    of the body moved to stages ``name.s0``, ``name.s1``, ...: same values, bounded trees."""
    def body(*axes):
        e = as_expr(fn(*axes))
        e = cast(e, dtype) if dtype is not None else e
        cut = _cuts(e)
        if not cut:
            return e
        memo: dict[int, Expr] = {}
        for x in walk([e]):   # post-order: children are rebuilt first
            src = tuple(memo[id(s)] for s in x.src)
            r = x if all(a is b for a, b in zip(src, x.src)) else rebuild(x, src, x.arg)
            if id(x) in cut:
                part = compute(tuple(shape), lambda *j, r=r: substitute(r, dict(zip(axes, j))),
                               name=f"{name}.s{len(memo)}", tag=tag)
                r = part[tuple(axes)] if axes else part[()]
            memo[id(x)] = r
        return memo[id(e)]
    return compute(tuple(shape), body, name=name, tag=tag)
