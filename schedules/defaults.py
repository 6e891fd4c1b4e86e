"""The untuned loop schedule of one root stage: a template's default config where it fits (the
gemm template for dots and convolutions, the elementwise one's blocks for transposes), else
parallel outer loops and a vectorized inner one."""

from __future__ import annotations

import os

from ..dsl.errors import ConfigError, ScheduleError
from ..dsl.expr import AxisKind
from .fusion_rules import PARALLEL_MIN_WORK, _contiguous_in, classify, simd_reducible
from .schedule import Schedule, Stage
from .templates.base import as_hardware
from .templates.families import TEMPLATES
from .templates.gemm import streams_across

#: work (output elements x reduction extent) from which a column reduction's lanes are split
#: across threads
COLUMN_SPLIT_WORK = 8 * PARALLEL_MIN_WORK


def _tiled_default(s: Schedule, st: Stage, hw) -> bool:
    """Dots and convolutions whose output's last axis can be vectorized get the gemm template
    (packed panels around a register micro-kernel) with its machine-derived default config; the
    config is tried on a replayed copy first, so a shape it does not fit leaves ``s`` untouched.
    True if applied."""
    fam = classify(st, s)
    if fam not in ("dot", "conv") or st.op.axis[-1].extent < 4 or (st.op.is_reduction and streams_across(st.op)):
        return False
    t = TEMPLATES[fam]
    return try_template(s, st, t, t.default_config(st, hw), hw)


def _blocked_default(s: Schedule, st: Stage, hw) -> bool:
    """An elementwise stage that reads a tensor across its rows gets the elementwise template's
    default config, in blocks (tried on a replayed copy like ``_tiled_default``). True if applied."""
    t = TEMPLATES["elementwise"]
    if classify(st, s) != "elementwise":
        return False
    c = t.default_config(st, hw)
    return bool(c.get("tile")) and try_template(s, st, t, c, hw)


def try_template(s: Schedule, st: Stage, t, config: dict, threads=1) -> bool:
    """Apply template ``t`` with ``config`` to stage ``st`` when it schedules and lowers on a
    replayed copy of ``s`` (so a config that does not fit leaves ``s`` untouched); True if applied."""
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
    hw = as_hardware(threads or os.cpu_count() or 1)
    threads = hw.threads
    if tiled and (_tiled_default(s, st, hw) or _blocked_default(s, st, hw)):
        return
    data = [v for v in st.leaf if v.kind is AxisKind.DATA]
    red = [v for v in st.leaf if v.kind is AxisKind.REDUCE]
    work = 1
    for v in st.leaf:
        work *= max(v.extent, 1)
    vec = None
    if red and red[-1].extent >= 8 and simd_reducible(st) and _contiguous_in(st, red[-1]) > \
            (_contiguous_in(st, data[-1]) if data else -1):
        vec = red[-1]   # the inputs are contiguous along the reduction: a SIMD reduction
    elif data and data[-1].extent >= 4 and (not red or (data[-1].extent >= 8 and (
            len(data) >= 2 or _contiguous_in(st, data[-1]) > _contiguous_in(st, red[-1])))):
        if red:
            # the reductions outside, the output's contiguous axis inside as SIMD lanes; a
            # one-axis output (column sums) gives its lanes to the threads in blocks
            inner = data[-1]
            # (only with ample work: a parallel region costs microseconds, and a matrix-vector
            # product in a decode loop's body would pay that at every step)
            if len(data) == 1 and work >= COLUMN_SPLIT_WORK and threads > 1 and inner.extent >= 32:
                lanes = -(-inner.extent // threads)
                lanes = -(-lanes // 16) * 16
                if lanes < inner.extent:
                    block, inner = s.split(inner, lanes)
                    data = [block, inner]
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


__all__ = ["loop_default", "try_template"]
