"""Elementwise HLO ops: arithmetic, math functions, compare, select, clamp, convert, map.

Operands of one elementwise op share the result's shape (rank-0 operands of ``select`` and
``clamp`` broadcast). Integer ``divide``/``remainder`` use the DSL's C/XLA semantics.
"""

from __future__ import annotations

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, binary, bitcast, cast, const, select, substitute, unary
from ...dsl.ops import GroupOp, Op
from ...dsl.tensor import ComputeOp
from .common import SEMANTICS, const_value, dims_of, dtype_of, ew, load, unsupported

_UNARY_DOC = f"{SEMANTICS}#element-wise_unary_functions"
_BINARY_DOC = f"{SEMANTICS}#element-wise_binary_arithmetic_operations"


def _trunc(x: Expr) -> Expr:
    return select(binary(Op.LT, x, 0.0), unary(Op.CEIL, x), unary(Op.FLOOR, x))


def _round_afz(x: Expr) -> Expr:
    """Round half away from zero: trunc(x), plus sign(x) when the dropped part is >= 0.5."""
    t = _trunc(x)
    frac = unary(Op.ABS, binary(Op.SUB, x, t))
    return select(binary(Op.GE, frac, 0.5), binary(Op.ADD, t, unary(Op.SIGN, x)), t)


def _logistic(x: Expr) -> Expr:
    one = const(1.0, x.dtype)
    return binary(Op.DIV, one, binary(Op.ADD, one, unary(Op.EXP, unary(Op.NEG, x))))


_UNARY_FNS = {
    "negate": lambda x: unary(Op.NEG, x), "abs": lambda x: unary(Op.ABS, x),
    "sign": lambda x: unary(Op.SIGN, x), "not": lambda x: unary(Op.NOT, x),
    "exponential": lambda x: unary(Op.EXP, x), "exponential-minus-one": lambda x: unary(Op.EXPM1, x),
    "log": lambda x: unary(Op.LOG, x), "log-plus-one": lambda x: unary(Op.LOG1P, x),
    "sqrt": lambda x: unary(Op.SQRT, x), "rsqrt": lambda x: unary(Op.RSQRT, x),
    "cbrt": lambda x: unary(Op.CBRT, x), "tanh": lambda x: unary(Op.TANH, x),
    "erf": lambda x: unary(Op.ERF, x), "sine": lambda x: unary(Op.SIN, x),
    "cosine": lambda x: unary(Op.COS, x), "tan": lambda x: unary(Op.TAN, x),
    "floor": lambda x: unary(Op.FLOOR, x), "ceil": lambda x: unary(Op.CEIL, x),
    "round-nearest-even": lambda x: unary(Op.ROUND, x), "round-nearest-afz": _round_afz,
    "is-finite": lambda x: unary(Op.ISFINITE, x), "popcnt": lambda x: unary(Op.POPCNT, x),
    "count-leading-zeros": lambda x: unary(Op.CLZ, x), "logistic": _logistic,
}
#: ops XLA defines on integers and pred only (popcnt/clz: integers)
_INT_ONLY = {"not", "popcnt", "count-leading-zeros"}
_FLOAT_ONLY = {"exponential", "exponential-minus-one", "log", "log-plus-one", "sqrt", "rsqrt",
               "cbrt", "tanh", "erf", "sine", "cosine", "tan", "floor", "ceil",
               "round-nearest-even", "round-nearest-afz", "is-finite", "logistic"}
#: the ops XLA also defines on complex operands (dsl/complexmath.py)
_COMPLEX_OK = {"negate", "abs", "sign", "exponential", "exponential-minus-one", "log", "log-plus-one",
               "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan", "logistic"}

_BINARY_OPS = {
    "add": Op.ADD, "subtract": Op.SUB, "multiply": Op.MUL, "divide": Op.DIV, "remainder": Op.REM,
    "power": Op.POW, "maximum": Op.MAX, "minimum": Op.MIN, "atan2": Op.ATAN2, "and": Op.AND,
    "or": Op.OR, "xor": Op.XOR, "shift-left": Op.SHL, "shift-right-arithmetic": Op.SHRA,
    "shift-right-logical": Op.SHRL,
}
#: operand order changes no bit of the result (so a constant operand goes right, as XLA's HLO
#: writes it and JAX's StableHLO may not: one program, one workload key)
_COMMUTATIVE = (Op.ADD, Op.MUL, Op.AND, Op.OR, Op.XOR)
_COMPARE = {"EQ": Op.EQ, "NE": Op.NE, "LT": Op.LT, "LE": Op.LE, "GT": Op.GT, "GE": Op.GE}


def _make_unary(opcode: str):
    fn = _UNARY_FNS[opcode]

    def handler(ctx, instr, operands):
        (x,) = operands
        if x.dtype.is_complex and opcode not in _COMPLEX_OK:
            raise unsupported(ctx, instr, f"{opcode} of complex {x.dtype}")
        if opcode in _FLOAT_ONLY and not (x.dtype.is_float or x.dtype.is_complex):
            raise unsupported(ctx, instr, f"{opcode} needs a floating-point operand, got {x.dtype}")
        if opcode in _INT_ONLY and (x.dtype.is_float or x.dtype.is_complex):
            raise unsupported(ctx, instr, f"{opcode} needs an integer or pred operand, got {x.dtype}")
        return ew(instr, dims_of(instr), lambda *i: fn(load(x, i)), dtype_of(ctx, instr))
    handler.__name__ = f"lower_{opcode.replace('-', '_')}"
    handler.__doc__ = f"Elementwise ``{opcode}``: {_UNARY_DOC}"
    return handler


def _make_binary(opcode: str):
    op = _BINARY_OPS[opcode]

    def handler(ctx, instr, operands):
        a, b = operands
        if op in (Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHRA, Op.SHRL) and (a.dtype.is_float or a.dtype.is_complex):
            raise unsupported(ctx, instr, f"{opcode} needs integer or pred operands")
        if a.dtype.is_complex and op not in GroupOp.Complex:
            raise unsupported(ctx, instr, f"{opcode} of complex {a.dtype}")
        if op is Op.ATAN2 and not (a.dtype.is_float or a.dtype.is_complex):
            raise unsupported(ctx, instr, f"atan2 needs floating-point operands, got {a.dtype}")
        if op in _COMMUTATIVE and const_value(a) is not None and const_value(b) is None:
            a, b = b, a     # the constant on the right, however the producer wrote it
        return ew(instr, dims_of(instr), lambda *i: binary(op, load(a, i), load(b, i)),
                  dtype_of(ctx, instr))
    handler.__name__ = f"lower_{opcode.replace('-', '_')}"
    handler.__doc__ = f"Elementwise ``{opcode}``: {_BINARY_DOC}" + _BINARY_NOTES.get(opcode, "")
    return handler


#: where hlotune's answer is the StableHLO spec's and XLA's differs
_BINARY_NOTES = {
    "power": " Integer powers follow the StableHLO spec's reference interpreter: a negative signed exponent "
             "gives 0 (1 or -1 for a base of 1 or -1) and an unsigned exponent is never negative, so "
             "5^(2^31+3) in u32 is 125 (exact modulo 2^32); XLA:CPU reads unsigned exponents with the top bit "
             "set as negative and gives 0 there.",
}


def total_order_key(x: Expr) -> Expr:
    """A signed integer whose order is IEEE totalOrder of the float ``x``
    (-NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN)."""
    idt = dt.dtype(f"int{x.dtype.bits}")
    i = bitcast(x, idt)
    mask = const((1 << (x.dtype.bits - 1)) - 1, idt)
    return binary(Op.XOR, i, binary(Op.AND, binary(Op.SHRA, i, const(x.dtype.bits - 1, idt)), mask))


def compare_exprs(direction: str, ctype: str | None, a: Expr, b: Expr) -> Expr:
    """``a <direction> b`` with XLA's comparison ``type`` (TOTALORDER, SIGNED, UNSIGNED, FLOAT)."""
    d = a.dtype
    if d.is_float and ctype == "TOTALORDER":
        a, b = total_order_key(a), total_order_key(b)
    elif ctype == "UNSIGNED" and d.kind == "i":
        u = dt.dtype(f"uint{d.bits}")
        a, b = bitcast(a, u), bitcast(b, u)
    elif ctype == "SIGNED" and d.kind == "u":
        s = dt.dtype(f"int{d.bits}")
        a, b = bitcast(a, s), bitcast(b, s)
    return binary(_COMPARE[direction], a, b)


def lower_compare(ctx, instr, operands):
    """``compare`` with ``direction`` and optional ``type`` (TOTALORDER, UNSIGNED, ...):
    https://openxla.org/xla/operation_semantics#element-wise_comparison_operations"""
    a, b = operands
    direction = instr.attr("direction")
    if direction not in _COMPARE:
        raise unsupported(ctx, instr, f"comparison direction {direction!r}")
    if a.dtype.is_complex and direction not in ("EQ", "NE"):
        raise unsupported(ctx, instr, f"comparison {direction} of complex {a.dtype} (only EQ and NE)")
    ctype = instr.attr("type")
    return ew(instr, dims_of(instr), lambda *i: compare_exprs(direction, ctype, load(a, i), load(b, i)),
              dtype_of(ctx, instr))


def lower_select(ctx, instr, operands):
    """``select(pred, on_true, on_false)``: https://openxla.org/xla/operation_semantics#select"""
    p, a, b = operands
    return ew(instr, dims_of(instr), lambda *i: select(load(p, i), load(a, i), load(b, i)),
              dtype_of(ctx, instr))


def lower_clamp(ctx, instr, operands):
    """``clamp(min, x, max)`` = min(max(x, min), max): https://openxla.org/xla/operation_semantics#clamp"""
    lo, x, hi = operands
    return ew(instr, dims_of(instr),
              lambda *i: binary(Op.MIN, binary(Op.MAX, load(x, i), load(lo, i)), load(hi, i)),
              dtype_of(ctx, instr))


def lower_convert(ctx, instr, operands):
    """``convert`` (float->int truncates, saturates, NaN->0):
    https://openxla.org/xla/operation_semantics#convertelementtype

    Widening a bfloat16 that an arithmetic op just produced computes that op in the wide type
    without rounding it to bfloat16 first, as XLA:CPU does (excess precision is allowed by
    default: its simplify-fp-conversions pass removes the f32->bf16->f32 pair). float16 ops
    round each result, as XLA:CPU's do (checked against jax 0.10.2: bit for bit)."""
    (x,) = operands
    out = dtype_of(ctx, instr)

    def value(*i):
        wide = _excess_precision(x, out, i)
        return wide if wide is not None else cast(load(x, i), out)
    return ew(instr, dims_of(instr), value)


def _excess_precision(x, out, idx):
    op = x.op
    if not (out.is_float and x.dtype is dt.bfloat16 and out.bits > 16):
        return None
    if not isinstance(op, ComputeOp) or op.is_reduction:
        return None
    e = substitute(op.body[x.value_index], dict(zip(op.axis, idx)))
    if e.dtype is not x.dtype:
        return None
    if e.op in GroupOp.Binary and e.op not in GroupOp.Compare and e.op not in GroupOp.Bitwise:
        return binary(e.op, *(cast(s, out) for s in e.src))
    if e.op in GroupOp.Unary and e.op is not Op.ISFINITE:
        return unary(e.op, cast(e.src[0], out))
    return None


def lower_map(ctx, instr, operands):
    """``map`` of a scalar computation over all dimensions:
    https://openxla.org/xla/operation_semantics#map"""
    fn = ctx.scalar_fn(instr.attr("to_apply"), instr)
    if len(instr.shape.dims) != len(operands[0].shape) or \
            tuple(instr.attr("dimensions", range(len(operands[0].shape)))) != \
            tuple(range(len(operands[0].shape))):
        raise unsupported(ctx, instr, "map over a subset of dimensions")
    return ew(instr, dims_of(instr), lambda *i: fn([load(t, i) for t in operands])[0],
              dtype_of(ctx, instr))


HANDLERS = {op: _make_unary(op) for op in _UNARY_FNS}
HANDLERS.update({op: _make_binary(op) for op in _BINARY_OPS})
HANDLERS.update({
    "compare": lower_compare, "select": lower_select, "clamp": lower_clamp,
    "convert": lower_convert, "map": lower_map,
})

__all__ = ["HANDLERS", "compare_exprs", "total_order_key"]
