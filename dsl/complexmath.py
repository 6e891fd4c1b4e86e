"""Complex arithmetic and math as XLA:CPU computes them, written once as float code.

Every op on complex operands is a :class:`Formula`: straight-line code over the parts of its
operands (float32 parts for complex64, float64 for complex128) that gives the parts of its
result. The formulas transcribe XLA's elemental IR emitter (``xla/service/elemental_ir_emitter.cc``,
``EmitComplex*``): multiplication is the plain ``(ac - bd, ad + bc)`` (no C99 Annex G recovery of
infinities), division is Smith's algorithm with XLA's three corner cases, ``abs`` scales by the
larger part and gives the smaller where the product is NaN, and sqrt/rsqrt/pow/tanh/tan/sin/cos/
exp/expm1/log/log1p/sign/atan2 follow their emitters, special values included; cbrt (the principal
root) and maximum/minimum (lexicographic) follow the StableHLO specification, as XLA has none. The reference
evaluator runs a formula on numpy arrays; the C-family renderers print it as one helper function
per op and type, so both compute the same thing by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from . import dtypes as dt
from .dtypes import DType
from .errors import DSLError
from .expr import AxisKind, Expr, IterVar, binary, bitcast, const, select, unary
from .ops import Op

__all__ = ["Formula", "formula"]


@dataclass(frozen=True, eq=False)
class Formula:
    """``op`` on operands of complex ``dtype``: ``params`` are the operands' parts
    (``a_re, a_im[, b_re, b_im]``), ``steps`` bind temporaries in order, ``results`` are the
    parts of a complex result or the one value of a real (``abs``) or bool (``==``) result."""

    op: Op
    dtype: DType
    params: tuple[IterVar, ...]
    steps: tuple[tuple[IterVar, Expr], ...]
    results: tuple[Expr, ...]

    @property
    def name(self) -> str:
        return f"{self.op.name.lower()}_c{self.dtype.bits}"

    @property
    def arity(self) -> int:
        return len(self.params) // 2

    @property
    def result_dtype(self) -> DType:
        return self.dtype if len(self.results) == 2 else self.results[0].dtype


class _Builder:
    """Collects let-bound temporaries (each a ``param`` IterVar) so no subexpression repeats."""

    def __init__(self, t: DType):
        self.t = t
        self.steps: list[tuple[IterVar, Expr]] = []

    def let(self, e: Expr) -> Expr:
        if e.op in (Op.CONST, Op.VAR):
            return e
        v = IterVar(f"t{len(self.steps)}", 0, AxisKind.PARAM, e.dtype)
        self.steps.append((v, e))
        return v.var

    def c(self, v: float) -> Expr:
        return const(v, self.t)


C = tuple[Expr, Expr]      # a complex value as (re, im)


def _u(op, x):
    return unary(op, x)


def _b(op, x, y):
    return binary(op, x, y)


def _isnan(x: Expr) -> Expr:
    return _b(Op.NE, x, x)


def _copysign(b: _Builder, mag: Expr, sign: Expr) -> Expr:
    """|mag| with the sign bit of ``sign`` (-0.0 counts as negative)."""
    neg = _b(Op.LT, bitcast(sign, dt.dtype(f"int{b.t.bits}")), 0)
    m = b.let(_u(Op.ABS, mag))
    return select(neg, _u(Op.NEG, m), m)


def _add(b, x: C, y: C) -> C:
    return b.let(_b(Op.ADD, x[0], y[0])), b.let(_b(Op.ADD, x[1], y[1]))


def _sub(b, x: C, y: C) -> C:
    return b.let(_b(Op.SUB, x[0], y[0])), b.let(_b(Op.SUB, x[1], y[1]))


def _mul(b, x: C, y: C) -> C:
    (a, bb), (c, d) = x, y
    return (b.let(_b(Op.SUB, _b(Op.MUL, a, c), _b(Op.MUL, bb, d))),
            b.let(_b(Op.ADD, _b(Op.MUL, a, d), _b(Op.MUL, bb, c))))


def _div(b, x: C, y: C) -> C:
    """Smith's algorithm, then XLA's corner cases where it gives (NaN, NaN)."""
    (ar, ai), (br, bi) = x, y
    zero, one, inf = b.c(0.0), b.c(1.0), b.c(float("inf"))
    rb = b.let(_b(Op.DIV, br, bi))
    db = b.let(_b(Op.ADD, bi, _b(Op.MUL, rb, br)))
    ib = b.let(_b(Op.DIV, bi, br))
    dib = b.let(_b(Op.ADD, br, _b(Op.MUL, ib, bi)))
    abr, abi = b.let(_u(Op.ABS, br)), b.let(_u(Op.ABS, bi))
    lt = b.let(_b(Op.LT, abr, abi))
    cr = b.let(select(lt, _b(Op.DIV, _b(Op.ADD, _b(Op.MUL, rb, ar), ai), db),
                      _b(Op.DIV, _b(Op.ADD, _b(Op.MUL, ib, ai), ar), dib)))
    ci = b.let(select(lt, _b(Op.DIV, _b(Op.SUB, _b(Op.MUL, rb, ai), ar), db),
                      _b(Op.DIV, _b(Op.SUB, ai, _b(Op.MUL, ib, ar)), dib)))
    # 1: zero denominator, a numerator part not NaN: (inf * sign(br)) * a
    zden = b.let(_b(Op.AND, _b(Op.AND, _b(Op.EQ, abr, zero), _b(Op.EQ, abi, zero)),
                    _b(Op.OR, _b(Op.EQ, ar, ar), _b(Op.EQ, ai, ai))))
    sinf = b.let(_copysign(b, inf, br))
    z = (_b(Op.MUL, sinf, ar), _b(Op.MUL, sinf, ai))
    # 2: infinite numerator, finite denominator
    aar, aai = b.let(_u(Op.ABS, ar)), b.let(_u(Op.ABS, ai))
    ar_inf, ai_inf = b.let(_b(Op.EQ, aar, inf)), b.let(_b(Op.EQ, aai, inf))
    br_fin = _b(Op.AND, _b(Op.NE, abr, inf), _b(Op.EQ, abr, abr))
    bi_fin = _b(Op.AND, _b(Op.NE, abi, inf), _b(Op.EQ, abi, abi))
    inum = b.let(_b(Op.AND, _b(Op.OR, ar_inf, ai_inf), _b(Op.AND, br_fin, bi_fin)))
    ars = b.let(_copysign(b, select(ar_inf, one, zero), ar))
    ais = b.let(_copysign(b, select(ai_inf, one, zero), ai))
    n = (_b(Op.MUL, inf, _b(Op.ADD, _b(Op.MUL, ars, br), _b(Op.MUL, ais, bi))),
         _b(Op.MUL, inf, _b(Op.SUB, _b(Op.MUL, ais, br), _b(Op.MUL, ars, bi))))
    # 3: finite numerator, infinite denominator
    br_inf, bi_inf = b.let(_b(Op.EQ, abr, inf)), b.let(_b(Op.EQ, abi, inf))
    ar_fin = _b(Op.AND, _b(Op.NE, aar, inf), _b(Op.EQ, aar, aar))
    ai_fin = _b(Op.AND, _b(Op.NE, aai, inf), _b(Op.EQ, aai, aai))
    iden = b.let(_b(Op.AND, _b(Op.OR, br_inf, bi_inf), _b(Op.AND, ar_fin, ai_fin)))
    brs = b.let(_copysign(b, select(br_inf, one, zero), br))
    bis = b.let(_copysign(b, select(bi_inf, one, zero), bi))
    d = (_b(Op.MUL, zero, _b(Op.ADD, _b(Op.MUL, ar, brs), _b(Op.MUL, ai, bis))),
         _b(Op.MUL, zero, _b(Op.SUB, _b(Op.MUL, ai, brs), _b(Op.MUL, ar, bis))))
    nan = b.let(_b(Op.AND, _isnan(cr), _isnan(ci)))

    def pick(k):
        return b.let(select(nan, select(zden, z[k], select(inum, n[k], select(iden, d[k],
                                                                               (cr, ci)[k]))), (cr, ci)[k]))
    return pick(0), pick(1)


def _abs_parts(b, x: C) -> tuple[Expr, Expr, Expr]:
    """(min, max, 1 + (min/max)^2) of the parts' magnitudes (EmitComplexAbsHelper)."""
    ar, ai = b.let(_u(Op.ABS, x[0])), b.let(_u(Op.ABS, x[1]))
    mx, mn = b.let(_b(Op.MAX, ar, ai)), b.let(_b(Op.MIN, ar, ai))
    q = b.let(_b(Op.DIV, mn, mx))
    return mn, mx, b.let(_b(Op.ADD, b.c(1.0), _b(Op.MUL, q, q)))


def _abs(b, x: C) -> Expr:
    mn, mx, s = _abs_parts(b, x)
    r = b.let(_b(Op.MUL, mx, _u(Op.SQRT, s)))
    return b.let(select(_isnan(r), mn, r))


def _log(b, x: C) -> C:
    return b.let(_u(Op.LOG, _abs(b, x))), b.let(_b(Op.ATAN2, x[1], x[0]))


def _sqrt(b, x: C) -> C:
    a, bb = x
    mn, mx, s = _abs_parts(b, x)
    r0 = b.let(_b(Op.MUL, _u(Op.SQRT, mx), _b(Op.POW, s, b.c(0.25))))
    r = b.let(select(_isnan(r0), mn, r0))
    t = b.let(_b(Op.MUL, _b(Op.ATAN2, bb, a), b.c(0.5)))
    cos, sin = b.let(_u(Op.COS, t)), b.let(_u(Op.SIN, t))
    inf, zero = b.c(float("inf")), b.c(0.0)
    abs_b = b.let(_u(Op.ABS, bb))
    b_inf = b.let(_b(Op.EQ, abs_b, inf))
    re = select(_b(Op.OR, b_inf, _b(Op.EQ, a, inf)), inf,
                select(_b(Op.AND, _b(Op.EQ, a, -inf), _b(Op.NE, abs_b, inf)), zero, _b(Op.MUL, r, cos)))
    im = select(_b(Op.OR, b_inf, _b(Op.EQ, a, -inf)), _copysign(b, inf, bb),
                select(_isnan(r), b.c(float("nan")),
                       select(_b(Op.EQ, sin, zero), sin, _b(Op.MUL, r, sin))))
    rz = b.let(_b(Op.EQ, r, zero))
    return b.let(select(rz, zero, re)), b.let(select(rz, zero, im))


def _rsqrt(b, x: C) -> C:
    a, bb = x
    mn, mx, s = _abs_parts(b, x)

    def rs(v):
        return _b(Op.DIV, b.c(1.0), _u(Op.SQRT, v))
    r0 = b.let(_b(Op.MUL, rs(mx), rs(_u(Op.SQRT, s))))
    r = b.let(select(_isnan(r0), rs(mn), r0))
    t = b.let(_b(Op.MUL, _b(Op.ATAN2, bb, a), b.c(-0.5)))
    cos, sin = b.let(_u(Op.COS, t)), b.let(_u(Op.SIN, t))
    inf, zero = b.c(float("inf")), b.c(0.0)
    zz = b.let(_b(Op.AND, _b(Op.EQ, bb, zero), _b(Op.EQ, a, zero)))
    edge = b.let(_b(Op.OR, _b(Op.AND, _b(Op.EQ, _u(Op.ABS, bb), inf), _isnan(a)),
                    _b(Op.EQ, _u(Op.ABS, a), inf)))
    re = select(zz, inf, select(edge, _copysign(b, zero, a), _b(Op.MUL, r, cos)))
    im = select(zz, b.c(float("nan")), select(edge, _u(Op.NEG, _copysign(b, zero, bb)),
                                              _b(Op.MUL, r, sin)))
    return b.let(re), b.let(im)


def _exp(b, x: C) -> C:
    e = b.let(_u(Op.EXP, x[0]))
    return b.let(_b(Op.MUL, e, _u(Op.COS, x[1]))), b.let(_b(Op.MUL, e, _u(Op.SIN, x[1])))


def _cosm1(b, x: Expr) -> Expr:
    """cos(x) - 1 (EmitCosm1: Cephes' polynomial for |x| < pi/4)."""
    coeffs = (4.7377507964246204691685E-14, -1.1470284843425359765671E-11,
              2.0876754287081521758361E-9, -2.7557319214999787979814E-7,
              2.4801587301570552304991E-5, -1.3888888888888872993737E-3,
              4.1666666666666666609054E-2)
    xx = b.let(_b(Op.MUL, x, x))
    poly = b.c(coeffs[0])
    for c in coeffs[1:]:
        poly = b.let(_b(Op.ADD, _b(Op.MUL, poly, xx), b.c(c)))
    small = _b(Op.ADD, _b(Op.MUL, _b(Op.MUL, xx, xx), poly), _b(Op.MUL, b.c(-0.5), xx))
    return b.let(select(_b(Op.GT, xx, b.c(0.61685)), _b(Op.SUB, _u(Op.COS, x), b.c(1.0)), small))


def _expm1(b, x: C) -> C:
    a, bb = x
    em1 = b.let(_u(Op.EXPM1, a))
    cm1 = _cosm1(b, bb)
    cos_b = b.let(_b(Op.ADD, cm1, b.c(1.0)))
    re = _b(Op.ADD, _b(Op.MUL, em1, cos_b), cm1)
    im = select(_b(Op.EQ, bb, b.c(0.0)), b.c(0.0), _b(Op.MUL, _b(Op.ADD, em1, b.c(1.0)), _u(Op.SIN, bb)))
    return b.let(re), b.let(im)


def _log1p(b, x: C) -> C:
    a, bb = x
    one = b.c(1.0)
    a1 = b.let(_b(Op.ADD, a, one))
    abs_a1, abs_b = b.let(_u(Op.ABS, a1)), b.let(_u(Op.ABS, bb))
    mx, mn = b.let(_b(Op.MAX, abs_a1, abs_b)), b.let(_b(Op.MIN, abs_a1, abs_b))
    mx_m1 = select(_b(Op.GT, a1, abs_b), a, _b(Op.SUB, mx, one))
    ratio = b.let(_b(Op.DIV, mn, mx))
    r = b.let(_b(Op.ADD, _b(Op.MUL, b.c(0.5), _u(Op.LOG1P, _b(Op.MUL, ratio, ratio))),
                 _u(Op.LOG1P, mx_m1)))
    return b.let(select(_isnan(r), mn, r)), b.let(_b(Op.ATAN2, bb, a1))


def _sincos(b, x: C, sin: bool) -> C:
    xr, y = x
    ey = b.let(_u(Op.EXP, y))
    hp, hn = b.let(_b(Op.MUL, b.c(0.5), ey)), b.let(_b(Op.DIV, b.c(0.5), ey))
    sinh, cosh = b.let(_b(Op.SUB, hp, hn)), b.let(_b(Op.ADD, hp, hn))
    sx, cx = b.let(_u(Op.SIN, xr)), b.let(_u(Op.COS, xr))
    if sin:
        return b.let(_b(Op.MUL, sx, cosh)), b.let(_b(Op.MUL, cx, sinh))
    return b.let(_b(Op.MUL, cx, cosh)), b.let(_u(Op.NEG, _b(Op.MUL, sx, sinh)))


def _tanh(b, x: C, tan: bool = False) -> C:
    """tanh; tan(x + yi) = -i tanh(-y + xi)."""
    a, bb = (_u(Op.NEG, x[1]), x[0]) if tan else x
    a = b.let(a)
    two_a = b.let(_b(Op.ADD, a, a))
    e2, en2 = b.let(_u(Op.EXPM1, two_a)), b.let(_u(Op.EXPM1, _u(Op.NEG, two_a)))
    rnum = b.let(_b(Op.SUB, e2, en2))
    cos_b = b.let(_u(Op.COS, bb))
    four = b.c(4.0)
    inum = b.let(_b(Op.MUL, four, _b(Op.MUL, cos_b, _u(Op.SIN, bb))))
    esum = b.let(_b(Op.ADD, e2, en2))
    den = b.let(_b(Op.ADD, esum, _b(Op.MUL, _b(Op.MUL, cos_b, cos_b), four)))
    inf, zero = b.c(float("inf")), b.c(0.0)
    re = b.let(select(_b(Op.EQ, esum, inf), _copysign(b, b.c(1.0), a), _b(Op.DIV, rnum, den)))
    im = b.let(_b(Op.DIV, inum, den))
    a_inf = b.let(_b(Op.EQ, _u(Op.ABS, a), inf))
    s_nan = b.let(_isnan(inum))
    re = b.let(select(_b(Op.AND, s_nan, _u(Op.NOT, a_inf)), b.c(float("nan")), re))
    im = b.let(select(_b(Op.OR, _b(Op.EQ, bb, zero), _b(Op.AND, a_inf, s_nan)), zero, im))
    return (im, b.let(_u(Op.NEG, re))) if tan else (re, im)


def _sign(b, x: C) -> C:
    r = _abs(b, x)
    z = b.let(_b(Op.EQ, r, b.c(0.0)))
    return (b.let(select(z, b.c(0.0), _b(Op.DIV, x[0], r))),
            b.let(select(z, b.c(0.0), _b(Op.DIV, x[1], r))))


def _pow(b, x: C, y: C) -> C:
    (a, bb), (c, d) = x, y
    r = _abs(b, x)
    arg = b.let(_b(Op.ATAN2, bb, a))
    coeff = b.let(_b(Op.MUL, _b(Op.POW, r, c), _u(Op.EXP, _b(Op.MUL, _u(Op.NEG, d), arg))))
    q = b.let(_b(Op.ADD, _b(Op.MUL, c, arg), _b(Op.MUL, d, _u(Op.LOG, r))))
    zero, one, inf = b.c(0.0), b.c(1.0), b.c(float("inf"))
    re, im = _b(Op.MUL, coeff, _u(Op.COS, q)), _b(Op.MUL, coeff, _u(Op.SIN, q))
    d0 = b.let(_b(Op.EQ, d, zero))
    case0 = b.let(_b(Op.AND, _b(Op.AND, _b(Op.EQ, r, zero), d0), _b(Op.LE, zero, c)))
    re, im = select(case0, select(_b(Op.EQ, zero, c), one, zero), re), select(case0, zero, im)
    case1 = _b(Op.AND, _b(Op.EQ, zero, c), d0)
    re, im = select(case1, one, re), select(case1, zero, im)
    case2 = _b(Op.AND, _b(Op.EQ, a, one), _b(Op.EQ, bb, zero))
    re, im = select(case2, one, re), select(case2, zero, im)
    inf_real = b.let(_b(Op.AND, _b(Op.EQ, a, inf), _b(Op.AND, _b(Op.EQ, bb, zero), d0)))
    case3 = _b(Op.AND, inf_real, _b(Op.GT, c, zero))
    re, im = select(case3, inf, re), select(case3, zero, im)
    case4 = _b(Op.AND, inf_real, _b(Op.LT, c, zero))
    return b.let(select(case4, zero, re)), b.let(select(case4, zero, im))


def _cbrt(b, x: C) -> C:
    """The principal cube root |z|^(1/3) e^(i arg(z) / 3) (StableHLO's; XLA has none)."""
    r = b.let(_b(Op.POW, _abs(b, x), b.c(1.0 / 3.0)))
    t = b.let(_b(Op.DIV, _b(Op.ATAN2, x[1], x[0]), b.c(3.0)))
    return b.let(_b(Op.MUL, r, _u(Op.COS, t))), b.let(_b(Op.MUL, r, _u(Op.SIN, t)))


def _maxmin(b, x: C, y: C, op: Op) -> C:
    """StableHLO's maximum/minimum of complex: lexicographic on (real, imaginary)."""
    cmp = Op.GT if op is Op.MAX else Op.LT
    first = b.let(_b(Op.OR, _b(cmp, x[0], y[0]), _b(Op.AND, _b(Op.EQ, x[0], y[0]), _b(cmp, x[1], y[1]))))
    return b.let(select(first, x[0], y[0])), b.let(select(first, x[1], y[1]))


def _atan2(b, y: C, x: C) -> C:
    """atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2))."""
    s = _sqrt(b, _add(b, _mul(b, x, x), _mul(b, y, y)))
    zero, one = b.c(0.0), b.c(1.0)
    q = _div(b, _add(b, x, _mul(b, (zero, one), y)), s)
    return _mul(b, (zero, b.c(-1.0)), _log(b, q))


_UNARY: dict[Op, Callable] = {
    Op.NEG: lambda b, x: (b.let(_u(Op.NEG, x[0])), b.let(_u(Op.NEG, x[1]))),
    Op.ABS: lambda b, x: (_abs(b, x),), Op.SIGN: _sign, Op.EXP: _exp, Op.EXPM1: _expm1,
    Op.LOG: _log, Op.LOG1P: _log1p, Op.SQRT: _sqrt, Op.RSQRT: _rsqrt,
    Op.SIN: lambda b, x: _sincos(b, x, True), Op.COS: lambda b, x: _sincos(b, x, False),
    Op.TANH: _tanh, Op.TAN: lambda b, x: _tanh(b, x, True), Op.CBRT: _cbrt,
}
_BINARY: dict[Op, Callable] = {
    Op.ADD: _add, Op.SUB: _sub, Op.MUL: _mul, Op.DIV: _div, Op.POW: _pow, Op.ATAN2: _atan2,
    Op.MAX: lambda b, x, y: _maxmin(b, x, y, Op.MAX), Op.MIN: lambda b, x, y: _maxmin(b, x, y, Op.MIN),
    Op.EQ: lambda b, x, y: (_b(Op.AND, _b(Op.EQ, x[0], y[0]), _b(Op.EQ, x[1], y[1])),),
    Op.NE: lambda b, x, y: (_b(Op.OR, _b(Op.NE, x[0], y[0]), _b(Op.NE, x[1], y[1])),),
}


@cache
def formula(op: Op, dtype: DType) -> Formula:
    """The formula of ``op`` on operands of complex ``dtype`` (DSLError if there is none)."""
    if not dtype.is_complex or (op not in _UNARY and op not in _BINARY):
        raise DSLError(f"no complex formula for {op.name.lower()} on {dtype}")
    t = dtype.component
    b = _Builder(t)
    names = ("a_re", "a_im") + (("b_re", "b_im") if op in _BINARY else ())
    params = tuple(IterVar(n, 0, AxisKind.PARAM, t) for n in names)
    vals = [p.var for p in params]
    if op in _UNARY:
        res = _UNARY[op](b, (vals[0], vals[1]))
    else:
        res = _BINARY[op](b, (vals[0], vals[1]), (vals[2], vals[3]))
    return Formula(op, dtype, params, tuple(b.steps), tuple(res))
