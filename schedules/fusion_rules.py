"""What fusion decisions rest on, as facts about a stage graph (no schedule templates here):
which ops are expensive, how often a stage's values are reused, a dot's or convolution's
elementwise epilogue, the kernel family of an op (``classify``), and the fusion decisions a plan
may flip (``Choice``). Fusion (fusion.py), its rewrites and the templates all read these."""

from __future__ import annotations

from dataclasses import dataclass

from ..dsl.expr import walk
from ..dsl.ops import Op
from ..dsl.tensor import SCAN_STEP, ComputeOp, Tensor
from .schedule import Schedule, Stage

_EXPENSIVE = {Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.POW,
              Op.SQRT, Op.RSQRT, Op.CBRT, Op.ATAN2}

#: The tag of a row statistic derived from a one-pass tuple reduction (kept materialized).
ROW_STAT = "row_stat"
#: The tag of an online-softmax fold (schedules/attention.py: it schedules itself and its chain).
FOLD = "online_softmax_fold"

#: Work (output elements x reduction extent) below which a stage runs on one thread.
PARALLEL_MIN_WORK = 1 << 15


def is_view(op) -> bool:
    """Whether ``op`` only reads another tensor at computed indices (a reshape, broadcast,
    transpose or slice): inlined, it adds nothing to its reader's work."""
    return isinstance(op, ComputeOp) and op.num_outputs == 1 and not op.reduce_axis and \
        op.body[0].op is Op.LOAD


def _cost(st: Stage) -> tuple[int, int]:
    """(number of nodes, number of expensive nodes) of the stage's body; a view costs nothing
    (its reader's load stands for it), so chains of reshapes and broadcasts, which the HLO and
    StableHLO forms of one program spell differently, weigh the same."""
    if is_view(st.op):
        return 0, 0
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


def contiguous_reads(op) -> list[list[set]]:
    """The reads of stored tensors (inputs, and the outputs of reductions and multi-output ops)
    that ``op``'s body makes, through the single-output elementwise ops it reads (which fusion
    inlines): for each, one set per index (outer to inner) of ``op``'s axes that index uses; the
    last set is the contiguous one."""
    out: list[list[set]] = []
    seen: set = set()

    def visit(o, env: dict) -> None:
        for e in walk(list(o.body)):
            if e.op is not Op.LOAD or not e.src:
                continue
            idx = [set().union(*(env.get(x.arg, {x.arg}) for x in walk([i]) if x.op is Op.VAR)) for i in e.src]
            p = getattr(e.arg, "op", None)
            key = (id(p), tuple(frozenset(i) for i in idx))
            if key in seen:
                continue
            seen.add(key)
            if isinstance(p, ComputeOp) and not p.is_reduction and p.num_outputs == 1 and len(p.axis) == len(idx):
                visit(p, dict(zip(p.axis, idx)))
            else:
                out.append(idx)
    visit(op, {})
    return out


def reads_across(op) -> bool:
    """Whether ``op`` (two or more axes) reads some stored tensor across its rows: that read's
    contiguous index follows ``op``'s next-to-last axis and not its last, which another index
    follows (a transpose). Its rows then touch one element per cache line of that tensor."""
    if len(op.axis) < 2:
        return False
    x, y = op.axis[-2], op.axis[-1]
    return any(x in r[-1] and y not in r[-1] and any(y in i for i in r[:-1]) for r in contiguous_reads(op))


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
    return ds if ds is not None and ds.is_at and ds.attach.stage is st else None


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


def classify(st: Stage, s=None) -> str:
    """The family of a root stage: elementwise, reduction, dot, conv or generic. With its
    schedule ``s``, an elementwise stage computing a dot's or convolution's epilogue on its
    register tile (``fusion.absorbed_tile``) is of the dot's family."""
    if s is not None and not st.op.is_reduction:
        tile = absorbed_tile(s, st)
        if tile is not None:
            return classify_op(tile.op)
    return classify_op(st.op)


def classify_op(op) -> str:
    """The family of a compute op on its own (see ``classify``)."""
    if not op.is_reduction:
        return "elementwise" if op.num_outputs == 1 else "generic"
    if op.num_outputs != 1 or len(op.axis) < 1:
        return "reduction" if op.num_outputs == 1 else "generic"
    body = op.body[0]
    red = set(op.reduce_axis)
    val = body.src[0]
    while val.op is Op.CAST:
        val = val.src[0]
    loads = [e for e in walk([val]) if e.op is Op.LOAD and isinstance(e.arg, Tensor)]
    if body.arg.reducer.name != "sum" or len(loads) < 2 or op.axis[-1].extent < 4:
        return "reduction"

    def vars_of(e):
        return {x.arg for x in walk([e]) if x.op is Op.VAR}

    # a reduce axis and a data axis added inside one index: a sliding window (convolution)
    for ld in loads:
        for ix in ld.src:
            vs = vars_of(ix)
            if vs & red and vs - red:
                return "conv"
    # dot: each reduce axis indexes two operands, and both operands have free data axes
    touched = [vars_of(ld) & red for ld in loads]
    if sum(1 for t in touched if t) >= 2 and len(op.axis) >= 1:
        return "dot"
    return "reduction"


__all__ = ["CHOICE_KINDS", "FOLD", "PARALLEL_MIN_WORK", "ROW_STAT", "SCAN_STEP", "Choice", "absorbed_tile", "classify", "classify_op",
           "contiguous_reads", "epilogue_of", "positions", "reads_across", "simd_reducible"]
