"""Readable text of expressions (C-like infix), used by ``repr`` and the loop-nest printer."""

from __future__ import annotations

from .ops import Op

_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.REM: "%", Op.FLOORDIV: "//",
          Op.FLOORMOD: "mod", Op.AND: "&", Op.OR: "|", Op.XOR: "^", Op.SHL: "<<", Op.SHRA: ">>",
          Op.SHRL: ">>>", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.EQ: "==", Op.NE: "!="}


def expr_str(e, depth: int = 0) -> str:
    """One-line text of ``e``; loads print as ``name[i, j]``."""
    if depth > 60:
        return "..."
    d = depth + 1
    if e.op is Op.CONST:
        return repr(e.arg) if not isinstance(e.arg, float) else f"{e.arg!r}"
    if e.op is Op.VAR:
        return e.arg.name
    if e.op is Op.LOAD:
        return f"{e.arg.name}[{', '.join(expr_str(i, d) for i in e.src)}]"
    if e.op in _INFIX:
        return f"({expr_str(e.src[0], d)} {_INFIX[e.op]} {expr_str(e.src[1], d)})"
    if e.op is Op.REDUCE:
        axes = ", ".join(a.name for a in e.arg.axes)
        vals = ", ".join(expr_str(s, d) for s in e.src)
        return f"{e.arg.reducer.name}({vals}, axis=[{axes}])"
    if e.op in (Op.CAST, Op.BITCAST):
        return f"{e.op.name.lower()}<{e.dtype}>({expr_str(e.src[0], d)})"
    return f"{e.op.name.lower()}({', '.join(expr_str(s, d) for s in e.src)})"
