"""The CUDA template of dots and convolutions: one matrix-product kernel per stage
(``tensorize`` with ``gpu_gemm``, schedules/gpu_gemm.py), tensor cores when the operands are 16-bit.

Knobs: ``mma`` (1: ``mma.sync`` tensor cores, offered when both operands convert from one
16-bit float type to an f32 accumulator on sm_80+), the block tile ``bm x bn`` and K slice ``bk``,
the warp tile ``wm x wn`` (tensor cores) or the thread tile ``tm x tn`` (FMAs), ``stages``
shared-memory buffers (0: as the copy path allows) and ``group_m`` (row tiles visited together).
A stage without a GEMM form (a matrix-vector product, an integer dot) or with fewer than 16 rows
or columns keeps the work-group mapping of templates/gpu.py (``TiledCL``'s knobs).
"""

from __future__ import annotations

from functools import cache

from ...dsl.errors import ConfigError, ScheduleError
from ..gpu_gemm import GemmParams, check_params, gemm_form
from ..schedule import Schedule, Stage
from .base import Knob, KnobSpec, is_pow2
from .gpu import TiledCL

#: the knob values of the GEMM kernel
BLOCKS = (32, 64, 128, 256)
K_SLICES = (8, 16, 32, 64)
WARP_TILES = (32, 64)
THREAD_TILES = (4, 8)
STAGES = (0, 1, 2, 3, 4)
GROUPS = (1, 8)
GEMM_KNOBS = ("mma", "bm", "bn", "bk", "wm", "wn", "tm", "tn", "stages", "group_m")


def _flag(v) -> bool:
    return v in (0, 1) and not isinstance(v, float)


def _form(st: Stage):
    """The stage's GEMM form, or None (no form, or too small a tile to fill a block)."""
    op = st.op
    if not op.is_reduction or op.num_outputs != 1 or op.body[0].arg.reducer.name != "sum" or op.body[0].arg.where:
        return None
    f = gemm_form(op.axis, op.reduce_axis, op.body[0].src[0])
    if isinstance(f, str):
        return None
    _, m, n, _ = f.sizes
    return f if m >= 16 and n >= 16 else None


def _upto(n: int, values: tuple) -> tuple:
    """``values`` up to the first one covering ``n`` (at least the smallest)."""
    out = []
    for v in values:
        out.append(v)
        if v >= n:
            break
    return tuple(out)


class GemmCUDA(TiledCL):
    family = "dot"
    specs = (*TiledCL.specs, KnobSpec("mma", _flag), *(KnobSpec(n, is_pow2) for n in ("bm", "bn", "bk", "wm", "wn", "tm", "tn")),
             KnobSpec("stages", lambda v: v in STAGES),
             KnobSpec("group_m", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1))

    def __init__(self, max_work_group_size: int = 1024, compute_capability: int = 0):
        super().__init__(max_work_group_size)
        self.cc = compute_capability
        self.max_threads = max(32, int(max_work_group_size or 1024))

    def complete(self, config: dict, space=None) -> dict:
        if isinstance(config, dict) and "mma" in config:
            return config
        return super().complete(config, space)

    def _mma_ok(self, form) -> bool:
        return form.half is not None and (self.cc == 0 or self.cc >= 80)

    def knobs(self, st, hw):
        form = _form(st)
        if form is None:
            return super().knobs(st, hw)
        _, m, n, _ = form.sizes
        mma = (1, 0) if self._mma_ok(form) else (0,)
        ks = [Knob("mma", mma), Knob("bm", _upto(m, BLOCKS)), Knob("bn", _upto(n, BLOCKS)),
              Knob("bk", K_SLICES)]
        if 1 in mma:
            ks += [Knob("wm", WARP_TILES), Knob("wn", WARP_TILES)]
        if 0 in mma:
            ks += [Knob("tm", THREAD_TILES), Knob("tn", THREAD_TILES)]
        return ks + [Knob("stages", STAGES), Knob("group_m", GROUPS)]

    def params(self, config: dict) -> GemmParams:
        """The kernel parameters of a GEMM config (knobs a mode does not use keep their defaults)."""
        return GemmParams(**{k: config[k] for k in GEMM_KNOBS if k in config})

    def default_config(self, st: Stage) -> dict:
        """Big tiles where the matrix is big (128 x 128, tensor cores when offered), halved
        until the block is at most the matrix; the first config that fits the device."""
        form = _form(st)
        if form is None:
            return super().default_config(st)
        space = {k.name: k.values for k in self.knobs(st, None)}
        _, m, n, _ = form.sizes
        mma = space["mma"][0]
        bm, bn = min(128, max(space["bm"])), min(128, max(space["bn"]))
        c = {"mma": mma, "bm": bm, "bn": bn, "bk": 32 if mma else 16, "stages": 0, "group_m": 8}
        if "wm" in space:
            c.update(wm=min(64, bm), wn=min(32, bn))
        if "tm" in space:
            c.update(tm=8 if bm >= 64 else 4, tn=8 if bn >= 64 else 4)
        for _ in range(8):
            try:
                check_params(self.params(c), form, _Limits(self.max_threads))
                return c
            except ScheduleError:
                if c["bk"] > 16:
                    c["bk"] //= 2
                elif not mma and c.get("tm", 4) > 4:
                    c["tm"] = c["tn"] = 4
                else:
                    break
        safe = {"mma": 0, "bm": 32, "bn": 32, "bk": 8, "stages": 2, "group_m": 1, "tm": 4, "tn": 4}
        return {**safe, **({"wm": 32, "wn": 32} if "wm" in space else {})}

    def steps(self, s: Schedule, st: Stage, c: dict, hw):
        if "mma" not in c:
            return super().steps(s, st, c, hw)
        form = _form(st)
        if form is None:
            raise ConfigError(f"stage '{st.name}' has no GEMM form; its knobs are the tiled template's", "mma")
        p = self.params(c)
        check_params(p, form, hw if hw is not None and getattr(hw, "work_groups", False) else _Limits(self.max_threads))
        s.tensorize(st.op.output(0), "gpu_gemm", dict(p.items()))


class _Limits:
    """Device limits for checks made without a Hardware (the generic sm_80 device)."""

    def __init__(self, max_threads: int):
        self.max_work_group_size = max_threads
        self.compute_capability = 0
        self.shared_optin_bytes = 163 << 10


class GemmConvCUDA(GemmCUDA):
    family = "conv"


@cache
def cuda_templates(max_work_group_size: int = 1024, compute_capability: int = 80) -> dict:
    """The CUDA templates that replace the work-group mappings of dots and convolutions."""
    return {"dot": GemmCUDA(max_work_group_size, compute_capability),
            "conv": GemmConvCUDA(max_work_group_size, compute_capability)}


__all__ = ["GemmCUDA", "GemmConvCUDA", "cuda_templates"]
