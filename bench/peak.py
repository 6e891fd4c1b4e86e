"""The machine's peak rates, measured with small loops of one instruction (what the speed targets
are relative to): fp32 FMAs, and bf16 pair dot products (``vdpbf16ps``, AVX512-BF16) where the
compiler targets them, and int8 quad dot products (``vpdpbusd``, AVX512-VNNI). Run:
``python -m bench.peak``. Each thread runs ``ACC`` independent vector FMA chains
(enough to hide the FMA latency on current x86 cores) of the widest vector the compiler targets
with ``-march=native``; 2 FLOPs per lane per FMA. The loop has no barrier inside it: strict IEEE
arithmetic (no -ffast-math) already keeps gcc from folding it, and an empty ``asm`` that pins a
register there cost a quarter of the rate on an Intel Xeon (a peak 25% too low). Nothing is written to results/: the figure is
printed and recorded by the benchmarks that quote it (bench.tune_matmul, bench.matmul_cpu)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import time
from pathlib import Path

ACC = 12          # independent accumulators per thread
ITERS = 20_000_000  # FMA rounds per thread and call (about 0.1 s)

_SRC = r"""
#include <omp.h>
typedef float vf __attribute__((vector_size(VBYTES)));
float fma_loop(long iters, int threads) {
    float total = 0.0f;
    #pragma omp parallel num_threads(threads) reduction(+:total)
    {
        vf acc[ACC]; vf a, b;
        for (int l = 0; l < VBYTES / 4; ++l) { a[l] = 0.999999f; b[l] = 1e-7f; }
        for (int j = 0; j < ACC; ++j) for (int l = 0; l < VBYTES / 4; ++l) acc[j][l] = (float)(j + l);
        for (long i = 0; i < iters; ++i) {
            #pragma GCC unroll 16
            for (int j = 0; j < ACC; ++j) acc[j] = acc[j] * a + b;
        }
        for (int j = 0; j < ACC; ++j) for (int l = 0; l < VBYTES / 4; ++l) total += acc[j][l];
    }
    return total;
}
"""

#: vdpbf16ps chains (each lane adds two bf16 products: 4 FLOPs per lane), as the FMA loop's
_BF16_SRC = r"""
#include <omp.h>
#include <immintrin.h>
#if !defined(__AVX512BF16__) || (VBYTES < 64 && !defined(__AVX512VL__))
#error no AVX512-BF16 at this width
#endif
#if VBYTES == 64
typedef __m512 vf; typedef __m512bh vb;
#define DP _mm512_dpbf16_ps
#define SET1(x) _mm512_set1_ps(x)
#define BH(x) ((vb)_mm512_set1_epi32(x))
#else
typedef __m256 vf; typedef __m256bh vb;
#define DP _mm256_dpbf16_ps
#define SET1(x) _mm256_set1_ps(x)
#define BH(x) ((vb)_mm256_set1_epi32(x))
#endif
float fma_loop(long iters, int threads) {
    float total = 0.0f;
    #pragma omp parallel num_threads(threads) reduction(+:total)
    {
        vf acc[ACC]; vb a = BH(0x3f7f3f7f), b = BH(0x33d633d6);
        for (int j = 0; j < ACC; ++j) acc[j] = SET1((float)j);
        for (long i = 0; i < iters; ++i) {
            #pragma GCC unroll 16
            for (int j = 0; j < ACC; ++j) acc[j] = DP(acc[j], a, b);
        }
        for (int j = 0; j < ACC; ++j) for (int l = 0; l < VBYTES / 4; ++l) total += acc[j][l];
    }
    return total;
}
"""
#: vpdpbusd chains (each int32 lane adds four u8 x s8 products: 8 integer ops per lane)
_VNNI_SRC = r"""
#include <omp.h>
#include <immintrin.h>
#if !defined(__AVX512VNNI__) || (VBYTES < 64 && !defined(__AVX512VL__))
#error no AVX512-VNNI at this width
#endif
#if VBYTES == 64
typedef __m512i vi;
#define DP _mm512_dpbusd_epi32
#define SET1 _mm512_set1_epi32
#else
typedef __m256i vi;
#define DP _mm256_dpbusd_epi32
#define SET1 _mm256_set1_epi32
#endif
float fma_loop(long iters, int threads) {
    float total = 0.0f;
    #pragma omp parallel num_threads(threads) reduction(+:total)
    {
        vi acc[ACC]; vi a = SET1(0x01020304), b = SET1(0x01FF01FF);
        for (int j = 0; j < ACC; ++j) acc[j] = SET1(j);
        for (long i = 0; i < iters; ++i) {
            #pragma GCC unroll 16
            for (int j = 0; j < ACC; ++j) acc[j] = DP(acc[j], a, b);
        }
        for (int j = 0; j < ACC; ++j) for (int l = 0; l < VBYTES / 8; ++l) total += (float)acc[j][l];  /* 64-bit parts */
    }
    return total;
}
"""
#: FLOPs (integer ops for int8) of one instruction per 32-bit lane of its result
_KINDS = {"fp32": (_SRC, 2), "bf16": (_BF16_SRC, 4), "int8": (_VNNI_SRC, 8)}


def fma_peak(threads: int | None = None, repeats: int = 5) -> dict:
    """Best of ``repeats`` timings of the FMA loop: {'gflops', 'threads', 'vector_bytes'}."""
    return peak("fp32", threads, repeats)


def peak(kind: str = "fp32", threads: int | None = None, repeats: int = 5) -> dict | None:
    """Best of ``repeats`` timings of ``kind``'s loop ('fp32': FMAs, 'bf16': vdpbf16ps, 'int8':
    vpdpbusd; its 'gflops' are then integer GOP/s):
    {'kind', 'gflops', 'threads', 'vector_bytes'}; None where the compiler does not target it."""
    src_text, per_lane = _KINDS[kind]
    cc = os.environ.get("CC", "gcc")
    threads = threads or os.cpu_count() or 1
    from hlotune.runtime.targets import get_target
    vbytes = get_target("cpu").hardware.vector_bytes     # the widest vector the target's ISA has
    with tempfile.TemporaryDirectory(prefix="hlotune_peak_") as d:
        src, lib = Path(d) / "peak.c", Path(d) / "peak.so"
        src.write_text(src_text)
        p = subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", f"-DVBYTES={vbytes}",
                            f"-DACC={ACC}", str(src), "-o", str(lib)], check=False, capture_output=True)
        if p.returncode:
            if kind == "fp32":
                raise RuntimeError(f"the FMA loop does not compile: {p.stderr.decode()[-500:]}")
            return None
        fn = ctypes.CDLL(str(lib)).fma_loop
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_long, ctypes.c_int]
        fn(ITERS // 10, threads)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(ITERS, threads)
            best = min(best, time.perf_counter() - t0)
    flops = per_lane * (vbytes // 4) * ACC * ITERS * threads
    return {"kind": kind, "gflops": flops / best / 1e9, "threads": threads, "vector_bytes": vbytes}


def main() -> None:
    for kind in _KINDS:
        one, all_ = peak(kind, 1), peak(kind)
        if one is None:
            print(f"{kind}: the compiler does not target its instruction here")
            continue
        print(f"{kind} peak: {one['gflops']:.1f} GFLOP/s on 1 thread, {all_['gflops']:.1f} on {all_['threads']} "
              f"({all_['vector_bytes'] * 8}-bit vectors)")


if __name__ == "__main__":
    main()
