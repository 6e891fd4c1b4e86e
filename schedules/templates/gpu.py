"""Schedule templates for devices with work-groups (OpenCL and CUDA): NDRange mappings of each kernel family.

Every template binds loops to ``group.*``/``local.*`` ids (see runtime/codegen/opencl.py) so the
work-group shape is a knob; a work-group never exceeds ``max_work_group_size`` (the device's
limit, capped at 256) and combinations beyond it raise ScheduleError before anything compiles.

* elementwise / generic: the data axes fused into one loop, split into work-groups of ``local``
  work-items with ``per_item`` elements each, contiguous (``layout`` chunk) or strided by the
  group (``layout`` stride, neighbouring work-items touch neighbouring elements).
* reduction: the fused data axes as above (``per_item`` outputs per work-item), the reduction run
  serially in the work-item (``split_k``/``unroll_k``; ``order`` outer runs the reduction outside
  the per-item outputs). ``local_k`` > 1 instead gives each output (``per_item`` of them in turn)
  a work-group of ``local_k`` work-items that split its reduction and combine their partials in a
  tree in local memory (schedules/xreduce.py); full reductions (no data axis) then run on one
  work-group, else on one work-item.
* dot / conv: an output tile of ``local_x*tile_x`` rows by ``local_y*tile_y`` columns per
  work-group (rows on ``group.y``, columns on ``group.x``, leading axes fused on ``group.z``);
  each work-item computes ``tile_x x tile_y`` outputs, optionally accumulated in a private
  ``cache_write`` buffer, with the reduction outside its tile loops. ``local_mem`` 1 (with
  ``cache_write`` and ``split_k`` > 1) stages, per ``split_k`` slice of the reduction, the
  operand regions the work-group reads into ``__local`` memory (``cache_read(t, 'local')``),
  filled cooperatively by all work-items between barriers.
"""

from __future__ import annotations

import math
from functools import cache

from ...dsl.expr import AxisKind, walk
from ...dsl.ops import Op
from ...dsl.tensor import Tensor
from ..schedule import Schedule, Stage, check
from .base import Knob, KnobSpec, Template, is_pow2, pow2_upto, split_last_reduction

#: the largest work-group the templates make (whatever the device allows)
MAX_LOCAL = 256
#: vector widths OpenCL C has (vloadN/vstoreN)
WIDTHS = (2, 4, 8, 16)


def _flag(v) -> bool:
    return v in (0, 1) and not isinstance(v, float)


def _fused_data(s: Schedule, st: Stage):
    """The stage's leading data loops fused into one (None when it has none)."""
    lead = []
    for v in st.leaf:
        if v.kind is not AxisKind.DATA:
            break
        lead.append(v)
    if not lead:
        return None
    ax = lead[0]
    for v in lead[1:]:
        ax = s.fuse(ax, v)
    return ax


def _n_data(st: Stage) -> int:
    return math.prod(v.extent for v in st.op.axis) if st.op.axis else 0


class _CLTemplate(Template):
    """``preferred`` (from ``specs``): the knob values an untuned device schedule wants (each
    clipped to the stage's values)."""

    def __init__(self, max_work_group_size: int = MAX_LOCAL):
        self.max_local = max(1, min(int(max_work_group_size or MAX_LOCAL), MAX_LOCAL))

    def default_config(self, st: Stage) -> dict:
        """A config for an untuned device schedule: each knob the largest allowed value not
        above ``preferred`` (else its first value)."""
        out = {}
        for k in self.knobs(st, 1):
            want = self.preferred.get(k.name, k.values[0])
            if k.numeric and isinstance(want, int):
                ok = [v for v in k.values if v <= want]
                out[k.name] = max(ok) if ok else min(k.values)
            else:
                out[k.name] = want if want in k.values else k.values[0]
        return out

    def _check_local(self, n: int) -> None:
        check(n <= self.max_local, f"opencl: a work-group of {n} work-items exceeds the limit {self.max_local}")

    def _map_1d(self, s: Schedule, f, local: int, per_item: int, layout: str):
        """Bind fused loop ``f``: ``group.x`` x ``local.x`` work-items of ``per_item`` elements;
        returns the per-item loop (or None)."""
        self._check_local(local)
        if layout == "stride" and per_item > 1:
            a, l_ = s.split(f, local)
            g, i = s.split(a, per_item)
            s.reorder(g, l_, i)
        else:
            i = None
            if per_item > 1:
                f, i = s.split(f, per_item)
            g, l_ = s.split(f, local)
        s.bind(g, "group.x")
        s.bind(l_, "local.x")
        return i


class ElementwiseCL(_CLTemplate):
    family = "elementwise"
    specs = (KnobSpec("local", is_pow2, preferred=128), KnobSpec("per_item", is_pow2, preferred=4),
             KnobSpec("layout", lambda v: v in ("chunk", "stride"), preferred="stride"),
             KnobSpec("vector", _flag, legacy=0, preferred=0))

    def knobs(self, st, hw):
        n = _n_data(st)
        if not n:
            return [Knob("local", (1,)), Knob("per_item", (1,)), Knob("layout", ("chunk",)), Knob("vector", (0,))]
        return [Knob("local", pow2_upto(n, 1, self.max_local)), Knob("per_item", pow2_upto(n, 1, 16)),
                Knob("layout", ("chunk", "stride")), Knob("vector", (0, 1))]

    def steps(self, s, st, c, hw):
        check(c["layout"] == "chunk" or c["per_item"] > 1, "opencl: layout=stride needs per_item > 1")
        check(not c["vector"] or (c["layout"] == "chunk" and c["per_item"] in WIDTHS),
              f"opencl: vector needs layout=chunk and per_item in {WIDTHS} (a work-item's contiguous elements)")
        f = _fused_data(s, st)
        if f is None:
            return
        i = self._map_1d(s, f, c["local"], c["per_item"], c["layout"])
        if i is not None:
            s.vectorize(i) if c["vector"] else s.unroll(i)


class GenericCL(_CLTemplate):
    family = "generic"
    specs = (KnobSpec("local", is_pow2, preferred=64),)

    def knobs(self, st, hw):
        n = _n_data(st)
        return [Knob("local", pow2_upto(n, 1, self.max_local) if n else (1,))]

    def steps(self, s, st, c, hw):
        f = _fused_data(s, st)
        if f is not None:
            self._map_1d(s, f, c["local"], 1, "chunk")


class ReductionCL(_CLTemplate):
    family = "reduction"
    specs = (KnobSpec("local", is_pow2, preferred=64), KnobSpec("per_item", is_pow2, preferred=1),
             KnobSpec("split_k", is_pow2, preferred=1), KnobSpec("unroll_k", _flag, preferred=0),
             KnobSpec("order", lambda v: v in ("inner", "outer"), preferred="inner"),
             KnobSpec("local_k", is_pow2, legacy=1, preferred=1))

    def knobs(self, st, hw):
        n = _n_data(st)
        k = st.op.reduce_axis[-1].extent
        ks = (1,) + tuple(v for v in pow2_upto(k, 4, 32) if v < k)
        lk = (1,) + tuple(v for v in pow2_upto(k, 8, self.max_local) if v < k) if st.op.num_outputs == 1 else (1,)
        if not n:
            return [Knob("split_k", ks), Knob("unroll_k", (0, 1)), Knob("local_k", lk)]
        return [Knob("local", pow2_upto(n, 1, self.max_local)), Knob("per_item", pow2_upto(n, 1, 8)),
                Knob("split_k", ks), Knob("unroll_k", (0, 1)), Knob("order", ("inner", "outer")),
                Knob("local_k", lk)]

    def default_config(self, st):
        """Few long reductions (a row of at least 128 per output, at most 64K outputs) share each
        row among 64 work-items (a tree); otherwise one work-item per output."""
        c = super().default_config(st)
        k = st.op.reduce_axis[-1].extent
        if k >= 128 and _n_data(st) <= 1 << 16:
            lks = [v for v in self.knobs(st, 1)[-1].values if v <= 64]
            c.update(local_k=max(lks), **({"local": 1, "order": "inner"} if "local" in c else {}))
        return c

    def steps(self, s, st, c, hw):
        check(c["split_k"] > 1 or not c["unroll_k"], "opencl: unroll_k needs split_k > 1")
        lk = c["local_k"]
        reds = [v for v in st.leaf if v.kind is AxisKind.REDUCE]
        kl = None
        if lk > 1:      # the last reduction axis split across lk work-items: k = ko * lk + kl
            check(c.get("local", 1) == 1 and c.get("order", "inner") == "inner",
                  "opencl: local_k > 1 shares each output's reduction among the work-group; it needs local=1 "
                  "and order=inner")
            ko, kl = s.split(reds[-1], lk)
            reds = reds[:-1] + [ko]
        ks = split_last_reduction(s, reds, c["split_k"], c["unroll_k"])
        if kl is not None:
            s.reorder(kl, *ks)
            s.bind(kl, "local.x")
        if "local" not in c:
            return
        check(c["order"] == "inner" or c["per_item"] > 1, "opencl: order=outer needs per_item > 1")
        f = _fused_data(s, st)
        if f is None:
            return
        if c["per_item"] > 1:
            f, i = s.split(f, c["per_item"])
        else:
            i = None
        if kl is not None:
            s.bind(f, "group.x")
            return
        g, l_ = s.split(f, c["local"])
        self._check_local(c["local"])
        s.bind(g, "group.x")
        s.bind(l_, "local.x")
        if i is not None:
            s.reorder(g, l_, *((i, *ks) if c["order"] == "inner" else (*ks, i)))


class TiledCL(_CLTemplate):
    family = "dot"
    #: preferred: measured on a CPU device and the usual GPU shape: 8 x 16 work-items, 4 x 4
    #: strided outputs each
    specs = (KnobSpec("local_x", is_pow2, preferred=8), KnobSpec("local_y", is_pow2, preferred=16),
             KnobSpec("tile_x", is_pow2, preferred=4), KnobSpec("tile_y", is_pow2, preferred=4),
             KnobSpec("split_k", is_pow2, preferred=1), KnobSpec("cache_write", _flag, preferred=0),
             KnobSpec("unroll", _flag, preferred=1), KnobSpec("local_mem", _flag, legacy=0, preferred=0),
             KnobSpec("layout", lambda v: v in ("block", "stride"), legacy="block", preferred="stride"),
             KnobSpec("vector", _flag, legacy=0, preferred=0))

    def knobs(self, st, hw):
        d = st.op.axis
        x = d[-2].extent if len(d) >= 2 else 1
        y = d[-1].extent
        k = max(v.extent for v in st.op.reduce_axis)
        return [Knob("local_x", pow2_upto(x, 1, 16)), Knob("local_y", pow2_upto(y, 1, 64)),
                Knob("tile_x", pow2_upto(x, 1, 8)), Knob("tile_y", pow2_upto(y, 1, 8)),
                Knob("split_k", (1,) + tuple(v for v in pow2_upto(k, 4, 64) if v < k)),
                Knob("cache_write", (1, 0)), Knob("unroll", (1, 0)), Knob("local_mem", (0, 1)),
                Knob("layout", ("block", "stride")), Knob("vector", (0, 1))]

    def _split(self, s, v, local: int, tile: int, layout: str):
        """``v = outer * (local*tile) + ...``: ``block`` gives each work-item ``tile`` neighbouring
        elements (``... = l * tile + t``), ``stride`` interleaves them (``... = t * local + l``) so
        that neighbouring work-items touch neighbouring elements. Returns (outer, l, t)."""
        o, i = s.split(v, local * tile)
        if layout == "block":
            lv, t = s.split(i, tile)
        else:
            t, lv = s.split(i, local)
        return o, lv, t

    def steps(self, s, st, c, hw):
        check(st.op.num_outputs == 1, f"opencl tiled: stage '{st.name}' has several outputs")
        self._check_local(c["local_x"] * c["local_y"])
        check(c["tile_x"] * c["tile_y"] <= 64, "opencl tiled: tile_x * tile_y must be <= 64 outputs per work-item")
        check(not c["local_mem"] or c["split_k"] > 1,
              "opencl tiled: local_mem needs split_k > 1 (the slice of the reduction it stages)")
        check(not (c["cache_write"] and c["layout"] == "stride" and c["tile_x"] * c["tile_y"] > 1),
              "opencl tiled: cache_write needs layout=block (a strided tile is no box to cache)")
        check(not c["vector"] or (c["layout"] == "block" and c["tile_y"] in WIDTHS),
              f"opencl tiled: vector needs layout=block and tile_y in {WIDTHS} (a work-item's contiguous columns)")
        d = list(st.op.axis)
        out = st.op.output(0)
        cc = s.cache_write(out, "local") if c["cache_write"] else None
        red_stage = s.stage(cc) if cc is not None else st
        caches = [s.cache_read(t, "local", [red_stage]) for t in _reduction_operands(red_stage)] if c["local_mem"] else []
        yo, yl, yt = self._split(s, d[-1], c["local_y"], c["tile_y"], c["layout"])
        if len(d) >= 2:
            xo, xl, xt = self._split(s, d[-2], c["local_x"], c["tile_x"], c["layout"])
        else:
            check(c["local_x"] == 1 and c["tile_x"] == 1, "opencl tiled: local_x/tile_x need two data axes")
            xo = xl = xt = None
        lead = d[:-2]
        b = None
        if lead:
            b = lead[0]
            for v in lead[1:]:
                b = s.fuse(b, v)
        grid = [v for v in (b, xo, yo, xl, yl) if v is not None]
        tile = [v for v in (xt, yt) if v is not None]
        s.reorder(*grid, *tile)
        for v, th in ((b, "group.z"), (xo, "group.y"), (yo, "group.x"), (xl, "local.y"), (yl, "local.x")):
            if v is not None:
                s.bind(v, th)
        if cc is not None:
            if c["vector"]:
                s.vectorize(yt)        # the copy out of the register tile
            s.compute_at(cc, yl)
            tile = list(s.stage(cc).op.axis)[-2:]
        rs = [v for v in red_stage.leaf if v.kind is AxisKind.REDUCE]
        big = max(rs, key=lambda v: v.extent)
        ks = [v for v in rs if v is not big] + [big]
        if c["split_k"] > 1:
            ko, ki = s.split(big, c["split_k"])
            ks = ks[:-1] + [ko, ki]
        s.reorder(*ks, *tile)
        if c["vector"]:
            s.vectorize(tile[-1])
        if c["unroll"] and (not c["vector"] or len(tile) > 1):
            s.unroll(tile[-2] if c["vector"] else tile[-1])
        for t in caches:     # cooperative fill: the work-group's items stride over the region
            s.compute_at(t, ks[-2])
            ax = list(t.op.axis)
            f = ax[0]
            for v in ax[1:]:
                f = s.fuse(f, v)
            f, tx = s.split(f, c["local_y"])
            f, ty = s.split(f, c["local_x"])
            s.bind(tx, "local.x")
            if xl is not None:
                s.bind(ty, "local.y")


def _reduction_operands(st: Stage) -> list:
    """The tensors ``st`` loads at indices that depend on a reduction axis (a dot's operands,
    a convolution's input and weights)."""
    red = set(st.op.reduce_axis)
    out = []
    for e in walk(list(st.op.body)):
        if (e.op is Op.LOAD and isinstance(e.arg, Tensor) and e.arg not in out
                and any(x.op is Op.VAR and x.arg in red for x in walk(list(e.src)))):
            out.append(e.arg)
    return out


class ConvCL(TiledCL):
    family = "conv"


@cache
def gpu_templates(max_work_group_size: int = MAX_LOCAL) -> dict:
    """The OpenCL templates by family, for a device with this work-group limit."""
    return {t.family: t for t in (ElementwiseCL(max_work_group_size), ReductionCL(max_work_group_size),
                                  TiledCL(max_work_group_size), ConvCL(max_work_group_size),
                                  GenericCL(max_work_group_size))}


__all__ = ["MAX_LOCAL", "gpu_templates"]
