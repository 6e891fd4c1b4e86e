"""The C renderer for the CPU: OpenMP ``parallel for``, ``omp simd`` vector loops, GCC unroll
pragmas, restrict pointers, 64-byte aligned scratch, an ``hl_entry`` wrapper and an in-C timer
``hl_bench`` so timing pays no Python call overhead."""

from __future__ import annotations

from functools import lru_cache

from ...dsl.errors import ScheduleError
from ...dsl.expr import Expr
from ...dsl.ops import Op
from ...schedules.loops import Allocate, For, LoweredFunc
from ...dsl import dtypes as dt
from .cstyle import CStyleRenderer
from .vmath import VMATH_C

#: float32 functions with vectorizable inline versions
_VMATH = {Op.EXP: "hl_expf", Op.LOG: "hl_logf", Op.TANH: "hl_tanhf"}

_INTS = {"i8": ("int8_t", 8, True), "i16": ("int16_t", 16, True), "i32": ("int32_t", 32, True),
         "i64": ("int64_t", 64, True), "u8": ("uint8_t", 8, False), "u16": ("uint16_t", 16, False),
         "u32": ("uint32_t", 32, False), "u64": ("uint64_t", 64, False), "b": ("bool", 8, False)}
_FLOATS = {"f32": ("float", "f"), "f64": ("double", "")}


@lru_cache(maxsize=None)
def helpers() -> str:
    """Inline helper functions giving XLA's semantics where C's differ."""
    out = ["""#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
#define HL_INLINE static inline __attribute__((always_inline))
HL_INLINE uint16_t hl_f32_to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
HL_INLINE float hl_bf16_to_f32(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
HL_INLINE float hl_round_bf16(float f) { return hl_bf16_to_f32(hl_f32_to_bf16(f)); }
HL_INLINE float hl_round_f16(float f) { return (float)(_Float16)f; }
/* double -> float rounding to odd, so that a second rounding to 16 bits is correct */
HL_INLINE float hl_f64_to_f32_odd(double d) {
  float t = (float)d;
  if ((double)t == d || t != t || isinf(t)) return t;
  if (fabs((double)t) > fabs(d)) t = nextafterf(t, 0.0f);
  uint32_t u; memcpy(&u, &t, 4); u |= 1u; memcpy(&t, &u, 4); return t;
}
HL_INLINE uint16_t hl_f32_to_f16bits(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
HL_INLINE float hl_f16bits_to_f32(uint16_t u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
static void* hl_alloc(size_t n) { void* p = NULL; if (posix_memalign(&p, 64, n ? n : 64)) abort(); return p; }
""", VMATH_C]
    for s, (t, f) in _FLOATS.items():
        out.append(f"""HL_INLINE {t} hl_max_{s}({t} a, {t} b) {{ return (a > b || a != a) ? a : b; }}
HL_INLINE {t} hl_min_{s}({t} a, {t} b) {{ return (a < b || a != a) ? a : b; }}
HL_INLINE {t} hl_sign_{s}({t} a) {{ return a != a ? a : (a > 0) - (a < 0); }}
HL_INLINE {t} hl_floordiv_{s}({t} a, {t} b) {{  /* numpy's floor_divide (npy_divmod) */
  if (b == 0) return a / b;
  {t} mod = fmod{f}(a, b); {t} div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div != 0) {{ {t} fl = floor{f}(div); return (div - fl > 0.5) ? fl + 1 : fl; }}
  return copysign{f}(0, a / b);
}}
HL_INLINE {t} hl_floormod_{s}({t} a, {t} b) {{ {t} r = fmod{f}(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : (r == 0 ? copysign{f}(0, b) : r); }}
""")
    for s, (t, bits, signed) in _INTS.items():
        if s == "b":
            continue
        u = f"uint{bits}_t"
        lo = f"(({t})(-{2**(bits-1) - 1}LL - 1))" if signed else "0"
        hi = f"(({t}){2**(bits-1) - 1}LL)" if signed else f"(({t}){2**bits - 1}ULL)"
        ovf = f"|| (a == {lo} && b == -1)" if signed else ""
        out.append(f"""HL_INLINE {t} hl_div_{s}({t} a, {t} b) {{ return b == 0 ? ({t})-1 : ((0 {ovf}) ? a : ({t})(a / b)); }}
HL_INLINE {t} hl_rem_{s}({t} a, {t} b) {{ return b == 0 ? a : ((0 {ovf}) ? 0 : ({t})(a % b)); }}
HL_INLINE {t} hl_floordiv_{s}({t} a, {t} b) {{ if (b == 0) return ({t})-1; {t} q = hl_div_{s}(a, b); return ({t})(((a % b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q); }}
HL_INLINE {t} hl_floormod_{s}({t} a, {t} b) {{ if (b == 0) return a; {t} r = hl_rem_{s}(a, b); return ({t})((r != 0 && ((r < 0) != (b < 0))) ? r + b : r); }}
HL_INLINE {t} hl_shl_{s}({t} a, {t} b) {{ return ((uint64_t)(int64_t)b >= {bits}u) ? 0 : ({t})(({u})a << b); }}
HL_INLINE {t} hl_shrl_{s}({t} a, {t} b) {{ return ((uint64_t)(int64_t)b >= {bits}u) ? 0 : ({t})(({u})a >> b); }}
HL_INLINE {t} hl_shra_{s}({t} a, {t} b) {{ if ((uint64_t)(int64_t)b >= {bits}u) return {"(a < 0 ? -1 : 0)" if signed else "0"}; return ({t})(a >> b); }}
HL_INLINE {t} hl_abs_{s}({t} a) {{ return {"a < 0 ? (" + t + ")(-(" + u + ")a) : a" if signed else "a"}; }}
HL_INLINE {t} hl_sign_{s}({t} a) {{ return ({t})((a > 0) - {"(a < 0)" if signed else "0"}); }}
HL_INLINE {t} hl_pow_{s}({t} a, {t} b) {{ if (b < 0) return a == 1 ? 1 : (a == ({t})-1 ? ((b & 1) ? ({t})-1 : 1) : 0); {u} r = 1, x = ({u})a; uint64_t e = (uint64_t)b; while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }} return ({t})r; }}
HL_INLINE {t} hl_popcnt_{s}({t} a) {{ return ({t})__builtin_popcountll((uint64_t)({u})a); }}
HL_INLINE {t} hl_clz_{s}({t} a) {{ return a == 0 ? {bits} : ({t})(__builtin_clzll((uint64_t)({u})a) - {64 - bits}); }}
HL_INLINE {t} hl_f2i_{s}(double x) {{ if (x != x) return 0; if (x <= (double){lo}) return {lo}; if (x >= (double){hi}) return {hi}; return ({t})x; }}
""")
    for s, (t, _) in _FLOATS.items():
        out.append(f"#pragma omp declare reduction(hl_max_{s} : {t} : omp_out = hl_max_{s}(omp_out, omp_in)) "
                   f"initializer(omp_priv = -INFINITY)\n"
                   f"#pragma omp declare reduction(hl_min_{s} : {t} : omp_out = hl_min_{s}(omp_out, omp_in)) "
                   f"initializer(omp_priv = INFINITY)\n")
    pairs = [("f32", "float", "i32"), ("f32", "float", "u32"), ("f64", "double", "i64"), ("f64", "double", "u64")]
    for f, ft, i in pairs:
        it = _INTS[i][0]
        out.append(f"HL_INLINE {it} hl_bitcast_{f}_{i}({ft} x) {{ {it} r; memcpy(&r, &x, sizeof r); return r; }}\n"
                   f"HL_INLINE {ft} hl_bitcast_{i}_{f}({it} x) {{ {ft} r; memcpy(&r, &x, sizeof r); return r; }}\n")
    for a in _INTS:
        for b in _INTS:
            if a != b and a != "b" and b != "b" and _INTS[a][1] == _INTS[b][1]:
                out.append(f"HL_INLINE {_INTS[b][0]} hl_bitcast_{a}_{b}({_INTS[a][0]} x) "
                           f"{{ return ({_INTS[b][0]})x; }}\n")
    return "".join(out)


class CRenderer(CStyleRenderer):
    """C99 + GNU extensions + OpenMP for gcc/clang on the host CPU."""

    local_array_attr = " __attribute__((aligned(64)))"

    def float_op(self, op, a, d):
        if d is not dt.float64 and op in _VMATH:
            return f"{_VMATH[op]}({a[0]})"
        return super().float_op(op, a, d)

    def loop_pragma(self, f: For) -> list[str]:
        ext = f.extent.arg if f.extent.op is Op.CONST else None
        if f.kind == "parallel":
            return ["#pragma omp parallel for schedule(static)"]
        if f.kind == "vectorize":
            clauses = []
            for acc, red in f.reduction:
                d = acc.dtype
                op = {"add": "+", "multiply": "*"}.get(red.ufunc)
                if op is None:  # max/min: NaN-propagating for floats (declared in the helpers)
                    op = f"hl_{red.ufunc[:3]}_{self.suffix(d)}" if d.is_float else red.ufunc[:3]
                clauses.append(f" reduction({op}:{self.name(acc, acc.name)})")
            return ["#pragma omp simd" + "".join(clauses)]
        if f.kind == "unroll":
            return [f"#pragma GCC unroll {min(ext, 64) if ext else 8}"]
        if f.kind.startswith("bind:"):
            raise ScheduleError(f"loop '{f.var.name}' is bound to '{f.kind[5:]}', but the cpu target has "
                                "no GPU thread indices; use parallel/vectorize instead")
        return []

    def allocate(self, a: Allocate, pad: str):
        b = a.buffer
        if b.scope == "global":
            t = self.ctype(b.dtype, storage=True)
            n = self.name(b, b.name)
            return ([f"{pad}{t}* {self.restrict} {n} = ({t}*)hl_alloc({b.size} * sizeof({t}));"],
                    [f"{pad}free({n});"])
        return super().allocate(a, pad)

    def preamble(self, fn: LoweredFunc) -> str:
        return helpers()

    def postamble(self, fn: LoweredFunc) -> str:
        casts = ", ".join(f"({self.ctype(b.dtype, True)}*)args[{k}]" for k, b in enumerate(fn.args))
        return f"""
void hl_entry(void** args) {{ {fn.name}({casts}); }}
double hl_bench(void** args, int64_t number) {{
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int64_t n = 0; n < number; ++n) {fn.name}({casts});
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}}
"""


def render_c(fn: LoweredFunc) -> str:
    """C source of ``fn`` (fresh renderer, so names are stable for the same IR)."""
    return CRenderer().render(fn)


__all__ = ["CRenderer", "render_c", "helpers", "Expr"]
