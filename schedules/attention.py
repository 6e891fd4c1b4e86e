"""Online-softmax attention: a fusion-plan rewrite (``fusion.Choice`` kind 'online').

Attention's second dot ``O[o] = sum_j P(row(o), j) V(o, j)`` reads ``P = E / L``, a softmax over
the key axis (``E = exp(a - b)``, ``L = sum_j E``, ``b`` from ``X = max_j a``;
schedules/onepass.py finds it). The rewrite cuts the keys into blocks of ``T`` and folds the
blocks one after another, rescaling what came before whenever the running maximum grows::

    mb[row, c]       = max_t a(row, cT + t)                    per key block c
    E[row, c, t]     = exp(a(row, cT + t) - mb[row, c])
    lb[row, c]       = sum_t E[row, c, t]
    Ob[c, row, d]    = sum_t E[row, c, t] V(row, d, cT + t)     (a dot per block)
    (m, l, o)[row, d] = fold over c of (mb, lb, Ob) with
                       (m1, l1, o1) + (m2, l2, o2) = (M, l1 s1 + l2 s2, o1 s1 + o2 s2),
                       M = max(m1, m2), s = exp(m - M)
    O[o]             = o / l

which is the softmax's own algebra (shift invariance), not an approximation. Its schedule
(``schedule_fold``) runs the fold with the query rows cut into blocks of ``QB``: for each block
of rows and each key block, the scores (the first dot), the block statistics and ``Ob`` are
computed inside the fold's key-block loop on one thread, so no score row longer than ``T``
exists at any time (the flash-attention tiling); the batch axes and row blocks run in
parallel. A plan decision: off by default while the rows of score the default fusion keeps (whole
score rows per head, schedules/rowfusion.py) fit in the last-level cache, where that fusion is
faster; on by default where they do not (``online_default``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..dsl.expr import Expr, IterVar, binary, cast, const, substitute, unary, walk
from ..dsl.ops import Op
from ..dsl.tensor import ComputeOp, Graph, Tensor, comm_reducer, compute, input_tensors, reduce_axis
from ..dsl.tensor import max as rmax
from ..dsl.tensor import sum as rsum
from .fusion_rules import FOLD
from .onepass import Match, _Bail, _expand, _mentions, _reduction, _same, matches, rescale
from .schedule import Schedule, Stage

#: key block and query row block, at most (``block_length``); measured on 12 heads, d 64 (Xeon,
#: 2 threads): 256 x 128 ran sequence 2048 in 86 ms, 64 x 32 in 174 ms (the default fusion: 70-93)
T_MAX, QB_MAX = 256, 128


def _online3_combine(a, b):
    m = binary(Op.MAX, a[0], b[0])
    sa, sb = rescale(a[0], m), rescale(b[0], m)
    return (m, binary(Op.ADD, binary(Op.MUL, a[1], sa), binary(Op.MUL, b[1], sb)),
            binary(Op.ADD, binary(Op.MUL, a[2], sa), binary(Op.MUL, b[2], sb)))


#: (running maximum, normalizer, output) folded over key blocks
online_fold = comm_reducer(_online3_combine, lambda d: (const(float("-inf"), d[0]), const(0, d[1]),
                                                        const(0, d[2])), "online_fold")


@dataclass(frozen=True)
class AttentionMatch:
    """``dot`` reads the softmax ``soft`` as ``E / L[lrow]``: ``lrow`` the dot's axes indexing
    ``L`` (in ``L``'s order), ``dv`` its other output axis, ``j`` its reduce axis, ``vfac``
    the other factor of its summand."""

    soft: Match
    dot: ComputeOp
    lrow: tuple[IterVar, ...]
    dv: IterVar
    j: IterVar
    vfac: Expr


def block_length(n: int, cap: int = T_MAX) -> int | None:
    """Elements per block along an axis of ``n``: all of it up to ``cap``, else a divisor of
    ``n`` from ``cap / 2`` to ``cap`` that is a multiple of 16 (whole vectors and register
    tiles); None when there is none. (Partial blocks were measured 2.5-4x slower: their guards
    keep the block's dots off the micro-kernel, so such shapes keep the default.)"""
    if n <= cap:
        return n
    ok = [t for t in range(16, cap + 1, 16) if n % t == 0 and 2 * t >= cap]
    return max(ok) if ok else None


def match_attention(g: Graph, found: list[Match] | None = None) -> list[AttentionMatch]:
    """Every attention of ``g`` (see the module docstring) whose key axis cuts into at least
    two blocks, in topological order of the second dot; ``found``: ``matches(g)`` when the
    caller has it."""
    stop = {id(t.op) for t in g.inputs}
    softs = {id(m.second): m for m in (matches(g) if found is None else found) if m.kind == "softmax"}
    out = []
    for op in g.compute_ops:
        got = _reduction(op, "add")
        if got is None or not softs:
            continue
        val, j = got
        try:
            e = _expand(val, stop)
        except _Bail:
            continue
        if e.op is not Op.MUL:
            continue
        for p, v in ((e.src[0], e.src[1]), (e.src[1], e.src[0])):
            m = _softmax_factor(p, softs, op, j, stop)
            if m is None:
                continue
            soft, lrow = m
            rest = [x for x in op.axis if x not in lrow]
            if len(rest) != 1 or not _mentions(v, j) or _loads(v, {id(soft.first), id(soft.second)}) or \
                    j.extent <= T_MAX or block_length(j.extent) is None or \
                    block_length(lrow[-1].extent, QB_MAX) is None:
                continue
            out.append(AttentionMatch(soft, op, lrow, rest[0], j, v))
            break
    return out


def online_default(m: AttentionMatch, hw) -> int:
    """The online decision's default for ``m`` on ``hw``: 1 where the scores that the default
    fusion keeps while the threads each compute a head (``threads x rows x keys x itemsize``)
    pass half the shared last-level cache, else 0. Measured (AMD EPYC, 32 MB L3, 2 threads, 12
    heads of 64, bench/attention_cpu.py): the fold took 1.2x the default's time at 1024 keys
    (4 MB of scores a head) and 0.41x / 0.46x at 2048 / 4096 (16 / 64 MB)."""
    item = m.dot.body[0].dtype.itemsize
    held = max(1, hw.threads) * m.lrow[-1].extent * m.j.extent * item
    return int(2 * held > hw.l3)


def _loads(e: Expr, ids: set) -> bool:
    return any(x.op is Op.LOAD and isinstance(x.arg, Tensor) and id(x.arg.op) in ids for x in walk([e]))


def _softmax_factor(p: Expr, softs: dict, op: ComputeOp, j: IterVar, stop: set):
    """(softmax match, the dot's axes indexing its L) when ``p`` is ``E / L[...]`` with ``E`` the
    softmax's own summand at key ``j``; else None."""
    if p.op is not Op.DIV:
        return None
    num, den = p.src
    if den.op is not Op.LOAD or not isinstance(den.arg, Tensor) or id(den.arg.op) not in softs:
        return None
    soft = softs[id(den.arg.op)]
    L = soft.second
    if not all(i.op is Op.VAR and i.arg in op.axis for i in den.src):
        return None
    lrow = tuple(i.arg for i in den.src)
    r = L.body[0].arg.axes[0]
    if len(set(lrow)) != len(lrow) or r.extent != j.extent:
        return None
    want = substitute(_expand(L.body[0].src[0], stop), {**{a: v.var for a, v in zip(L.axis, lrow)}, r: j.var})
    return (soft, lrow) if _same(want, num, {}) else None


def online(m: AttentionMatch) -> tuple[dict[Tensor, Tensor], list[ComputeOp]]:
    """The replacement of the second dot's output computing it by the online fold, and the
    fold's op followed by its block chain's (statistics, exponentials, block products)."""
    soft, L = m.soft, m.soft.second
    r = L.body[0].arg.axes[0]
    rows = L.shape
    nk, dext = m.j.extent, m.dv.extent
    T = block_length(nk)
    nc = nk // T
    d = m.dot.body[0].dtype

    def a_at(ix, key):
        return substitute(soft.a, {**{v: i for v, i in zip(L.axis, ix)}, r: key})

    def v_at(ix, dv, key):
        return substitute(m.vfac, {**{v: i for v, i in zip(m.lrow, ix)}, m.dv: dv, m.j: key})

    def key(c, t):
        return binary(Op.ADD, binary(Op.MUL, c, const(T, c.dtype)), t)

    def mb_f(*ix):
        t = reduce_axis(T, "t")
        return rmax(a_at(ix[:-1], key(ix[-1], t.var)), axis=t)
    mb = compute((*rows, nc), mb_f, f"{m.dot.name}_bmax")
    e = compute((*rows, nc, T), lambda *ix: cast(unary(Op.EXP, binary(
        Op.SUB, a_at(ix[:-2], key(ix[-2], ix[-1])), mb[ix[:-1]])), d), f"{m.dot.name}_bexp")

    def lb_f(*ix):
        t = reduce_axis(T, "t")
        return rsum(e[(*ix, t.var)], axis=t)
    lb = compute((*rows, nc), lb_f, f"{m.dot.name}_bsum")

    def ob_f(*cix):
        c, ix = cix[0], cix[1:]
        t = reduce_axis(T, "t")
        return rsum(binary(Op.MUL, e[(*ix[:-1], c, t.var)], v_at(ix[:-1], ix[-1], key(c, t.var))), axis=t)
    ob = compute((nc, *rows, dext), ob_f, f"{m.dot.name}_bdot")

    def fold_f(*ix):
        c = reduce_axis(nc, "c")
        return online_fold((mb[(*ix[:-1], c.var)], lb[(*ix[:-1], c.var)], ob[(c.var, *ix)]), axis=c)
    fold = compute((*rows, dext), fold_f, f"{m.dot.name}_fold", FOLD)
    where = {v: k for k, v in enumerate(m.dot.axis)}

    def out_f(*o):
        ix = tuple(o[where[v]] for v in m.lrow) + (o[where[m.dv]],)
        return cast(binary(Op.DIV, fold[2][ix], fold[1][ix]), d)
    new = compute(m.dot.shape, out_f, m.dot.name)
    return {m.dot.output(0): new}, [fold[0].op, mb.op, e.op, lb.op, ob.op]


def fold_members(s: Schedule, fold: Stage) -> list[Stage]:
    """The stages computed inside the fold's key-block loop: the block chain, and the scores
    (the stage the chain reads the row expression from) when only the chain reads them."""
    chain_ops = getattr(s.graph, "fold_chains", {}).get(id(fold.op), ())
    members = [st for st in (s.stage_of_op(op) for op in chain_ops) if st is not None]
    ids = {id(st.op) for st in members} | {id(fold.op)}
    from .rowfusion import _producers, materialized_readers
    readers = materialized_readers(s)
    outputs = {id(t.op) for t in s.graph.outputs}
    for st in list(members):
        for p in _producers(s, st):
            if p.is_root and id(p.op) not in ids and id(p.op) not in outputs and \
                    readers[p.name] and all(id(r.op) in ids for r in readers[p.name]):
                members.insert(0, p)
                ids.add(id(p.op))
    order = list(s.stages)
    return sorted((st for st in members if st.is_root), key=lambda st: order.index(st.name))


def attach_fold(s: Schedule, hw) -> None:
    """Compute every fold's block chain inside its key-block loop, each stage with a one-thread
    schedule of its own (at fusion time, before root stages get theirs): the dots (scores,
    block products) with register tiles that divide the block (``block_config``), the rest
    with their loop defaults."""
    from .defaults import loop_default, try_template
    from .fusion_rules import classify
    from .templates.families import TEMPLATES
    one = replace(hw, threads=1)
    for fold in [st for st in s.stages.values() if st.op.tag == FOLD and st.is_root]:
        c = fold.op.reduce_axis[0]
        qb = block_length(fold.op.axis[-2].extent, QB_MAX)
        members = fold_members(s, fold)
        local = {id(m.op) for m in members}
        for p in members:       # each scheduled at root first (a pack's region needs its reader's loops)
            fam = classify(p, s)
            cfg = block_config(p, TEMPLATES[fam], qb, one, local) if fam in ("dot", "conv") else None
            if cfg is None or not try_template(s, p, TEMPLATES[fam], cfg, one):
                # no template default for a dot reading a block stage: its packs would read that
                # stage from inside the dot's nest, which is not a loop of the fold
                loop_default(s, p, one, tiled=not any(id(t.op) in local for t in input_tensors(p.op)))
        for p in members:
            s.compute_at(p.op.output(0), c)


def block_config(st: Stage, t, rows: int, hw, local: set = frozenset()) -> dict | None:
    """A gemm-template config for dot ``st`` computed ``rows`` output rows at a time (a query
    block) and, for the scores, one key block of columns (the ``bexp`` block length ``T``
    when its columns are keys, else all): the widest register tile whose rows divide the
    block and whose columns divide the block's columns, one cache block, operands packed
    unless they are computed in the same block (ops in ``local``: already compact there)."""
    from .templates.gemm import _accumulator_budget, operands
    space = t.space(st, hw)
    ye = st.op.axis[-1].extent
    cols = block_length(ye) or ye
    lanes = hw.lanes(st.op.body[0].dtype.itemsize)
    budget = _accumulator_budget(hw.vector_regs)
    best = None
    for nr in space.knob("nr").values:
        nv = -(-nr // lanes)
        if cols % nr or nv > 4:
            continue
        for mr in space.knob("mr").values:
            if rows % mr or mr * nv > budget:
                continue
            best = max(best or (mr * nv, nr, mr), (mr * nv, nr, mr))     # most accumulators, then widest
    if best is None:
        return None
    _, nr, mr = best
    bs, as_ = operands(st.op)

    def pack(name, ops):
        return 0 if any(id(x.op) in local for x, _, _ in ops) else min(1, max(space.knob(name).values))
    return {"mr": mr, "nr": nr, "mb": 1, "nb": 1, "order": "nm",
            "pack_a": pack("pack_a", as_), "pack_b": pack("pack_b", bs),
            "unroll_k": 1, "parallel": 0}


def schedule_fold(s: Schedule, st: Stage, hw) -> None:
    """The fold's own loops: batch axes, query-row blocks, key blocks, rows of the block, the
    head dimension (vectorized); batch axes and row blocks in parallel."""
    ax = list(st.op.axis)
    rows, dv = ax[:-1], ax[-1]
    c = st.op.reduce_axis[0]
    qo, qi = s.split(rows[-1], block_length(rows[-1].extent, QB_MAX) or rows[-1].extent)
    s.reorder(*rows[:-1], qo, c, qi, dv)
    s.vectorize(dv)
    lead = [*rows[:-1], qo]
    par = lead[0]
    for v in lead[1:]:
        par = s.fuse(par, v)
    if hw.threads > 1 and par.extent >= 2:
        s.parallel(par)


__all__ = ["FOLD", "AttentionMatch", "attach_fold", "fold_members", "match_attention", "online", "online_default",
           "online_fold", "schedule_fold"]
