"""The C renderer for the CPU: OpenMP ``parallel for``, ``omp simd`` vector loops, GCC unroll
pragmas, restrict pointers, 64-byte aligned scratch, register micro-kernels (microkernel.py) and
transposing pack copies (pack_c.py), an ``hl_entry`` wrapper and an in-C timer ``hl_bench`` so
timing pays no Python call overhead."""

from __future__ import annotations

from functools import cache

from ...dsl import dtypes as dt
from ...dsl.errors import ScheduleError
from ...dsl.expr import walk
from ...dsl.ops import Op
from ...schedules.bounds import static_range
from ...schedules.hardware import GENERIC, Hardware
from ...schedules.loops import Allocate, Buffer, For, If, Let, LoopKind, LoweredFunc, Seq, walk_stmts
from .cstyle import CStyleRenderer
from .helpers import HelperTypes, float_helpers, int_bitcasts, int_helpers, multiplies_16bit, rounding_helpers
from .microkernel import MicroKernelPrinter, match
from .pack_c import PackPrinter, match_pack
from .typehelpers import type_helpers
from .vmath import VMATH_C

#: float32 functions with vectorizable inline versions
_VMATH = {Op.EXP: "hl_expf", Op.LOG: "hl_logf", Op.TANH: "hl_tanhf"}

_INTS = {"i8": ("int8_t", 8, True), "i16": ("int16_t", 16, True), "i32": ("int32_t", 32, True),
         "i64": ("int64_t", 64, True), "u8": ("uint8_t", 8, False), "u16": ("uint16_t", 16, False),
         "u32": ("uint32_t", 32, False), "u64": ("uint64_t", 64, False), "b": ("bool", 8, False)}
_FLOATS = {"f32": ("float", "f"), "f64": ("double", "")}
_TYPES = HelperTypes()


@cache
def helpers() -> str:
    """Inline helper functions giving XLA's semantics where C's differ."""
    out = ["""#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
#define HL_INLINE static inline __attribute__((always_inline))
/* gcc contracts across statements (-ffp-contract=fast): functions multiplying 16-bit floats
   turn it off (clang's default contracts only within one expression, never across a rounding) */
#if defined(__GNUC__) && !defined(__clang__)
#define HL_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define HL_NO_CONTRACT
#endif
/* float16: with AVX512-FP16 the compiler vectorizes _Float16 itself; elsewhere gcc keeps every
   _Float16 load, store and conversion scalar. Vectorized loops (HL_VLD_F16, HL_VST_F16,
   hl_vround_f16) then move values as their bits (hl_h16) and convert in integer arithmetic
   with selects by mask (no branch), rounding to nearest even exactly as vcvtps2ph/vcvtph2ps do
   (NaNs quieted, payloads kept); scalar loops keep the one-instruction conversions. */
typedef uint16_t hl_h16 __attribute__((may_alias));
#ifdef __AVX512FP16__
HL_INLINE float hl_f16bits_to_f32(uint16_t u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
HL_INLINE uint16_t hl_f32_to_f16bits(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
HL_INLINE float hl_round_f16(float f) { return (float)(_Float16)f; }
#define hl_vround_f16 hl_round_f16
#define HL_VLD_F16(p) ((float)*(p))
#define HL_VST_F16(p, v) (*(p) = (_Float16)(v))
#else
HL_INLINE uint32_t hl_pick(uint32_t c, uint32_t a, uint32_t b) { uint32_t m = 0u - c; return (a & m) | (b & ~m); }
HL_INLINE float hl_f16bits_to_f32(uint16_t h) {
  uint32_t em = (uint32_t)h & 0x7fffu;                       /* exponent and mantissa */
  float sub = (float)(int32_t)em * 5.9604644775390625e-08f;  /* subnormal: em * 2^-24, exact */
  uint32_t subb; memcpy(&subb, &sub, 4);
  uint32_t r = hl_pick(em >= 0x7c00u, (em << 13) | 0x7f800000u | ((uint32_t)(em > 0x7c00u) << 22),
                       (em << 13) + 0x38000000u);            /* inf/NaN, or exponent rebiased */
  r = hl_pick(em < 0x400u, subb, r) | (((uint32_t)h & 0x8000u) << 16);
  float f; memcpy(&f, &r, 4); return f;
}
HL_INLINE uint16_t hl_f32_to_f16bits(float f) {
  uint32_t x; memcpy(&x, &f, 4);
  uint32_t a = x & 0x7fffffffu;
  float af; memcpy(&af, &a, 4);
  float s = af + 0.5f;              /* below 2^-14: 0.5's ulp (2^-24) is the subnormal step */
  uint32_t sb; memcpy(&sb, &s, 4);
  uint32_t r = hl_pick(a < 0x38800000u, sb - 0x3f000000u, (a + 0x0fffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);
  r = hl_pick(a >= 0x477ff000u, 0x7c00u, r);                 /* 65520 and up round to inf */
  r = hl_pick(a > 0x7f800000u, 0x7e00u | ((a >> 13) & 0x3ffu), r);
  return (uint16_t)(r | ((x >> 16) & 0x8000u));
}
HL_INLINE float hl_vround_f16(float f) { return hl_f16bits_to_f32(hl_f32_to_f16bits(f)); }
HL_INLINE float hl_round_f16(float f) { return (float)(_Float16)f; }   /* one vcvtps2ph each way */
#define HL_VLD_F16(p) hl_f16bits_to_f32(*(const hl_h16*)(p))
#define HL_VST_F16(p, v) (*(hl_h16*)(p) = hl_f32_to_f16bits(v))
#endif
/* float16 with F16C but not AVX512-FP16, under gcc: where a vectorized loop converts
   unconditionally (HL_CVLD_F16, HL_CVST_F16, hl_cvround_f16: not inside a select's arm or an if),
   it calls OpenMP SIMD functions whose vector variants, defined here under the names the x86
   vector ABI gives them (_ZGV<isa>N<lanes>v_<name>), are one vcvtph2ps / vcvtps2ph each (round to
   nearest even, exceptions suppressed: the same results as the integer forms above, which a
   conditional conversion keeps, since gcc 12 does not if-convert a call). Measured on a
   layernorm of 128x768 float16 (AMD EPYC, 2 threads): 150 -> 47 us. */
#if !defined(__AVX512FP16__) && defined(__F16C__) && defined(__AVX2__) && defined(__x86_64__) \
    && defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HL_F16_SIMD_FN_(r, n, a) __attribute__((visibility("hidden"))) r n##_def a __asm__(#n); r n##_def a
#define HL_F16_SIMD_FN(r, n, a) HL_F16_SIMD_FN_(r, n, a)
#if defined(__AVX512F__)
#define HL_F16_SIMD_DECL(r, n, a) _Pragma("omp declare simd notinbranch simdlen(16)") \
  _Pragma("omp declare simd notinbranch simdlen(8)") __attribute__((visibility("hidden"), const, nothrow)) r n a;
#else
#define HL_F16_SIMD_DECL(r, n, a) _Pragma("omp declare simd notinbranch simdlen(8)") \
  __attribute__((visibility("hidden"), const, nothrow)) r n a;
#endif
HL_F16_SIMD_DECL(float, hl_cvt_h2f, (int32_t))   /* gcc 12 vectorizes no call on 16-bit arguments */
HL_F16_SIMD_DECL(uint16_t, hl_cvt_f2h, (float))
HL_F16_SIMD_DECL(float, hl_cvt_r16, (float))
HL_F16_SIMD_FN(float, hl_cvt_h2f, (int32_t h)) { return _cvtsh_ss((unsigned short)h); }
HL_F16_SIMD_FN(uint16_t, hl_cvt_f2h, (float f)) { return _cvtss_sh(f, 8); }
HL_F16_SIMD_FN(float, hl_cvt_r16, (float f)) { return _cvtsh_ss(_cvtss_sh(f, 8)); }
#if defined(__AVX512F__)
HL_F16_SIMD_FN(__m512, _ZGVeN16v_hl_cvt_h2f, (__m512i h)) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)); }
HL_F16_SIMD_FN(__m256i, _ZGVeN16v_hl_cvt_f2h, (__m512 f)) { return _mm512_cvtps_ph(f, 8); }
HL_F16_SIMD_FN(__m512, _ZGVeN16v_hl_cvt_r16, (__m512 f)) { return _mm512_cvtph_ps(_mm512_cvtps_ph(f, 8)); }
#define HL_F16_ISA8(n) _ZGVeN8v_##n
#else
#define HL_F16_ISA8(n) _ZGVdN8v_##n
#endif
HL_F16_SIMD_FN(__m256, HL_F16_ISA8(hl_cvt_h2f), (__m256i h)) {
  return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1))); }
HL_F16_SIMD_FN(__m128i, HL_F16_ISA8(hl_cvt_f2h), (__m256 f)) { return _mm256_cvtps_ph(f, 8); }
HL_F16_SIMD_FN(__m256, HL_F16_ISA8(hl_cvt_r16), (__m256 f)) { return _mm256_cvtph_ps(_mm256_cvtps_ph(f, 8)); }
#define HL_CVLD_F16(p) hl_cvt_h2f((int32_t)*(const hl_h16*)(p))
#define HL_CVST_F16(p, v) (*(hl_h16*)(p) = hl_cvt_f2h(v))
#define hl_cvround_f16 hl_cvt_r16
#else
#define HL_CVLD_F16 HL_VLD_F16
#define HL_CVST_F16 HL_VST_F16
#define hl_cvround_f16 hl_vround_f16
#endif
/* a select of values both computed: bit masks, no branch (vectorizable next to a call) */
HL_INLINE float hl_sel_f32(int c, float a, float b) {
  uint32_t x, y, m = 0u - (uint32_t)(c != 0); memcpy(&x, &a, 4); memcpy(&y, &b, 4);
  x = (x & m) | (y & ~m); memcpy(&a, &x, 4); return a;
}
HL_INLINE double hl_sel_f64(int c, double a, double b) {
  uint64_t x, y, m = 0u - (uint64_t)(c != 0); memcpy(&x, &a, 8); memcpy(&y, &b, 8);
  x = (x & m) | (y & ~m); memcpy(&a, &x, 8); return a;
}
/* heap scratch: NULL when it cannot be had; the kernel then skips its work and returns nonzero
   (hl_status), which the runtime turns into MemoryError. Never abort(): it would end the host. */
static void* hl_alloc(size_t n) { void* p = NULL; return posix_memalign(&p, 64, n ? n : 64) ? NULL : p; }
#define HL_OUT_OF_MEMORY() __atomic_store_n(&hl_status, 1, __ATOMIC_RELAXED)
"""]
    pairs = [("f32", "float", "i32"), ("f32", "float", "u32"), ("f64", "double", "i64"), ("f64", "double", "u64")]
    for f, ft, i in pairs:
        it = _INTS[i][0]
        out.append(f"HL_INLINE {it} hl_bitcast_{f}_{i}({ft} x) {{ {it} r; memcpy(&r, &x, sizeof r); return r; }}\n"
                   f"HL_INLINE {ft} hl_bitcast_{i}_{f}({it} x) {{ {ft} r; memcpy(&r, &x, sizeof r); return r; }}\n")
    out += rounding_helpers(_TYPES)
    out.append(VMATH_C)
    out += float_helpers(_TYPES)
    out += int_helpers(_TYPES)
    for s, (t, _) in _FLOATS.items():
        out.append(f"#pragma omp declare reduction(hl_max_{s} : {t} : omp_out = hl_max_{s}(omp_out, omp_in)) "
                   f"initializer(omp_priv = -INFINITY)\n"
                   f"#pragma omp declare reduction(hl_min_{s} : {t} : omp_out = hl_min_{s}(omp_out, omp_in)) "
                   f"initializer(omp_priv = INFINITY)\n")
    out += int_bitcasts(_TYPES)
    return "".join(out)


def _plain(e) -> bool:
    """A load or a constant, possibly converted: what a select may read unconditionally at the
    cost of one load."""
    while e.op is Op.CAST:
        e = e.src[0]
    return e.op in (Op.LOAD, Op.CONST)


class CRenderer(CStyleRenderer):
    """C99 + GNU extensions + OpenMP for gcc/clang on the host CPU. Register tiles
    (microkernel.py) render as GNU C vector code sized for ``hardware``'s vector registers."""

    local_array_attr = " __attribute__((aligned(64)))"
    return_type = "int"
    type_families = frozenset({"complex", "sub_byte", "small_float"})
    exact_helper_qualifier = "HL_EXACT"
    #: gcc forms fused multiply-subtract-adds from a complex product even under fp-contract=off when
    #: it vectorizes the two parts together (SLP): such helpers are not inlined, not SLP-vectorized
    exact_helper_defs = """#if defined(__GNUC__) && !defined(__clang__)
#define HL_EXACT static __attribute__((noinline, optimize("fp-contract=off", "no-tree-slp-vectorize")))
#else
#define HL_EXACT static __attribute__((noinline))
#pragma STDC FP_CONTRACT OFF
#endif
"""

    def __init__(self, hardware: Hardware | None = None):
        super().__init__()
        self.hardware = hardware or GENERIC
        self.vector_types: dict[str, str] = {}
        self.simd_depth = 0                 # how many vectorized loops enclose what renders now
        self.ranges: dict = {}              # IterVar -> (min, max) of the constant-extent loops open now
        self.f16_calls = False              # this vectorized loop converts float16 by SIMD calls
        self.branches = 0                   # conditional code rendered since the loop began

    def stmt(self, s, depth: int) -> list[str]:
        if isinstance(s, For) and s.extent.op is Op.CONST and s.var not in self.ranges:
            self.ranges[s.var] = (0, s.extent.arg - 1)
            try:
                return self.stmt(s, depth)
            finally:
                del self.ranges[s.var]
        if isinstance(s, For) and s.kind is LoopKind.VECTORIZE:
            before = self.branches
            plain = self.simd_loop(s, depth, calls=False)
            text = "\n".join(plain)
            if not any(h in text for h in ("HL_VLD_F16(", "HL_VST_F16(", "hl_vround_f16(")):
                return plain
            after = self.branches
            calls = self.simd_loop(s, depth, calls=True)
            if self.branches > after:       # conditional code left: gcc would not vectorize the calls
                self.branches = after
                return plain
            self.branches = before
            return calls
        if isinstance(s, If) and self.simd_depth:
            self.branches += 1
            self.arm_depth += 1             # a guarded body
            try:
                return super().stmt(s, depth)
            finally:
                self.arm_depth -= 1
        if isinstance(s, For) and s.kind in (LoopKind.SERIAL, LoopKind.UNROLL):
            hw = self.hardware
            mk = match(s, self.flat_index, hw.vector_bytes, hw.vector_regs)
            if mk is not None:
                p = MicroKernelPrinter(self, mk)
                for key, text in p.helpers():
                    self.vector_types.setdefault(key, text)
                return p.lines(depth)
            pc = match_pack(s, self.flat_index)
            if pc is not None:
                pp = PackPrinter(self, pc)
                self.vector_types.setdefault(*pp.helper())
                return pp.lines(depth)
        return super().stmt(s, depth)

    def function(self, fn: LoweredFunc) -> str:
        """``fn``'s definition; each parallel loop is its own OpenMP ``parallel for`` region of at
        most ``hardware.threads`` threads (``hl_team``: fewer where the caller's OpenMP limit is
        lower, runtime/threads.py), statically scheduled.

        Measured against one region per function whose parallel loops were taskloops (libgomp,
        AMD EPYC, 2 threads): a taskloop costs about 5 us more per loop (its creator sleeps on a
        semaphore until the last task ends) and next to a busy process it was no faster once
        the thread count adapts (bench/threading_cpu.py); static chunks also keep each thread on
        the same data from call to call, in its own cache."""
        t = self.hardware.threads
        if t <= 1 or not any(isinstance(x, For) and x.kind is LoopKind.PARALLEL for x in walk_stmts(fn.body)):
            return super().function(fn)
        for b in fn.args:
            self.name(b, b.name)
        return "\n".join([self.signature(fn) + " {", *self.prologue(fn), *team_lines(t), *self.stmt(fn.body, 1),
                          *self.epilogue(fn), "}"])

    def render(self, fn: LoweredFunc) -> str:
        body = self.function(fn)     # first: it decides which vector types the preamble declares
        return "\n".join([self.preamble(fn), *self.vector_types.values(), body, self.postamble(fn)])

    def signature(self, fn: LoweredFunc) -> str:
        """A function rounding 16-bit products is compiled uncontracted (helpers.multiplies_16bit);
        float32 code elsewhere keeps its fused multiply-adds."""
        sig = super().signature(fn)
        return f"HL_NO_CONTRACT {sig}" if multiplies_16bit(fn) else sig

    # float16 in a vectorized loop: integer arithmetic (V: HL_VLD_F16, ...), which gcc if-converts
    # like any other; or, in a loop with no conditional code left, F16C's instructions through
    # OpenMP SIMD calls (CV, the preamble), since gcc 12 if-converts no loop with a call in it.
    def simd_loop(self, s: For, depth: int, calls: bool) -> list[str]:
        """Vectorized loop ``s``, converting float16 by SIMD ``calls`` or in integer arithmetic.
        With calls, selects whose arms are memory-safe to evaluate run branch-free; a select or
        guard that still branches is counted in ``branches``."""
        self.simd_depth += 1
        arms, self.arm_depth = self.arm_depth, 0        # its iterations run unconditionally
        outer, self.f16_calls = self.f16_calls, calls
        try:
            return super().stmt(s, depth)
        finally:
            self.simd_depth -= 1
            self.arm_depth, self.f16_calls = arms, outer

    @property
    def converts_by_call(self) -> bool:
        return self.f16_calls and self.simd_depth > 0 and not self.arm_depth

    def half_load(self, ref: str) -> str:
        if not self.simd_depth:
            return super().half_load(ref)
        return f"HL_CVLD_F16(&{ref})" if self.converts_by_call else f"HL_VLD_F16(&{ref})"

    def half_store(self, ref: str, v: str) -> str:
        if not self.simd_depth:
            return super().half_store(ref, v)
        return f"HL_CVST_F16(&{ref}, {v});" if self.converts_by_call else f"HL_VST_F16(&{ref}, {v});"

    def round16(self, s: str, d) -> str:
        if d is not dt.float16 or not self.simd_depth:
            return super().round16(s, d)
        return f"hl_cvround_f16({s})" if self.converts_by_call else f"hl_vround_f16({s})"

    def select(self, e) -> str:
        """Branch-free (bit masks) where both arms are memory-safe to evaluate (every load in
        them in bounds over the open loops) and either floats convert by call, or the select
        picks between a float32/64 load and a constant or another load: gcc 12 vectorizes that
        select with a masked load, which it miscompiled for AVX2 in a loop nest filling a pack
        (rows 8-15 of every 16 wrong, tests/test_select_loads.py); a blend of two plain loads
        is also the cheaper form."""
        d = e.dtype
        by_call = self.converts_by_call and not d.is_complex and not d.is_sub_byte and d.format is None
        wanted = by_call or (d in (dt.float32, dt.float64) and all(_plain(x) for x in e.src[1:]))
        if not (wanted and all(self.in_bounds(x) for x in walk([e.src[1], e.src[2]]) if x.op is Op.LOAD)):
            self.branches += self.simd_depth > 0
            return super().select(e)
        c, a, b = (self.expr(x) for x in e.src)
        if d.is_float:
            return f"hl_sel_{'f64' if d is dt.float64 else 'f32'}({c}, {a}, {b})"
        t = self.ctype(d)
        return f"(({t})(({b}) ^ ((({a}) ^ ({b})) & -({t})!!({c}))))"

    def in_bounds(self, load) -> bool:
        """Whether ``load``'s flat index stays inside its buffer over the open loops' ranges."""
        r = static_range(self.flat_index(load.arg, load.src), self.ranges)
        return r is not None and r[0] >= 0 and r[1] < load.arg.size

    def float_op(self, op, a, d):
        if d is not dt.float64 and op in _VMATH:
            return f"{_VMATH[op]}({a[0]})"
        return super().float_op(op, a, d)

    def loop_pragma(self, f: For) -> list[str]:
        ext = f.extent.arg if f.extent.op is Op.CONST else None
        if f.kind is LoopKind.PARALLEL:
            # a region of its own (see ``function``); one iteration runs without forking
            one = f" if ({self.expr(f.extent)} > 1)" if ext is None else ""
            return [f"#pragma omp parallel for schedule(static) num_threads(hl_team){one}"] \
                if self.hardware.threads > 1 and (ext is None or ext > 1) else []
        if f.kind is LoopKind.VECTORIZE:
            clauses = []
            for acc, red in f.reduction:
                d = acc.dtype
                op = {"add": "+", "multiply": "*"}.get(red.ufunc)
                if op is None:  # max/min: NaN-propagating for floats (declared in the helpers)
                    op = f"hl_{red.ufunc[:3]}_{self.suffix(d)}" if d.is_float else red.ufunc[:3]
                clauses.append(f" reduction({op}:{self.name(acc, acc.name)})")
            return ["#pragma omp simd" + "".join(clauses)]
        if f.kind is LoopKind.UNROLL:
            return [f"#pragma GCC unroll {min(ext, 16) if ext else 8}"]
        if f.kind is LoopKind.BIND:
            raise ScheduleError(f"loop '{f.var.name}' is bound to '{f.thread}', but the cpu target has "
                                "no GPU thread indices; use parallel/vectorize instead")
        return []

    def allocate(self, a: Allocate, pad: str):
        """Heap buffers (:func:`on_heap`) guard their body: a failed allocation skips it and
        sets the function's status."""
        b = a.buffer
        if on_heap(b):
            t = self.ctype(b.dtype, storage=True)
            n = self.name(b, b.name)
            return ([f"{pad}{t}* {self.restrict} {n} = ({t}*)hl_alloc({b.size}ULL * sizeof({t}));",
                     f"{pad}if ({n}) {{"],
                    [f"{pad}free({n});", f"{pad}}} else HL_OUT_OF_MEMORY();"])
        return super().allocate(a, pad)

    def prologue(self, fn: LoweredFunc) -> list[str]:
        return ["  int hl_status = 0;   /* nonzero: a heap buffer could not be allocated */"]

    def epilogue(self, fn: LoweredFunc) -> list[str]:
        return ["  return hl_status;"]

    def preamble(self, fn: LoweredFunc) -> str:
        return self.vector_width_pragma() + helpers() + type_helpers(self, fn, _TYPES)

    def vector_width_pragma(self) -> str:
        """On x86 with 512-bit vectors, gcc's own vectorizer is told to use them too (for
        ``-march=native`` on Intel Xeons it prefers 256-bit ones), as the micro-kernels' explicit
        vectors do: exact GELU's erfc on a 128x3072 tile 0.61 -> 0.42 ms, tanh GELU 0.27 -> 0.19
        ms on a Xeon with AVX-512. For the whole file, so every function inlines into every other."""
        hw = self.hardware
        if hw.arch not in ("x86_64", "amd64") or hw.vector_bytes < 64:
            return ""
        return ("#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)\n"
                f'#pragma GCC target("prefer-vector-width={hw.vector_bytes * 8}")\n#endif\n')

    def postamble(self, fn: LoweredFunc) -> str:
        casts = ", ".join(f"({self.ctype(b.dtype, True)}*)args[{k}]" for k, b in enumerate(fn.args))
        return f"""
int hl_run(void** args) {{ return {fn.name}({casts}); }}
void hl_entry(void** args) {{ (void)hl_run(args); }}
double hl_bench(void** args, int64_t number) {{
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int64_t n = 0; n < number; ++n) if ({fn.name}({casts})) return -1.0;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}}
"""


def on_heap(b: Buffer) -> bool:
    """Whether the C renderer allocates ``b`` with ``hl_alloc`` (global scratch, and shared
    buffers over 64 KiB) rather than on the stack."""
    return b.scope == "global" or (b.scope == "shared" and b.size * b.dtype.itemsize > 1 << 16)


def heap_bytes(fn: LoweredFunc) -> int:
    """Bytes of heap scratch ``fn`` allocates (each buffer once), for the check before running."""
    total, stack = 0, [fn.body]
    while stack:
        s = stack.pop()
        if isinstance(s, Seq):
            stack.extend(s.stmts)
        elif isinstance(s, If):
            stack.append(s.then)
        elif isinstance(s, (For, Let, Allocate)):
            stack.append(s.body)
            if isinstance(s, Allocate) and on_heap(s.buffer):
                total += s.buffer.size * s.buffer.dtype.itemsize
    return total


def render_c(fn: LoweredFunc, hardware: Hardware | None = None) -> str:
    """C source of ``fn`` for ``hardware`` (fresh renderer, so names are stable for the same IR)."""
    return CRenderer(hardware).render(fn)


def team_lines(most: int) -> list[str]:
    """C lines declaring ``hl_team``: ``most`` threads, or fewer where the calling thread's
    OpenMP limit (``omp_get_max_threads``, which runtime/threads.py sets per call) is lower."""
    return ["  int omp_get_max_threads(void);",
            f"  const int hl_team = omp_get_max_threads() < {most} ? omp_get_max_threads() : {most};"]


__all__ = ["CRenderer", "heap_bytes", "helpers", "on_heap", "render_c", "team_lines"]

