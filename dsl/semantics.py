"""The elementwise ops' semantics on numpy values (the reference evaluator's, and constant
folding's in dsl/expr.py). Integer semantics follow C and XLA: ``/`` and ``%`` truncate toward
zero; ``x / 0 == -1``, ``x % 0 == x``; ``INT_MIN / -1 == INT_MIN``; shifts by >= the bit width
give 0 (or the sign for arithmetic right shifts); float -> int casts truncate, map NaN to 0 and
saturate. Ops on complex operands need their formulas (dsl/complexmath.py), which only the
reference evaluator brings (``eval_op``'s ``complex_op``)."""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .dtypes import DType
from .errors import DSLError
from .ops import Op


class ComplexOperands(Exception):
    """An op on complex operands asked of ``eval_op`` without their formulas."""


def _sign(x):
    """XLA's sign: -1, 0 or 1, and the zero itself (its sign kept) and NaN for those."""
    return np.where(x == 0, x, np.sign(x)) if x.dtype.kind == "f" or x.dtype.name in ("bfloat16",) else np.sign(x)


def _is_float(x) -> bool:
    return x.dtype.kind == "f" or x.dtype.name in ("bfloat16",) or x.dtype.name.startswith("float8")


def _maximum(a, b):
    """XLA's maximum: NaN-propagating, +0 above -0 (numpy's returns its first of two zeros)."""
    r = np.maximum(a, b)
    return np.where((a == 0) & (b == 0), a + b, r).astype(r.dtype) if _is_float(r) else r


def _minimum(a, b):
    """XLA's minimum: NaN-propagating, -0 below +0."""
    r = np.minimum(a, b)
    return np.where((a == 0) & (b == 0), -(-a - b), r).astype(r.dtype) if _is_float(r) else r


_UNARY = {
    Op.EXP: np.exp, Op.EXPM1: np.expm1, Op.LOG: np.log, Op.LOG1P: np.log1p, Op.SQRT: np.sqrt,
    Op.CBRT: np.cbrt, Op.TANH: np.tanh, Op.SIN: np.sin, Op.COS: np.cos, Op.TAN: np.tan,
    Op.FLOOR: np.floor, Op.CEIL: np.ceil, Op.ROUND: np.rint, Op.ABS: np.abs, Op.SIGN: _sign,
    Op.ISFINITE: np.isfinite,
}
_BINARY = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.MAX: _maximum,
    Op.MIN: _minimum, Op.ATAN2: np.arctan2, Op.AND: np.bitwise_and, Op.OR: np.bitwise_or,
    Op.XOR: np.bitwise_xor, Op.LT: np.less, Op.LE: np.less_equal, Op.GT: np.greater,
    Op.GE: np.greater_equal, Op.EQ: np.equal, Op.NE: np.not_equal,
}


def _erf(x):
    from scipy.special import erf
    return erf(x)


def _rsqrt(x):
    return np.asarray(1, x.dtype) / np.sqrt(x)


def _int_div(a, b, d: DType):
    """C/XLA integer division: truncate; x/0 = -1 (all ones); INT_MIN/-1 = INT_MIN."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(a.dtype)
    if d.kind == "i":
        overflow = (a == np.iinfo(a.dtype).min) & (bs == -1)
        bs = np.where(overflow, 1, bs).astype(a.dtype)
        q = a // bs                                   # floor; step toward zero when inexact
        inexact = (a - q * bs) != 0
        q = np.where(inexact & ((a < 0) != (bs < 0)), q + 1, q).astype(a.dtype)
    else:
        q = a // bs
    return np.where(zero, np.array(-1).astype(a.dtype), q).astype(a.dtype)


def _int_rem(a, b, d: DType):
    """C/XLA remainder: sign of the dividend; x % 0 = x; INT_MIN % -1 = 0."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(a.dtype)
    if d.kind == "i":
        bs = np.where((a == np.iinfo(a.dtype).min) & (bs == -1), 1, bs).astype(a.dtype)
        r = np.fmod(a, bs)
    else:
        r = a % bs
    return np.where(zero, a, r).astype(a.dtype)


def _shift(op: Op, a, b, d: DType):
    bits = d.bits
    if d.is_sub_byte:   # on the low ``bits`` bits, as int64
        u, amt = a.astype(np.int64) & ((1 << bits) - 1), b.astype(np.int64)
        big = (amt < 0) | (amt >= bits)
        s = np.where(big, 0, amt)
        if op is Op.SHRA:
            v = _wrap(a, d)
            return np.where(big, np.where(v < 0, -1, 0), v >> s)
        return np.where(big, 0, u << s if op is Op.SHL else u >> s)
    ua = a.view(np.dtype(f"uint{bits}")) if d.kind == "i" else a
    amt = b.astype(np.int64)
    big = (amt < 0) | (amt >= bits)
    s = np.where(big, 0, amt).astype(ua.dtype)
    if op is Op.SHL:
        r = np.left_shift(ua, s)
        return np.where(big, 0, r).astype(ua.dtype).view(a.dtype)
    if op is Op.SHRL:
        r = np.right_shift(ua, s)
        return np.where(big, 0, r).astype(ua.dtype).view(a.dtype)
    if d.kind == "u":
        return np.where(big, 0, np.right_shift(a, s)).astype(a.dtype)
    r = np.right_shift(a, s.astype(a.dtype))
    return np.where(big, np.where(a < 0, -1, 0), r).astype(a.dtype)


def _int_pow(a, b):
    out = np.ones(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    base = np.broadcast_to(a, out.shape).copy()
    e = np.broadcast_to(b, out.shape).astype(np.int64).copy()
    neg = e < 0
    e = np.where(neg, 0, e)
    while np.any(e > 0):
        odd = (e & 1) == 1
        out = np.where(odd, out * base, out)
        base = base * base
        e >>= 1
    negres = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, negres, out).astype(a.dtype)


def _widen(x: np.ndarray) -> np.ndarray:
    """``x`` in a numpy type holding its values exactly: floats under 32 bits as float32,
    sub-byte integers as int8/uint8 (ml_dtypes' own arithmetic does not wrap at their width)."""
    d = dt.dtype(x.dtype)
    if d.is_narrow_float:
        return x.astype(np.float32)
    if d.is_sub_byte:
        return x.astype(np.int8 if d.kind == "i" else np.uint8)
    return x


def _wrap(x: np.ndarray, d: DType) -> np.ndarray:
    """Integers reduced modulo ``2**d.bits`` into ``d``'s range (two's complement)."""
    u = np.asarray(x).astype(np.int64) & ((1 << d.bits) - 1)
    if d.kind == "i":
        u = u - ((u >> (d.bits - 1)) << d.bits)
    return u


def _to_dtype(r, d: DType) -> np.ndarray:
    """A result computed in a wide type, as ``d`` (sub-byte integers wrap at their width)."""
    r = np.asarray(r)
    if d.is_sub_byte:
        return _wrap(r, d).astype(d.np)
    if d.np.name in ("float64", "float32") or not d.is_float or d.bits >= 16 or r.dtype.kind != "i":
        return r.astype(d.np)
    return r.astype(np.float64).astype(d.np)    # ints -> float8: through float64 (one rounding)


def _cast(x, d: DType):
    """XLA's convert: float -> int truncates, saturates, NaN -> 0; int -> int wraps; a complex
    converts to a real type through its real part; every float conversion rounds once."""
    src = dt.dtype(x.dtype)
    if src.is_complex:
        if d.is_complex:
            return x.astype(d.np)
        x, src = x.real, src.component
    x = _widen(x)
    if d.is_complex:
        return x.astype(np.float64 if d is dt.complex128 else np.float32).astype(d.np)
    if d.is_bool:
        return x != 0
    if d.is_int and src.is_float:
        info = ml_dtypes.iinfo(d.np)
        f = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0, posinf=info.max, neginf=info.min)
        f = np.clip(f, info.min, info.max)
        if d.is_sub_byte:
            return f.astype(np.int64).astype(d.np)
        out = f.astype(d.np)
        if d.bits == 64:  # float64 cannot hold the 64-bit maxima exactly: saturate explicitly
            top = 2.0**63 if d.kind == "i" else 2.0**64
            out = np.where(f >= top, info.max, out).astype(d.np)
        return out
    if d.is_sub_byte:
        return _wrap(x, d).astype(d.np)
    return _to_dtype(x, d)


def _bitcast(x: np.ndarray, d: DType) -> np.ndarray:
    """The bits of ``x`` as ``d`` (same width; a type under 8 bits is the low bits of a byte)."""
    src = dt.dtype(x.dtype)
    x = np.require(x, requirements="C")
    if src.bits >= 8 and d.bits >= 8:
        return x.view(d.np).reshape(x.shape)
    code = x.view(np.uint8).reshape(x.shape) & np.uint8((1 << src.bits) - 1)
    if d.is_int:
        return _wrap(code, d).astype(d.np)
    return code.view(d.np)


def _clz(a, d: DType):
    if d.is_sub_byte:
        u = a.astype(np.int64) & ((1 << d.bits) - 1)
        n = np.full(u.shape, d.bits, np.int64)
        for bit in range(d.bits):
            n = np.where((u >> bit) & 1 == 1, d.bits - 1 - bit, n)
        return n
    u = a.view(np.dtype(f"uint{d.bits}")) if d.kind == "i" else a
    n = np.zeros(u.shape, np.int64)
    found = np.zeros(u.shape, bool)
    for bit in range(d.bits - 1, -1, -1):
        set_ = ((u >> np.asarray(bit, u.dtype)) & np.asarray(1, u.dtype)) == 1
        found |= set_
        n += ~found
    return n.astype(a.dtype)


def eval_op(op: Op, dtype: DType, args: Sequence[np.ndarray], complex_op=None):
    """Apply one elementwise op to numpy arrays; ``dtype`` is the result dtype.

    Floats under 32 bits compute in float32 and round once to the result type (as XLA:CPU
    does); sub-byte integers compute in 8 bits and wrap at their width; complex operands go
    through ``complex_op(op, dtype, operand dtype, args)`` (the reference evaluator's: the op's
    formula in dsl/complexmath.py), and without one raise ``ComplexOperands``.
    """
    with np.errstate(all="ignore"):
        args = [np.asarray(a) for a in args]
        if op is Op.CAST:
            return _cast(args[0], dtype)
        if op is Op.BITCAST:
            return _bitcast(args[0], dtype)
        if op in (Op.COMPLEX, Op.REAL, Op.IMAG):
            return _parts(op, dtype, args)
        if op is Op.SELECT:
            return _to_dtype(np.where(args[0], _widen(args[1]), _widen(args[2])), dtype)
        operand_dt = dt.dtype(args[-1].dtype)
        if operand_dt.is_complex:
            if complex_op is None:
                raise ComplexOperands(op)
            return complex_op(op, dtype, operand_dt, args)
        args = [_widen(a) for a in args]
        r = _eval_math(op, operand_dt if operand_dt.is_sub_byte else dt.dtype(args[-1].dtype), args)
        return _to_dtype(r, dtype)


def _parts(op: Op, dtype: DType, args):
    """complex(re, im), real(z), imag(z) (of a real value: itself and zeros)."""
    if op is Op.COMPLEX:
        re, im = np.broadcast_arrays(*args)
        out = np.empty(re.shape, dtype.np)
        out.real, out.imag = re, im
        return out
    x = args[0]
    if not np.iscomplexobj(x):
        return x.astype(dtype.np) if op is Op.REAL else np.zeros(x.shape, dtype.np)
    return (x.real if op is Op.REAL else x.imag).astype(dtype.np)


def _eval_math(op: Op, d: DType, args):
    if op in _UNARY:
        return _UNARY[op](args[0])
    if op is Op.ERF:
        return _erf(args[0])
    if op is Op.RSQRT:
        return _rsqrt(args[0])
    if op is Op.NEG:
        return np.negative(args[0]) if not d.is_bool else args[0]
    if op is Op.NOT:
        return np.logical_not(args[0]) if d.is_bool else np.invert(args[0])
    if op is Op.POPCNT:
        if d.is_sub_byte:
            return np.bitwise_count(args[0].astype(np.int64) & ((1 << d.bits) - 1))
        u = args[0].view(np.dtype(f"uint{d.bits}")) if d.kind == "i" else args[0]
        return np.bitwise_count(u)
    if op is Op.CLZ:
        return _clz(args[0], d)
    a, b = args
    if op in _BINARY:
        return _BINARY[op](a, b)
    if op is Op.DIV:
        return np.true_divide(a, b).astype(a.dtype) if d.is_float else _int_div(a, b, d)
    if op is Op.REM:
        return np.fmod(a, b) if d.is_float else _int_rem(a, b, d)
    if op is Op.FLOORDIV:  # integer x // 0 = -1 (all ones), as x / 0
        if d.is_int:
            return np.where(b == 0, np.array(-1).astype(a.dtype), np.floor_divide(a, np.where(b == 0, 1, b)))
        return np.floor_divide(a, b)
    if op is Op.FLOORMOD:  # integer mod(x, 0) = x, as x % 0
        return np.where(b == 0, a, np.mod(a, np.where(b == 0, 1, b))) if d.is_int else np.mod(a, b)
    if op is Op.POW:
        return np.power(a, b) if d.is_float else _int_pow(a, b)
    if op in (Op.SHL, Op.SHRA, Op.SHRL):
        return _shift(op, a, b, d)
    raise DSLError(f"reference: no rule for op {op.name}")


__all__ = ["ComplexOperands", "eval_op"]
