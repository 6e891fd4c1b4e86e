"""Slice fusion: the stages that feed a stage computed per slice of it, inside its loops.

Attention computes ``S = Q K^T`` per head, a softmax over each row of ``S`` (a max, the
exponentials, their sum) and ``O = P V``. Default fusion materializes ``S``, the exponentials
and the row statistics for every head before the second dot starts. Slice fusion computes
them inside the second dot's loop over its batch axes (``compute_at`` the last batch axis):
for each head, its scores, softmax and product, so that only one head's scores live at a
time (in cache, per thread) instead of the whole score tensor going through memory. The same
decision makes a layer norm, RMS norm or softmax one kernel: the row statistics (two passes
over the row: mean, then variance) computed per row inside the normalized output's row loop,
instead of a kernel (and a parallel region) per statistic.

The *chain* of a stage ``D`` sliced along its leading axes (a batched dot's batch axes; an
elementwise stage's all but the last): the materialized stages ``D`` reads (through inlined
ones) with those extents in front, walking back through them and stopping at dots and
convolutions (included for a dot's chain, or the epilogue stage holding one's register tile;
never in a row's chain) or at anything else (an input, an output, a stage of other shape, a
stage read by some stage outside the chain). The fusion is a plan decision (``fusion.Choice``
of kind 'slice') offered only when a trial lowering shows every chain stage's region per
slice is one element along each slice axis (nothing recomputed per slice), and on by default
when one slice's buffers fit in the last-level cache and there are at least as many slices as
threads (fewer: the chain's own parallel kernels keep every thread busy). Each
chain stage keeps a one-thread schedule of its own (dots their register-tile template);
``D``'s schedule decides the parallel loops around them.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..dsl.errors import ScheduleError
from ..dsl.tensor import input_tensors
from .fusion_rules import FOLD
from .schedule import Schedule, Stage

#: per-slice chain buffers up to the last-level cache (or this many L2s, if larger) are fused by
#: default; larger ones only by a plan. Measured on 12-head attention (d 64, 2-core Zen 4):
#: fused 1.4x faster at sequence 128 (one head's buffers 130 kB) and 1.7x at 1024 (8 MB)
DEFAULT_L2_MULTIPLE = 8


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
            if p.is_inline:
                visit(p.op)
            elif p not in out:
                out.append(p)
    visit(st.op)
    return out


def slice_axes(d: Stage) -> int:
    """How many leading axes of ``d`` a slice fixes: a batched dot's batch axes (attention), an
    elementwise stage's all but the last (a row: a normalization's output); 0 for others."""
    from .fusion_rules import classify_op
    n = len(d.op.axis)
    if d.op.is_reduction:
        return n - 2 if n >= 3 and classify_op(d.op) == "dot" else 0
    return n - 1 if n >= 2 and d.op.num_outputs == 1 else 0


def chain(s: Schedule, d: Stage, readers: dict, outputs: set) -> list[Stage]:
    """The chain of ``d`` (see the module docstring), in schedule order; empty when there is
    none. A batched dot's chain holds a dot or convolution (attention's scores); an elementwise
    stage's chain holds reductions and elementwise stages only (a normalization's statistics:
    a dot there would run one row at a time) and at least one reduction."""
    from .fusion_rules import absorbed_tile, classify_op
    nb = slice_axes(d)
    if nb < 1:
        return []
    batch = d.op.shape[:nb]
    attention = d.op.is_reduction

    def dense(p: Stage) -> bool:
        """A dot or convolution of two tensors (a sum of squares is a norm's statistic), or
        the epilogue stage that holds one's register tile."""
        return (classify_op(p.op) in ("dot", "conv") and len({id(t) for t in input_tensors(p.op)}) >= 2) or \
            absorbed_tile(s, p) is not None
    found: list[Stage] = []
    todo = _producers(s, d)
    while todo:
        p = todo.pop()
        if p in found or not p.is_root or id(p.op) in outputs or p.op.tag == FOLD or \
                (p.op.num_outputs != 1 and not p.op.is_reduction) or \
                len(p.op.shape) < nb or p.op.shape[:nb] != batch or (dense(p) and not attention):
            continue
        found.append(p)
        if not dense(p):
            todo.extend(_producers(s, p))
    while True:     # every member read only by members (or d): else it stays materialized
        members = {id(p) for p in found} | {id(d)}
        keep = [p for p in found if all(id(r) in members for r in readers[p.name])]
        if len(keep) == len(found):
            break
        found = keep
    if not any(dense(p) if attention else p.op.is_reduction for p in found):
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
            for x in (resolve(r.name, seen + (r.name,)) if r.is_inline and r.name not in seen else [r]):
                if x not in out:
                    out.append(x)
        return out
    return {n: resolve(n) for n in s.stages}


def attach(s: Schedule, d: Stage, members: list[Stage], hw, schedule: bool = True) -> None:
    """Compute each chain stage at ``d``'s last batch axis, first (``schedule``) giving it a
    one-thread schedule of its own on machine ``hw``."""
    from .defaults import loop_default
    if schedule:
        one = replace(hw, threads=1)
        for p in members:
            loop_default(s, p, one)
    at = d.op.axis[slice_axes(d) - 1]
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
    nb = slice_axes(d)
    total = 0
    for p in members:
        region = lw.planned.get(p.name)
        if region is None or any(iv.ext != 1 for iv in region[:nb]):
            return None
        n = sum(b.dtype.itemsize for b in p.op.body)
        for iv in region:
            n *= iv.ext
        total += n
    return total


def fuse_slices(s: Schedule, hw, plan: dict, position: dict, choice) -> list:
    """Offer (and by ``plan`` or default apply) slice fusion for every root stage of ``s``
    that has a chain; returns the decisions (``choice(kind, stage, default)``) in stage order."""
    readers = materialized_readers(s)
    outputs = {id(t.op) for t in s.graph.outputs}
    out = []
    # consumers first: the second dot of attention claims the softmax before the softmax's own
    # output could take its statistics as a row chain
    for d in reversed([st for st in s.stages.values() if st.is_root]):
        if not d.is_root:
            continue
        members = chain(s, d, readers, outputs)
        size = slice_bytes(s, d, members) if members else None
        if size is None:
            continue
        slices = math.prod(d.op.shape[:slice_axes(d)])
        c = choice("slice", position[d.name], int(size <= max(hw.l3, DEFAULT_L2_MULTIPLE * hw.l2) and slices >= hw.threads))
        out.append(c)
        if plan.get(c.knob, c.default):
            attach(s, d, members, hw)
    return sorted(out, key=lambda c: c.stage)


__all__ = ["attach", "chain", "fuse_slices", "materialized_readers", "slice_bytes"]
