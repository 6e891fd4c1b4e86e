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
from dataclasses import dataclass

from ..dsl.expr import walk
from ..dsl.ops import Op
from ..dsl.tensor import ComputeOp, Graph, Tensor, input_tensors
from .schedule import Schedule, Stage

log = logging.getLogger(__name__)

_EXPENSIVE = {Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.POW,
              Op.SQRT, Op.RSQRT, Op.CBRT, Op.ATAN2}

#: The tag of a row statistic derived from a one-pass tuple reduction (kept materialized).
ROW_STAT = "row_stat"
#: The tag of an online-softmax fold (schedules/attention.py: it schedules itself and its chain).
FOLD = "online_softmax_fold"

#: Work (output elements x reduction extent) below which a stage runs on one thread.
PARALLEL_MIN_WORK = 1 << 15


def _cost(st: Stage) -> tuple[int, int]:
    """(number of nodes, number of expensive nodes) of the stage's body."""
    n = e = 0
    for x in walk(st.op.body):
        n += 1
        # rounding to a float under 32 bits is a dozen integer ops per element, not one instruction
        e += x.op in _EXPENSIVE or (x.op is Op.CAST and x.dtype.is_narrow_float)
    return n, e


def _reuse(producer: Stage, reader: Stage) -> int:
    """How many times ``reader`` reads each element of ``producer``: the product of the
    reader's loop extents that no index of its loads of ``producer`` mentions."""
    used: set = set()
    for e in walk(reader.op.body):
        if e.op is Op.LOAD and getattr(e.arg, "op", None) is producer.op:
            used |= {x.arg for x in walk(list(e.src)) if x.op is Op.VAR}
    n = 1
    for v in reader.op.axis + reader.op.reduce_axis:
        if v not in used:
            n *= v.extent
    return n


def _contiguous_in(st: Stage, v) -> int:
    """How many loads of the stage's body have ``v`` in their last (contiguous) index."""
    n = 0
    for e in walk(st.op.body):
        if e.op is Op.LOAD and e.src and any(x.op is Op.VAR and x.arg is v for x in walk([e.src[-1]])):
            n += 1
    return n


def simd_reducible(st: Stage) -> bool:
    """Whether the stage's reduction may run as a SIMD reduction (any combine order): sums,
    products, maxima or minima (several, each combining only with itself: ``Reducer.parts``)
    without a mask, not on floats under 32 bits (they round after every step), complex values
    or sub-byte integers."""
    op = st.op
    if not op.is_reduction:
        return False
    spec = op.body[0].arg
    return spec.reducer.parts() is not None and spec.where is None and \
        not any(b.dtype.is_narrow_float or b.dtype.is_complex or b.dtype.is_sub_byte or b.dtype.is_bool
                for b in op.body)


def _at_own_indices(load, op) -> bool:
    """Whether ``load`` reads at ``op``'s own output indices, in order."""
    return len(load.src) == len(op.axis) and all(i.op is Op.VAR and i.arg is v for i, v in zip(load.src, op.axis))


def epilogue_of(op):
    """The dot or convolution whose output elementwise ``op`` reads element for element (a bias,
    activation, scale, cast or residual add after it, possibly through other elementwise ops):
    the one reduction that ``op``'s body reaches, every time at exactly ``op``'s own indices,
    through loads of elementwise ops at their own indices; None if there is not exactly one."""
    from .templates.families import classify_op
    if not isinstance(op, ComputeOp) or op.is_reduction or op.num_outputs != 1:
        return None
    found: dict[int, list] = {}
    seen: set = set()

    def visit(o, ident: bool) -> None:
        for e in walk(list(o.body)):
            if e.op is not Op.LOAD or not isinstance(e.arg, Tensor) or not isinstance(e.arg.op, ComputeOp):
                continue
            p = e.arg.op
            same = ident and _at_own_indices(e, o)
            if p.is_reduction:
                found.setdefault(id(p), [p]).append(same)
            elif p.num_outputs == 1 and (id(p), same) not in seen:
                seen.add((id(p), same))
                visit(p, same)

    visit(op, True)
    if len(found) != 1:
        return None
    d, *how = next(iter(found.values()))
    if not all(how) or d.num_outputs != 1 or d.shape != op.shape or classify_op(d) not in ("dot", "conv"):
        return None
    return d


def absorbed_tile(s: Schedule, st: Stage) -> Stage | None:
    """The dot/conv stage computed inside root stage ``st`` as the register tile of its epilogue
    (see ``fuse_default``), or None."""
    d = epilogue_of(st.op)
    ds = s.stage_of_op(d) if d is not None else None
    return ds if ds is not None and ds.attach[0] == "at" and ds.attach[1] is st else None


#: the kinds of ``Choice`` (a plan's knobs are ``<kind><stage position>``)
CHOICE_KINDS = ("inline", "epilogue", "slice", "onepass", "online")


@dataclass(frozen=True)
class Choice:
    """A fusion decision that a plan may flip: ``kind`` 'inline' (an elementwise stage with
    several readers, or read many times, recomputed where it is read or materialized once; a
    transpose folded into its readers' indexing or copied once),
    'epilogue' (a dot's elementwise reader computed on its register tile, or in a pass of its
    own) or 'slice' (the stages between two batched dots, such as attention's softmax, computed
    per batch slice inside the second: schedules/rowfusion.py); ``stage`` the stage's position in topological order; ``default`` what default fusion
    does (1: inline / fuse)."""

    kind: str
    stage: int
    default: int

    @property
    def knob(self) -> str:
        return f"{self.kind}{self.stage}"


def positions(s: Schedule) -> dict[str, int]:
    """Stage name -> the position that names its fusion decisions: its place in topological
    order, or, in a graph a plan rewrote (schedules/onepass.py), the place of the op it replaced
    in the graph before the rewrite (new ops after all others), so that a plan's other decisions
    keep naming the same stages."""
    origin = getattr(s.graph, "plan_positions", None)
    if origin is None:
        return {n: k for k, n in enumerate(s.stages)}
    extra = iter(range(max(origin.values(), default=-1) + 1, 1 << 30))     # stages a schedule added
    return {n: origin[id(st.op)] if id(st.op) in origin else next(extra) for n, st in s.stages.items()}


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
            if p is not None and p.attach == ("inline",):
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
    from .templates.gemm import streams_across
    for st in list(s.stages.values()):
        d = epilogue_of(st.op) if st.attach == ("root",) else None
        ds = s.stage_of_op(d) if d is not None else None
        if ds is not None and ds.attach == ("root",) and id(d) not in outputs and not streams_across(d) and \
                _readers_through_inline(readers, ds, s) == [st] and st.op.axis[-1].extent >= 4:
            c = Choice("epilogue", position[ds.name], 1)
            choices.append(c)
            if plan.get(c.knob, 1):
                s.compute_at(d.output(0), st.leaf[-1])
    return choices


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
        inl = p is not None and (p.attach == ("inline",) or p is also)
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
        return all(_identity_reads(p, r) and (r.attach != ("inline",) or identity(r)) for r in readers[p.name])

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
        for x in (_readers_through_inline(readers, r, s) if r.attach == ("inline",) else [r]):
            if x not in out:
                out.append(x)
    return out


def _tiled_default(s: Schedule, st: Stage, hw) -> bool:
    """Dots and convolutions whose output's last axis can be vectorized get the gemm template
    (packed panels around a register micro-kernel) with its machine-derived default config; the
    config is tried on a replayed copy first, so a shape it does not fit leaves ``s`` untouched.
    True if applied."""
    from .templates.families import TEMPLATES, classify
    from .templates.gemm import streams_across
    fam = classify(st, s)
    if fam not in ("dot", "conv") or st.op.axis[-1].extent < 4 or (st.op.is_reduction and streams_across(st.op)):
        return False
    t = TEMPLATES[fam]
    return try_template(s, st, t, t.default_config(st, hw), hw)


def try_template(s: Schedule, st: Stage, t, config: dict, threads=1) -> bool:
    """Apply template ``t`` with ``config`` to stage ``st`` when it schedules and lowers on a
    replayed copy of ``s`` (so a config that does not fit leaves ``s`` untouched); True if applied."""
    from ..dsl.errors import ConfigError, ScheduleError
    trial = Schedule.from_json(s.graph, s.to_json())
    try:
        t.apply(trial, trial.stage(st.name), config, threads)
        trial.lower()
    except (ScheduleError, ConfigError):
        return False
    t.apply(s, st, config, threads)
    return True


def loop_default(s: Schedule, st: Stage, threads=None, tiled: bool = True) -> None:
    """Parallel outer loops and a vectorized inner loop for one root stage (with ``tiled``,
    packed panels and a register micro-kernel for dots and convolutions). ``threads``: a
    Hardware or a count."""
    from .templates.base import as_hardware
    hw = as_hardware(threads or os.cpu_count() or 1)
    threads = hw.threads
    if tiled and _tiled_default(s, st, hw):
        return
    data = [v for v in st.leaf if v.kind == "data"]
    red = [v for v in st.leaf if v.kind == "reduce"]
    work = 1
    for v in st.leaf:
        work *= max(v.extent, 1)
    vec = None
    if red and red[-1].extent >= 8 and simd_reducible(st) and _contiguous_in(st, red[-1]) > \
            (_contiguous_in(st, data[-1]) if data else -1):
        vec = red[-1]   # the inputs are contiguous along the reduction: a SIMD reduction
    elif data and data[-1].extent >= 4 and (not red or (len(data) >= 2 and data[-1].extent >= 8)):
        if red:
            s.reorder(*data[:-1], *red, data[-1])
        vec = data[-1]
    elif red and red[-1].extent >= 8 and simd_reducible(st):
        vec = red[-1]
    if vec is not None:
        s.vectorize(vec)
    outer = [v for v in data if v is not vec]
    if outer and work >= PARALLEL_MIN_WORK and threads > 1:
        # outer data loops lead the leaf order unless a reorder moved reductions before them
        lead = []
        for v in st.leaf:
            if v in outer:
                lead.append(v)
            else:
                break
        if lead:
            ax = lead[0]
            for v in lead[1:]:
                if ax.extent >= 4 * threads:
                    break
                ax = s.fuse(ax, v)
            if ax.extent >= 2:
                s.parallel(ax)


def stage_default(s: Schedule, st: Stage, hw=None) -> None:
    """The untuned schedule of root stage ``st`` on machine ``hw`` (a Hardware or a thread
    count): on a device with work-groups its family's device template with ``default_config``;
    else (or when that config does not fit the stage) ``loop_default``."""
    from .templates.base import as_hardware
    hw = as_hardware(hw or os.cpu_count() or 1)
    if st.op.tag == FOLD and not hw.work_groups:
        from .attention import schedule_fold
        schedule_fold(s, st, hw)
        return
    if hw.work_groups:
        from .templates.families import classify, templates_for
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
    from .rowfusion import fuse_slices
    from .templates.base import as_hardware
    hw = as_hardware(hw or 1)
    choices = fuse_default(s, epilogues=not hw.work_groups, plan=plan)
    if hw.work_groups:
        return choices
    from .attention import attach_fold
    attach_fold(s, hw)      # a plan's online-softmax folds (schedules/attention.py) take their chains first
    return choices + fuse_slices(s, hw, plan or {}, positions(s), Choice)


def default_schedule(outputs, inputs=None, threads=None, hw=None) -> Schedule:
    """Fused default schedule of the graph computing ``outputs`` on machine ``hw`` (a Hardware;
    ``threads`` alone: the generic machine with that many threads): parallel, vectorized loops
    and register tiles on CPUs; work-group mappings on devices (see ``stage_default``)."""
    from .templates.base import as_hardware
    hw = as_hardware(hw if hw is not None else (threads or os.cpu_count() or 1))
    s = Schedule(outputs if isinstance(outputs, Graph) else Graph(outputs, inputs))
    fuse(s, hw)
    for st in list(s.stages.values()):
        if st.attach == ("root",):
            stage_default(s, st, hw)
    return s
