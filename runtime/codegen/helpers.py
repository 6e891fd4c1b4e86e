"""Helper-function text shared by the C-family backends, parameterized by the backend's type
names: XLA's semantics where C's differ (integer division and remainder by zero and overflow,
shifts by the bit width or more, saturating float -> int casts, NaN-propagating max/min) and
numpy's float floor division. Each backend adds its own bit-level conversions (bf16, f16,
bitcasts between floats and ints) since C uses ``memcpy`` and OpenCL ``as_<type>``.

16-bit floats are rounded after every op; ``multiplies_16bit`` tells a backend when it must keep
the compiler from fusing a rounded product into a multiply-add."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...dsl import dtypes as dt
from ...dsl.expr import walk
from ...dsl.ops import Op
from ...schedules.loops import LoweredFunc, stmt_exprs, walk_stmts


def _c_popcnt(t: str, u: str, bits: int) -> str:
    return f"({t})__builtin_popcountll((uint64_t)({u})a)"


def _c_clz(t: str, u: str, bits: int) -> str:
    return f"a == 0 ? {bits} : ({t})(__builtin_clzll((uint64_t)({u})a) - {64 - bits})"


@dataclass(frozen=True)
class HelperTypes:
    """Type names and idioms of one backend. ``ints``: suffix -> (type, bits, signed);
    ``floats``: suffix -> (type, libm suffix, e.g. ``f`` for ``fmodf``; ``""`` for overloads)."""

    inline: str = "HL_INLINE"
    ints: dict = field(default_factory=lambda: {
        "i8": ("int8_t", 8, True), "i16": ("int16_t", 16, True), "i32": ("int32_t", 32, True),
        "i64": ("int64_t", 64, True), "u8": ("uint8_t", 8, False), "u16": ("uint16_t", 16, False),
        "u32": ("uint32_t", 32, False), "u64": ("uint64_t", 64, False)})
    floats: dict = field(default_factory=lambda: {"f32": ("float", "f"), "f64": ("double", "")})
    ll: str = "LL"                     # 64-bit literal suffixes
    ull: str = "ULL"
    f2i_arg: str = "double"            # argument type of the saturating float -> int casts
    popcnt: Callable[[str, str, int], str] = _c_popcnt
    clz: Callable[[str, str, int], str] = _c_clz

    def unsigned(self, bits: int) -> str:
        return next(t for t, b, s in self.ints.values() if b == bits and not s)


def multiplies_16bit(fn: LoweredFunc) -> bool:
    """Whether ``fn`` multiplies float16/bfloat16 values. Each such product is rounded to 16 bits
    before it is added; a compiler contracting ``round16(a * b) + c`` into one fused multiply-add
    (in half precision on AVX512-FP16, which the exact narrowing ``(half)((float)a * (float)b) ->
    a * b`` makes possible) skips that rounding, so backends render such functions uncontracted."""
    return any(e.op is Op.MUL and e.dtype in (dt.float16, dt.bfloat16)
               for s in walk_stmts(fn.body) for e in walk(stmt_exprs(s)))


def rounding_helpers(ty: HelperTypes, fp64: bool = True) -> list[str]:
    """bf16 conversions and double -> float rounding to odd, written over the backend's
    ``hl_bitcast_f32_u32``/``hl_bitcast_u32_f32`` (each backend defines those first)."""
    u16, u32, f = ty.unsigned(16), ty.unsigned(32), ty.floats["f32"][1]
    out = [f"""{ty.inline} {u16} hl_f32_to_bf16(float f) {{
  {u32} u = hl_bitcast_f32_u32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ({u16})((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return ({u16})(u >> 16);
}}
{ty.inline} float hl_bf16_to_f32({u16} h) {{ return hl_bitcast_u32_f32(({u32})h << 16); }}
{ty.inline} float hl_round_bf16(float f) {{ return hl_bf16_to_f32(hl_f32_to_bf16(f)); }}
"""]
    if fp64:
        out.append(f"""/* double -> float rounding to odd, so that a second rounding to 16 bits is correct */
{ty.inline} float hl_f64_to_f32_odd(double d) {{
  float t = (float)d;
  if ((double)t == d || t != t || isinf(t)) return t;
  if (fabs((double)t) > fabs(d)) t = nextafter{f}(t, 0.0f);
  return hl_bitcast_u32_f32(hl_bitcast_f32_u32(t) | 1u);
}}
""")
    return out


def float_helpers(ty: HelperTypes) -> list[str]:
    """NaN-propagating max/min (+0 above -0, as XLA's: a sum or negated difference of two zeros
    picks the sign), sign, numpy's floor division and floor modulo per float type."""
    out = []
    for s, (t, f) in ty.floats.items():
        out.append(f"""{ty.inline} {t} hl_max_{s}({t} a, {t} b) {{ return (a > b || a != a) ? a : (a == 0 && b == 0) ? a + b : b; }}
{ty.inline} {t} hl_min_{s}({t} a, {t} b) {{ return (a < b || a != a) ? a : (a == 0 && b == 0) ? -(-a - b) : b; }}
{ty.inline} {t} hl_sign_{s}({t} a) {{ return (a != a || a == 0) ? a : ({t})((a > 0) - (a < 0)); }}
{ty.inline} {t} hl_floordiv_{s}({t} a, {t} b) {{  /* numpy's floor_divide (npy_divmod) */
  if (b == 0) return a / b;
  {t} mod = fmod{f}(a, b); {t} div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div != 0) {{ {t} fl = floor{f}(div); return (div - fl > 0.5) ? fl + 1 : fl; }}
  return copysign{f}(({t})0, a / b);
}}
{ty.inline} {t} hl_floormod_{s}({t} a, {t} b) {{ {t} r = fmod{f}(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : (r == 0 ? copysign{f}(({t})0, b) : r); }}
""")
    return out


def pow_f64_helper(ty: HelperTypes, mul: str = "{} * {}", add: str = "{} + {}") -> str:
    """``hl_pow_f64(a, b)``: float64 ``pow`` correctly rounded (but for results within about
    2^-98 of a rounding boundary) where ``b`` is an integer of at most 2^31 in magnitude and the
    result is finite and normal: square-and-multiply in double-double on mantissas kept in
    [0.5, 1) with the binary exponent counted apart (so no intermediate under- or overflows,
    whatever the result's size), one rounding at the end (a GPU's ``pow`` may be several ulps
    off: OpenCL allows 16); the device's ``pow`` elsewhere. ``mul``/``add``: format strings of
    one rounded product/sum, never contracted into an FMA (each is its own statement, which
    OpenCL C does not contract across; CUDA needs intrinsics)."""
    u64, inl = ty.unsigned(64), ty.inline
    m, a = mul.format, add.format
    return f"""{inl} void hl_dd_mul(double ah, double al, double bh, double bl, double* rh, double* rl) {{
  double p = {m("ah", "bh")};
  double e = fma(ah, bh, -p);
  e = fma(ah, bl, e);
  e = fma(al, bh, e);
  double h = {a("p", "e")};
  double d = {a("h", "-p")};
  *rh = h;
  *rl = {a("e", "-d")};
}}
{inl} int hl_dd_norm(double* h, double* l) {{   /* h into [0.5, 1), l by the same power of two */
  int k;
  *h = frexp(*h, &k);
  *l = ldexp(*l, -k);
  return k;
}}
{inl} double hl_pow_f64(double a, double b) {{
  if (!(fabs(b) <= 2147483648.0) || b != floor(b) || a == 0 || !isfinite(a)) return pow(a, b);
  {u64} n = ({u64})fabs(b);
  int xe, re = 0;
  double rh = 1.0, rl = 0.0, xh = frexp(a, &xe), xl = 0.0;
  while (n) {{     /* |x| = |xh + xl| 2^xe, |r| likewise with re; exponents stay below 2^13 */
    if (n & 1) {{
      hl_dd_mul(rh, rl, xh, xl, &rh, &rl);
      re += xe + hl_dd_norm(&rh, &rl);
    }}
    n >>= 1;
    if (n) {{
      hl_dd_mul(xh, xl, xh, xl, &xh, &xl);
      xe += xe + hl_dd_norm(&xh, &xl);
    }}
    if (re > 4096 || re < -4096 || xe > 4096 || xe < -4096) return pow(a, b);
  }}
  if (b < 0) {{     /* 1 / (rh + rl) = q + ch + cl, to about 2^-150: q = 1/rh, R = Rh + Rl = 1 - q (rh + rl) */
    double q = 1.0 / rh;
    double r1 = fma(-q, rh, 1.0);
    double s = {m("q", "rl")};
    double t = fma(q, rl, -s);
    double u = {a("r1", "-s")};
    double w = {a("u", "-r1")};
    double v = {a("r1", "-(u - w)")};
    double Rl = {a(a("v", "-s - w"), "-t")};
    double ch = u / rh;
    double g = fma(-ch, rh, u);
    g = {a("g", "Rl")};
    g = fma(-ch, rl, g);
    double cl = g / rh;
    rh = {a("q", "ch")};     /* two-sum of q and ch, then the rest once */
    w = {a("rh", "-q")};
    rl = {a(a(a("q", "-(rh - w)"), "ch - w"), "cl")};
    re = -re;
  }}
  double out = ldexp({a("rh", "rl")}, re);
  return (isfinite(out) && fabs(out) >= 1e-290) ? out : pow(a, b);
}}
"""


def int_helpers(ty: HelperTypes) -> list[str]:
    """Division, remainder, floor division/modulo, shifts, abs, sign, pow, popcount, clz and
    saturating float -> int conversion per integer type (XLA semantics)."""
    out = []
    u64, i64 = ty.unsigned(64), ty.ints["i64"][0]
    inl = ty.inline
    for s, (t, bits, signed) in ty.ints.items():
        u = ty.unsigned(bits)
        lo = f"(({t})(-{2**(bits-1) - 1}{ty.ll} - 1))" if signed else "0"
        hi = f"(({t}){2**(bits-1) - 1}{ty.ll})" if signed else f"(({t}){2**bits - 1}{ty.ull})"
        ovf = f"|| (a == {lo} && b == -1)" if signed else ""
        out.append(f"""{inl} {t} hl_div_{s}({t} a, {t} b) {{ return b == 0 ? ({t})-1 : ((0 {ovf}) ? a : ({t})(a / b)); }}
{inl} {t} hl_rem_{s}({t} a, {t} b) {{ return b == 0 ? a : ((0 {ovf}) ? 0 : ({t})(a % b)); }}
{inl} {t} hl_floordiv_{s}({t} a, {t} b) {{ if (b == 0) return ({t})-1; {t} q = hl_div_{s}(a, b); return ({t})(((a % b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q); }}
{inl} {t} hl_floormod_{s}({t} a, {t} b) {{ if (b == 0) return a; {t} r = hl_rem_{s}(a, b); return ({t})((r != 0 && ((r < 0) != (b < 0))) ? r + b : r); }}
{inl} {t} hl_shl_{s}({t} a, {t} b) {{ return (({u64})({i64})b >= {bits}u) ? 0 : ({t})(({u})a << b); }}
{inl} {t} hl_shrl_{s}({t} a, {t} b) {{ return (({u64})({i64})b >= {bits}u) ? 0 : ({t})(({u})a >> b); }}
{inl} {t} hl_shra_{s}({t} a, {t} b) {{ if (({u64})({i64})b >= {bits}u) return {"(a < 0 ? -1 : 0)" if signed else "0"}; return ({t})(a >> b); }}
{inl} {t} hl_abs_{s}({t} a) {{ return {"a < 0 ? (" + t + ")(-(" + u + ")a) : a" if signed else "a"}; }}
{inl} {t} hl_sign_{s}({t} a) {{ return ({t})((a > 0) - {"(a < 0)" if signed else "0"}); }}
{inl} {t} hl_pow_{s}({t} a, {t} b) {{ if (b < 0) return a == 1 ? 1 : (a == ({t})-1 ? ((b & 1) ? ({t})-1 : 1) : 0); {u} r = 1, x = ({u})a; {u64} e = ({u64})b; while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }} return ({t})r; }}
{inl} {t} hl_popcnt_{s}({t} a) {{ return {ty.popcnt(t, u, bits)}; }}
{inl} {t} hl_clz_{s}({t} a) {{ return {ty.clz(t, u, bits)}; }}
{inl} {t} hl_f2i_{s}({ty.f2i_arg} x) {{ if (x != x) return 0; if (x <= ({ty.f2i_arg}){lo}) return {lo}; if (x >= ({ty.f2i_arg}){hi}) return {hi}; return ({t})x; }}
""")
    return out


def int_bitcasts(ty: HelperTypes) -> list[str]:
    """Bitcasts between integer types of the same width (plain casts: two's complement)."""
    out = []
    for a, (ta, ba, _) in ty.ints.items():
        for b, (tb, bb, _) in ty.ints.items():
            if a != b and ba == bb:
                out.append(f"{ty.inline} {tb} hl_bitcast_{a}_{b}({ta} x) {{ return ({tb})x; }}\n")
    return out
