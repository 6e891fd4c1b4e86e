"""Slice fusion: the stages between two batched dots computed per batch slice of the second.

Attention computes ``S = Q K^T`` per head, a softmax over each row of ``S`` (a max, the
exponentials, their sum) and ``O = P V``. Default fusion materializes ``S``, the exponentials
and the row statistics for every head before the second dot starts. Slice fusion computes
them inside the second dot's loop over its batch axes (``compute_at`` the last batch axis):
for each head, its score rows, softmax and product, so that only one head's scores live at a
time (in cache, per thread) instead of the whole score tensor going through memory.

The *chain* of a batched dot ``D``: the materialized stages ``D`` reads (through inlined
ones) that have ``D``'s batch extents in front, walking back through them and stopping at
dots and convolutions (included, or the epilogue stage holding one's register tile) or at anything else (an input, an output, a stage of
other shape, a stage some stage outside the chain reads). The fusion is a plan decision
(``fusion.Choice`` of kind 'slice') offered only when a trial lowering shows every chain
stage's region per slice is one element along each batch axis (no stage recomputed per
slice); each chain stage keeps a one-thread schedule of its own (dots their register-tile
template), the second dot's schedule decides the parallel loops around them.
"""

from __future__ import annotations

from dataclasses import replace

from ..dsl.errors import ScheduleError
from ..dsl.tensor import input_tensors
from .schedule import Schedule, Stage

#: per-slice chain buffers up to this share of L2 are fused by default (larger ones: a plan may)
DEFAULT_L2_SHARE = 0.75


def _producers(s: Schedule, st: Stage) -> list[Stage]:
    """The materialized stages ``st`` reads, looking through inlined stages."""
    out: list[Stage] = []
    seen: set = set()

    def visit(op):
        for t in input_tensors(op):
            p = s.stage_of_op(t.op)
            if p is None or id(p) in seen:
                continue
            seen.add(id(p))
            if p.attach == ("inline",):
                visit(p.op)
            elif p not in out:
                out.append(p)
    visit(st.op)
    return out


def chain(s: Schedule, d: Stage, readers: dict, outputs: set) -> list[Stage]:
    """The chain of batched dot ``d`` (see the module docstring), in schedule order; empty
    when there is none."""
    from .fusion import absorbed_tile
    from .templates.families import classify_op
    nb = len(d.op.axis) - 2
    if nb < 1 or classify_op(d.op) != "dot":
        return []
    batch = d.op.shape[:nb]

    def dense(p: Stage) -> bool:      # a dot or convolution, or the epilogue that holds one's tile
        return classify_op(p.op) in ("dot", "conv") or absorbed_tile(s, p) is not None
    found: list[Stage] = []
    todo = _producers(s, d)
    while todo:
        p = todo.pop()
        if p in found or p.attach != ("root",) or id(p.op) in outputs or p.op.num_outputs != 1 or \
                p.op.shape[:nb] != batch or len(p.op.shape) < nb:
            continue
        found.append(p)
        if not dense(p):
            todo.extend(_producers(s, p))
    members = {id(p) for p in found} | {id(d)}
    found = [p for p in found if all(id(r) in members for r in readers[p.name])]
    if not any(dense(p) for p in found):
        return []
    order = list(s.stages)
    return sorted(found, key=lambda p: order.index(p.name))


def materialized_readers(s: Schedule) -> dict:
    """Stage name -> the materialized stages reading it (through inlined readers)."""
    direct: dict = {n: [] for n in s.stages}
    for st in s.stages.values():
        for t in input_tensors(st.op):
            p = s.stage_of_op(t.op)
            if p is not None and st not in direct[p.name]:
                direct[p.name].append(st)

    def resolve(n, seen=()):
        out = []
        for r in direct[n]:
            for x in (resolve(r.name, seen + (r.name,)) if r.attach == ("inline",) and r.name not in seen else [r]):
                if x not in out:
                    out.append(x)
        return out
    return {n: resolve(n) for n in s.stages}


def attach(s: Schedule, d: Stage, members: list[Stage], hw, schedule: bool = True) -> None:
    """Compute each chain stage at ``d``'s last batch axis, first (``schedule``) giving it a
    one-thread schedule of its own on machine ``hw``."""
    from .fusion import loop_default
    if schedule:
        one = replace(hw, threads=1)
        for p in members:
            loop_default(s, p, one)
    at = d.op.axis[len(d.op.axis) - 3]
    for p in members:
        s.compute_at(p.op.output(0), at)


def slice_bytes(s: Schedule, d: Stage, members: list[Stage]) -> int | None:
    """Bytes of the chain's buffers per slice when fusing keeps every chain stage to one
    element along each batch axis per slice (checked by lowering a copy); None otherwise."""
    from .lower import _Lowerer
    trial = Schedule.from_json(s.graph, s.to_json())
    attach(trial, trial.stage(d.name), [trial.stage(p.name) for p in members], None, schedule=False)
    lw = _Lowerer(trial)
    try:
        lw.lower("slice_check")
    except ScheduleError:
        return None
    nb = len(d.op.axis) - 2
    total = 0
    for p in members:
        region = lw.planned.get(p.name)
        if region is None or any(iv.ext != 1 for iv in region[:nb]):
            return None
        n = p.op.body[0].dtype.itemsize
        for iv in region:
            n *= iv.ext
        total += n
    return total


def fuse_slices(s: Schedule, hw, plan: dict, position: dict, choice) -> list:
    """Offer (and by ``plan`` or default apply) slice fusion for every root batched dot of
    ``s`` that has a chain; returns the decisions (``choice(kind, stage, default)``)."""
    readers = materialized_readers(s)
    outputs = {id(t.op) for t in s.graph.outputs}
    out = []
    for d in [st for st in s.stages.values() if st.attach == ("root",)]:
        members = chain(s, d, readers, outputs)
        size = slice_bytes(s, d, members) if members else None
        if size is None:
            continue
        c = choice("slice", position[d.name], int(size <= DEFAULT_L2_SHARE * hw.l2))
        out.append(c)
        if plan.get(c.knob, c.default):
            attach(s, d, members, hw)
    return out


__all__ = ["attach", "chain", "fuse_slices", "materialized_readers", "slice_bytes"]
