"""The templates of each kernel family and the classifier that picks one for a stage.

Index conventions: ``D`` are a stage's data axes (outer to inner), ``R`` its reduction axes;
``x, y`` are the last two data axes (rows, columns of a dot; width, channels of an NHWC conv).
"""

from __future__ import annotations

from ...dsl.errors import ScheduleError
from ...dsl.expr import AxisKind
from ..fusion_rules import (
    CHOICE_KINDS,
    PARALLEL_MIN_WORK,
    classify,
    classify_op,
    reads_across,
    simd_reducible,
)
from ..schedule import Stage, check
from .base import (
    Knob,
    KnobSpec,
    Template,
    as_hardware,
    is_pow2,
    parallel_fuse,
    pow2_upto,
    split_last_reduction,
)
from .gemm import Gemm, GemmConv


def _flag(v) -> bool:
    return v in (0, 1) and not isinstance(v, float)


def _data(st: Stage):
    return [v for v in st.op.axis]


def _red(st: Stage):
    return [v for v in st.op.reduce_axis]


class Elementwise(Template):
    """Injective stages: split+vectorize the innermost axis, parallel outer loops. A stage that
    reads a tensor across its rows (a transpose) may tile its last two axes (``tile`` x
    ``tile`` blocks, rows then columns inside), so that the transposed reads of one block stay
    in cache lines it has loaded."""

    family = "elementwise"
    specs = (KnobSpec("vector", lambda v: v == 0 or is_pow2(v)), KnobSpec("parallel", _flag),
             KnobSpec("tile", lambda v: v == 0 or is_pow2(v), legacy=0))

    def knobs(self, st, hw):
        d = _data(st)
        inner = d[-1].extent if d else 1
        vec = (0, 1) + tuple(v for v in pow2_upto(inner, 4, 64) if v < inner)
        knobs = [Knob("vector", vec), Knob("parallel", (1, 0) if hw.threads > 1 and len(d) > 0 else (0,))]
        tiles = transpose_tiles(st.op)
        return knobs + [Knob("tile", (0,) + tiles)] if tiles else knobs

    def default_config(self, st: Stage, hw) -> dict:
        """The whole inner loop (or block row) vectorized, outer loops parallel where the work
        pays for a parallel region; a stage reading across its rows in 16 x 16 blocks (the
        largest offered below that), which kept transposes 1.4-4x faster than rows on 256x512 to
        2048x2048 f32 (AMD EPYC)."""
        d = _data(st)
        work = 1
        for v in d:
            work *= v.extent
        c = {"vector": 1 if d and d[-1].extent >= 4 else 0,
             "parallel": 1 if hw.threads > 1 and d and work >= PARALLEL_MIN_WORK else 0}
        tiles = transpose_tiles(st.op)
        if tiles:
            c["tile"] = max(v for v in tiles if v <= 16)
        return c

    def steps(self, s, st, c, hw):
        d = _data(st)
        if not d:
            return
        tiled = bool(c.get("tile"))
        if tiled:
            # the loops inside a block stay out of the parallel loop (xi lies between yo and yi)
            xo, yo, _, inner = s.tile(d[-2], d[-1], c["tile"], c["tile"])
            outer = list(d[:-2]) + [xo, yo]
        else:
            outer, inner = list(d[:-1]), d[-1]
        if c["vector"]:
            if 1 < c["vector"] < inner.extent:
                o, i = s.split(inner, c["vector"])
                outer += [] if tiled else [o]
                s.vectorize(i)
            else:
                s.vectorize(inner)
        elif not tiled:
            outer.append(inner)
        if c["parallel"]:
            parallel_fuse(s, st, outer, hw.threads)


def transpose_tiles(op) -> tuple[int, ...]:
    """The block sizes (powers of two from 8 to 64, at most half of each of the last two axes)
    that a stage reading a tensor across its rows (``reads_across``) may tile by; () for others."""
    if op.is_reduction or not reads_across(op):
        return ()
    return tuple(v for v in (8, 16, 32, 64) if 2 * v <= min(op.axis[-1].extent, op.axis[-2].extent))


class Reduction(Template):
    """Reductions that are not dots or convolutions (row sums, max, mean, ...)."""

    family = "reduction"
    specs = (KnobSpec("order", lambda v: v in ("inner", "outer")), KnobSpec("split_k", is_pow2),
             KnobSpec("unroll_k", _flag), KnobSpec("vector_k", _flag), KnobSpec("cache", _flag),
             KnobSpec("parallel", _flag))

    def knobs(self, st, hw):
        d, r = _data(st), _red(st)
        k = r[-1].extent
        orders = ("inner",) + (("outer",) if len(d) >= 2 and d[-1].extent >= 4 else ())
        return [Knob("order", orders), Knob("split_k", (1,) + tuple(v for v in pow2_upto(k, 4, 32) if v < k)),
                Knob("unroll_k", (0, 1)), Knob("vector_k", (1, 0) if simd_reducible(st) else (0,)),
                Knob("cache", (0, 1)),
                Knob("parallel", (1, 0) if hw.threads > 1 and d else (0,))]

    def steps(self, s, st, c, hw):
        threads = hw.threads
        d, r = _data(st), _red(st)
        target = st
        out = st.op.output(0)
        if c["cache"]:
            check(st.op.num_outputs == 1, "cache: a tuple reduction has no single cache stage")
            cc = s.cache_write(out, "local")
            target = s.stage(cc)
            d2 = _data(target)
            r2 = _red(target)
        else:
            d2, r2 = d, r
        check(c["split_k"] > 1 or not c["unroll_k"], "unroll_k needs split_k > 1")
        ks = split_last_reduction(s, r2, c["split_k"], c["unroll_k"])
        if c["vector_k"]:
            check(c["order"] == "inner" and not c["unroll_k"], "vector_k needs order=inner and no unroll_k")
            s.vectorize(ks[-1])
        if c["order"] == "outer":
            s.reorder(*d2[:-1], *ks, d2[-1])
            s.vectorize(d2[-1])
        if c["cache"]:
            # the copy-out stage (st) owns the loops; compute the accumulator per outer point
            outer = d[:-1] if c["order"] == "outer" else d
            if outer:
                s.compute_at(target.op.output(0), outer[-1])
            if c["order"] == "outer" and d:
                s.vectorize(d[-1])
            if c["parallel"] and outer:
                parallel_fuse(s, st, outer, threads)
        elif c["parallel"]:
            lead = d2[:-1] if c["order"] == "outer" else d2
            if lead:
                parallel_fuse(s, st, lead, threads)


class Generic(Template):
    """Any stage: only the loop-level choices that are always legal."""

    family = "generic"
    specs = (KnobSpec("parallel", _flag),)

    def knobs(self, st, hw):
        return [Knob("parallel", (1, 0) if hw.threads > 1 else (0,))]

    def steps(self, s, st, c, hw):
        threads = hw.threads
        lead = []
        for v in st.leaf:
            if v.kind is not AxisKind.DATA:
                break
            lead.append(v)
        if c["parallel"] and lead:
            parallel_fuse(s, st, lead, threads)


class FusionPlan(Template):
    """A compute segment's fusion plan (``fusion.Choice`` knobs ``<kind><k>`` of the kinds in
    ``fusion.CHOICE_KINDS``, 0 or 1): it applies to a whole segment through ``fusion.fuse(s, hw, plan)``, not to a stage;
    this template only checks recorded plans (autotune/plans.py tunes them)."""

    family = "fusion"

    def check_domain(self, config: dict) -> None:
        from ...dsl.errors import ConfigError
        if not isinstance(config, dict):
            raise ConfigError("config must be an object")
        for k, v in config.items():
            kind = k.rstrip("0123456789")
            if kind not in CHOICE_KINDS or kind == k:
                raise ConfigError(f"unknown knob '{k}' for a fusion plan; knobs are <kind><k> with kind one of "
                                  f"{', '.join(CHOICE_KINDS)}", k)
            if not _flag(v):
                raise ConfigError(f"knob '{k}' = {v!r} is outside its domain (0 or 1)", k)

    def knobs(self, st, hw):
        raise ScheduleError("a fusion plan applies to a whole segment (fusion.fuse), not to one stage")

    steps = knobs


TEMPLATES = {t.family: t for t in (Elementwise(), Reduction(), Gemm(), GemmConv(), Generic(), FusionPlan())}


def templates_for(hw=None) -> dict:
    """The templates by family for machine ``hw`` (a Hardware; None: the generic CPU): devices
    with work-groups (OpenCL, CUDA) share the work-group mappings (group.* = blockIdx.*)."""
    hw = as_hardware(hw or 1)
    if hw.work_groups:
        from .gpu import MAX_LOCAL, gpu_templates
        out = {**gpu_templates(hw.max_work_group_size or MAX_LOCAL), "fusion": TEMPLATES["fusion"]}
        if hw.compute_capability:     # CUDA: dots and convolutions as one matrix-product kernel
            from .gpu_gemm import cuda_templates
            out.update(cuda_templates(hw.max_work_group_size or 1024, hw.compute_capability))
        return out
    return TEMPLATES



__all__ = ["TEMPLATES", "classify", "classify_op", "templates_for"]
