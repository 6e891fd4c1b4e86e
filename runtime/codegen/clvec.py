"""Vector types for OpenCL C: a ``vectorize`` loop of 2, 4, 8 or 16 iterations as ``vloadN`` /
``vstoreN`` on ``floatN``/``doubleN`` values.

A loop ``for v in [0, N)`` qualifies when its body is stores (no loops, ifs or lets) of float32
or float64 values whose flat index is ``base + v`` (contiguous in ``v``), and every load that
depends on ``v`` is contiguous in it too; loads that do not depend on ``v`` stay scalars, which
OpenCL C widens to all lanes. A load from a buffer the loop stores must use that store's index
(lane ``k`` only reads what lane ``k`` writes), so running each store for all lanes at once gives
the serial loop's answer. Anything else (other ops, 16-bit or integer values, gathers) returns
None and the caller renders the scalar loop.
"""

from __future__ import annotations

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, substitute, walk
from ...dsl.ops import Op
from ...schedules.bounds import const_difference
from ...schedules.loops import For, Seq, Store
from .cstyle import _FMATH

WIDTHS = (2, 4, 8, 16)
_BIN = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/"}
#: overloaded math builtins whose vector forms are the scalar function per lane
_UNARY = frozenset({Op.EXP, Op.LOG, Op.SQRT, Op.TANH, Op.FLOOR, Op.CEIL, Op.ABS})


class _Scalar(Exception):
    """The loop cannot be vectorized; render it as a scalar loop."""


def _depends(e: Expr, var) -> bool:
    return any(x.op is Op.VAR and x.arg is var for x in walk([e]))


class VectorLoop:
    """Renders one vectorizable loop with renderer ``r`` (an OpenCLRenderer)."""

    def __init__(self, r, loop: For):
        self.r, self.loop, self.var = r, loop, loop.var
        self.n = int(loop.extent.arg)
        self.stores = list(loop.body.stmts) if isinstance(loop.body, Seq) else [loop.body]
        self.written = {}

    def _base(self, buf, idx) -> Expr:
        """The flat index at lane 0 when ``idx`` is contiguous in the loop variable."""
        flat = self.r.flat_index(buf, idx)
        zero = substitute(flat, {self.var: 0})
        for k in range(1, self.n):
            if const_difference(substitute(flat, {self.var: k}), zero) != k:
                raise _Scalar
        return zero

    def _vtype(self, d) -> str:
        if d not in (dt.float32, dt.float64):
            raise _Scalar
        return f"{self.r.ctype(d)}{self.n}"

    def expr(self, e: Expr) -> str:
        if not _depends(e, self.var):
            return self.r.expr(e)
        self._vtype(e.dtype)
        op = e.op
        if op is Op.LOAD:
            buf = e.arg
            if buf.dtype not in (dt.float32, dt.float64):
                raise _Scalar
            base = self._base(buf, e.src)
            return f"vload{self.n}(0, {self.r.name(buf, buf.name)} + {self.r.expr(base)})"
        if op in _BIN:
            a, b = (self.expr(s) for s in e.src)
            return f"({a} {_BIN[op]} {b})"
        if op is Op.NEG:
            return f"(-{self.expr(e.src[0])})"
        if op in _UNARY:
            return f"{_FMATH[op]}({self.expr(e.src[0])})"
        if op is Op.CAST and e.src[0].dtype is e.dtype:
            return self.expr(e.src[0])
        raise _Scalar

    def render(self, pad: str) -> list[str] | None:
        if not all(isinstance(s, Store) for s in self.stores):
            return None
        try:
            for s in self.stores:
                if id(s.buffer) in self.written:
                    raise _Scalar
                self.written[id(s.buffer)] = self.r.flat_index(s.buffer, s.indices)
            for s in self.stores:      # lane k may only read what lane k writes
                for e in walk([s.value]):
                    w = self.written.get(id(e.arg)) if e.op is Op.LOAD else None
                    if w is not None and const_difference(self.r.flat_index(e.arg, e.src), w) != 0:
                        raise _Scalar
            lines = []
            for s in self.stores:
                t = self._vtype(s.buffer.dtype)
                base = self._base(s.buffer, s.indices)
                v = self.expr(s.value)
                if not _depends(s.value, self.var):
                    v = f"(({t})({v}))"
                lines.append(f"{pad}vstore{self.n}({v}, 0, {self.r.name(s.buffer, s.buffer.name)} + "
                             f"{self.r.expr(base)});")
            return lines
        except _Scalar:
            return None


def render_vector_loop(r, loop: For, pad: str) -> list[str] | None:
    """OpenCL C lines for ``loop`` as vector operations, or None when it does not qualify."""
    if loop.reduction or loop.extent.op is not Op.CONST or int(loop.extent.arg) not in WIDTHS:
        return None
    return VectorLoop(r, loop).render(pad)


__all__ = ["WIDTHS", "render_vector_loop"]
