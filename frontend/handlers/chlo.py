"""CHLO ops without an HLO opcode, lowered as StableHLO's ``chlo-legalize-to-stablehlo`` pass
decomposes them (see :mod:`.chlo_math`): elementwise math (erfc, erf_inv, lgamma, digamma,
sinh, cosh, asin, acos, atan, asinh, acosh, atanh, bessel_i1e, next_after, polygamma, zeta,
is_inf, ...), ``mulhi``, ``ragged_dot`` and ``scan``.

The StableHLO front-end (:mod:`..stablehlo_convert`) turns ``chlo.X`` into an instruction with the
internal opcode ``chlo.X``; XLA's HLO text never holds one (XLA decomposes CHLO before it
prints HLO), except the functions that newer XLA has opcodes for (``acos``, ..., ``mulhi``),
which lower the same way. https://openxla.org/stablehlo/generated/chlo
"""

from __future__ import annotations

from ...dsl.expr import Expr
from .chlo_math import FLOAT_BINARY, FLOAT_UNARY, mulhi
from .common import dims_of, dtype_of, load, unsupported
from .staging import staged_compute

_CHLO_DOC = "https://openxla.org/stablehlo/generated/chlo"


def _check_operands(ctx, instr, operands, want_float: bool) -> None:
    out = dims_of(instr)
    first = operands[0]
    for t in operands:
        if tuple(t.shape) != out or t.dtype is not first.dtype:
            raise unsupported(ctx, instr, f"operands must share the result's shape {list(out)} "
                                          f"and one element type, got {[(list(o.shape), o.dtype) for o in operands]}")
    if want_float and not first.dtype.is_float:
        raise unsupported(ctx, instr, f"needs floating-point operands, got {first.dtype}")
    if not want_float and not first.dtype.is_int:
        raise unsupported(ctx, instr, f"needs integer operands, got {first.dtype}")


def _make(name: str, fn, want_float: bool = True):
    opcode = f"chlo.{name}"

    def handler(ctx, instr, operands):
        _check_operands(ctx, instr, operands, want_float)

        def value(*i) -> Expr:
            return fn(*(load(t, i) for t in operands))
        return staged_compute(dims_of(instr), value, instr.name, instr.opcode, dtype_of(ctx, instr))
    handler.__name__ = f"lower_chlo_{name}"
    summary = (fn.__doc__ or "").strip().split("\n\n")[0]
    handler.__doc__ = f"{summary} {_CHLO_DOC}#chlo{name.replace('_', '')}"
    return opcode, handler


HANDLERS = dict(_make(n, f) for n, f in {**FLOAT_UNARY, **FLOAT_BINARY}.items())
HANDLERS.update([_make("mulhi", mulhi, want_float=False)])

#: HLO opcodes of these functions (newer XLA prints them instead of their expansion)
HLO_OPCODES = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "mulhi")
HANDLERS.update({op: HANDLERS[f"chlo.{op}"] for op in HLO_OPCODES})

__all__ = ["HANDLERS", "HLO_OPCODES"]
