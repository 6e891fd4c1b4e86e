"""Matrix products as one GPU kernel: a dot's or convolution's GEMM form, the kernel's parameters,
and the checks that keep them within a device's limits.

A sum reduction ``out[d] = sum_k P * Q`` (``d`` its data axes, ``k`` its reduce axes) is a
batched GEMM when the reduce axes all index both factors and every data axis indexes one factor,
or both, or neither: data axes read by ``P`` alone are the rows (``M``), those read by ``Q``
alone the columns (``N``), the others batch axes. Each group is flattened in the order its axes
have in the output (``m = sum_i m_i * prod(extent_j, j > i)``), so a convolution is the implicit
GEMM ``M = (batch, output pixels)``, ``N = output channels``, ``K = (window, input channels)``.
``P`` is called the A operand (``A[b, m, k]``), ``Q`` the B operand (``B[b, k, n]``).

An operand is *direct* when it is one buffer load (possibly converted to the accumulator type)
whose flat offset is affine in the flattened ``m`` (or ``n``) and ``k`` with one of the two
strides 1: then the kernel copies it into shared memory as whole vectors (``cp.async`` on sm_80+)
instead of evaluating it element by element. The tensor-core path needs both operands in one
16-bit float type (a conversion of a bf16 or f16 value to f32) and an f32 accumulator.

The kernel itself is rendered by ``runtime/codegen/gpu_gemm.py``; ``MatmulKernel`` (loops.py)
carries this form and the parameters from the schedule's ``tensorize`` step to the renderer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..dsl import dtypes as dt
from ..dsl.errors import ScheduleError
from ..dsl.expr import Expr, IterVar, as_expr, binary, walk
from ..dsl.ops import Op
from .bounds import linear

#: parameter names of the gpu_gemm intrinsic and their meaning (see ``GemmParams``)
PARAMS = ("mma", "bm", "bn", "bk", "wm", "wn", "tm", "tn", "stages", "group_m")


@dataclass(frozen=True)
class GemmParams:
    """The kernel's shape: a block computes a ``bm x bn`` output tile, stepping through K in
    slices of ``bk`` staged in shared memory (``stages`` buffers; 0: as many as the operands'
    copy path allows). ``mma`` 1: warps of 32 threads each compute a ``wm x wn`` tile with
    tensor-core ``mma.sync`` instructions; ``mma`` 0: threads each compute ``tm x tn`` outputs
    with FMAs. ``group_m`` row tiles are visited together (the launch order keeps B's column
    panels in L2)."""

    mma: int = 0
    bm: int = 64
    bn: int = 64
    bk: int = 16
    wm: int = 32
    wn: int = 32
    tm: int = 4
    tn: int = 4
    stages: int = 2
    group_m: int = 1

    @property
    def threads(self) -> int:
        if self.mma:
            return (self.bm // self.wm) * (self.bn // self.wn) * 32
        return (self.bm // self.tm) * (self.bn // self.tn)

    @staticmethod
    def from_items(items) -> GemmParams:
        d = dict(items)
        bad = set(d) - set(PARAMS)
        if bad:
            raise ScheduleError(f"tensorize gpu_gemm: unknown parameters {sorted(bad)}; expected {list(PARAMS)}")
        for k, v in d.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ScheduleError(f"tensorize gpu_gemm: parameter '{k}' must be a non-negative int, got {v!r}")
        return GemmParams(**d)

    def items(self) -> tuple:
        return tuple((k, getattr(self, k)) for k in PARAMS)


@dataclass(frozen=True)
class Operand:
    """How the kernel reads one operand: ``expr`` over the batch, row/column and k variables;
    when direct, its ``buffer``, the flat ``base`` offset (an expression of the batch variables),
    the stride of the flattened ``mn`` index and of ``k``, and the 16-bit ``storage`` type of
    a tensor-core operand (None: values of the accumulator type)."""

    expr: Expr
    buffer: object = None
    base: Expr | None = None
    mn_stride: int = 0
    k_stride: int = 0
    storage: object = None

    @property
    def direct(self) -> bool:
        return self.buffer is not None

    @property
    def k_major(self) -> bool:
        """Contiguous along k (else along the row/column index)."""
        return self.k_stride == 1


@dataclass(frozen=True)
class GemmForm:
    """A sum reduction as a batched GEMM (see the module docstring): axis groups (each in output
    order), the two factors, the accumulator type and the 16-bit type both factors convert from
    (None unless the tensor-core path applies)."""

    batch: tuple[IterVar, ...]
    m: tuple[IterVar, ...]
    n: tuple[IterVar, ...]
    k: tuple[IterVar, ...]
    a: Expr
    b: Expr
    acc: object
    half: object = None

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """(batch, M, N, K) element counts."""
        return tuple(math.prod(v.extent for v in g) for g in (self.batch, self.m, self.n, self.k))


def _vars(e: Expr) -> set:
    return {x.arg for x in walk([e]) if x.op is Op.VAR}


def _strip_cast(e: Expr) -> Expr:
    return e.src[0] if e.op is Op.CAST else e


def _half_of(e: Expr):
    """The 16-bit float type ``e`` converts from to f32 (None if it is not such a conversion)."""
    if e.op is Op.CAST and e.dtype is dt.float32 and e.src[0].dtype in (dt.bfloat16, dt.float16):
        return e.src[0].dtype
    return None


def gemm_form(axis, reduce_axis, value: Expr) -> GemmForm | str:
    """The GEMM form of ``sum over reduce_axis of value`` with data axes ``axis``, or why there
    is none (a string)."""
    acc = value.dtype
    if acc not in (dt.float32, dt.float64):
        return f"accumulates in {acc} (the GPU matrix kernel accumulates in f32 or f64)"
    if value.op is not Op.MUL:
        return "its summand is not a product of two factors"
    p, q = value.src
    red = set(reduce_axis)
    vp, vq = _vars(p), _vars(q)
    if not red <= vp or not red <= vq:
        return "a reduction axis does not index both factors"
    m = tuple(v for v in axis if v in vp and v not in vq)
    n = tuple(v for v in axis if v in vq and v not in vp)
    if not m or not n:
        return "a matrix-vector product (one factor has no data axis of its own)"
    if axis and axis[-1] in m:       # the output's contiguous axis are the columns: C^T = B^T A^T
        p, q, m, n = q, p, n, m
    batch = tuple(v for v in axis if v not in m and v not in n)
    ha, hb = _half_of(p), _half_of(q)
    half = ha if ha is not None and ha is hb and acc is dt.float32 else None
    return GemmForm(batch, m, n, tuple(reduce_axis), p, q, acc, half)


def _flat_stride(lin: dict, group: tuple[IterVar, ...]) -> int | None:
    """The stride of the flattened index of ``group`` in the affine offset ``lin`` (var -> coeff),
    or None when the offset is not affine in that flat index."""
    if not group:
        return 0
    inner = lin.get(group[-1], 0)
    span = 1
    for v in reversed(group):
        if lin.get(v, 0) != inner * span:
            return None
        span *= v.extent
    return inner


def _offset(load: Expr):
    """The flat row-major offset of buffer load ``load`` as {var: coeff}, const; None if not affine."""
    buf = load.arg
    shape = buf.shape
    coeffs: dict = {}
    const = 0
    stride = 1
    for ix, ext in zip(reversed(load.src), reversed(shape)):
        lf = linear(ix)
        if lf is None:
            return None
        for _, (c, atom) in lf[0].items():
            if atom.op is not Op.VAR:
                return None
            coeffs[atom.arg] = coeffs.get(atom.arg, 0) + c * stride
        const += lf[1] * stride
        stride *= ext
    return coeffs, const


def operand(e: Expr, batch, mn, k, half) -> Operand:
    """How the kernel reads factor ``e`` (over ``batch``, ``mn`` and ``k``; see ``Operand``)."""
    inner = _strip_cast(e) if half is not None else e
    ld = inner
    if half is None and ld.op is Op.CAST:
        return Operand(e)
    if ld.op is not Op.LOAD or not hasattr(ld.arg, "shape") or ld.dtype is not (half or e.dtype):
        return Operand(e)
    off = _offset(ld)
    if off is None:
        return Operand(e)
    lin, const = off
    known = set(batch) | set(mn) | set(k)
    if set(lin) - known:
        return Operand(e)
    smn, sk = _flat_stride(lin, mn), _flat_stride(lin, k)
    if smn is None or sk is None or not (sk == 1 or smn == 1):
        return Operand(e)
    base = as_expr(const, dt.index)
    for v in batch:
        c = lin.get(v, 0)
        if c:
            base = binary(Op.ADD, base, binary(Op.MUL, v.var, as_expr(c, dt.index)))
    return Operand(e, ld.arg, base, smn, sk, half)


def check_params(p: GemmParams, form: GemmForm, hw) -> None:
    """ScheduleError naming the rule or the device limit that ``p`` breaks for ``form`` on
    ``hw`` (a schedules.hardware.Hardware)."""
    def need(cond, msg):
        if not cond:
            raise ScheduleError(f"gpu_gemm: {msg}")
    for k in ("bm", "bn", "bk"):
        v = getattr(p, k)
        need(v >= 1 and v & (v - 1) == 0, f"{k}={v} must be a power of two")
    need(p.stages in (0, 1, 2, 3, 4), f"stages={p.stages} must be 0 (auto), 1, 2, 3 or 4")
    need(p.group_m >= 1, f"group_m={p.group_m} must be at least 1")
    cc = getattr(hw, "compute_capability", 0)
    if p.mma:
        need(form.half is not None, "mma=1 needs both operands converted from one 16-bit float type (bf16 or f16) "
             "and an f32 accumulator")
        need(cc == 0 or cc >= 80, f"mma=1 (bf16/f16 mma.sync) needs compute capability 8.0, the device has {cc / 10}")
        need(p.wm in (16, 32, 64, 128) and p.wn in (8, 16, 32, 64, 128) and p.bm % p.wm == 0 and p.bn % p.wn == 0,
             f"warp tile {p.wm}x{p.wn} must divide the block tile {p.bm}x{p.bn} (wm a multiple of 16, wn of 8)")
        need(p.bk % 16 == 0, f"bk={p.bk} must be a multiple of 16 (the mma's k)")
        need((p.wn // 8) % 2 == 0 or p.wn == 8, f"wn={p.wn}: a warp loads B fragments in pairs of 8 columns")
        need(p.wm * p.wn // 32 <= 128, f"a {p.wm}x{p.wn} warp tile needs {p.wm * p.wn // 32} accumulator registers "
             "per thread (at most 128)")
    else:
        need(p.tm in (1, 2, 4, 8) and p.tn in (1, 2, 4, 8), f"thread tile {p.tm}x{p.tn}: tm, tn in 1, 2, 4, 8")
        need(p.bm % p.tm == 0 and p.bn % p.tn == 0, f"thread tile {p.tm}x{p.tn} must divide {p.bm}x{p.bn}")
    t = p.threads
    limit = getattr(hw, "max_work_group_size", 0) or 1024
    need(32 <= t <= limit, f"{t} threads per block; the device allows 32 to {limit}")
    smem = shared_bytes(p, form)
    cap = getattr(hw, "shared_optin_bytes", 0) or getattr(hw, "local_mem_bytes", 0) or 48 << 10
    need(smem <= cap, f"{smem} bytes of shared memory per block, more than the device's {cap}")
    elems = p.bm * p.bk + p.bk * p.bn
    need(elems % 8 == 0, f"the {p.bm}x{p.bk} and {p.bk}x{p.bn} tiles must hold whole 16-byte vectors")


#: shared-memory rows are padded by this many elements (a 16-byte shift across the 32 banks)
PAD_BYTES = 16


def stage_counts(p: GemmParams, async_ok: bool) -> int:
    """Shared-memory buffers the kernel uses: ``stages`` (0: 3 for tensor cores, else 2) when
    the operands are copied asynchronously, else at most 2 (register-staged double buffering)."""
    s = p.stages or (3 if p.mma else 2)
    return s if async_ok else min(s, 2)


def tile_dims(p: GemmParams, form: GemmForm, k_major_a: bool, k_major_b: bool) -> tuple[tuple, tuple]:
    """The shared tiles' (rows, padded row length) for A and B, in elements. The FMA kernel keeps
    both k-outer ([bk][bm], [bk][bn]); the tensor-core kernel keeps each as its operand is laid
    out (k-contiguous rows when ``k_major``)."""
    item = 2 if p.mma else form.acc.itemsize
    pad = PAD_BYTES // item
    if not p.mma:
        return (p.bk, p.bm + pad), (p.bk, p.bn + pad)
    a = (p.bm, p.bk + pad) if k_major_a else (p.bk, p.bm + pad)
    b = (p.bn, p.bk + pad) if k_major_b else (p.bk, p.bn + pad)
    return a, b


def shared_bytes(p: GemmParams, form: GemmForm, async_ok: bool = True, k_major_a: bool = True,
                 k_major_b: bool = False) -> int:
    """Dynamic shared memory of the kernel (the largest over the layouts when not given)."""
    item = 2 if p.mma else form.acc.itemsize
    ta, tb = tile_dims(p, form, k_major_a, k_major_b)
    alt_a, alt_b = tile_dims(p, form, not k_major_a, not k_major_b)
    per = max(math.prod(ta), math.prod(alt_a)) + max(math.prod(tb), math.prod(alt_b))
    return stage_counts(p, async_ok) * per * item


def vector_width(op: Operand, mn_ext: int, k_ext: int, mn_tile: int, k_tile: int, item: int) -> int:
    """Elements per vector copy of direct operand ``op`` (1 when it is not direct): the widest
    of at most 16 bytes that divides the contiguous extent and tile, the other stride and every
    offset, so that each vector lies whole in one row and is aligned."""
    if not op.direct:
        return 1
    cont, other = (k_ext, op.mn_stride) if op.k_major else (mn_ext, op.k_stride)
    tile = k_tile if op.k_major else mn_tile
    offs = [c for c in _base_coeffs(op.base)]
    for v in (16 // item, 8 // item, 4 // item, 2 // item):
        if v >= 2 and cont % v == 0 and tile % v == 0 and other % v == 0 and all(c % v == 0 for c in offs):
            return v
    return 1


def _base_coeffs(base: Expr) -> list[int]:
    """The constants of an affine batch offset (its constant term and coefficients)."""
    lf = linear(base)
    return [lf[1], *(c for c, _ in lf[0].values())] if lf is not None else [1]


@dataclass(frozen=True)
class GemmPlan:
    """Everything the launch and the renderer derive from a MatmulKernel on a device of compute
    capability ``cc``: sizes, operands, copy path, shared-memory tiles and the launch shape."""

    params: GemmParams
    form: GemmForm
    a: Operand
    b: Operand
    vec_a: int
    vec_b: int
    async_copy: bool
    stages: int
    tile_a: tuple[int, int]
    tile_b: tuple[int, int]
    item: int

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        return self.form.sizes

    @property
    def tiles(self) -> tuple[int, int]:
        _, m, n, _ = self.sizes
        return -(-m // self.params.bm), -(-n // self.params.bn)

    @property
    def blocks(self) -> int:
        tm, tn = self.tiles
        return self.sizes[0] * tm * tn

    @property
    def shared_bytes(self) -> int:
        return self.stages * (math.prod(self.tile_a) + math.prod(self.tile_b)) * self.item

    @property
    def a_k_major(self) -> bool:
        """A's shared tile holds k-contiguous rows ([bm][bk]; tensor cores only)."""
        return bool(self.params.mma) and self.tile_a[0] == self.params.bm

    @property
    def b_k_major(self) -> bool:
        return bool(self.params.mma) and self.tile_b[0] == self.params.bn


def gemm_plan(node, cc: int | None = None) -> GemmPlan:
    """The plan of MatmulKernel ``node`` (loops.py) on a device of compute capability ``cc``
    (None: a current GPU, sm_80 or newer); ScheduleError when its parameters do not fit."""
    p = GemmParams.from_items(node.params)
    ha = _half_of(node.a)
    form = GemmForm(node.batch, node.m, node.n, node.k, node.a, node.b, node.a.dtype,
                    ha if ha is _half_of(node.b) and node.a.dtype is dt.float32 else None)
    if p.mma and form.half is None:
        raise ScheduleError("gpu_gemm: mma=1 needs both operands converted from one 16-bit float type and an f32 "
                            "accumulator")
    _, m, n, k = form.sizes
    half = form.half if p.mma else None
    a = operand(node.a, node.batch, node.m, node.k, half)
    b = operand(node.b, node.batch, node.n, node.k, half)
    item = 2 if p.mma else form.acc.itemsize
    va = vector_width(a, m, k, p.bm, p.bk, item)
    vb = vector_width(b, n, k, p.bn, p.bk, item)
    cc = 80 if cc is None else cc
    if p.mma:
        ok = cc >= 80 and va * item == 16 and vb * item == 16
    else:   # no transposing copy: A and B contiguous along their rows/columns
        ok = cc >= 80 and va > 1 and vb > 1 and not a.k_major and not b.k_major
    ok = ok and p.stages != 1          # one buffer: copy, wait, compute (no pipeline)
    stages = stage_counts(p, ok)
    ta, tb = tile_dims(p, form, a.k_major if a.direct else True, b.k_major if b.direct else False)
    return GemmPlan(p, form, a, b, va, vb, ok, stages, ta, tb, item)


__all__ = [
    "PARAMS",
    "GemmForm",
    "GemmParams",
    "GemmPlan",
    "Operand",
    "check_params",
    "gemm_form",
    "gemm_plan",
    "operand",
    "shared_bytes",
    "stage_counts",
    "tile_dims",
    "vector_width",
]
