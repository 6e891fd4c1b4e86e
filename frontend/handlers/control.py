"""Calls, tuples and control flow.

``call``/``fusion`` are inlined. ``while``, ``conditional``, ``sort`` and ``topk`` are
extern ops: their ``fn(arrays, run)`` evaluates the sub-computations (lowered once on
fresh placeholders) through ``run``, or numpy.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import numpy as np

from ...dsl.expr import AxisKind, IterVar, binary, const, select
from ...dsl.ops import Op
from ...dsl.tensor import (
    ComputeOp,
    Conditional,
    Graph,
    LoopState,
    PlaceholderOp,
    SortCall,
    SortKey,
    WhileLoop,
    compute,
    extern,
)
from .common import as_index, const_value, dtype_of, eval_scalar, ew, flatten, ints, load, unsupported
from .sortkeys import lex_keys, lexsort_perm, sortable

log = logging.getLogger(__name__)


def _unflatten(shape, it: Iterator):
    if shape.is_tuple:
        return tuple(_unflatten(s, it) for s in shape.elements)
    return next(it)


def _leaf_shapes(shape) -> list:
    if shape.is_tuple:
        return [x for s in shape.elements for x in _leaf_shapes(s)]
    return [shape]


def _positions(phs, outs) -> list[int]:
    """Positions in ``phs`` of the inputs ``run(outs, ...)`` expects, in its order."""
    where = {id(p.op): k for k, p in enumerate(phs)}
    return [where[id(t.op)] for t in Graph(list(outs)).inputs]


def _extern_result(ctx, instr, kind, inputs, fn, attrs=()):
    leaves = _leaf_shapes(instr.shape)
    outs = extern(instr.name, kind, inputs, [s.dims for s in leaves],
                  [dtype_of(ctx, instr, s) for s in leaves], fn, attrs)
    return _unflatten(instr.shape, iter(outs))


def lower_call(ctx, instr, operands):
    """``call``/``fusion``: the called computation inlined with the operands as parameters:
    https://openxla.org/xla/operation_semantics#call"""
    name = instr.attr("to_apply") if instr.opcode == "call" else instr.attr("calls")
    if name is None:
        raise unsupported(ctx, instr, "no called computation")
    return ctx.lower_called(name, operands)


def lower_tuple(ctx, instr, operands):
    """``tuple``: a python tuple of the operand values:
    https://openxla.org/xla/operation_semantics#tuple"""
    return tuple(operands)


def lower_get_tuple_element(ctx, instr, operands):
    """``get-tuple-element`` at ``index``: https://openxla.org/xla/operation_semantics#getelementintuple"""
    return operands[0][int(instr.attr("index"))]


def lower_identity(ctx, instr, operands):
    """``opt-barrier`` (``optimization-barrier``), ``domain`` and ``add-dependency``: the (first)
    operand:
    https://openxla.org/xla/operation_semantics#optimizationbarrier"""
    return operands[0]


def lower_copy_start(ctx, instr, operands):
    """``copy-start``: (destination, source, context) of an asynchronous copy; ``copy-done``
    gives the destination: https://openxla.org/xla/operation_semantics#copy"""
    (x,) = operands
    rest = [ew(instr, s.dims, lambda *i: 0, dtype_of(ctx, instr, s)) for s in instr.shape.elements[2:]]
    return (ew(instr, x.shape, lambda *i: x[i] if x.shape else x[()]), x, *rest)


def lower_copy_done(ctx, instr, operands):
    """``copy-done``: the destination its ``copy-start`` wrote."""
    return operands[0][0]


def lower_device_id(ctx, instr, operands):
    """``replica-id``/``partition-id`` on one device: 0.
    https://openxla.org/xla/operation_semantics#replicaid"""
    return ew(instr, (), lambda: const(0, dtype_of(ctx, instr)))


def _computed(t):
    """``t``, or a copy of it when it is a placeholder (a graph's outputs are computed)."""
    return compute(t.shape, lambda *i: t[i] if t.shape else t[()], name=f"{t.name}_copy") \
        if isinstance(t.op, PlaceholderOp) else t


def _scalar(e, name: str):
    """A 0-d compute of expression ``e``."""
    return compute((), lambda: e, name=name)


def _loop_state(ctx, params, raw) -> LoopState:
    """Which state elements the body keeps (its output is its own parameter) and which it
    updates by a dynamic-update-slice of its own parameter (``raw``: the body's outputs before
    parameters were copied)."""
    kept, updates = [], []
    for k, (p, o) in enumerate(zip(params, raw)):
        if o is p:
            kept.append(k)
        elif o.op in ctx.updates and ctx.updates[o.op][0] is p:
            _, upd, starts = ctx.updates[o.op]
            corner = tuple(_scalar(s, f"{p.name}_start{d}") for d, s in enumerate(starts))
            updates.append((k, _computed(upd), corner))
    return LoopState(tuple(params), tuple(kept), tuple(updates))


def lower_while(ctx, instr, operands):
    """``while`` with tuple state as an extern op running ``condition`` and ``body``:
    https://openxla.org/xla/operation_semantics#while"""
    cname, bname = instr.attr("condition"), instr.attr("body")
    ctx.loop_depth += 1
    try:
        cph, couts, _ = ctx.subgraph(cname)
        bph, bouts, _ = ctx.subgraph(bname)
    finally:
        ctx.loop_depth -= 1
    cpos, bpos = _positions(cph, couts), _positions(bph, bouts)
    inputs = flatten(operands[0])
    state = _loop_state(ctx, bph, flatten(ctx.subgraph(bname)[2]))
    loop = WhileLoop(tuple(couts), tuple(cpos), tuple(bouts), tuple(bpos), state)
    return _extern_result(ctx, instr, "while", inputs, loop, (("condition", cname), ("body", bname)))


#: a conditional outside any loop is computed as a select of its branches when they do at most
#: this much work (output elements times reduction extents, all branches together)
SELECT_WORK = 1 << 20


def _work(outs) -> int:
    g = Graph(list(outs))
    return sum(math.prod(op.shape) * math.prod(v.extent for v in op.reduce_axis)
               for op in g.ops if isinstance(op, ComputeOp))


def _as_select(ctx, instr, index, branches, args):
    """``conditional`` as computes: every branch inlined on its operand, each output the
    selected branch's (branches are pure, so computing the others changes no answer), or None
    when a branch has an extern op, or, outside a loop body, when the branches do more than
    ``SELECT_WORK`` (there one branch on the host is cheaper than all of them)."""
    results = [flatten(ctx.lower_called(name, [a])) for name, a in zip(branches, args)]
    outs = [t for r in results for t in r]
    if Graph(outs).extern_ops or (not ctx.loop_depth and _work(outs) > SELECT_WORK):
        return None
    k = as_index(load(index, ())) if not index.dtype.is_bool else None
    last = len(branches) - 1

    def pick(j):
        def f(*i):
            if k is None:        # pred: true -> branch 0
                return select(load(index, ()), load(results[0][j], i), load(results[1][j], i))
            v = load(results[last][j], i)
            for b in reversed(range(last)):
                v = select(binary(Op.EQ, k, const(b, k.dtype)), load(results[b][j], i), v)
            return v
        return f
    leaves = _leaf_shapes(instr.shape)
    return _unflatten(instr.shape, iter([ew(instr, s.dims, pick(j), dtype_of(ctx, instr, s))
                                         for j, s in enumerate(leaves)]))


def lower_conditional(ctx, instr, operands):
    """``conditional`` on a pred (true, false branch) or an s32 index (out of range: the last
    branch): a constant index inlines its branch; else a select of the branches
    (``_as_select``), else an extern op running one branch (compiled: runtime/nested.py):
    https://openxla.org/xla/operation_semantics#conditional"""
    branches = instr.attr("branch_computations")
    if branches is None:
        branches = (instr.attr("true_computation"), instr.attr("false_computation"))
    branches = (branches,) if isinstance(branches, str) else tuple(branches)
    index, args = operands[0], operands[1:]
    if len(args) != len(branches):
        raise unsupported(ctx, instr, "expected one operand per branch")
    k = const_value(index)
    if k is not None:      # known now: that branch alone, inlined (JAX's StableHLO has such cases)
        k = (0 if k else 1) if index.dtype.is_bool else int(k)
        k = k if 0 <= k < len(branches) else len(branches) - 1
        return ctx.lower_called(branches[k], [args[k]])
    selected = _as_select(ctx, instr, index, branches, args)
    if selected is not None:
        return selected
    graphs, inputs = [], [index]
    for name, a in zip(branches, args):
        ph, outs, _ = ctx.subgraph(name)
        leaves = flatten(a)
        graphs.append((tuple(outs), tuple(_positions(ph, outs)), (len(inputs), len(inputs) + len(leaves))))
        inputs += leaves
    run_conditional = Conditional(index.dtype.is_bool, tuple(graphs))
    return _extern_result(ctx, instr, "conditional", inputs, run_conditional,
                          (("branches", branches),))


# ----------------------------------------------------------------------------- sort, TopK

def lower_sort(ctx, instr, operands):
    """``sort`` along ``dimension`` (stable) as an extern op; key comparators (numeric, total
    order, multi-key: sortkeys.py) compile (runtime/sort.py) or run as a numpy lexsort, others
    pairwise on the host:
    https://openxla.org/xla/operation_semantics#sort"""
    n = len(operands)
    dim = ints(instr, "dimensions", (0,))[0]
    rank = len(operands[0].shape)
    dim = dim % rank if rank else 0
    fn = ctx.scalar_fn(instr.attr("to_apply"), instr)
    pv = [IterVar(f"s{k}", 0, AxisKind.PARAM, operands[k // 2].dtype) for k in range(2 * n)]
    less = fn([v.var for v in pv])[0]
    keys = lex_keys(less, pv)
    log.debug("sort '%s': %s", instr.name, f"{len(keys)} key(s), lexsort" if keys else "pairwise comparator")

    def run_sort(arrays, run):
        arrays = [np.asarray(a) for a in arrays]
        if arrays[0].size == 0:
            return tuple(arrays)
        perm = lexsort_perm(keys, arrays, dim) if keys else _pairwise_perm(less, pv, arrays, dim)
        return tuple(np.take_along_axis(a, perm, axis=dim) for a in arrays)
    # key comparators may run compiled (runtime.sort); a pairwise one stays on the host
    fn = SortCall(dim, tuple(keys), operands[0].shape[dim] if rank else 1, False, run_sort) if keys else run_sort
    return _extern_result(ctx, instr, "sort", operands, fn,
                          (("dimension", dim), ("to_apply", instr.attr("to_apply"))))


def _pairwise_perm(less, pv, arrays, dim) -> np.ndarray:
    """The stable sorting permutation along ``dim`` by comparator ``less``: a bottom-up merge sort
    whose merges advance in lockstep over every row and run pair, so each step evaluates the
    comparator once, vectorized, on all their current heads. O(n log n) comparisons and
    termination whatever the comparator (an inconsistent one gives some order, never a hang);
    ties keep the earlier element (``less(right, left)`` alone moves the right one first)."""
    n = len(arrays)
    moved = [np.moveaxis(a, dim, -1) for a in arrays]
    flat = [m.reshape(-1, m.shape[-1]) for m in moved]
    rows, length = flat[0].shape
    perm = np.tile(np.arange(length, dtype=np.int64), (rows, 1))
    row = np.arange(rows)[:, None]
    width = 1
    while width < length:
        starts = np.arange(0, length, 2 * width)
        lo = starts
        mid = np.minimum(starts + width, length)
        hi = np.minimum(starts + 2 * width, length)
        i = np.broadcast_to(lo, (rows, len(starts))).copy()
        j = np.broadcast_to(mid, (rows, len(starts))).copy()
        out = perm.copy()
        for o in range(2 * width):
            pos = lo + o
            live = pos < hi
            if not live.any():
                break
            left_ok = i < mid
            right_ok = j < hi
            li = perm[row, np.minimum(i, length - 1)]
            ri = perm[row, np.minimum(j, length - 1)]
            env = {}
            for k in range(n):
                env[pv[2 * k]] = flat[k][row, ri]
                env[pv[2 * k + 1]] = flat[k][row, li]
            take_right = right_ok & (~left_ok | np.asarray(eval_scalar(less, env), bool))
            take_right &= live
            take_left = live & ~take_right
            src = np.where(take_right, ri, li)
            sel = np.broadcast_to(live, src.shape)
            cols = np.broadcast_to(np.minimum(pos, length - 1), src.shape)
            out[np.broadcast_to(row, src.shape)[sel], cols[sel]] = src[sel]
            i = i + take_left
            j = j + take_right
        perm = out
        width *= 2
    return np.moveaxis(perm.reshape(moved[0].shape), -1, dim)


def top_k(ctx, instr, x, largest: bool = True):
    """The k largest (or smallest) elements along the last dim and their s32 indices, sorted,
    ties by lower index, NaNs above infinities (total order), as an extern op."""
    leaves = _leaf_shapes(instr.shape)
    k = leaves[0].dims[-1] if leaves[0].dims else -1
    want = [tuple(x.shape[:-1]) + (k,)] * 2
    if not x.shape or not 0 <= k <= x.shape[-1] or len(leaves) != 2 or \
            [tuple(s.dims) for s in leaves] != want or dtype_of(ctx, instr, leaves[0]) is not x.dtype or \
            dtype_of(ctx, instr, leaves[1]).name != "int32":
        raise unsupported(ctx, instr, f"gives ({x.dtype}{list(want[0])}, s32{list(want[0])}) for k = {k} "
                                      f"and an operand {x.dtype}{list(x.shape)}; declared {instr.shape}")

    def run_topk(arrays, run):
        a = np.asarray(arrays[0])
        key = sortable(a)
        perm = np.argsort(~key if largest else key, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(a, perm, axis=-1), perm.astype(np.int32)
    v = IterVar("x", 0, AxisKind.PARAM, x.dtype)
    spec = SortCall(len(x.shape) - 1, (SortKey(0, v.var, v, largest, total=True),), k, True, run_topk)
    return _extern_result(ctx, instr, "topk", [x], spec, (("k", k), ("largest", largest)))


def lower_topk(ctx, instr, operands):
    """``topk(x)``, ``k``, ``largest``: the k largest (smallest) values along the last dim,
    sorted, and their s32 indices (ties: lower index first):
    https://openxla.org/xla/operation_semantics#topk"""
    (x,) = operands
    largest = instr.attr("largest", True)
    return top_k(ctx, instr, x, largest is True or str(largest).lower() == "true")


HANDLERS = {
    "call": lower_call, "fusion": lower_call, "tuple": lower_tuple,
    "get-tuple-element": lower_get_tuple_element, "optimization-barrier": lower_identity,
    "opt-barrier": lower_identity, "domain": lower_identity, "copy-start": lower_copy_start,
    "copy-done": lower_copy_done,
    "add-dependency": lower_identity, "replica-id": lower_device_id, "partition-id": lower_device_id,
    "while": lower_while, "conditional": lower_conditional, "sort": lower_sort, "topk": lower_topk,
}
