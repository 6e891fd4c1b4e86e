"""CHLO's math functions as scalar expressions, decomposed as StableHLO's
``chlo-legalize-to-stablehlo`` pass does (``ChloLegalizeToStablehlo.cpp`` and the generated
``ChloDecompositionPatternsMath.td`` in openxla/stablehlo), operation for operation, so that a
StableHLO program gives what XLA gives for the same CHLO op: the same polynomial and rational
approximations, the same ranges and the same special-value handling (``erfc`` keeps relative
accuracy in its tail by an approximation of ``erfc`` itself, never ``1 - erf``).

Each function maps an :class:`~hlotune.dsl.expr.Expr` (or two) to an ``Expr`` of the same
type. Functions that XLA computes in at least f32 (:func:`upcast`) take f16/bf16 operands to
f32 and round the result back once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, binary, bitcast, cast, const, select, unary
from ...dsl.ops import Op

__all__ = ["FLOAT_BINARY", "FLOAT_UNARY", "acos", "acosh", "asin", "asinh", "atan", "atanh",
           "bessel_i1e", "cosh", "digamma", "erf_inv", "erfc", "is_inf", "is_neg_inf",
           "is_pos_inf", "lgamma", "mulhi", "next_after", "polygamma", "sinh", "upcast", "zeta"]


# ----------------------------------------------------------------------------- helpers

def K(v, x: Expr) -> Expr:
    """The constant ``v`` in ``x``'s type (StableHLO's ``getConstantLike``)."""
    return const(v, x.dtype)


def _u(op: Op, x: Expr) -> Expr:
    return unary(op, x)


def _abs(x): return _u(Op.ABS, x)
def _exp(x): return _u(Op.EXP, x)
def _log(x): return _u(Op.LOG, x)
def _log1p(x): return _u(Op.LOG1P, x)
def _sqrt(x): return _u(Op.SQRT, x)
def _floor(x): return _u(Op.FLOOR, x)
def _lt(a, b): return binary(Op.LT, a, b)
def _le(a, b): return binary(Op.LE, a, b)
def _gt(a, b): return binary(Op.GT, a, b)
def _ge(a, b): return binary(Op.GE, a, b)
def _eq(a, b): return binary(Op.EQ, a, b)
def _ne(a, b): return binary(Op.NE, a, b)


def _finfo(x: Expr):
    return np.finfo(x.dtype.np)


def poly(x: Expr, coefficients: Sequence[float]) -> Expr:
    """Horner's rule, highest coefficient first (``materializePolynomialApproximation``)."""
    p = K(coefficients[0], x)
    for c in coefficients[1:]:
        p = p * x + K(c, x)
    return p


def upcast(fn: Callable[..., Expr]) -> Callable[..., Expr]:
    """``fn`` computed in f32 for 16-bit floats (``materializeWithUpcast``)."""
    def wrapped(*args: Expr) -> Expr:
        d = args[0].dtype
        if d.is_float and d.bits < 32:
            return cast(fn(*(cast(a, dt.float32) for a in args)), d)
        return fn(*args)
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


# ----------------------------------------------------------------------------- erfc, erf_inv

_ERFC_P32 = (+2.326819970068386E-2, -1.387039388740657E-1, +3.687424674597105E-1,
             -5.824733027278666E-1, +6.210004621745983E-1, -4.944515323274145E-1,
             +3.404879937665872E-1, -2.741127028184656E-1, +5.638259427386472E-1)
_ERFC_R32 = (-1.047766399936249E+1, +1.297719955372516E+1, -7.495518717768503E+0,
             +2.921019019210786E+0, -1.015265279202700E+0, +4.218463358204948E-1,
             -2.820767439740514E-1, +5.641895067754075E-1)
_ERF_T32 = (+7.853861353153693E-5, -8.010193625184903E-4, +5.188327685732524E-3,
            -2.685381193529856E-2, +1.128358514861418E-1, -3.761262582423300E-1,
            +1.128379165726710E+0)
_ERFC_P64 = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
             4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
             9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q64 = (1.00000000000000000000E0, 1.32281951154744992508E1, 8.67072140885989742329E1,
             3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
             2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R64 = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
             6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S64 = (1.00000000000000000000E0, 2.26052863220117276590E0, 9.39603524938001434673E0,
             1.20489539808096656605E1, 1.70814450747565897222E1, 9.60896809063285878198E0,
             3.36907645100081516050E0)
_ERF_T64 = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
            7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U64 = (1.00000000000000000000E0, 3.35617141647503099647E1, 5.21357949780152679795E2,
            4.59432382970980127987E3, 2.26290000613890934246E4, 4.92673942608635921086E4)


def _erfc_ge1_f32(x: Expr) -> Expr:
    """erfc for |x| >= 1: exp(-x^2) / |x| * P(1/x^2) (|x| < 2) or R(1/x^2); 2 - erfc(-x) below 0."""
    xsq = x * x
    z = -xsq
    ax = _abs(x)
    rxsq = K(1.0, x) / xsq
    e = _exp(z) * (K(1.0, x) / ax)
    p = select(_lt(ax, K(2.0, x)), poly(rxsq, _ERFC_P32), poly(rxsq, _ERFC_R32))
    r = select(_lt(z, K(-88.72283905206835, x)), K(0.0, x), e * p)
    return select(_lt(x, K(0.0, x)), K(2.0, x) - r, r)


def _erfc_ge1_f64(x: Expr) -> Expr:
    z = -(x * x)
    ez, ax = _exp(z), _abs(x)
    small = ez * poly(ax, _ERFC_P64) / poly(ax, _ERFC_Q64)
    large = ez * poly(ax, _ERFC_R64) / poly(ax, _ERFC_S64)
    r = select(_lt(ax, K(8.0, x)), small, large)
    r = select(_lt(z, K(-7.09782712893383996843E2, x)), K(0.0, x), r)
    return select(_lt(x, K(0.0, x)), K(2.0, x) - r, r)


def _erf_le1(x: Expr) -> Expr:
    xsq = x * x
    if x.dtype is dt.float64:
        return x * poly(xsq, _ERF_T64) / poly(xsq, _ERF_U64)
    return x * poly(xsq, _ERF_T32)


@upcast
def erfc(x: Expr) -> Expr:
    """``chlo.erfc``: 1 - erf(x) for |x| < 1, Cephes' erfc approximations (f32 or f64) above."""
    ge1 = _erfc_ge1_f64(x) if x.dtype is dt.float64 else _erfc_ge1_f32(x)
    return select(_lt(_abs(x), K(1.0, x)), K(1.0, x) - _erf_le1(x), ge1)


_ERFINV_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
               -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_ERFINV64_LT625 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_LT16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_GE16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def _erf_inv32(x: Expr) -> Expr:
    w = -_log1p(x * -x)
    lt = _lt(w, K(5.0, x))
    w = select(lt, w - K(2.5, x), _sqrt(w) - K(3.0, x))
    p = select(lt, K(_ERFINV_LT5[0], x), K(_ERFINV_GE5[0], x))
    for a, b in zip(_ERFINV_LT5[1:], _ERFINV_GE5[1:]):
        p = select(lt, K(a, x), K(b, x)) + p * w
    return select(_eq(_abs(x), K(1.0, x)), x * K(math.inf, x), p * x)


def _erf_inv64(x: Expr) -> Expr:
    w = -_log1p(x * -x)
    lt625, lt16 = _lt(w, K(6.25, x)), _lt(w, K(16.0, x))

    def coefficient(i: int) -> Expr:
        c = K(_ERFINV64_LT625[i], x)
        if i < 19:
            c = select(lt625, c, K(_ERFINV64_LT16[i], x))
        if i < 17:
            c = select(lt16, c, K(_ERFINV64_GE16[i], x))
        return c
    w = select(lt625, w - K(3.125, x), _sqrt(w) - select(lt16, K(3.25, x), K(5.0, x)))
    p = coefficient(0)
    for i in range(1, 17):
        p = coefficient(i) + p * w
    for i in range(17, 19):
        p = select(lt16, coefficient(i) + p * w, p)
    for i in range(19, 23):
        p = select(lt625, coefficient(i) + p * w, p)
    return select(_eq(_abs(x), K(1.0, x)), x * K(math.inf, x), p * x)


def erf_inv(x: Expr) -> Expr:
    """``chlo.erf_inv``: Giles' single-precision (or Boost's double-precision) polynomials in
    ``w = -log1p(-x^2)``; erf_inv(+-1) = +-inf."""
    return _erf_inv64(x) if x.dtype is dt.float64 else upcast(_erf_inv32)(x)


# ----------------------------------------------------------------------------- gamma family

_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)


def _log_t(z: Expr) -> tuple[Expr, Expr]:
    """t = z + g + 1/2 and log(t) = log(g + 1/2) + log1p(z / (g + 1/2))."""
    lph = K(_LANCZOS_G + 0.5, z)
    return lph + z, K(math.log(_LANCZOS_G + 0.5), z) + _log1p(z / lph)


@upcast
def lgamma(x: Expr) -> Expr:
    """``chlo.lgamma``: Lanczos' approximation (g = 7, n = 9), Euler's reflection below 1/2;
    lgamma(+-inf) = +inf."""
    half, one = K(0.5, x), K(1.0, x)
    reflect = _lt(x, half)
    z = select(reflect, -x, x - one)
    a = K(_LANCZOS_BASE, x)
    for k, c in enumerate(_LANCZOS):
        a = a + K(c, x) / (z + K(k + 1, x))
    t, log_t = _log_t(z)
    r = ((z + half) - t / log_t) * log_t
    lg = (K((math.log(2) + math.log(math.pi)) / 2, x) + r) + _log(a)
    ax = _abs(x)
    frac = ax - _floor(ax)
    frac = select(_lt(half, frac), one - frac, frac)
    denom = _log(_u(Op.SIN, K(math.pi, x) * frac))
    refl = (K(math.log(math.pi), x) - denom) - lg
    refl = select(_u(Op.ISFINITE, denom), refl, -denom)
    lg = select(reflect, refl, lg)
    return select(is_inf(x), K(math.inf, x), lg)


@upcast
def digamma(x: Expr) -> Expr:
    """``chlo.digamma``: the derivative of the Lanczos approximation, reflection below 1/2;
    NaN at the poles (zero and the negative integers)."""
    half, one, zero = K(0.5, x), K(1.0, x), K(0.0, x)
    reflect = _lt(x, half)
    z = select(reflect, -x, x - one)
    a, a_prime = K(_LANCZOS_BASE, x), zero
    for k, c in enumerate(_LANCZOS):
        zk = z + K(k + 1, x)
        a_prime = a_prime - K(c, x) / (zk * zk)
        a = a + K(c, x) / zk
    t, log_t = _log_t(z)
    dg = (log_t + a_prime / a) - K(_LANCZOS_G, x) / t
    reduced = x + _abs(_floor(x + half))
    pi_x = K(math.pi, x) * reduced
    refl = dg - (K(math.pi, x) * _u(Op.COS, pi_x)) / _u(Op.SIN, pi_x)
    dg = select(reflect, refl, dg)
    pole = binary(Op.AND, _le(x, zero), _eq(x, _floor(x)))
    return select(pole, K(math.nan, x), dg)


_ZETA_COEFFS = (-7.1661652561756670113e18, 1.8152105401943546773e17, -4.5979787224074726105e15,
                1.1646782814350067249e14, -2.950130727918164224e12, 7.47242496e10,
                -1.8924375803183791606e9, 47900160.0, -1209600.0, 30240.0, -720.0, 12.0)


@upcast
def zeta(x: Expr, q: Expr) -> Expr:
    """``chlo.zeta``: Hurwitz zeta(x, q) by 9 terms of the series plus a 12-term
    Euler-Maclaurin correction (Johansson 2015); NaN/inf at its poles and outside its domain."""
    zero, one = K(0.0, q), K(1.0, q)
    acc, neg_x = q, -x
    power_sum = binary(Op.POW, q, neg_x)
    for _ in range(9):
        acc = acc + one
        power_sum = power_sum + binary(Op.POW, acc, neg_x)
    acc = acc + one
    q_neg_power = binary(Op.POW, acc, neg_x)
    one_x = K(1.0, x)
    correction = (q_neg_power * acc) / (x - one_x)
    rsqrt_acc = one / (acc * acc)
    horner_sum = zero
    n = 2 * len(_ZETA_COEFFS) - 1
    for i in range(len(_ZETA_COEFFS) - 1):
        product = (x + K(n - 1 - 2 * i, x)) * (x + K(n - 2 - 2 * i, x))
        horner_sum = product * (rsqrt_acc * (horner_sum + K(1.0 / _ZETA_COEFFS[i], acc)))
    tail = q_neg_power * (K(0.5, q_neg_power) + (x / acc) * (K(1.0 / _ZETA_COEFFS[-1], acc)
                                                              + horner_sum))
    accurate = (power_sum + correction) + tail
    tiny = K(float(_finfo(acc).smallest_subnormal), acc)
    out = select(_lt(_abs(q_neg_power), _abs(power_sum) * tiny), power_sum, accurate)
    nan, inf = K(math.nan, x), K(math.inf, x)
    out = select(_lt(x, one_x), nan, out)
    q_le_zero = _le(q, zero)
    x_int = _eq(x, _floor(x))
    out = select(binary(Op.AND, q_le_zero, _ne(x, _floor(x))), nan, out)
    at_pole = binary(Op.AND, q_le_zero, _eq(q, _floor(q)))
    even_int = binary(Op.AND, x_int, _eq(binary(Op.REM, x, K(2.0, x)), zero))
    out = select(at_pole, select(even_int, inf, nan), out)
    return select(_eq(x, one), inf, out)


@upcast
def polygamma(n: Expr, x: Expr) -> Expr:
    """``chlo.polygamma``: (-1)^(n+1) n! zeta(n + 1, x) for natural n >= 1, digamma for n = 0,
    NaN for any other n."""
    one, two, zero = K(1.0, x), K(2.0, x), K(0.0, x)
    sign = two * binary(Op.REM, n, two) - one
    n1 = n + one
    out = (sign * _exp(lgamma(n1))) * zeta(n1, x)
    out = select(_eq(n, zero), digamma(x), out)
    not_natural = binary(Op.OR, _ne(n, _floor(n)), _lt(n, zero))
    return select(not_natural, K(math.nan, x), out)


# ----------------------------------------------------------------------------- hyperbolic, trig

def _exp_half(x: Expr) -> tuple[Expr, Expr]:
    """(e^x / 2, e^-x / 2) as e^(x + log(1/2)) and e^(log(1/2) - x): no overflow before inf."""
    log_half = _log(K(0.5, x))
    return _exp(x + log_half), _exp(log_half - x)


@upcast
def cosh(x: Expr) -> Expr:
    """``chlo.cosh``: e^(x + log(1/2)) + e^(log(1/2) - x)."""
    a, b = _exp_half(x)
    return a + b


@upcast
def sinh(x: Expr) -> Expr:
    """``chlo.sinh``: (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2 for |x| < 1 (no cancellation),
    e^(x + log(1/2)) - e^(log(1/2) - x) above."""
    a, b = _exp_half(x)
    e = _u(Op.EXPM1, x)
    small = K(0.5, x) * (e + e / (e + K(1.0, x)))
    return select(_lt(_abs(x), K(1.0, x)), small, a - b)


def asin(x: Expr) -> Expr:
    """``chlo.asin``: 2 * atan2(x, 1 + sqrt((1 - x) (1 + x)))."""
    one = K(1.0, x)
    ta = binary(Op.ATAN2, x, one + _sqrt((one - x) * (one + x)))
    return ta + ta


def acos(x: Expr) -> Expr:
    """``chlo.acos``: atan2(sqrt((1 - x) (1 + x)), x)."""
    one = K(1.0, x)
    return binary(Op.ATAN2, _sqrt((one - x) * (one + x)), x)


def atan(x: Expr) -> Expr:
    """``chlo.atan``: atan2(x, 1)."""
    return binary(Op.ATAN2, x, K(1.0, x))


def acosh(x: Expr) -> Expr:
    """``chlo.acosh``: log1p(sqrt(x - 1) (sqrt(x + 1) + sqrt(x - 1))), log(2) + log(x) from
    max/2 up (no overflow); NaN below 1."""
    one, two = K(1.0, x), K(2.0, x)
    s = _sqrt(x - one)
    big = _ge(x, K(float(_finfo(x).max), x) / two)
    return select(big, _log(two) + _log(x), _log1p(s * (_sqrt(x + one) + s)))


def asinh(x: Expr) -> Expr:
    """``chlo.asinh``: sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), log(2) + log|x| from
    sqrt(max) up."""
    one = K(1.0, x)
    ax = _abs(x)
    ax2 = ax * ax
    big = _ge(ax, _sqrt(K(float(_finfo(x).max), x)))
    val = select(big, _log(K(2.0, x)) + _log(ax), _log1p(ax + ax2 / (one + _sqrt(one + ax2))))
    return _u(Op.SIGN, x) * val


def atanh(x: Expr) -> Expr:
    """``chlo.atanh``: (log1p(x) - log1p(-x)) / 2; NaN for |x| > 1."""
    out = (_log1p(x) - _log1p(-x)) * K(0.5, x)
    return select(_gt(_abs(x), K(1.0, x)), K(math.nan, x), out)


# ----------------------------------------------------------------------------- Bessel I1e

def _chebyshev(x: Expr, coefficients: Sequence[float]) -> Expr:
    b0 = b1 = b2 = K(0.0, x)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = (x * b1 - b2) + K(c, x)
    return (b0 - b2) * K(0.5, x)


_I1E_A32 = (9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
            -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
            4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
            -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
            2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
            -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B32 = (-3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
            -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
            7.78576235018280120474E-1)
_I1E_A64 = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
            -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
            3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
            -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
            *_I1E_A32)
_I1E_B64 = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
            -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
            -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
            4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
            -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
            3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
            *_I1E_B32)


@upcast
def bessel_i1e(x: Expr) -> Expr:
    """``chlo.bessel_i1e``: Cephes' Chebyshev series on [0, 8] and (8, inf), times sign(x)."""
    f64 = x.dtype is dt.float64
    z = _abs(x)
    two = K(2.0, x)
    le8 = z * _chebyshev(K(0.5, x) * z - two, _I1E_A64 if f64 else _I1E_A32)
    gt8 = _chebyshev(K(32.0, x) / z - two, _I1E_B64 if f64 else _I1E_B32) / _sqrt(z)
    return _u(Op.SIGN, x) * select(_le(z, K(8.0, x)), le8, gt8)


# ----------------------------------------------------------------------------- bits

def next_after(x: Expr, y: Expr) -> Expr:
    """``chlo.next_after``: the float after ``x`` towards ``y`` by integer steps of its bits;
    y when x == y (signed zeros included), the smallest subnormal signed like y from zero,
    NaN if either is NaN."""
    bits = x.dtype.bits
    it = dt.dtype(f"int{bits}")
    xi, yi = bitcast(x, it), bitcast(y, it)
    sign_mask, mag_mask = const(-(1 << (bits - 1)), it), const((1 << (bits - 1)) - 1, it)
    x_abs, y_abs = binary(Op.AND, xi, mag_mask), binary(Op.AND, yi, mag_mask)
    x_sign, y_sign = binary(Op.AND, xi, sign_mask), binary(Op.AND, yi, sign_mask)
    zero, one = const(0, it), const(1, it)
    smaller = binary(Op.OR, _gt(x_abs, y_abs), _ne(x_sign, y_sign))
    r = xi + select(smaller, const(-1, it), one)
    r = select(_eq(x_abs, zero), select(_eq(y_abs, zero), yi, binary(Op.OR, y_sign, one)), r)
    r = select(_eq(x, y), yi, r)
    nan = binary(Op.OR, _ne(x, x), _ne(y, y))
    r = select(nan, bitcast(K(math.nan, x), it), r)
    return bitcast(r, x.dtype)


def mulhi(a: Expr, b: Expr) -> Expr:
    """``chlo.mulhi``: the high half of the double-width product (signed or unsigned); 64-bit
    operands by 32-bit partial products, signed ones corrected for two's complement."""
    d = a.dtype
    if d.bits < 64:
        wide = dt.dtype(("int" if d.kind == "i" else "uint") + str(2 * d.bits))
        p = cast(a, wide) * cast(b, wide)
        shift = binary(Op.SHRA if d.kind == "i" else Op.SHRL, p, const(d.bits, wide))
        return cast(shift, d)
    if d.kind == "u":
        return _mulhi_u64(a, b)
    u = dt.uint64
    au, bu = cast(a, u), cast(b, u)
    zero_u = const(0, u)
    hi = _mulhi_u64(au, bu)
    hi = hi - select(_lt(a, const(0, d)), bu, zero_u)
    hi = hi - select(_lt(b, const(0, d)), au, zero_u)
    return cast(hi, d)


def _mulhi_u64(a: Expr, b: Expr) -> Expr:
    u = dt.uint64
    c32, lo = const(32, u), const(0xFFFFFFFF, u)

    def shr(v):
        return binary(Op.SHRL, v, c32)
    a_hi, b_hi = shr(a), shr(b)
    a_lo, b_lo = binary(Op.AND, a, lo), binary(Op.AND, b, lo)
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid1 = p1 + shr(p0)
    mid2 = p2 + binary(Op.AND, mid1, lo)
    return (p3 + shr(mid1)) + shr(mid2)


def is_pos_inf(x: Expr) -> Expr:
    """``chlo.is_pos_inf``: x == +inf."""
    return _eq(x, K(math.inf, x))


def is_neg_inf(x: Expr) -> Expr:
    """``chlo.is_neg_inf``: x == -inf."""
    return _eq(x, K(-math.inf, x))


def is_inf(x: Expr) -> Expr:
    """``chlo.is_inf``: |x| == +inf."""
    return is_pos_inf(_abs(x))


#: chlo op name (without ``chlo.``) -> its decomposition, for float operands
FLOAT_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "erfc": erfc, "erf_inv": erf_inv, "lgamma": lgamma, "digamma": digamma, "cosh": cosh,
    "sinh": sinh, "asin": asin, "acos": acos, "atan": atan, "acosh": acosh, "asinh": asinh,
    "atanh": atanh, "bessel_i1e": bessel_i1e, "is_inf": is_inf, "is_pos_inf": is_pos_inf,
    "is_neg_inf": is_neg_inf,
}
FLOAT_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "next_after": next_after, "polygamma": polygamma, "zeta": zeta,
}
