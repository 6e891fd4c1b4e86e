"""Default fusion and loop schedules for a graph (no tuning).

Fusion follows XLA's loop fusion: elementwise/injective stages (broadcasts, reshapes, slices,
converts, ...) are inlined into their readers, so reductions take their elementwise inputs
along and chains become one loop nest. A stage stays materialized when it is an output, a
reduction, or an expensive stage (transcendental math) read by several stages.
Each remaining stage gets a sane loop schedule: outer data loops fused and parallel when the
work is large enough, the innermost data loop vectorized, and for reductions with a wide
innermost output axis the reduction loops moved outside it so that axis vectorizes.
"""

from __future__ import annotations

import logging
import os

from ..dsl.expr import walk
from ..dsl.ops import Op
from ..dsl.tensor import Graph, Tensor, input_tensors
from .attention import attach_fold, schedule_fold
from .defaults import loop_default, try_template
from .fusion_rules import (
    CHOICE_KINDS,
    FOLD,
    PARALLEL_MIN_WORK,
    ROW_STAT,
    SCAN_STEP,
    Choice,
    _at_own_indices,
    _cost,
    _reuse,
    absorbed_tile,
    classify,
    classify_op,
    epilogue_of,
    is_view,
    positions,
    simd_reducible,
)
from .rewrites import rewrite
from .rowfusion import fuse_slices
from .schedule import Schedule, Stage
from .templates.base import as_hardware
from .templates.families import templates_for
from .templates.gemm import operands as gemm_operands
from .templates.gemm import streams_across

log = logging.getLogger(__name__)


def fuse_default(s: Schedule, epilogues: bool = False, plan: dict | None = None) -> list[Choice]:
    """Inline injective stages into their readers (see module docstring). A stage with
    expensive math stays materialized when it has several readers or when a reader would
    recompute each of its elements many times (e.g. the operand of a dot). With ``epilogues``
    (the cpu), a dot or convolution read only by one elementwise stage, element for element,
    is computed inside it (``compute_at`` its innermost loop until a template gives both their
    loops): the epilogue then runs on the dot's register tile instead of a pass over memory.
    ``plan`` (knob -> 0/1, see ``Choice``) overrides these decisions; returns the decisions a
    plan may flip."""
    plan = plan or {}
    readers: dict[str, list[Stage]] = {n: [] for n in s.stages}
    for st in s.stages.values():
        for t in input_tensors(st.op):
            p = s.stage_of_op(t.op)
            if p is not None and st not in readers[p.name]:
                readers[p.name].append(st)
    outputs = {id(t.op) for t in s.graph.outputs}
    position = positions(s)
    choices: list[Choice] = []
    cost: dict[str, tuple[int, int]] = {}   # with the producers inlined into it (topological order)
    for st in list(s.stages.values()):
        nodes, expensive = _cost(st)
        for t in input_tensors(st.op):
            p = s.stage_of_op(t.op)
            if p is not None and p.is_inline:
                nodes += cost[p.name][0]
                expensive += cost[p.name][1]
        cost[st.name] = (nodes, expensive)
        if id(st.op) in outputs or st.op.is_reduction or st.op.num_outputs != 1:
            continue
        cheap = expensive == 0 and nodes <= 24
        rs = readers[st.name]
        reused = any(_reuse(st, r) > 1 for r in rs)
        shared = len(rs) > 1 or reused
        inline = cheap or not shared
        if epilogues and cheap and reused and epilogue_of(st.op) is not None:
            # a cheap activation between two dots (a ReLU): on the first dot's register tile it
            # costs nothing, inlined into the second dot's operand it runs at every reuse (in
            # every pack of that operand), so it stays the first dot's epilogue. Not a stage
            # that is shared only by being read by several elementwise stages (GELU's scaled
            # input, read by every term of its erfc): inlined, it runs once per element
            inline = False
        if cheap and len(rs) > 1 and not is_view(st.op) and \
                any(classify_op(r.op) in ("dot", "conv") and _reuse(st, r) > 1 for r in rs):
            # arithmetic that a dot reads as an operand and others read too (a ReLU's gradient
            # mask, read by the weight gradient and the bias gradient): inlined, it runs in every
            # pack of the operand, scalar where the pack is transposed, and again in each other
            # reader; materialized, once (an SGD step on a 256x512 MLP: 1.15 ms against 2.4 ms)
            inline = False
        if inline and not is_view(st.op) and any(_windowed_operand(st, r) for r in rs):
            # arithmetic (a pad's bounds select) that a convolution reads through its window:
            # the template cannot pack that operand, so inlined it would run, masked, inside the
            # micro-kernel at every tap (WaveNet's padded dilated convolutions: 2x XLA's time)
            inline = False
        if st.op.tag == SCAN_STEP:
            inline = False      # read twice by the next step: inlined, each step would double the work
        if st.op.tag == ROW_STAT:
            # a one-pass statistic (schedules/onepass.py) reads its row's first element: inlined, that
            # load sits in the row's elementwise loop, where the compiler cannot prove it invariant
            # (OpenMP's outlined bodies drop ``restrict``) and keeps the loop scalar
            inline = False
        if shared and rs:
            # recompute or materialize: a real trade-off a plan may flip (a transpose read many
            # times: folded into its readers' indexing, or copied once into its own layout)
            c = Choice("inline", position[st.name], int(inline))
            choices.append(c)
            inline = bool(plan.get(c.knob, c.default))
        if inline:
            s.compute_inline(st.op.output(0))
    named = {k: n for n, k in position.items()}
    choices = [_inline_shared_once(s, s.stages[named[c.stage]], c, readers, plan)
               if c.kind == "inline" and not c.default else c for c in choices]
    if not epilogues:
        return choices
    for st in list(s.stages.values()):
        d = epilogue_of(st.op) if st.is_root else None
        ds = s.stage_of_op(d) if d is not None else None
        if ds is not None and ds.is_root and id(d) not in outputs and not streams_across(d) and \
                _readers_through_inline(readers, ds, s) == [st] and st.op.axis[-1].extent >= 4:
            c = Choice("epilogue", position[ds.name], 1)
            choices.append(c)
            if plan.get(c.knob, 1):
                s.compute_at(d.output(0), st.leaf[-1])
    return choices


def _windowed_operand(p: Stage, r: Stage) -> bool:
    """Whether dot/conv ``r`` reads ``p`` as an operand that cannot be packed in panels (an
    index mixes the output axis with others: a convolution's window)."""
    if classify_op(r.op) not in ("dot", "conv"):
        return False
    bs, as_ = gemm_operands(r.op)
    return any(t.op is p.op and not plain for t, _, plain in bs + as_)


#: the largest body (nodes, repeats counted) a stage may reach by inlining a shared producer
INLINE_TREE_MAX = 4000


def _identity_reads(p: Stage, r: Stage) -> bool:
    """Whether every load of ``p`` in ``r``'s body is at ``r``'s own indices (same shape)."""
    if p.op.shape != r.op.shape or r.op.is_reduction:
        return False
    return all(_at_own_indices(e, r.op) for e in walk(r.op.body)
               if e.op is Op.LOAD and getattr(e.arg, "op", None) is p.op)


def _tree_size(s: Schedule, st: Stage, memo: dict, also: Stage | None = None) -> int:
    """Nodes of ``st``'s body with inlined producers (and ``also``) substituted, repeats counted
    (what a renderer that prints expression trees prints)."""
    if st.name in memo:
        return memo[st.name]
    size: dict[int, int] = {}
    for e in walk(st.op.body):
        p = s.stage_of_op(e.arg.op) if e.op is Op.LOAD and isinstance(e.arg, Tensor) else None
        inl = p is not None and (p.is_inline or p is also)
        own = _tree_size(s, p, memo, also) if inl else 1
        size[id(e)] = own + sum(size[id(x)] for x in e.src)
    memo[st.name] = sum(size[id(b)] for b in st.op.body)
    return memo[st.name]


def _inline_shared_once(s: Schedule, st: Stage, c: Choice, readers: dict, plan: dict) -> Choice:
    """A shared expensive stage whose readers all end up inlined into one materialized stage,
    every read at that stage's own indices, is inlined by default: each element is then
    computed once per element of that stage (the compiler's common-subexpression elimination
    merges the repeats), which materializing it cannot beat. Not when the printed body would
    pass ``INLINE_TREE_MAX`` nodes. ``st``: the choice's stage. Returns the choice with its default."""

    def identity(p: Stage) -> bool:     # every read of p, through inlined readers, at own indices
        return all(_identity_reads(p, r) and (not r.is_inline or identity(r)) for r in readers[p.name])

    roots = _readers_through_inline(readers, st, s)
    if len(roots) != 1 or not identity(st) or _tree_size(s, roots[0], {}, st) > INLINE_TREE_MAX:
        return c
    c = Choice("inline", c.stage, 1)
    if plan.get(c.knob, 1):
        s.compute_inline(st.op.output(0))
    return c


def _readers_through_inline(readers: dict, st: Stage, s: Schedule) -> list[Stage]:
    """The materialized stages reading ``st``, looking through inlined readers."""
    out: list[Stage] = []
    for r in readers[st.name]:
        for x in (_readers_through_inline(readers, r, s) if r.is_inline else [r]):
            if x not in out:
                out.append(x)
    return out


def stage_default(s: Schedule, st: Stage, hw=None) -> None:
    """The untuned schedule of root stage ``st`` on machine ``hw`` (a Hardware or a thread
    count): on a device with work-groups its family's device template with ``default_config``;
    else (or when that config does not fit the stage) ``loop_default``."""
    hw = as_hardware(hw or os.cpu_count() or 1)
    if st.op.tag == FOLD and not hw.work_groups:
        schedule_fold(s, st, hw)
        return
    if hw.work_groups:
        t = templates_for(hw)[classify(st)]
        if try_template(s, st, t, t.default_config(st)):
            return
        log.debug("no device default for stage '%s'; loop default", st.name)
    loop_default(s, st, hw)


def fuse(s: Schedule, hw, plan: dict | None = None) -> list[Choice]:
    """Default fusion for machine ``hw`` (``plan`` flips some decisions; see ``fuse_default``):
    epilogues join their dot's register tile, and attention-like chains are computed per batch
    slice of their second dot, on machines without work-groups (the cpu templates have
    register tiles). Returns the decisions a plan may flip."""
    hw = as_hardware(hw or 1)
    choices = fuse_default(s, epilogues=not hw.work_groups, plan=plan)
    if hw.work_groups:
        return choices
    attach_fold(s, hw)      # a plan's online-softmax folds (schedules/attention.py) take their chains first
    return choices + fuse_slices(s, hw, plan or {}, positions(s), Choice)


def default_schedule(outputs, inputs=None, threads=None, hw=None) -> Schedule:
    """Fused default schedule of the graph computing ``outputs`` on machine ``hw`` (a Hardware;
    ``threads`` alone: the generic machine with that many threads): parallel, vectorized loops
    and register tiles on CPUs; work-group mappings on devices (see ``stage_default``). The graph
    is first rewritten by the plan decisions that are on by default (schedules/rewrites.py: an
    attention whose scores outgrow the cache folds its key blocks), as the default plan is."""
    hw = as_hardware(hw if hw is not None else (threads or os.cpu_count() or 1))
    g = outputs if isinstance(outputs, Graph) else Graph(outputs, inputs)
    s = Schedule(rewrite(g, {}, Choice, hw)[0])
    fuse(s, hw)
    for st in list(s.stages.values()):
        if st.is_root:
            stage_default(s, st, hw)
    return s


#: fusion.py is where fusion is asked for; the facts it rests on (fusion_rules.py) and the untuned
#: stage schedules (defaults.py) are named here too
__all__ = ["CHOICE_KINDS", "FOLD", "INLINE_TREE_MAX", "PARALLEL_MIN_WORK", "ROW_STAT", "Choice", "absorbed_tile",
           "default_schedule", "epilogue_of", "fuse", "fuse_default", "loop_default", "positions", "simd_reducible",
           "stage_default", "try_template"]
