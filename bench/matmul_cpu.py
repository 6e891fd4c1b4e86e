"""fp32 matmul 1024^3: hlotune's hand-written schedules vs numpy (OpenBLAS), side by side.

Run: ``python -m bench.matmul_cpu``. Writes results/matmul_cpu.csv and results/matmul_cpu.md.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

import hlotune
from hlotune import dsl

from .common import environment, interleaved, md_table, write_results


def _tile(s, C, bm, bn):
    """An bm x bn accumulator tile (cache_write) computed at the tile loop, k outermost in the
    tile, rows unrolled, columns vectorized, the fused tile loops parallel."""
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s.tile(C.axis[0], C.axis[1], bm, bn)
    s.compute_at(CC, jo)
    ci, cj = CC.op.axis
    s.reorder(CC.op.reduce_axis[0], ci, cj)
    s.unroll(ci)
    s.vectorize(cj)
    s.parallel(s.fuse(io, jo))
    s.vectorize(ji)


def tiled(M, N, K, bm=8, bn=64):
    """Tiling + cache_write + vectorize + parallel on the plain matmul."""
    A = dsl.placeholder((M, K), "float32", name="A")
    B = dsl.placeholder((K, N), "float32", name="B")
    k = dsl.reduce_axis(K, name="k")
    C = dsl.compute((M, N), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = hlotune.Schedule(C)
    _tile(s, C, bm, bn)
    return s


#: the packed schedule's sizes: a 6 x 64 register tile (24 AVX-512 accumulators), cache blocks
#: of 96 rows x 512 columns
PACKED = {"mr": 6, "nr": 64, "mc": 96, "nc": 512}


def packed(M, N, K, mr=6, nr=64, mc=96, nc=512):
    """BLIS's loops: column blocks of ``nc`` (parallel) with B packed into [nc/nr][K][nr] panels
    (filled row by row of B),
    row blocks of ``mc`` with A packed into [mc/mr][K][mr] panels, and an mr x nr register tile
    (k outermost, rows unrolled, columns vectorized) that the renderer keeps in vector registers.
    Returns the schedule and (A, B, C)."""
    A = dsl.placeholder((M, K), "float32", name="A")
    B = dsl.placeholder((K, N), "float32", name="B")
    k = dsl.reduce_axis(K, name="k")
    C = dsl.compute((M, N), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = hlotune.Schedule(C)
    CC = s.cache_write(C, "local")
    i, j = C.op.axis
    jo, ji = s.split(j, nr)
    jc, jr = s.split(jo, nc // nr)
    io, ii = s.split(i, mr)
    ic, ir = s.split(io, mc // mr)
    s.reorder(jc, ic, jr, ir, ii, ji)
    s.compute_at(CC, ir)
    ci, cj = CC.op.axis
    s.reorder(CC.op.reduce_axis[0], ci, cj)
    s.unroll(ci)
    s.vectorize(cj)
    PB = s.cache_read(B, "shared", [CC], layout=(1, 0, 2), split=((1, nr),))
    s.compute_at(PB, jc)
    panels, rows, lanes = PB.op.axis
    s.reorder(rows, panels, lanes)      # each row of B read once, across all panels
    s.vectorize(lanes)
    PA = s.cache_read(A, "shared", [CC], layout=(0, 2, 1), split=((0, mr),))
    s.compute_at(PA, ic)
    s.vectorize(ji)
    s.parallel(jc)
    return s, (A, B, C)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    n = args.size
    flops = 2.0 * n * n * n
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    ref = a @ b
    kernels = {"hlotune tiled": hlotune.build(tiled(n, n, n)), "hlotune packed": hlotune.build(packed(n, n, n)[0])}
    outs = {k: np.empty((n, n), np.float32) for k in kernels}
    for name, f in kernels.items():
        f(a, b, outs[name])
        np.testing.assert_allclose(outs[name], ref, rtol=1e-4, atol=1e-3)  # fp32, K=1024 sums
    contenders = {"numpy": lambda: np.matmul(a, b)}
    contenders.update({k: (lambda f=f, o=outs[k]: f(a, b, o)) for k, f in kernels.items()})
    env = environment()
    times = interleaved(contenders, repeats=args.repeats)
    rows, table = [], []
    for name, ts in times.items():
        for r, t in enumerate(ts):
            rows.append({"contender": name, "repeat": r, "seconds": t, "gflops": flops / t / 1e9,
                         "ratio_vs_numpy": times["numpy"][r] / t})
        rat = [times["numpy"][r] / t for r, t in enumerate(ts)]
        med = statistics.median(ts)
        table.append([name, f"{flops / med / 1e9:.1f}", f"{flops / max(ts) / 1e9:.1f}",
                      f"{flops / min(ts) / 1e9:.1f}", f"{statistics.median(rat):.2f}"])
    md = md_table(["contender", "GFLOPS (median)", "GFLOPS (min)", "GFLOPS (max)",
                   "speed vs numpy (median of per-pair ratios)"], table)
    notes = (f"fp32 {n}x{n}x{n}, {args.repeats} interleaved repeats of >= 50 ms each, each after 0.3 s of quiet (OpenBLAS's threads spin on after a call); every contender's "
             "answer checked against numpy (rtol 1e-4, atol 1e-3) before timing. "
             "`tiled`: 8x64 accumulator tile (cache_write) computed at the tile loop, k outermost in the tile, "
             "rows unrolled, 64 columns vectorized, fused tile loops parallel. `packed`: BLIS's loops (bench/matmul_cpu.py "
             "`packed`, a point of the dot template's space): 512-column blocks in parallel with B packed in "
             "[8][K][64] panels, 96-row blocks with A packed in [16][K][6] panels, a 6 x 64 register tile.")
    write_results("matmul_cpu", rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
