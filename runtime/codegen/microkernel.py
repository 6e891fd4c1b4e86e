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
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, IterVar, substitute, walk
from ...dsl.ops import Op
from ...schedules.bounds import ident_key, linear
from ...schedules.loops import For, LoopKind, Store

_ARITH = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
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
    if d not in (dt.float32, dt.float64) or s.value.op is not Op.ADD:
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
    if lane_stride(flat_index(buf, s.indices), vec.var) != 1 or not _vector_term(term, vec.var, d, buf, flat_index):
        return None
    mk = MicroKernel(tuple(red), tuple(tile), vec, s, term, chunks(vec.extent.arg, vector_bytes // d.itemsize))
    return mk if mk.accumulators <= vector_regs - 3 else None


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
    if term.op is Op.NEG or term.op in _ARITH:
        return all(_vector_term(x, v, d, acc, flat_index) for x in term.src)
    if term.op in (Op.MAX, Op.MIN):     # NaN-propagating, as hl_max/hl_min
        return all(_vector_term(x, v, d, acc, flat_index) for x in term.src)
    if term.op is Op.SELECT:        # a padded tap: one condition for all lanes
        c, a, b = term.src
        return lane_invariant(c, v) and all(_vector_term(x, v, d, acc, flat_index) for x in (a, b))
    return False


def vector_type(d, lanes: int) -> str:
    return f"hl_{'f32' if d is dt.float32 else 'f64'}x{lanes}"


def vector_helpers(d, lanes: int) -> str:
    """The GNU C vector type of ``lanes`` elements of ``d`` and its unaligned load/store."""
    t = "float" if d is dt.float32 else "double"
    vt = vector_type(d, lanes)
    n = lanes * d.itemsize
    if lanes == 1:
        sfx = "f32" if d is dt.float32 else "f64"
        return (f"typedef {t} {vt};\nHL_INLINE {vt} hl_vld_{vt[3:]}(const {t}* p) {{ return *p; }}\n"
                f"HL_INLINE void hl_vst_{vt[3:]}({t}* p, {vt} x) {{ *p = x; }}\n"
                f"#define hl_vmax_{vt[3:]} hl_max_{sfx}\n#define hl_vmin_{vt[3:]} hl_min_{sfx}\n")
    it = "int32_t" if d is dt.float32 else "int64_t"
    mt = f"{vt}_mask"
    return (f"typedef {t} {vt} __attribute__((vector_size({n})));\n"
            f"typedef {t} {vt}u __attribute__((vector_size({n}), aligned({d.itemsize}), may_alias));\n"
            f"typedef {it} {mt} __attribute__((vector_size({n})));\n"
            f"HL_INLINE {vt} hl_vld_{vt[3:]}(const {t}* p) {{ return *(const {vt}u*)p; }}\n"
            f"HL_INLINE void hl_vst_{vt[3:]}({t}* p, {vt} x) {{ *({vt}u*)p = x; }}\n"
            # NaN-propagating max/min (as hl_max/hl_min): a where a > b or a is NaN, else b
            f"HL_INLINE {vt} hl_vblend_{vt[3:]}({mt} m, {vt} a, {vt} b) {{ "
            f"return ({vt})((m & ({mt})a) | (~m & ({mt})b)); }}\n"
            f"HL_INLINE {vt} hl_vmax_{vt[3:]}({vt} a, {vt} b) {{ return hl_vblend_{vt[3:]}((a > b) | (a != a), a, b); }}\n"
            f"HL_INLINE {vt} hl_vmin_{vt[3:]}({vt} a, {vt} b) {{ return hl_vblend_{vt[3:]}((a < b) | (a != a), a, b); }}\n")


class MicroKernelPrinter:
    """Renders a matched MicroKernel with a C-family renderer ``r`` (names, loads, constants)."""

    def __init__(self, r, mk: MicroKernel):
        self.r = r
        self.mk = mk
        self.d = mk.store.buffer.dtype
        self.types = {n: vector_type(self.d, n) for _, n in mk.chunks}

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
            body.append(f"{ipad}{name} += {self._vexpr(mk.term, self._env(row, q), n, temps, ipad, out)[0]};")
        out += body
        for _ in mk.red:
            inner -= 1
            out.append("  " * inner + "}")
        for name, (row, q, n) in zip(accs, cells):
            out.append(f"{pad}  hl_vst_{self.types[n][3:]}({self._addr(st.buffer, st.indices, self._env(row, q))}, {name});")
        out.append(pad + "}")
        return out

    def _vexpr(self, e: Expr, env: dict, n: int, temps: dict, ipad: str, out: list) -> tuple[str, bool]:
        """(C text, is a vector) of ``e`` for one accumulator of ``n`` lanes; vector loads become
        temporaries declared once per iteration (in ``out``)."""
        r = self.r
        if lane_invariant(e, self.mk.vec.var):
            return r.expr(substitute(e, env)), False
        if e.op is Op.LOAD:
            addr = self._addr(e.arg, e.src, env)
            if (addr, n) not in temps:
                vt = self.types[n]
                temps[addr, n] = f"hl_v{len(temps)}"
                out.append(f"{ipad}const {vt} {temps[addr, n]} = hl_vld_{vt[3:]}({addr});")
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
