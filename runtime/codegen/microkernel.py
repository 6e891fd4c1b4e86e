"""Register micro-kernels: a loop nest that accumulates a small tile, found in the loop IR and
rendered as straight-line vector code with the tile held in registers.

The pattern (what a dot or convolution template produces for its register tile)::

    for r0 ... for rn:                    # reduction loops: their variables do not index acc
      for t0 ... for tm:                  # tile loops: constant extents, unrolled
        for v in range(V):  # vectorize   # innermost, contiguous in acc
          acc[idx(t, v)] = acc[idx(t, v)] + term

``term`` may read other buffers either contiguously along ``v`` (one vector load per chunk of
lanes) or independently of ``v`` (a scalar broadcast), through ``+ - * /`` and negation. The
tile's ``prod(t extents) * V / lanes`` accumulators are loaded into vector registers before the
reduction loops, updated by one vector multiply-add per chunk and row in each iteration, and
stored after them. The order of every element's accumulation is unchanged.

*K groups* (the gemm template's ``kgroup``): when the innermost reduction loop has as many
iterations as an instruction takes K steps (bf16 pairs into f32, int8 quads into int32), the tile
takes each group in one instruction per chunk and row (runtime/codegen/kgroup_c.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, IterVar, substitute, walk
from ...dsl.ops import Op
from ...schedules.bounds import ident_key, linear
from ...schedules.kgroups import GroupKind
from ...schedules.loops import For, LoopKind, Store
from .kgroup_c import X86_INTRINSICS, group_helpers, group_operands, match_group, word_helpers

_ARITH = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
#: 16-bit float operands the micro-kernel loads as vectors and widens to f32 (exactly)
NARROW = (dt.bfloat16, dt.float16)
_SCALAR = (LoopKind.SERIAL, LoopKind.UNROLL)    # loops a micro-kernel runs one iteration at a time


@dataclass(frozen=True)
class MicroKernel:
    """A matched register tile: ``red`` reduction loops (outer first), ``tile`` unrolled loops,
    the vectorized loop ``vec`` of ``lanes``-wide chunks, and ``store`` (acc = acc + term)."""

    red: tuple[For, ...]
    tile: tuple[For, ...]
    vec: For
    store: Store
    term: Expr
    chunks: tuple[tuple[int, int], ...]     # (first lane, lanes) covering the vector loop
    group: For | None = None    # the K loop the tile takes a whole of per instruction (K groups)
    kind: GroupKind | None = None

    @property
    def compensations(self) -> int:
        """Registers of ``128 * sum(b)`` per column chunk (kgroup_c.py), for kinds that need them."""
        return len(self.chunks) if self.kind is not None and self.kind.compensate else 0

    @property
    def accumulators(self) -> int:
        return math.prod(t.extent.arg for t in self.tile) * len(self.chunks)

    def cells(self):
        """(tile values, chunk start, lanes) of every accumulator, rows outer."""
        rows = itertools.product(*(range(t.extent.arg) for t in self.tile))
        return [(r, q, n) for r in rows for q, n in self.chunks]


def chunks(n: int, widest: int) -> tuple[tuple[int, int], ...]:
    """``n`` lanes as vectors of ``widest``, then of narrower powers of two down to single
    elements: ``(first lane, lanes)`` pairs."""
    out, q, w = [], 0, max(1, widest)
    while q < n:
        if n - q >= w:
            out.append((q, w))
            q += w
        else:
            w //= 2
    return tuple(out)


def _vars(e: Expr) -> set:
    return {x.arg for x in walk([e]) if x.op is Op.VAR}


def lane_stride(flat: Expr, v: IterVar) -> int | None:
    """The coefficient of ``v`` in the affine index ``flat`` (None if ``v`` appears otherwise)."""
    lf = linear(flat)
    if lf is None:
        return None
    key = ident_key(v.var)
    coeff = 0
    for k, (c, atom) in lf[0].items():
        if k == key:
            coeff = c
        elif v in _vars(atom):
            return None
    return coeff


def match(loop: For, flat_index, vector_bytes: int, vector_regs: int) -> MicroKernel | None:
    """The micro-kernel rooted at reduction loop ``loop``, or None. ``flat_index(buffer,
    indices)`` is the renderer's row-major index; tiles needing more accumulators than
    ``vector_regs - 3`` registers are left to the compiler."""
    chain: list[For] = []
    s = loop
    while isinstance(s, For):
        if s.reduction:
            return None
        chain.append(s)
        s = s.body
    if not isinstance(s, Store) or len(chain) < 2 or vector_bytes <= 0:
        return None
    buf = s.buffer
    d = buf.dtype
    if d not in (dt.float32, dt.float64, dt.int32) or s.value.op is not Op.ADD:
        return None
    a, b = s.value.src
    same = [x for x in (a, b) if x.op is Op.LOAD and x.arg is buf
            and tuple(ident_key(i) for i in x.src) == tuple(ident_key(i) for i in s.indices)]
    if not same:
        return None
    term = b if same[0] is a else a
    idx_vars = set().union(*(_vars(i) for i in s.indices)) if s.indices else set()
    nred = 0
    while nred < len(chain) and chain[nred].var not in idx_vars:
        nred += 1
    red, tile, vec = chain[:nred], chain[nred:-1], chain[-1]
    if not red or vec.kind is not LoopKind.VECTORIZE or any(r.kind not in _SCALAR for r in red):
        return None
    if any(t.var not in idx_vars or t.kind not in _SCALAR or t.extent.op is not Op.CONST
           for t in tile) or vec.extent.op is not Op.CONST or vec.var not in idx_vars:
        return None
    if lane_stride(flat_index(buf, s.indices), vec.var) != 1:
        return None
    kind = match_group(term, vec.var, red[-1], d, flat_index, lane_stride)
    group = red[-1] if kind is not None else None
    if group is not None:
        red = red[:-1]
    elif d is dt.int32 or not _vector_term(term, vec.var, d, buf, flat_index):
        return None
    mk = MicroKernel(tuple(red), tuple(tile), vec, s, term, chunks(vec.extent.arg, vector_bytes // d.itemsize),
                     group, kind)
    # B's vectors, a broadcast and (compensated) the +128 constant stay in registers beside the tile
    spare = len(mk.chunks) + 2 if mk.compensations else 3
    return mk if mk.accumulators + mk.compensations <= vector_regs - spare else None


def lane_invariant(e: Expr, v: IterVar) -> bool:
    """Whether ``e`` has one value for every lane of ``v`` (a scalar to broadcast)."""
    return v not in _vars(e)


def _vector_term(term: Expr, v: IterVar, d, acc, flat_index) -> bool:
    """Whether ``term`` renders as vector code along ``v``: parts that do not depend on ``v`` are
    scalars of any form (broadcast); the parts that do are loads of ``d`` (not of ``acc``) at lane
    stride 1, combined by ``+ - * /`` and negation in ``d``."""
    if lane_invariant(term, v):
        return term.dtype is d and not any(e.op is Op.LOAD and e.arg is acc for e in walk([term]))
    if term.dtype is not d:
        return False
    if term.op is Op.LOAD:
        return term.arg is not acc and lane_stride(flat_index(term.arg, term.src), v) == 1
    if term.op is Op.CAST and d is dt.float32 and term.src[0].dtype in NARROW:
        ld = term.src[0]     # a 16-bit float operand, converted to f32 as it is loaded
        return ld.op is Op.LOAD and ld.arg is not acc and lane_stride(flat_index(ld.arg, ld.src), v) == 1
    if term.op is Op.NEG or term.op in _ARITH:
        return all(_vector_term(x, v, d, acc, flat_index) for x in term.src)
    if term.op in (Op.MAX, Op.MIN):     # NaN-propagating, as hl_max/hl_min
        return all(_vector_term(x, v, d, acc, flat_index) for x in term.src)
    if term.op is Op.SELECT:        # a padded tap: one condition for all lanes
        c, a, b = term.src
        return lane_invariant(c, v) and all(_vector_term(x, v, d, acc, flat_index) for x in (a, b))
    return False


_SFX = {"float32": ("f32", "float"), "float64": ("f64", "double"), "int32": ("i32", "int32_t")}


def vector_type(d, lanes: int) -> str:
    return f"hl_{_SFX[d.name][0]}x{lanes}"


def vector_helpers(d, lanes: int) -> str:
    """The GNU C vector type of ``lanes`` elements of ``d`` and its unaligned load/store; for f32
    also loads of 16-bit floats widened to f32."""
    sfx, t = _SFX[d.name]
    vt = vector_type(d, lanes)
    n = lanes * d.itemsize
    if lanes == 1:
        out = (f"typedef {t} {vt};\nHL_INLINE {vt} hl_vld_{vt[3:]}(const {t}* p) {{ return *p; }}\n"
               f"HL_INLINE void hl_vst_{vt[3:]}({t}* p, {vt} x) {{ *p = x; }}\n")
        if d is dt.int32:
            return out
        return (out + f"#define hl_vmax_{vt[3:]} hl_max_{sfx}\n#define hl_vmin_{vt[3:]} hl_min_{sfx}\n"
                + (_scalar_narrow(vt) if d is dt.float32 else ""))
    out = (f"typedef {t} {vt} __attribute__((vector_size({n})));\n"
           f"typedef {t} {vt}u __attribute__((vector_size({n}), aligned({d.itemsize}), may_alias));\n"
           f"HL_INLINE {vt} hl_vld_{vt[3:]}(const {t}* p) {{ return *(const {vt}u*)p; }}\n"
           f"HL_INLINE void hl_vst_{vt[3:]}({t}* p, {vt} x) {{ *({vt}u*)p = x; }}\n")
    if d is dt.int32:
        return out
    mt = f"{vt}_mask"
    out += (f"typedef {'int32_t' if d is dt.float32 else 'int64_t'} {mt} __attribute__((vector_size({n})));\n"
            # NaN-propagating max/min (as hl_max/hl_min): a where a > b or a is NaN, else b; of
            # two zeros, their sum (max: +0 above -0) or negated difference (min)
            f"HL_INLINE {vt} hl_vblend_{vt[3:]}({mt} m, {vt} a, {vt} b) {{ "
            f"return ({vt})((m & ({mt})a) | (~m & ({mt})b)); }}\n"
            f"HL_INLINE {vt} hl_vmax_{vt[3:]}({vt} a, {vt} b) {{ return hl_vblend_{vt[3:]}((a == 0) & (b == 0), "
            f"a + b, hl_vblend_{vt[3:]}((a > b) | (a != a), a, b)); }}\n"
            f"HL_INLINE {vt} hl_vmin_{vt[3:]}({vt} a, {vt} b) {{ return hl_vblend_{vt[3:]}((a == 0) & (b == 0), "
            f"-(-a - b), hl_vblend_{vt[3:]}((a < b) | (a != a), a, b)); }}\n")
    if d is dt.float32:      # 16-bit floats loaded and widened exactly (bf16: its bits are f32's top half)
        out += (f"typedef uint16_t {vt}_u16 __attribute__((vector_size({2 * lanes}), aligned(2), may_alias));\n"
                f"typedef _Float16 {vt}_f16 __attribute__((vector_size({2 * lanes}), aligned(2), may_alias));\n"
                f"HL_INLINE {vt} hl_vld_bfloat16_{vt[3:]}(const uint16_t* p) {{ "
                f"return ({vt})(__builtin_convertvector(*(const {vt}_u16*)p, {mt}) << 16); }}\n"
                + X86_INTRINSICS + _f16_load(vt, lanes) + _fma(vt, lanes))
    return out


def _scalar_narrow(vt: str) -> str:
    """The 16-bit float loads of one-lane chunks ``vt`` (plain scalars)."""
    return (f"HL_INLINE {vt} hl_vld_bfloat16_{vt[3:]}(const uint16_t* p) {{ "
            f"uint32_t w = (uint32_t)*p << 16; float f; __builtin_memcpy(&f, &w, 4); return f; }}\n"
            f"HL_INLINE {vt} hl_vld_float16_{vt[3:]}(const _Float16* p) {{ return (float)*p; }}\n")


#: F16C's (AVX-512F's for 16 lanes) f16 -> f32 conversion per width: (macro, vector, load, convert)
_CVTPH = {16: ("__AVX512F__", "__m256i", "_mm256_loadu_si256", "_mm512_cvtph_ps"),
          8: ("__F16C__", "__m128i", "_mm_loadu_si128", "_mm256_cvtph_ps"),
          4: ("__F16C__", "__m128i", "_mm_loadl_epi64", "_mm_cvtph_ps")}


def _f16_load(vt: str, lanes: int) -> str:
    """``hl_vld_float16_<vt>``: ``lanes`` f16 values widened to f32 (exact), by ``vcvtph2ps``
    where the compiler targets it (gcc otherwise converts each lane in a library call)."""
    out = f"HL_INLINE {vt} hl_vld_float16_{vt[3:]}(const _Float16* p) {{\n"
    generic = f"  return __builtin_convertvector(*(const {vt}_f16*)p, {vt});\n"
    if lanes not in _CVTPH:
        return out + generic + "}\n"
    mac, it, ld, cv = _CVTPH[lanes]
    return (f"{out}#if defined({mac})\n  return ({vt}){cv}({ld}(({it} const*)p));\n#else\n{generic}#endif\n}}\n")


#: the fused multiply-add per width: (macro, intrinsic type, intrinsic)
_FMA = {16: ("__AVX512F__", "__m512", "_mm512_fmadd_ps"), 8: ("__FMA__", "__m256", "_mm256_fmadd_ps"),
        4: ("__FMA__", "__m128", "_mm_fmadd_ps")}


def _fma(vt: str, lanes: int) -> str:
    """``hl_vfma_<vt>(a, b, c)``: ``a * b + c`` fused where the target has FMA, also inside a
    function compiled uncontracted (one rounding 16-bit products: a tile's f32 products are not)."""
    out = f"HL_INLINE {vt} hl_vfma_{vt[3:]}({vt} a, {vt} b, {vt} c) {{\n"
    if lanes not in _FMA:
        return out + "  return a * b + c;\n}\n"
    mac, it, fn = _FMA[lanes]
    return f"{out}#if defined({mac})\n  return ({vt}){fn}(({it})a, ({it})b, ({it})c);\n#else\n  return a * b + c;\n#endif\n}}\n"


class MicroKernelPrinter:
    """Renders a matched MicroKernel with a C-family renderer ``r`` (names, loads, constants)."""

    def __init__(self, r, mk: MicroKernel):
        self.r = r
        self.mk = mk
        self.d = mk.store.buffer.dtype
        self.types = {n: vector_type(self.d, n) for _, n in mk.chunks}

    def helpers(self) -> list[tuple[str, str]]:
        """``(key, C text)`` of the types and functions the rendered tile uses, in order."""
        out = [(vt, vector_helpers(self.d, n)) for n, vt in self.types.items()]
        if self.mk.kind is not None:
            for n, vt in self.types.items():
                out += [(f"hl_u32x{n}", word_helpers(n)), (f"{self.mk.kind.name}_{vt}", group_helpers(self.mk.kind, self.d, n))]
        return out

    def _env(self, row, q) -> dict:
        env = {t.var: Expr(Op.CONST, dt.index, (), c) for t, c in zip(self.mk.tile, row)}
        env[self.mk.vec.var] = Expr(Op.CONST, dt.index, (), q)
        return env

    def _addr(self, buf, indices, env) -> str:
        idx = [substitute(i, env) for i in indices]
        return f"&{self.r.name(buf, buf.name)}[{self.r.expr(self.r.flat_index(buf, idx))}]"

    def lines(self, depth: int) -> list[str]:
        r, mk = self.r, self.mk
        pad = "  " * depth
        st = mk.store
        cells = mk.cells()
        accs = [f"hl_acc{k}" for k in range(len(cells))]
        out = [pad + "{"]
        for name, (row, q, n) in zip(accs, cells):
            vt = self.types[n]
            out.append(f"{pad}  {vt} {name} = hl_vld_{vt[3:]}({self._addr(st.buffer, st.indices, self._env(row, q))});")
        if mk.compensations:
            out += [f"{pad}  {self.types[n]} hl_comp{q} = ({self.types[n]}){{0}};" if n > 1 else
                    f"{pad}  {self.types[n]} hl_comp{q} = 0;" for q, n in mk.chunks]
        inner = depth + 1
        for f in mk.red:
            v = r.name(f.var, f.var.name)
            out += [f"{'  ' * inner}{p}" for p in r.loop_pragma(f)]
            out.append(f"{'  ' * inner}for ({r.int64_type} {v} = 0; {v} < {r.expr(f.extent)}; ++{v}) {{")
            inner += 1
        ipad = "  " * inner
        temps: dict[str, str] = {}
        body: list[str] = []
        for name, (row, q, n) in zip(accs, cells):
            if mk.group is not None:
                body.append(f"{ipad}{name} = {self._group_step(name, self._env(row, q), n, temps, ipad, out)};")
            elif mk.term.op is Op.MUL and mk.term.dtype is dt.float32 and self.d is dt.float32 and n > 1:
                vt = self.types[n]      # fused: the tile's update is an FMA even where the function is not contracted
                a, b = ((t if isv else f"({t} - ({vt}){{0}})")        # x - (+0) is x, -0 and NaN included
                        for t, isv in (self._vexpr(x, self._env(row, q), n, temps, ipad, out) for x in mk.term.src))
                body.append(f"{ipad}{name} = hl_vfma_{vt[3:]}({a}, {b}, {name});")
            else:
                body.append(f"{ipad}{name} += {self._vexpr(mk.term, self._env(row, q), n, temps, ipad, out)[0]};")
        out += body
        for _ in mk.red:
            inner -= 1
            out.append("  " * inner + "}")
        for name, (row, q, n) in zip(accs, cells):
            value = f"{name} - hl_comp{q}" if mk.compensations else name
            out.append(f"{pad}  hl_vst_{self.types[n][3:]}({self._addr(st.buffer, st.indices, self._env(row, q))}, {value});")
        out.append(pad + "}")
        return out

    def _group_step(self, acc: str, env: dict, n: int, temps: dict, ipad: str, out: list) -> str:
        """One K group into accumulator ``acc``: A's group as one 32-bit word, B's ``n`` groups
        as ``n`` words (each loaded once per iteration, in ``out``; with a compensation, its
        register is updated where B's vector is loaded)."""
        mk = self.mk
        env = {**env, mk.group.var: Expr(Op.CONST, dt.index, (), 0)}
        a, b = group_operands(mk.term, mk.vec.var)
        names = []
        for ld, fn in ((a, "hl_vld_word"), (b, f"hl_vld_u32x{n}")):
            addr = self._addr(ld.arg, ld.src, env)
            if (addr, fn) not in temps:
                temps[addr, fn] = f"hl_v{len(temps)}"
                out.append(f"{ipad}const {'uint32_t' if fn == 'hl_vld_word' else f'hl_u32x{n}'} "
                           f"{temps[addr, fn]} = {fn}({addr});")
                if ld is b and mk.compensations:
                    q = env[mk.vec.var].arg
                    out.append(f"{ipad}hl_comp{q} = hl_vcomp_{mk.kind.name}_{self.types[n][3:]}(hl_comp{q}, {temps[addr, fn]});")
            names.append(temps[addr, fn])
        return f"hl_vdot_{mk.kind.name}_{self.types[n][3:]}({acc}, {names[0]}, {names[1]})"

    def _vexpr(self, e: Expr, env: dict, n: int, temps: dict, ipad: str, out: list) -> tuple[str, bool]:
        """(C text, is a vector) of ``e`` for one accumulator of ``n`` lanes; vector loads become
        temporaries declared once per iteration (in ``out``)."""
        r = self.r
        if lane_invariant(e, self.mk.vec.var):
            return r.expr(substitute(e, env)), False
        if e.op is Op.LOAD or (e.op is Op.CAST and e.src[0].dtype in NARROW):
            ld = e if e.op is Op.LOAD else e.src[0]
            addr = self._addr(ld.arg, ld.src, env)
            if (addr, n) not in temps:
                vt = self.types[n]
                temps[addr, n] = f"hl_v{len(temps)}"
                fn = f"hl_vld_{vt[3:]}" if ld.dtype is self.d else f"hl_vld_{ld.dtype.name}_{vt[3:]}"
                out.append(f"{ipad}const {vt} {temps[addr, n]} = {fn}({addr});")
            return temps[addr, n], True
        if e.op is Op.SELECT:
            c = r.expr(substitute(e.src[0], env))
            a, b = (self._vexpr(x, env, n, temps, ipad, out) for x in e.src[1:])
            a, b = (t if isv else f"(({self.types[n]}){{0}} + {t})" for t, isv in (a, b))
            return f"({c} ? {a} : {b})", True
        parts = [self._vexpr(s, env, n, temps, ipad, out) for s in e.src]
        anyv = any(p[1] for p in parts)
        if e.op in (Op.MAX, Op.MIN):
            a, b = (t if isv else f"(({self.types[n]}){{0}} + {t})" for t, isv in parts)
            return f"hl_v{e.op.name.lower()}_{self.types[n][3:]}({a}, {b})", True
        if e.op is Op.NEG:
            return f"(-{parts[0][0]})", anyv
        return f"({parts[0][0]} {_ARITH[e.op]} {parts[1][0]})", anyv


__all__ = ["MicroKernel", "MicroKernelPrinter", "chunks", "lane_stride", "match", "vector_helpers", "vector_type"]
