"""The machine's peak fp32 FMA rate, measured with a small FMA loop (what the speed targets are
relative to). Run: ``python -m bench.peak``. Each thread runs ``ACC`` independent vector FMA chains
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


def fma_peak(threads: int | None = None, repeats: int = 5) -> dict:
    """Best of ``repeats`` timings of the FMA loop: {'gflops', 'threads', 'vector_bytes'}."""
    cc = os.environ.get("CC", "gcc")
    threads = threads or os.cpu_count() or 1
    from hlotune.runtime.targets import get_target
    vbytes = get_target("cpu").hardware.vector_bytes     # the widest vector the target's ISA has
    with tempfile.TemporaryDirectory(prefix="hlotune_peak_") as d:
        src, lib = Path(d) / "peak.c", Path(d) / "peak.so"
        src.write_text(_SRC)
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", f"-DVBYTES={vbytes}",
                        f"-DACC={ACC}", str(src), "-o", str(lib)], check=True, capture_output=True)
        fn = ctypes.CDLL(str(lib)).fma_loop
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_long, ctypes.c_int]
        fn(ITERS // 10, threads)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(ITERS, threads)
            best = min(best, time.perf_counter() - t0)
    flops = 2.0 * (vbytes // 4) * ACC * ITERS * threads
    return {"gflops": flops / best / 1e9, "threads": threads, "vector_bytes": vbytes}


def main() -> None:
    one, all_ = fma_peak(1), fma_peak()
    print(f"fp32 FMA peak: {one['gflops']:.1f} GFLOP/s on 1 thread, {all_['gflops']:.1f} on {all_['threads']} "
          f"({all_['vector_bytes'] * 8}-bit vectors)")


if __name__ == "__main__":
    main()
