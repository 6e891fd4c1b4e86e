"""The one opcode enum of hlotune's expression IR, and its op families.

Shared by the DSL, the reference evaluator, the loop IR and every renderer.
"""

from __future__ import annotations

from enum import Enum, auto


class Op(Enum):
    # leaves
    CONST = auto()      # arg: python scalar
    VAR = auto()        # arg: IterVar (loop or reducer variable)
    LOAD = auto()       # src: indices; arg: Tensor (DSL level) or Buffer (loop IR level)
    # unary
    NEG = auto(); NOT = auto(); ABS = auto(); SIGN = auto()
    EXP = auto(); EXPM1 = auto(); LOG = auto(); LOG1P = auto()
    SQRT = auto(); RSQRT = auto(); CBRT = auto(); TANH = auto(); ERF = auto()
    SIN = auto(); COS = auto(); TAN = auto()
    FLOOR = auto(); CEIL = auto(); ROUND = auto(); ISFINITE = auto()
    POPCNT = auto(); CLZ = auto()
    REAL = auto(); IMAG = auto()        # parts of a complex (of a real value: itself, 0)
    # binary
    ADD = auto(); SUB = auto(); MUL = auto(); DIV = auto(); REM = auto()
    FLOORDIV = auto(); FLOORMOD = auto(); POW = auto(); ATAN2 = auto()
    MAX = auto(); MIN = auto()
    AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHRA = auto(); SHRL = auto()
    LT = auto(); LE = auto(); GT = auto(); GE = auto(); EQ = auto(); NE = auto()
    COMPLEX = auto()                    # (real, imaginary) -> complex
    # ternary
    SELECT = auto()
    # conversions: dtype is the target
    CAST = auto(); BITCAST = auto()
    # reduction: src: values; arg: ReduceSpec
    REDUCE = auto()


class GroupOp:
    """Named op families."""

    Unary = frozenset({Op.NEG, Op.NOT, Op.ABS, Op.SIGN, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT,
                       Op.RSQRT, Op.CBRT, Op.TANH, Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.FLOOR, Op.CEIL,
                       Op.ROUND, Op.ISFINITE, Op.POPCNT, Op.CLZ, Op.REAL, Op.IMAG})
    FloatUnary = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT, Op.RSQRT, Op.CBRT, Op.TANH,
                            Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.FLOOR, Op.CEIL, Op.ROUND, Op.ISFINITE})
    Compare = frozenset({Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE})
    Bitwise = frozenset({Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHRA, Op.SHRL})
    Binary = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.FLOORDIV, Op.FLOORMOD, Op.POW,
                        Op.ATAN2, Op.MAX, Op.MIN, Op.COMPLEX}) | Bitwise | Compare
    Commutative = frozenset({Op.ADD, Op.MUL, Op.MAX, Op.MIN, Op.AND, Op.OR, Op.XOR, Op.EQ, Op.NE})
    Elementwise = Unary | Binary | frozenset({Op.SELECT, Op.CAST, Op.BITCAST})
    #: ops defined on complex operands (each computed by a formula of dsl/complexmath.py)
    Complex = frozenset({Op.NEG, Op.ABS, Op.SIGN, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT,
                         Op.RSQRT, Op.CBRT, Op.TANH, Op.SIN, Op.COS, Op.TAN, Op.ADD, Op.SUB, Op.MUL,
                         Op.DIV, Op.POW, Op.ATAN2, Op.MAX, Op.MIN, Op.EQ, Op.NE})
