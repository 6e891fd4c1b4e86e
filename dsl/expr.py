"""Immutable scalar expression nodes of the tensor-expression DSL.

One node class, ``Expr(op, dtype, src, arg)`` (as tinygrad's UOp). Nodes compare by identity;
``structural_key`` gives a key that ignores names, so two expressions built the same way from
tensors of the same shapes share a key (that key is the workload key of the tuning database).

Index semantics: every index variable (``IterVar``) ranges over ``[0, extent)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .dtypes import DType
from .errors import DSLError
from .ops import GroupOp, Op
from .semantics import eval_op

_ids = itertools.count()


class ExprOps:
    """Python operators for anything that converts to an ``Expr``.

    ``/`` and ``%`` follow C and XLA on integers (truncate toward zero); ``//`` floors as Python.
    ``==`` stays identity: use ``dsl.equal``.
    """

    def _bin(self, op, other, reverse=False):
        a, b = (other, self) if reverse else (self, other)
        return binary(op, a, b)

    def __add__(self, o): return self._bin(Op.ADD, o)
    def __radd__(self, o): return self._bin(Op.ADD, o, True)
    def __sub__(self, o): return self._bin(Op.SUB, o)
    def __rsub__(self, o): return self._bin(Op.SUB, o, True)
    def __mul__(self, o): return self._bin(Op.MUL, o)
    def __rmul__(self, o): return self._bin(Op.MUL, o, True)
    def __truediv__(self, o): return self._bin(Op.DIV, o)
    def __rtruediv__(self, o): return self._bin(Op.DIV, o, True)
    def __floordiv__(self, o): return self._bin(Op.FLOORDIV, o)
    def __rfloordiv__(self, o): return self._bin(Op.FLOORDIV, o, True)
    def __mod__(self, o): return self._bin(Op.REM, o)
    def __rmod__(self, o): return self._bin(Op.REM, o, True)
    def __pow__(self, o): return self._bin(Op.POW, o)
    def __and__(self, o): return self._bin(Op.AND, o)
    def __rand__(self, o): return self._bin(Op.AND, o, True)
    def __or__(self, o): return self._bin(Op.OR, o)
    def __ror__(self, o): return self._bin(Op.OR, o, True)
    def __xor__(self, o): return self._bin(Op.XOR, o)
    def __lshift__(self, o): return self._bin(Op.SHL, o)
    def __rshift__(self, o): return self._bin(Op.SHRA, o)
    def __lt__(self, o): return self._bin(Op.LT, o)
    def __le__(self, o): return self._bin(Op.LE, o)
    def __gt__(self, o): return self._bin(Op.GT, o)
    def __ge__(self, o): return self._bin(Op.GE, o)
    def __neg__(self): return unary(Op.NEG, self)
    def __invert__(self): return unary(Op.NOT, self)

    def __bool__(self):
        raise DSLError("a DSL expression has no truth value; use dsl.select(cond, a, b)")

    def astype(self, dtype) -> Expr:
        return cast(self, dtype)


class AxisKind(StrEnum):
    """What an ``IterVar`` ranges over: an output axis, a reduction axis, or a reducer's
    combiner argument (extent 0)."""

    DATA = "data"
    REDUCE = "reduce"
    PARAM = "param"


@dataclass(frozen=True, eq=False)
class IterVar(ExprOps):
    """An index variable ranging over ``[0, extent)``; ``kind`` (an ``AxisKind``, or its
    name) says over what."""

    name: str
    extent: int
    kind: AxisKind = AxisKind.DATA
    dtype: DType = dt.index
    uid: int = field(default_factory=lambda: next(_ids), compare=False)

    def __post_init__(self):
        object.__setattr__(self, "kind", AxisKind(self.kind))

    @cached_property
    def var(self) -> Expr:
        return Expr(Op.VAR, self.dtype, (), self)

    def __repr__(self) -> str:
        return f"IterVar({self.name}, {self.extent}, {self.kind})"

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Expr(ExprOps):
    """One node: ``op`` applied to ``src`` giving a value of ``dtype``; ``arg`` holds op data."""

    op: Op
    dtype: DType
    src: tuple[Expr, ...] = ()
    arg: Any = None

    __hash__ = object.__hash__

    @cached_property
    def key(self) -> tuple:
        """Structural key ignoring names (variables and tensors numbered by first appearance)."""
        return structural_key([self])

    def __repr__(self) -> str:
        from .printer import expr_str
        return expr_str(self)


@dataclass(frozen=True, eq=False)
class Reducer:
    """A commutative, associative combiner over tuples of values.

    ``combine`` gives the new accumulator from ``lhs`` (accumulator) and ``rhs`` (incoming value)
    parameters; ``identity`` is the start value. ``ufunc`` names the numpy ufunc for the one-value
    built-ins (add/maximum/minimum/multiply), so the reference can reduce in one call.
    """

    name: str
    lhs: tuple[IterVar, ...]
    rhs: tuple[IterVar, ...]
    combine: tuple[Expr, ...]
    identity: tuple[Expr, ...]
    ufunc: str | None = None

    __hash__ = object.__hash__

    @property
    def arity(self) -> int:
        return len(self.lhs)

    def parts(self) -> tuple[Reducer, ...] | None:
        """One-value reducers, one per component, when every component combines only with
        itself by a built-in (``(a0 + b0, a1 + b1)``): each may then be its own SIMD reduction.
        None otherwise."""
        if self.ufunc is not None:
            return (self,)
        out = []
        for k, c in enumerate(self.combine):
            u = _UFUNCS.get(c.op)
            ends = {x.arg for x in c.src if x.op is Op.VAR}
            if u is None or len(c.src) != 2 or ends != {self.lhs[k], self.rhs[k]}:
                return None
            out.append(Reducer(f"{self.name}_{k}", (self.lhs[k],), (self.rhs[k],), (c,), (self.identity[k],), u))
        return tuple(out)


_UFUNCS = {Op.ADD: "add", Op.MUL: "multiply", Op.MAX: "maximum", Op.MIN: "minimum"}


@dataclass(frozen=True, eq=False)
class ReduceSpec:
    """Data of a REDUCE node: reduce ``src`` over ``axes`` with ``reducer``; the node's value is
    component ``value_index`` of the reduced tuple."""

    reducer: Reducer
    axes: tuple[IterVar, ...]
    value_index: int = 0
    where: Expr | None = None

    __hash__ = object.__hash__


# ----------------------------------------------------------------------------- constructors

def const(value, dtype=None) -> Expr:
    """A scalar constant; ``dtype`` defaults to int64 for ints, float32 for floats, bool for bools."""
    if isinstance(value, np.generic):
        dtype = dtype or dt.dtype(value.dtype)
        value = value.item()
    if dtype is None:
        dtype = dt.bool_ if isinstance(value, bool) else dt.index if isinstance(value, int) else dt.float32
    dtype = dt.dtype(dtype)
    try:
        value = bool(value) if dtype.is_bool else int(value) if dtype.is_int else \
            complex(value) if dtype.is_complex else float(value)
    except (OverflowError, ValueError, TypeError) as e:   # int(inf), int(nan), float(10**400)
        raise DSLError(f"constant {value!r} cannot be a {dtype}: {e}") from None
    if dtype.is_int:
        info = ml_dtypes.iinfo(dtype.np)
        if not info.min <= value <= info.max:
            raise DSLError(f"constant {value} is out of range for {dtype} [{info.min}, {info.max}]")
    return Expr(Op.CONST, dtype, (), value)


def as_expr(x, like: DType | None = None) -> Expr:
    """Convert an Expr, IterVar or python/numpy scalar to an Expr; scalars take ``like``'s dtype
    (weak scalar typing, as numpy 2)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, np.generic):  # numpy scalars carry their dtype (strong typing)
        return const(x)
    if isinstance(x, (bool, int, float)):
        if like is not None:
            if isinstance(x, float) and not like.is_float:
                like = dt.float64   # as numpy: int or bool array with a Python float
            if isinstance(x, int) and not isinstance(x, bool) and like.is_bool:
                like = dt.index
            return const(x, like)
        return const(x)
    raise DSLError(f"cannot use {type(x).__name__} {x!r} in a tensor expression")


def _fold(op: Op, dtype: DType, vals: list):
    """Evaluate an op on constants with the reference semantics (dsl/semantics.py); None for
    ops on complex operands, which stay expressions (their formulas live above this module)."""
    if dtype.is_complex or any(v[1].is_complex for v in vals):
        return None
    out = eval_op(op, dtype, [np.asarray(v[0], dtype=v[1].np) for v in vals])
    return np.asarray(out).reshape(()).item()


def unary(op: Op, x) -> Expr:
    x = as_expr(x)
    if x.dtype.is_complex and op not in GroupOp.Complex | {Op.REAL, Op.IMAG}:
        raise DSLError(f"{op.name.lower()} is not defined on complex {x.dtype}")
    if op in GroupOp.FloatUnary and not (x.dtype.is_float or x.dtype.is_complex):
        raise DSLError(f"{op.name.lower()} needs a float operand, got {x.dtype}; cast it first")
    if op in (Op.REAL, Op.IMAG) and not (x.dtype.is_float or x.dtype.is_complex):
        raise DSLError(f"{op.name.lower()} needs a float or complex operand, got {x.dtype}")
    out_dt = dt.bool_ if op is Op.ISFINITE else \
        x.dtype.component if op in (Op.ABS, Op.REAL, Op.IMAG) else x.dtype
    if op is Op.REAL and not x.dtype.is_complex:
        return x
    if op is Op.NEG and x.dtype.is_bool:
        raise DSLError("negating a bool is not defined (numpy rejects it too); use logical_not")
    if op is Op.NEG and x.op is Op.NEG:
        return x.src[0]
    if x.op is Op.CONST and op not in (Op.POPCNT, Op.CLZ):
        v = _fold(op, out_dt, [(x.arg, x.dtype)])
        if v is not None:
            return const(v, out_dt)
    return Expr(op, out_dt, (x,))


def _simplify(op: Op, a: Expr, b: Expr) -> Expr | None:
    """Identities for index arithmetic: x+0, x*1, x*0 (ints), 0+x, 1*x, x-0, x//1."""
    def is_c(e, v):
        return e.op is Op.CONST and e.arg == v
    if a.dtype.is_complex:  # (inf + 0i) * 1 is NaN in XLA's complex multiply: nothing is an identity
        return None
    if op is Op.ADD and a.dtype.is_int:  # not for floats: -0.0 + 0.0 is +0.0
        if is_c(b, 0): return a
        if is_c(a, 0): return b
    if op is Op.SUB and is_c(b, 0) and (a.dtype.is_int or not math.copysign(1.0, b.arg) < 0):
        return a
    if op is Op.MUL:
        if is_c(b, 1): return a
        if is_c(a, 1): return b
        if a.dtype.is_int and (is_c(a, 0) or is_c(b, 0)):
            return const(0, a.dtype)
    if op in (Op.FLOORDIV, Op.DIV) and a.dtype.is_int and is_c(b, 1):
        return a
    if op in (Op.FLOORMOD, Op.REM) and a.dtype.is_int and is_c(b, 1):
        return const(0, a.dtype)
    return None


def binary(op: Op, a, b) -> Expr:
    """A binary op with numpy promotion; compares give bool."""
    if not isinstance(a, (Expr, IterVar)):
        b = as_expr(b)
        a = as_expr(a, b.dtype)
    else:
        a = as_expr(a)
        b = as_expr(b, a.dtype)
    t = dt.promote(a.dtype, b.dtype)
    if a.dtype is not t:
        a = cast(a, t)
    if b.dtype is not t:
        b = cast(b, t)
    if op is Op.COMPLEX:
        if t not in (dt.float32, dt.float64):
            raise DSLError(f"complex needs float32 or float64 parts, got {t}")
        if a.op is Op.CONST and b.op is Op.CONST:
            return const(complex(a.arg, b.arg), dt.complex64 if t is dt.float32 else dt.complex128)
        return Expr(op, dt.complex64 if t is dt.float32 else dt.complex128, (a, b))
    if t.is_complex and op not in GroupOp.Complex:
        raise DSLError(f"{op.name.lower()} is not defined on complex {t}")
    if op in GroupOp.Bitwise and t.is_float:
        raise DSLError(f"{op.name.lower()} needs integer or bool operands, got {t}")
    if op in (Op.FLOORDIV, Op.FLOORMOD, Op.REM, Op.SUB, Op.DIV, Op.POW) and t.is_bool:
        raise DSLError(f"{op.name.lower()} is not defined on bool (numpy rejects it too); cast first")
    out_dt = dt.bool_ if op in GroupOp.Compare else t
    if a.op is Op.CONST and b.op is Op.CONST:
        v = _fold(op, out_dt, [(a.arg, t), (b.arg, t)])
        if v is not None:
            return const(v, out_dt)
    s = _simplify(op, a, b)
    if s is not None:
        return s
    return Expr(op, out_dt, (a, b))


def cast(x, dtype) -> Expr:
    """Convert ``x`` to ``dtype`` (float->int truncates toward zero, saturating as XLA does)."""
    x = as_expr(x)
    dtype = dt.dtype(dtype)
    if x.dtype is dtype:
        return x
    if x.op is Op.CONST:
        v = _fold(Op.CAST, dtype, [(x.arg, x.dtype)])
        if v is not None:
            return const(v, dtype)
    return Expr(Op.CAST, dtype, (x,))


def bitcast(x, dtype) -> Expr:
    """Reinterpret the bits of ``x`` as ``dtype`` (same bit width)."""
    x = as_expr(x)
    dtype = dt.dtype(dtype)
    if dtype.bits != x.dtype.bits:
        raise DSLError(f"bitcast from {x.dtype} to {dtype} changes the bit width")
    return x if x.dtype is dtype else Expr(Op.BITCAST, dtype, (x,))


def select(cond, a, b) -> Expr:
    """``a`` where ``cond`` else ``b`` (both branches are evaluated)."""
    cond = as_expr(cond)
    if not cond.dtype.is_bool:
        cond = binary(Op.NE, cond, 0)
    if not isinstance(a, (Expr, IterVar)):
        b = as_expr(b)
        a = as_expr(a, b.dtype)
    else:
        a = as_expr(a)
        b = as_expr(b, a.dtype)
    t = dt.promote(a.dtype, b.dtype)
    a, b = cast(a, t), cast(b, t)
    if cond.op is Op.CONST:
        return a if cond.arg else b
    return Expr(Op.SELECT, t, (cond, a, b))


# ----------------------------------------------------------------------------- traversal

def walk(roots) -> Iterator[Expr]:
    """Post-order over the unique nodes reachable from ``roots`` (reducer combiners included)."""
    seen: set[int] = set()
    stack = [(r, False) for r in reversed(list(roots))]
    while stack:
        e, done = stack.pop()
        if done:
            yield e
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        kids = list(e.src)
        if e.op is Op.REDUCE and e.arg.where is not None:
            kids.append(e.arg.where)
        for s in reversed(kids):
            if id(s) not in seen:
                stack.append((s, False))


def substitute(e: Expr, mapping: dict, load_fn=None) -> Expr:
    """Replace variables (keys: IterVar) by expressions; optionally rewrite loads with
    ``load_fn(expr, new_indices) -> Expr | None``. Shares unchanged subtrees."""
    memo: dict[int, Expr] = {}

    def go(x: Expr) -> Expr:
        r = memo.get(id(x))
        if r is not None:
            return r
        if x.op is Op.VAR:
            r = as_expr(mapping[x.arg]) if x.arg in mapping else x
        elif x.op is Op.CONST:
            r = x
        else:
            src = tuple(go(s) for s in x.src)
            arg = x.arg
            if x.op is Op.REDUCE and arg.where is not None:
                w = go(arg.where)
                if w is not arg.where:
                    arg = ReduceSpec(arg.reducer, arg.axes, arg.value_index, w)
            r = None
            if x.op is Op.LOAD and load_fn is not None:
                r = load_fn(x, src)
            if r is None:
                if all(a is b for a, b in zip(src, x.src)) and arg is x.arg:
                    r = x
                else:
                    r = rebuild(x, src, arg)
        memo[id(x)] = r
        return r

    return go(e)


def rebuild(x: Expr, src: tuple[Expr, ...], arg=None) -> Expr:
    """Rebuild ``x`` with new sources through the simplifying constructors."""
    arg = x.arg if arg is None else arg
    if x.op in GroupOp.Binary:
        return binary(x.op, *src)
    if x.op in GroupOp.Unary:
        return unary(x.op, src[0])
    if x.op is Op.CAST:
        return cast(src[0], x.dtype)
    if x.op is Op.SELECT:
        return select(*src)
    return Expr(x.op, x.dtype, src, arg)


def structural_key(roots, opcode=None) -> tuple:
    """A hashable key of the expressions ``roots`` that ignores every name.

    Variables and tensors are numbered by first appearance; a compute tensor is keyed by its
    definition, recursively; placeholders by shape and dtype. Ops, dtypes and reducers appear by
    name, so the key survives a reordering of ``Op``; ``opcode(op)`` overrides how an op appears
    (format-1 workload keys used its position in ``Op``).
    """
    opcode = opcode or (lambda op: op.name)
    vars_: dict[IterVar, int] = {}
    tensors: dict[int, int] = {}
    memo: dict[int, tuple] = {}

    def vkey(v: IterVar):
        if v not in vars_:
            vars_[v] = len(vars_)
        return ("v", vars_[v], v.kind.value, v.extent)

    def tkey(t):
        op = t.op
        if id(op) not in tensors:
            tensors[id(op)] = len(tensors)
            body = None
            if hasattr(op, "fn"):  # extern op: its kind, attributes and inputs
                body = (op.kind, repr(op.attrs), tuple(tkey(x) for x in op.inputs))
            elif getattr(op, "body", None) is not None:
                for v in op.axis + op.reduce_axis:
                    vkey(v)
                body = tuple(ek(b) for b in op.body)
            memo[("t", id(op))] = (tensors[id(op)], tuple(t.shape), t.dtype.name, body)
        return ("T", memo[("t", id(op))], t.value_index)

    def ek(e: Expr):
        k = memo.get(id(e))
        if k is not None:
            return k
        if e.op is Op.VAR:
            arg = vkey(e.arg)
        elif e.op is Op.LOAD:
            arg = tkey(e.arg) if hasattr(e.arg, "value_index") else ("B", e.arg.name)
        elif e.op is Op.REDUCE:
            r = e.arg.reducer
            for v in r.lhs + r.rhs:
                vkey(v)
            arg = (r.name, tuple(ek(c) for c in r.combine), tuple(ek(c) for c in r.identity),
                   tuple(vkey(a) for a in e.arg.axes), e.arg.value_index,
                   ek(e.arg.where) if e.arg.where is not None else None)
        elif e.op is Op.CONST:
            v = e.arg
            arg = ("nan",) if isinstance(v, float) and math.isnan(v) else \
                ("c", repr(v)) if isinstance(v, complex) else v
        else:
            arg = e.arg
        k = (opcode(e.op), e.dtype.name, arg, tuple(ek(s) for s in e.src))
        memo[id(e)] = k
        return k

    return tuple(ek(r) for r in roots)
