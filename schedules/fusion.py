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

from ..dsl.expr import substitute, walk
from ..dsl.ops import Op
from ..dsl.tensor import Graph, Tensor, input_tensors
from .schedule import Schedule, Stage

log = logging.getLogger(__name__)

_EXPENSIVE = {Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.POW,
              Op.SQRT, Op.RSQRT, Op.CBRT, Op.ATAN2}

#: Work (output elements x reduction extent) below which a stage runs on one thread.
PARALLEL_MIN_WORK = 1 << 15


def _cost(st: Stage) -> tuple[int, int]:
    """(number of nodes, number of expensive nodes) of the stage's body."""
    n = e = 0
    for x in walk(st.op.body):
        n += 1
        # rounding to a 16-bit float is a dozen integer ops per element, not one instruction
        e += x.op in _EXPENSIVE or (x.op is Op.CAST and x.dtype.is_float and x.dtype.bits == 16)
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
    """Whether the stage's reduction may run as a SIMD reduction (any combine order): a single
    sum/prod/max/min without a mask, not on 16-bit floats (they round after every step)."""
    op = st.op
    if not op.is_reduction or op.num_outputs != 1:
        return False
    spec = op.body[0].arg
    d = op.body[0].dtype
    return (spec.reducer.ufunc is not None and spec.where is None and not (d.is_float and d.bits == 16)
            and not d.is_bool)


def fuse_default(s: Schedule) -> None:
    """Inline injective stages into their readers (see module docstring). A stage with
    expensive math stays materialized when it has several readers or when a reader would
    recompute each of its elements many times (e.g. the operand of a dot)."""
    readers: dict[str, list[Stage]] = {n: [] for n in s.stages}
    for st in s.stages.values():
        for t in input_tensors(st.op):
            p = s.stage_of_op(t.op)
            if p is not None and st not in readers[p.name]:
                readers[p.name].append(st)
    outputs = {id(t.op) for t in s.graph.outputs}
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
        if cheap or (len(rs) <= 1 and all(_reuse(st, r) <= 1 for r in rs)):
            s.compute_inline(st.op.output(0))


def _tiled_default(s: Schedule, st: Stage, threads: int) -> bool:
    """Dots and convolutions whose inputs are not contiguous along the reduction get the tiled
    template with a register-tile config that is good on CPUs (4 rows x up to 64 vectorized
    columns accumulated in a local buffer, k outermost in the tile). The config is tried on a
    replayed copy first, so a shape it does not fit leaves ``s`` untouched. True if applied."""
    from .templates.families import TEMPLATES, classify
    fam = classify(st)
    if fam not in ("dot", "conv"):
        return False
    data = [v for v in st.op.axis]
    red = list(st.op.reduce_axis)
    plans = [(v, _vector_plan(s, st, v)) for v in data[::-1][:2]]
    plans = [(v, p) for v, p in plans if p is not None]
    if plans:    # the output axis whose operands need the fewest transposed packs
        vec, packs = min(plans, key=lambda vp: sum(lay is not None for _, lay in vp[1]))
    else:
        if simd_reducible(st) and _contiguous_in(st, red[-1]) > _contiguous_in(st, data[-1]):
            return False
        vec, packs = data[-1], []
    t = TEMPLATES[fam]
    for tensor, layout in packs:    # packed once, so that the vector loop reads rows
        packed = s.cache_read(tensor, "shared", [st], layout)
        loop_default(s, s.stage(packed), threads)
    space = t.space(st, threads)

    def pick(name, want):
        vals = [v for v in space.knob(name).values if v <= want] or list(space.knob(name).values)
        return max(vals)
    c = {"tile_x": pick("tile_x", 4), "tile_y": pick("tile_y", 64), "split_k": 1, "order": "kxy",
         "cache_write": 1, "unroll_x": 1, "parallel": max(space.knob("parallel").values),
         "vec": "last" if vec is data[-1] else "second"}
    return try_template(s, st, t, c, threads)


def _physical_loads(s: Schedule, e):
    """The loads that reading ``e`` performs once inlined producers are substituted."""
    p = s.stage_of_op(e.arg.op) if isinstance(e.arg, Tensor) else None
    if p is None or p.attach != ("inline",):
        yield e
        return
    body = substitute(p.op.body[e.arg.value_index], dict(zip(p.op.axis, e.src)))
    for x in walk([body]):
        if x.op is Op.LOAD and isinstance(x.arg, Tensor):
            yield from _physical_loads(s, x)


def _uses(index, v) -> list[bool]:
    return [any(y.op is Op.VAR and y.arg is v for y in walk([i])) for i in index]


def _vector_plan(s: Schedule, st: Stage, v, min_reuse: int = 4) -> list | None:
    """Packs that make every load of ``st`` run contiguously along ``v`` (``v`` only in the
    last index of each physical load that uses it): ``[(tensor, layout)]`` to ``cache_read`` at
    root, ``layout`` None for an inlined view read along its last axis (materialized as it is
    indexed, ``kt[r, j]`` for ``k[j, r]``), else the permutation moving the axis ``v`` indexes
    last. Only tensors read at least ``min_reuse`` times each are packed. None when no such
    packs exist or no load uses ``v``."""
    extents = {x: x.extent for x in st.op.axis + st.op.reduce_axis}
    packs, some = [], False
    for e in walk(list(st.op.body)):
        if e.op is not Op.LOAD or not isinstance(e.arg, Tensor) or any(e.arg is t for t, _ in packs):
            continue
        phys = [_uses(x.src, v) for x in _physical_loads(s, e)]
        if all(not any(u[:-1]) for u in phys):
            some = some or any(u and u[-1] for u in phys)
            continue
        at = [k for k, u in enumerate(_uses(e.src, v)) if u]
        used = {y.arg for y in walk(list(e.src)) if y.op is Op.VAR}
        reuse = 1
        for x, n in extents.items():
            reuse *= 1 if x in used else n
        if len(at) != 1 or reuse < min_reuse:
            return None
        n = len(e.src)
        layout = None if at[0] == n - 1 else tuple(k for k in range(n) if k != at[0]) + (at[0],)
        packs.append((e.arg, layout))
        some = True
    return packs if some else None


def try_template(s: Schedule, st: Stage, t, config: dict, threads: int = 1) -> bool:
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


def loop_default(s: Schedule, st: Stage, threads: int | None = None) -> None:
    """Parallel outer loops and a vectorized inner loop for one root stage (a register-tiled
    schedule for dots and convolutions)."""
    threads = threads or os.cpu_count() or 1
    if _tiled_default(s, st, threads):
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


def stage_default(s: Schedule, st: Stage, target=None, threads: int | None = None) -> None:
    """The untuned schedule of root stage ``st``: on a device target (one with work-groups) its
    family's device template with ``default_config``; else (or when that config does not fit
    the stage) ``loop_default``."""
    kind = getattr(target, "kind", target) or "cpu"
    if kind != "cpu":
        from .templates.families import classify, templates_for
        t = templates_for(target)[classify(st)]
        if try_template(s, st, t, t.default_config(st)):
            return
        log.debug("no device default for stage '%s'; loop default", st.name)
    loop_default(s, st, threads)


def default_schedule(outputs, inputs=None, threads: int | None = None, target=None) -> Schedule:
    """Fused default schedule of the graph computing ``outputs``: parallel, vectorized loops on
    the cpu; work-group mappings on device targets (see ``stage_default``)."""
    s = Schedule(outputs if isinstance(outputs, Graph) else Graph(outputs, inputs))
    fuse_default(s)
    for st in list(s.stages.values()):
        if st.attach == ("root",):
            stage_default(s, st, target, threads)
    return s
