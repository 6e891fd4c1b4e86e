"""The CPU template of dots and convolutions: loops around a register micro-kernel (BLIS).

Index conventions: the output's last axis ``y`` is vectorized (columns, ``N``), the one before
it ``x`` (rows, ``M``); leading data axes are batch axes; the reduction axes are ``K``. A *B*
operand is read along ``y`` (one vector per row of the tile), an *A* operand along ``x`` only
(broadcast). With ``y = (yc * nb + yr) * nr + yi`` and ``x = (xc * mb + xr) * mr + xi``::

    for batch, yc, xc (or xc, yc):          # cache blocks; the outer ones run in parallel
      PB = B[K, yc block] as panels [nb][K][nr]       (pack_b=1: at yc)
      PA = A[xc block, K] as panels [mb][K][mr]       (pack_a=1: at xc)
      for yr, xr:
        acc[mr][nr] = 0                     # the register tile (cache_write, at xr)
        for k...: for xi (unrolled): for yi (vector): acc[xi, yi] += PA[...] * PB[...]
        out[...] = acc                      # edges guarded here only: packs are zero-padded

With ``kc`` (K blocks of ``kc``; 0: none) the tile instead accumulates the whole cache block
(``cache_write`` at the inner block loop), one K block at a time, so that the B micro-panel of
``kc x nr`` that every row tile of the block reads stays in L1 (BLIS's KC)::

      acc[block] = 0
      for ko:                               # one K block
        PB = B[ko block, yc block]          (pack_b=2: per K block, a panel that stays in L2)
        PA = A[xc block, ko block]          (pack_a=2)
        for yr, xr:                         # acc's tile loaded, updated, stored
          for ki: for xi: for yi: acc[xr, xi, yr, yi] += PA[...] * PB[...]
      out[block] = acc

A pack per K block is made again for every cache block of the other axis (BLIS packs B per
K block too): with few rows (a layer's 128 tokens against a 3072 x 768 weight) the weight's
whole-K panel of megabytes is written to and read back from L3, the K block's stays in L2
(measured 17% faster on 128 x 768 x 3072 on an AMD Zen 4, same tile).

The renderer turns the tile's loop nest into vector registers and multiply-adds
(runtime/codegen/microkernel.py). Convolutions are the same loops over an implicit GEMM:
``x`` is the output's width, ``K`` the window and input channels, ``B`` the weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dsl.expr import walk
from ...dsl.ops import Op
from ...dsl.tensor import Tensor
from ..fusion_rules import epilogue_of
from ..hardware import Hardware
from ..kgroups import SIZES as GROUP_SIZES
from ..kgroups import GroupKind, group_kind
from ..schedule import Schedule, Stage, check, only_converted
from .base import Knob, KnobSpec, Template, is_pow2

MR_VALUES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)
NR_VECTORS = (1, 2, 3, 4, 6, 8)
#: K block sizes (``kc``): multiples of 8, so that every ``unroll_k`` divides them
K_BLOCKS = (32, 48, 64, 96, 128, 192, 256, 384, 512)
#: how many cache blocks an axis is cut into (blocks of whole register tiles)
NBLOCKS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
#: independent accumulator vectors that keep a core's multiply-add units busy (about two units
#: of four cycles' latency on current x86 and Arm cores): fewer leave the micro-kernel latency-bound
LATENCY_CHAINS = 8
#: bytes a core copies into a pack in the time of one vector multiply-add (the estimate's price of
#: packing): a plain copy ran at about 7 per cycle on an AMD Zen 4 core, packs that transpose or
#: gather go slower; replayed against measured dot spaces, 4 ranked configs best
COPY_BYTES = 4
#: how much a pack whose panels outgrow L2 slows the whole dot, per doubling beyond L2 (its
#: copy is written to and read back from L3): 4.7 MB of B and 1.5 MB of A panels cost 17% on a
#: 128 x 768 x 3072 dot (AMD Zen 4) against the same tile packed per K block
SPILL_SHARE = 0.075
#: how much a broadcast or load slows the micro-kernel, per multiply-add it feeds: loads share the
#: core's issue slots with the multiply-adds even below the load ports' limit
LOAD_SHARE = 0.5


def _pack(v) -> bool:
    return v in (0, 1, 2) and not isinstance(v, (bool, float))


def _vars(e) -> set:
    return {x.arg for x in walk([e]) if x.op is Op.VAR}


def tile_op(st: Stage):
    """The dot/conv op whose register tile stage ``st`` computes: its own, or that of the dot
    it is the epilogue of (``fusion.epilogue_of``)."""
    return st.op if st.op.is_reduction else epilogue_of(st.op)


def operands(op) -> tuple[list, list]:
    """The tensors dot/conv ``op`` reads as B (an index uses ``y``) and as A (an index uses
    ``x``, none ``y``), each as ``(tensor, dim, plain)``: the dimension indexed by that axis, and
    whether that index is the axis alone (then the tensor can be packed in panels along ``dim``)."""
    d = list(op.axis)
    x, y = (d[-2] if len(d) >= 2 else None), d[-1]
    bs, as_ = [], []
    seen: set = set()
    for e in walk(list(op.body)):
        if e.op is not Op.LOAD or not isinstance(e.arg, Tensor) or id(e.arg) in seen:
            continue
        seen.add(id(e.arg))
        uses = [_vars(i) for i in e.src]
        for axis, out in ((y, bs), (x, as_)):
            dims = [k for k, u in enumerate(uses) if axis in u]
            if axis is None or not dims:
                continue
            plain = len(dims) == 1 and e.src[dims[0]].op is Op.VAR
            out.append((e.arg, dims[-1], plain))
            break
    return bs, as_


def _k_dim(load, big) -> int | None:
    """The dimension of ``load`` indexed by reduction axis ``big`` alone (None: none, or ``big``
    appears in another index too)."""
    dims = [k for k, i in enumerate(load.src) if big in _vars(i)]
    return dims[0] if len(dims) == 1 and load.src[dims[0]].op is Op.VAR else None


def k_groups(op, hw: Hardware) -> tuple[GroupKind, dict] | None:
    """For a dot ``op`` whose products one instruction can take several K steps at a time (knob
    ``kgroup``; schedules/kgroups.py): the kind, and the dimension of each operand tensor (by id)
    that the longest reduction axis indexes; None where none can. That is a sum of products of
    two operands converted to the sum's type (JAX's ``preferred_element_type``; a bf16 result
    accumulates in f32), one read along ``x`` (A) and one along ``y`` (B) with plain indices, the
    longest reduction, of a multiple of the group's extent, indexing one dimension of each, on a
    machine whose ISA has the kind's instruction."""
    if hw.vector_bytes < 16 or len(op.body) != 1:
        return None
    body = op.body[0]
    if (body.op is not Op.REDUCE or body.arg.reducer.ufunc != "add" or body.arg.where is not None
            or body.src[0].op is not Op.MUL):
        return None
    prod = body.src[0].src
    if any(x.op is not Op.CAST or x.dtype is not body.dtype or x.src[0].op is not Op.LOAD for x in prod):
        return None
    bs, as_ = operands(op)
    if len(bs) != 1 or len(as_) != 1 or not (bs[0][2] and as_[0][2]):
        return None
    loads = {id(x.src[0].arg): x.src[0] for x in prod}
    a, b = loads.get(id(as_[0][0])), loads.get(id(bs[0][0]))
    kind = group_kind(body.dtype, a.dtype, b.dtype) if a is not None and b is not None else None
    big = max(op.reduce_axis, key=lambda v: v.extent)
    if kind is None or kind.isa not in hw.isa or big.extent % kind.size:
        return None
    dims = {k: _k_dim(x, big) for k, x in loads.items()}
    return None if None in dims.values() else (kind, dims)


def streams_across(op) -> bool:
    """Whether dot ``op`` has no rows to reuse its B operands over (a matrix-vector product)
    while some B operand is not contiguous along the vectorized axis ``y``: the register tile
    would then gather every lane with a stride and packing would cost as much as the product,
    so a reduction vectorized along the contiguous reduction axis serves it better."""
    d = list(op.axis)
    if len(d) >= 2 and d[-2].extent > 1:
        return False
    bs, _ = operands(op)
    return any(not _inner(t, dim) for t, dim, _ in bs)


def panel(tensor: Tensor, dim: int, f: int) -> tuple[tuple, tuple]:
    """``(split, layout)`` for ``cache_read``: dimension ``dim`` split by ``f``, its blocks
    outermost and its lanes innermost, the other dimensions in order between."""
    n = len(tensor.shape) + 1
    rest = [k for k in range(n) if k not in (dim, dim + 1)]
    return ((dim, f),), (dim, *rest, dim + 1)


def group_panel(tensor: Tensor, dim: int, f: int, kdim: int, g: int) -> tuple[tuple, tuple]:
    """``(split, layout)`` for a panel as ``panel`` makes it, with dimension ``kdim`` (K) also
    split in groups of ``g`` whose elements lie side by side, innermost: a B panel ``P[n // f,
    k // g, n % f, k % g]``, so that one vector holds ``f`` lanes' groups (the layout of
    ``vdpbf16ps``, ``g`` 2, and ``vpdpbusd``, ``g`` 4)."""
    pos, n = [], 0
    for d in range(len(tensor.shape)):
        pos.append(n)
        n += 2 if d in (dim, kdim) else 1
    rest = [pos[d] for d in range(len(tensor.shape)) if d != dim]
    return tuple(sorted(((dim, f), (kdim, g)))), (pos[dim], *rest, pos[dim] + 1, pos[kdim] + 1)


def _packed_type(op, t: Tensor, groups):
    """The type a panel of ``t`` holds: the one the tile multiplies in (its accumulator's) where
    every read of ``t`` converts to it and no K-group instruction takes ``t`` as it is, so that
    the micro-kernel converts nothing (f16, bf16 or int8 operands of an f32 dot); else None (t's)."""
    to = op.body[0].dtype
    if groups is not None or t.dtype is to:
        return None
    return to if only_converted(op.body, lambda x: x.op is t.op and x.value_index == t.value_index, to) else None


def _computed(t: Tensor) -> bool:
    """Whether reading ``t`` computes something: an op other than a view (a transpose, slice
    or broadcast reads one tensor) or a conversion of one."""
    body = getattr(t.op, "body", None)
    if body is None:
        return False
    e = body[t.value_index]
    while e.op is Op.CAST:
        e = e.src[0]
    return e.op is not Op.LOAD


def _inner(t: Tensor, dim: int) -> bool:
    """Whether reading ``t`` along dimension ``dim`` walks memory contiguously: ``dim`` is the
    last dimension of the tensor stored, looked for through views (a transpose reads its input
    with permuted indices: the layout-only ``transpose`` XLA puts before a dot with a weight
    stored ``[out, in]``, as a PyTorch ``Linear``'s, is one)."""
    for _ in range(16):
        body = getattr(t.op, "body", None)
        e = body[t.value_index] if body is not None else None
        while e is not None and e.op is Op.CAST:
            e = e.src[0]
        if e is None or e.op is not Op.LOAD or not isinstance(e.arg, Tensor):
            break
        var = t.op.axis[dim]
        dims = [k for k, i in enumerate(e.src) if var in _vars(i)]
        if len(dims) != 1 or e.src[dims[0]].op is not Op.VAR:
            break
        t, dim = e.arg, dims[0]
    return dim == len(t.shape) - 1


def _reuse(op, t: Tensor) -> int:
    """How many output elements read each element of ``t`` that dot ``op`` reads: the product of
    the extents of the output axes (other than the columns ``y``) that no index of ``t`` uses.
    A KV cache read per head (``hd,lhd->hl``) is read once; a convolution's kernel by every
    pixel."""
    used: set = set()
    for e in walk(list(op.body)):
        if e.op is Op.LOAD and isinstance(e.arg, Tensor) and e.arg == t:
            used |= set().union(*(_vars(i) for i in e.src))
    return math.prod(v.extent for v in list(op.axis)[:-1] if v not in used)


def _dividing(values, n: int, want: int) -> list:
    """The tile sizes of ``values`` that divide ``n`` (no tail tile), at most ``want`` and more
    than half of it."""
    return [v for v in values if n % v == 0 and 2 * v >= want and v <= want]


def _blocks(n: int, nb: int) -> int:
    """Register tiles per cache block when ``n`` tiles are cut into ``nb`` blocks."""
    return max(1, -(-n // max(1, nb)))


def _overhangs(n: int, tile: int, nblocks: int) -> bool:
    """Whether the cache blocks of an axis of ``n`` cut into register tiles of ``tile`` and then
    ``nblocks`` blocks cover more than ``n`` (the last block's loops are guarded)."""
    tiles = -(-n // tile)
    per = _blocks(tiles, nblocks)
    return -(-tiles // per) * per * tile > n


def _accumulator_budget(regs: int) -> int:
    """Vector registers a register tile may hold: all but three, left for the B vectors and a
    broadcast of A (the micro-kernel matcher's bound, runtime/codegen/microkernel.py)."""
    return max(regs - 3, 1)


def _chain_at_batch(s: Schedule, st: Stage, batch: list) -> bool:
    """Whether a stage is computed inside one of ``st``'s batch loops (slice fusion,
    schedules/rowfusion.py: attention's scores and softmax per head): fusing a cache-block loop
    into that batch loop would compute the chain again for every block (measured 21x slower on
    2x4 heads of 128 keys), so the parallel loop then fuses the batch loops alone."""
    ids = {id(v) for v in batch}
    return any(o.is_at and o.attach.stage is st and id(o.attach.axis) in ids for o in s.stages.values())


def _parallel_prefix(extents: list[int], parallel: int, threads: int) -> int:
    """How many of the leading loops (batch axes, then the first ``parallel`` cache-block loops,
    extents in that order) the template fuses into its parallel loop: all of them for
    ``parallel`` 2; for 1, only until the fused extent reaches ``threads``."""
    n, fused = 1, extents[0]
    for v in extents[1:]:
        if parallel == 1 and fused >= threads:
            break
        n, fused = n + 1, fused * v
    return n


@dataclass(frozen=True)
class GemmFeatures:
    """What a config of the gemm template means on its workload, as numbers in [0, 1] for the
    tuner's cost model (``Space.derived``): the knobs alone leave a model to learn products and
    remainders (``mr`` x vectors against the register file, tiles that overhang the output, work
    split across threads) from a few dozen points. ``x``/``y``: output rows and columns,
    ``batch``: the extents of the leading axes, ``lanes``: vector lanes, ``regs``: vector
    registers, ``threads``: the machine's threads, ``k``: the longest reduction, ``item``: bytes
    of an element, ``l1``: the L1 data cache, ``strided_b``: a B operand not contiguous along the
    columns (or computed), which only a pack turns into vector loads, ``l2``: a core's L2."""

    x: int
    y: int
    batch: tuple[int, ...]
    lanes: int
    regs: int
    threads: int
    k: int = 1
    item: int = 4
    l1: int = 32 << 10
    strided_b: bool = False
    l2: int = 1 << 20

    def __call__(self, c: dict) -> tuple[float, ...]:
        nv = -(-c["nr"] // self.lanes)
        budget = _accumulator_budget(self.regs)
        use = c["mr"] * nv / budget
        xo, yo = -(-self.x // c["mr"]), -(-self.y // c["nr"])
        # the parallel loop as the template builds it (``steps``): batch axes, then cache blocks
        yc = -(-yo // _blocks(yo, c["nb"]))
        xc = -(-xo // _blocks(xo, c["mb"])) if self.x > 1 else 1
        blocks = [yc, xc] if c["order"] == "nm" else [xc, yc]
        chunks = 1
        if c["parallel"] and self.threads > 1:
            lead = [*self.batch, *blocks[: c["parallel"]]]
            chunks = math.prod(lead[:_parallel_prefix(lead, c["parallel"], self.threads)])
        balance = chunks / (math.ceil(chunks / self.threads) * self.threads) if chunks > 1 else 1 / self.threads
        intensity = 2 * c["mr"] * nv / (c["mr"] + nv)     # multiply-adds per register loaded
        # the B micro-panel a K block streams past every row tile, against L1 (1: half of L1)
        panel_bytes = (c.get("kc") or self.k) * c["nr"] * self.item
        return (min(use, 1.5) / 1.5, float(use <= 1), self.x / (xo * c["mr"]), self.y / (yo * c["nr"]),
                balance, math.log2(1 + intensity) / math.log2(1 + 2 * budget),
                min(1.0, math.log2(1 + panel_bytes / self.l1) / math.log2(1 + 32)))

    def estimate(self, c: dict) -> float:
        """An analytic guess at ``log`` of the config's time, up to a constant (no measurement):
        the padded work of the register tiles, spread over the threads the parallel loop
        balances onto, at the micro-kernel's rate. The rate is bound by the multiply-add chains
        (``LATENCY_CHAINS`` independent accumulators keep the FMA units busy), by loads
        (``mr`` broadcasts and ``nv`` B vectors per ``mr x nv`` multiply-adds), by spilled
        accumulators, by a B micro-panel larger than L1, and softly by the loads themselves
        (``LOAD_SHARE``). Packs cost their copy (``COPY_BYTES``) over the multiply-adds each
        packed element feeds: a B pack made per column block serves every row (order ``nm``) or
        a row block's (``mn``), an A pack a column block's columns (``nm``) or every column
        (``mn``); so the weight's pack weighs on a dot of few rows. Edges whose loops are
        guarded (cache blocks overhanging the output) cost a rough factor, more where the
        operand read there is not a zero-padded pack, and a strided B left unpacked is
        gathered. Knobs it cannot judge (unrolling, cache effects beyond the B micro-panel) it
        leaves to the tuner's measurements."""
        _, _, xe, ye, balance, _, _ = self(c)
        nv = -(-c["nr"] // self.lanes)
        acc = c["mr"] * nv
        rate = min(1.0, acc / LATENCY_CHAINS, acc / (c["mr"] + nv)) / (1.0 + LOAD_SHARE * (c["mr"] + nv) / acc)
        spill = 1.0 + 2.0 * min(max(acc / _accumulator_budget(self.regs) - 1.0, 0.0), 1.0)
        panel = (c.get("kc") or self.k) * c["nr"] * self.item
        l1 = 1.0 + 0.25 * min(max(math.log2(panel / (self.l1 / 2)), 0.0), 2.0)
        edges = 1.0
        if self.x > 1 and _overhangs(self.x, c["mr"], c["mb"]):
            edges *= 1.25 if c["pack_a"] else 1.9
        if not c["pack_b"]:
            # B's vectors gathered element by element, or guarded at the edge
            edges *= max(self.lanes / 2 if self.strided_b else 1.0,
                         2.0 if _overhangs(self.y, c["nr"], c["nb"]) else 1.0)
        packs = 1.0
        copy = self.item * self.lanes / COPY_BYTES     # multiply-adds' time per packed element
        xo, yo = -(-self.x // c["mr"]), -(-self.y // c["nr"])
        brows, bcols = min(self.x, _blocks(xo, c["mb"]) * c["mr"]), min(self.y, _blocks(yo, c["nb"]) * c["nr"])
        kc = c.get("kc") or 0
        if c["pack_b"]:
            whole = c["pack_b"] == 1 or not kc
            rows = self.x if c["order"] == "nm" and whole else brows
            packs += copy / max(rows, 1)
            packs *= self._outgrows_l2((self.k if whole else kc) * _round_up(bcols, c["nr"]))
        if c["pack_a"] and self.x > 1:
            whole = c["pack_a"] == 1 or not kc
            cols = self.y if c["order"] == "mn" and whole else bcols
            packs += copy / max(cols, 1)
            packs *= self._outgrows_l2((self.k if whole else kc) * _round_up(brows, c["mr"]))
        return math.log(spill * l1 * edges * packs / (xe * ye * max(balance * self.threads, 1.0) * rate))

    def _outgrows_l2(self, elements: int) -> float:
        """The slowdown of a pack of ``elements`` whose panels outgrow L2 (``SPILL_SHARE``)."""
        return 1.0 + SPILL_SHARE * min(max(math.log2(elements * self.item / self.l2), 0.0), 3.0)


class Gemm(Template):
    """Dots (and, as ``GemmConv``, convolutions) on the CPU; see the module docstring."""

    family = "dot"
    #: configs recorded before K blocks (K groups) existed ran the whole reduction in each register
    #: tile (one K step at a time): their legacy values
    specs = (KnobSpec("mr", lambda v: v in MR_VALUES), KnobSpec("nr", lambda v: isinstance(v, int) and 1 <= v <= 256),
             KnobSpec("mb", lambda v: v in NBLOCKS), KnobSpec("nb", lambda v: v in NBLOCKS),
             KnobSpec("order", lambda v: v in ("nm", "mn")), KnobSpec("pack_a", _pack), KnobSpec("pack_b", _pack),
             KnobSpec("unroll_k", is_pow2), KnobSpec("parallel", lambda v: v in (0, 1, 2)),
             KnobSpec("kc", lambda v: isinstance(v, int) and not isinstance(v, bool) and (v == 0 or v in K_BLOCKS),
                      legacy=0),
             KnobSpec("kgroup", lambda v: v in GROUP_SIZES and not isinstance(v, (bool, float)), legacy=1))

    # ------------------------------------------------------------------ space
    def knobs(self, st: Stage, hw: Hardware) -> list[Knob]:
        op = tile_op(st)
        d, r = list(op.axis), list(op.reduce_axis)
        xe = d[-2].extent if len(d) >= 2 else 1
        ye = d[-1].extent
        lanes = hw.lanes(op.body[0].dtype.itemsize)
        # whole vectors (packs are zero-padded to them); narrower for narrow outputs
        nrs = tuple(sorted({lanes * v for v in NR_VECTORS if lanes * v <= _round_up(ye, lanes)}
                           | {w for w in (4, 8) if w < lanes and w <= _round_up(ye, 4)} | ({ye} if ye < 4 else set())))
        k = max(v.extent for v in r)
        bs, as_ = operands(op)
        groups = k_groups(op, hw)
        par = (0, 1, 2) if hw.threads > 1 else (0,)
        item = op.body[0].dtype.itemsize

        def packs(extent: int) -> tuple:
            # a pack per K block where K blocks exist and the operand's whole-K panels could
            # outgrow half of a core's L2 (elsewhere it only repeats the whole-K pack)
            return (0, 1, 2) if xe > 1 and k_blocks(k) and 2 * k * extent * item > hw.l2 else (0, 1)
        return [Knob("mr", tuple(v for v in MR_VALUES if v <= max(xe, 1))), Knob("nr", nrs),
                Knob("mb", tuple(v for v in NBLOCKS if v <= max(1, xe // 2))),
                Knob("nb", tuple(v for v in NBLOCKS if v <= max(1, ye // 4))),
                Knob("order", ("nm", "mn")),
                Knob("pack_a", packs(xe) if as_ and all(p for _, _, p in as_) else (0,)),
                Knob("pack_b", packs(ye) if bs and all(p for _, _, p in bs) else (0,)),
                Knob("unroll_k", tuple(u for u in (1, 2, 4, 8) if k % u == 0)),
                Knob("parallel", par),
                Knob("kc", (0, *k_blocks(k)) if xe > 1 else (0,)),
                Knob("kgroup", (1, groups[0].size) if groups else (1,))]

    def derived(self, st: Stage, hw: Hardware) -> GemmFeatures:
        op = tile_op(st)
        d = list(op.axis)
        bs, _ = operands(op)
        return GemmFeatures(d[-2].extent if len(d) >= 2 else 1, d[-1].extent,
                            tuple(v.extent for v in d[:-2]), hw.lanes(op.body[0].dtype.itemsize),
                            hw.vector_regs, hw.threads, max(v.extent for v in op.reduce_axis),
                            op.body[0].dtype.itemsize, hw.l1d,
                            any(not _inner(t, dim) or _computed(t) for t, dim, _ in bs), hw.l2)

    def estimate(self, st: Stage, hw: Hardware, derived: GemmFeatures):
        return derived.estimate

    # ------------------------------------------------------------------ default
    def default_config(self, st: Stage, hw: Hardware) -> dict:
        """A config from the machine's registers and caches (no measurement): the widest register
        tile that leaves room for the B vectors and a broadcast, A blocks and B panels sized to
        half of L2, parallel over as many column blocks as threads."""
        op = tile_op(st)
        d, r = list(op.axis), list(op.reduce_axis)
        xe = d[-2].extent if len(d) >= 2 else 1
        ye = d[-1].extent
        item = op.body[0].dtype.itemsize
        lanes = hw.lanes(item)
        kdepth = math.prod(v.extent for v in r)
        space = self.space(st, hw)

        def pick(name, want):
            vals = [v for v in space.knob(name).values if v != 0]
            below = [v for v in vals if v <= want]
            return max(below) if below else (min(vals) if vals else 0)

        nv = 4 if hw.vector_regs >= 32 else 2
        bs, as_ = operands(op)
        # an A operand computed in its pack (a fused prologue: the ReLU mask of a weight gradient
        # X^T (dY * (h > 0))) and read along its contiguous dimension: its pack evaluates mr
        # consecutive elements per K step, a loop that vectorizes only when mr is whole vectors;
        # rows of one vector then, and the columns the registers leave
        across = (1 in space.knob("pack_a").values and xe >= lanes
                  and any(_inner(t, dim) and _computed(t) for t, dim, _ in as_))
        if across:
            nv = max(1, min(nv, _accumulator_budget(hw.vector_regs) // lanes))
        nr = pick("nr", lanes * nv)
        if space.knob("pack_b").values == (0,):     # no padded panels: columns that divide
            fits = _dividing(space.knob("nr").values, ye, nr)
            nr = max(fits) if fits else nr
        elif ye < nr:
            # one tile narrower than nr would hold rows of mixed vector widths (10 columns: 8 + 2
            # lanes); whole vectors instead, the last tile padded by the pack
            nr = max([v for v in space.knob("nr").values if v <= ye], default=nr)
        nv = -(-nr // lanes)
        groups = k_groups(op, hw)
        # a compensated group kernel also holds a column sum per vector and a constant
        spare = 2 * nv + 2 if groups is not None and groups[0].compensate else nv + 1
        mr = pick("mr", lanes if across else max(1, (hw.vector_regs - spare) // nv))
        if space.knob("pack_a").values == (0,):
            # A cannot be padded by packing (a convolution's window): rows that divide the output
            # leave no tail tile, whose guards would keep the tile out of registers (likewise B)
            fits = _dividing(space.knob("mr").values, xe, mr)
            mr = max(fits) if fits else mr
        rows, cols = -(-xe // mr), -(-ye // nr)
        # packing A transposes it, worth it when the tiles of many column tiles read the panels;
        # a plain A that two at most read streams from memory as it lies (in rows that divide:
        # no tail tile); a computed A (a prologue) or one the K-group kernel takes is packed
        divide = _dividing(space.knob("mr").values, xe, mr)
        keep_a = xe > mr and (cols > 2 or not divide or groups is not None or any(_computed(t) for t, _, _ in as_))
        if xe > mr and not keep_a:
            mr = max(divide)
            rows = -(-xe // mr)
        panel_bytes = kdepth * item
        # A blocks of at most half of L2, B blocks so that each thread has its own (when the
        # batch axes do not already give every thread work) and at most 4 x L2
        mb = next((v for v in space.knob("mb").values if _blocks(rows, v) * mr * panel_bytes <= hw.l2 // 2),
                  space.knob("mb").values[-1])
        batch = math.prod(v.extent for v in d[:-2]) if len(d) > 2 else 1
        per = hw.threads if batch < hw.threads else 1
        if per > 1 and cols < per:      # too few columns for every thread: row blocks for them
            mb = max(mb, next((v for v in space.knob("mb").values if v >= per), mb))
        nb = next((v for v in space.knob("nb").values
                   if v % per == 0 and _blocks(cols, v) * nr * panel_bytes <= 4 * hw.l2), space.knob("nb").values[-1])
        # a B that one row reads once, as it lies along y (a matrix-vector product): packing it
        # would copy every element to read it once
        once = xe == 1 and all(_inner(t, dim) and not _computed(t) and _reuse(op, t) == 1
                               for t, dim, _ in bs)
        c = {"mr": mr, "nr": nr, "mb": mb, "nb": nb, "order": "nm",
             "pack_a": min(1, max(space.knob("pack_a").values)) if keep_a else 0,
             # B is packed where rows reuse it, for padded columns, and where the tile could not
             # load it as it lies (strided along y, as a flipped kernel's channels, or computed)
             # while other rows or batch entries read it too
             "pack_b": min(1, max(space.knob("pack_b").values)) if not once and (xe > mr or ye % nr or any(
                 (not _inner(t, dim) or _computed(t)) and _reuse(op, t) > 1 for t, dim, _ in bs)) else 0,
             "unroll_k": 1, "parallel": 1 if hw.threads > 1 else 0}
        # the group kernel (its instruction does 2-4x the work of an FMA) needs both packs
        c["kgroup"] = max(space.knob("kgroup").values) if c["pack_a"] and c["pack_b"] else 1
        return {k: v if v in space.knob(k).values else space.knob(k).values[0] for k, v in c.items()}

    # ------------------------------------------------------------------ steps
    def steps(self, s: Schedule, st: Stage, c: dict, hw: Hardware) -> None:
        check(st.op.num_outputs == 1, f"gemm: stage '{st.name}' has several outputs")
        op = tile_op(st)
        lanes = hw.lanes(op.body[0].dtype.itemsize)
        nv = -(-c["nr"] // lanes)
        budget = _accumulator_budget(hw.vector_regs)
        groups = k_groups(op, hw) if c["kgroup"] > 1 else None
        if groups is not None and groups[0].compensate:
            # s8 x s8 on vpdpbusd: a column sum per vector, the +128 constant and B's vectors too
            budget = hw.vector_regs - 2 * nv - 2
        check(c["mr"] * nv <= budget or c["mr"] * c["nr"] <= 64,
              f"gemm: a {c['mr']}x{c['nr']} register tile needs {c['mr'] * nv} of the machine's "
              f"{hw.vector_regs} vector registers (at most {budget} leave room for operands)")
        bs, as_ = operands(op)
        d = list(st.op.axis)
        if op is st.op:     # the tile accumulates in a cache stage that st copies out
            cc = s.cache_write(st.op.output(0), "local")
        else:               # the tile is the dot st is the epilogue of
            cc = op.output(0)
        tile = s.stage(cc)
        x = d[-2] if len(d) >= 2 else None
        y = d[-1]
        yo, yi = s.split(y, c["nr"])
        yc, yr = s.split(yo, _blocks(yo.extent, c["nb"]))
        if x is not None:
            xo, xi = s.split(x, c["mr"])
            xc, xr = s.split(xo, _blocks(xo.extent, c["mb"]))
            blocks = [yc, xc] if c["order"] == "nm" else [xc, yc]
            s.reorder(*d[:-2], *blocks, yr, xr, xi, yi)
        else:
            check(c["mr"] == 1, "gemm: mr > 1 needs two output axes")
            xc = xr = xi = None
            blocks = [yc]
        td, tr = list(tile.op.axis), list(tile.op.reduce_axis)
        big = max(tr, key=lambda v: v.extent)
        ks = [v for v in tr if v is not big] + [big]
        outer: list = []
        kb = None
        check(c["kc"] or 2 not in (c["pack_a"], c["pack_b"]),
              f"gemm: pack_a={c['pack_a']}, pack_b={c['pack_b']}: a pack per K block (2) needs kc > 0")
        if c["kc"]:
            # K blocks: the tile accumulates a whole cache block (at the inner block loop), one
            # block of K at a time, so that a B micro-panel of kc rows stays in L1 across the rows
            # (the space offers kc only with rows, and only sizes that divide the reduction)
            for n, f, nblk in ((x.extent, c["mr"], c["mb"]), (y.extent, c["nr"], c["nb"])):
                # a single block is the whole axis (its region is not padded): tiles must divide it
                tiles = -(-n // f)
                check(n % f == 0 or tiles > _blocks(tiles, nblk), f"gemm: kc={c['kc']} with one cache block "
                      f"of {n} needs a register tile dividing it ({f} does not)")
            # blocks that overhang the columns guard the accumulating vector loop itself unless the
            # operands are zero-padded packs (measured 30-70x slower than the same tile packed)
            cols, rows = _overhangs(y.extent, c["nr"], c["nb"]), _overhangs(x.extent, c["mr"], c["mb"])
            check(not cols or (c["pack_b"] and (c["pack_a"] or not rows)),
                  f"gemm: kc={c['kc']} with cache blocks overhanging the columns needs pack_b=1"
                  + (" and pack_a=1 (the rows overhang too)" if rows else ""))
            s.compute_at(cc, blocks[-1])
            kb, big = s.split(big, c["kc"])
            ks[-1] = big
            tyo, tyi = s.split(td[-1], c["nr"])
            txo, txi = s.split(td[-2], c["mr"])
            outer = [kb, *td[:-2], tyo, txo]
            td = [txi, tyi]
        else:
            s.compute_at(cc, xr if x is not None else yr)
        # the register tile: reductions outermost (longest innermost), then the unrolled rows
        # (unit batch axes first), the vector columns last
        group: list = []
        if c["kgroup"] > 1:
            # K groups: the innermost reduction loop runs the K steps that the micro-kernel's
            # instruction takes at once, read from panels packed in groups
            g = c["kgroup"]
            check(groups is not None and groups[0].size == g and c["pack_a"] and c["pack_b"],
                  f"gemm: kgroup={g} needs pack_a=1 and pack_b=1 (and a dot whose operands it fits)")
            check(big.extent // g % c["unroll_k"] == 0, f"gemm: kgroup={g} with unroll_k={c['unroll_k']} "
                  f"needs the {big.extent // g} K groups to divide by it")
            big, kp = s.split(big, g)
            ks[-1] = big
            s.unroll(kp)
            group = [kp]
        if c["unroll_k"] > 1:
            ko, ki = s.split(big, c["unroll_k"])
            ks = ks[:-1] + [ko, ki]
            s.unroll(ki)
        s.reorder(*outer, *ks, *group, *td)
        if len(td) >= 2 and td[-2].extent > 1:
            s.unroll(td[-2])
        s.vectorize(td[-1])
        tensors = {id(t) for t, _, _ in bs}
        if c["pack_b"]:
            for t, dim, _ in bs:
                split, layout = (panel(t, dim, yi.extent) if groups is None
                                 else group_panel(t, dim, yi.extent, groups[1][id(t)], c["kgroup"]))
                p = s.cache_read(t, "shared", [tile.name], layout, split, _packed_type(tile.op, t, groups))
                s.compute_at(p, kb if c["pack_b"] == 2 else yc)
                ax = list(s.stage(p).op.axis)
                if groups is not None:      # each group's source rows read together, in order
                    s.unroll(ax[-1])
                    continue
                if _inner(t, dim) and len(ax) > 2:
                    # read each source row once across all panels (sequential, as the prefetcher
                    # wants) rather than a panel's few lines per row with a row's stride
                    s.reorder(*ax[1:-1], ax[0], ax[-1])
                s.vectorize(s.stage(p).leaf[-1])
        if c["pack_a"]:
            for t, dim, _ in as_:
                if id(t) in tensors:
                    continue
                split, layout = (panel(t, dim, xi.extent) if groups is None
                                 else group_panel(t, dim, xi.extent, groups[1][id(t)], c["kgroup"]))
                p = s.cache_read(t, "shared", [tile.name], layout, split, _packed_type(tile.op, t, groups))
                s.compute_at(p, kb if c["pack_a"] == 2 else xc)
                ax = list(s.stage(p).op.axis)
                if groups is None and _inner(t, dim) and len(ax) > 2:
                    # A read along its rows (a transposed operand, dA = dY^T X): one pass over each
                    # source row across all panels, as for B
                    s.reorder(*ax[1:-1], ax[0], ax[-1])
        s.vectorize(yi)
        if c["parallel"]:
            lead = list(d[:-2]) + ([] if _chain_at_batch(s, st, d[:-2]) else blocks[: c["parallel"]])
            ax = lead[0]
            for v in lead[1:_parallel_prefix([v.extent for v in lead], c["parallel"], hw.threads)]:
                ax = s.fuse(ax, v)
            if ax.extent >= 2:
                s.parallel(ax)


class GemmConv(Gemm):
    family = "conv"


def k_blocks(k: int) -> tuple[int, ...]:
    """Sizes of K blocks for a reduction of ``k``: multiples of 8 (every ``unroll_k``) that
    divide it, short of all of it."""
    return tuple(v for v in K_BLOCKS if v < k and k % v == 0)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


__all__ = [
    "Gemm",
    "GemmConv",
    "GemmFeatures",
    "group_panel",
    "k_groups",
    "operands",
    "panel",
    "streams_across",
    "tile_op",
]
