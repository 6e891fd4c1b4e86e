"""The tensor-expression DSL: what is computed.

``placeholder``/``compute``/``reduce_axis`` define tensors; reducers ``sum``/``max``/``min``/``prod``
and ``comm_reducer``; math functions below build elementwise expressions.
"""

from __future__ import annotations

from . import dtypes
from .dtypes import DType, dtype
from .errors import DSLError
from .expr import Expr, IterVar, as_expr, binary, bitcast, cast, const, select, unary
from .ops import GroupOp, Op
from .tensor import (
    ComputeOp,
    ExternOp,
    Graph,
    PlaceholderOp,
    Tensor,
    comm_reducer,
    compute,
    extern,
    placeholder,
    prod,
    reduce_axis,
    sum,
)
from .tensor import max as _rmax
from .tensor import min as _rmin

__all__ = [
    "ComputeOp",
    "DSLError",
    "DType",
    "Expr",
    "ExternOp",
    "Graph",
    "GroupOp",
    "IterVar",
    "Op",
    "PlaceholderOp",
    "Tensor",
    "abs",
    "as_expr",
    "atan2",
    "bitcast",
    "cast",
    "cbrt",
    "ceil",
    "clz",
    "comm_reducer",
    "complex",
    "compute",
    "const",
    "cos",
    "dtype",
    "dtypes",
    "equal",
    "erf",
    "exp",
    "expm1",
    "extern",
    "floor",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "imag",
    "isfinite",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "max",
    "maximum",
    "min",
    "minimum",
    "not_equal",
    "placeholder",
    "popcount",
    "pow",
    "prod",
    "real",
    "reduce_axis",
    "rem",
    "round",
    "rsqrt",
    "select",
    "shift_right_logical",
    "sign",
    "sin",
    "sqrt",
    "sum",
    "tan",
    "tanh",
]


def _u(op):
    def f(x):
        return unary(op, x)
    f.__name__ = op.name.lower()
    f.__doc__ = f"Elementwise {op.name.lower()}."
    return f


def _b(op):
    def f(a, b):
        return binary(op, a, b)
    f.__name__ = op.name.lower()
    f.__doc__ = f"Elementwise {op.name.lower()} with numpy promotion."
    return f


exp, expm1, log, log1p = _u(Op.EXP), _u(Op.EXPM1), _u(Op.LOG), _u(Op.LOG1P)
tanh, sqrt, rsqrt, cbrt, erf = _u(Op.TANH), _u(Op.SQRT), _u(Op.RSQRT), _u(Op.CBRT), _u(Op.ERF)
sin, cos, tan = _u(Op.SIN), _u(Op.COS), _u(Op.TAN)
abs, sign, floor, ceil = _u(Op.ABS), _u(Op.SIGN), _u(Op.FLOOR), _u(Op.CEIL)
round = _u(Op.ROUND)
isfinite, logical_not = _u(Op.ISFINITE), _u(Op.NOT)
popcount, clz = _u(Op.POPCNT), _u(Op.CLZ)
pow, atan2 = _b(Op.POW), _b(Op.ATAN2)
maximum, minimum = _b(Op.MAX), _b(Op.MIN)
equal, not_equal, less, less_equal = _b(Op.EQ), _b(Op.NE), _b(Op.LT), _b(Op.LE)
greater, greater_equal = _b(Op.GT), _b(Op.GE)
logical_and, logical_or = _b(Op.AND), _b(Op.OR)
rem, floordiv, floormod = _b(Op.REM), _b(Op.FLOORDIV), _b(Op.FLOORMOD)
shift_right_logical = _b(Op.SHRL)
real, imag, complex = _u(Op.REAL), _u(Op.IMAG), _b(Op.COMPLEX)   # complex parts (complex: re, im)


def max(*args, axis=None, where=None):
    """``max(a, b)``: elementwise maximum (NaN propagates); ``max(e, axis=k)``: reduction."""
    if axis is not None:
        return _rmax(args[0], axis=axis, where=where)
    return binary(Op.MAX, *args)


def min(*args, axis=None, where=None):
    """``min(a, b)``: elementwise minimum (NaN propagates); ``min(e, axis=k)``: reduction."""
    if axis is not None:
        return _rmin(args[0], axis=axis, where=where)
    return binary(Op.MIN, *args)
