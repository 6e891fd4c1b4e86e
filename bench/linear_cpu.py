"""Linear layers in both weight layouts, tuned, against XLA:CPU and numpy/OpenBLAS side by side.

A model's dense layer multiplies activations ``x [rows, in]`` by a weight stored either
``[in, out]`` (JAX/Flax: ``x @ W``) or ``[out, in]`` (a PyTorch ``Linear``, and the ``W^T`` of
every backward pass: ``x @ W.T``). The second reads B across its rows, which only a transposing
pack turns into the micro-kernel's vectors. Each case is lowered by JAX to HLO, tuned by hlotune
(``--trials`` per case, into one database), checked against numpy's float64 product and timed
interleaved with hlotune's untuned default, XLA:CPU (``jax.jit`` of the same function) and numpy.

Run: ``python -m bench.linear_cpu [--trials 64] [--name linear_cpu]`` (needs the ``bench``
extra). Writes results/NAME.csv and results/NAME.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import hlotune

from .common import environment, interleaved, md_table, write_results
from .peak import fma_peak

#: (rows, in, out): a BERT-base layer's projections and FFN at 128 tokens
SHAPES = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768)]
LAYOUTS = {"x @ W (W [in, out], JAX)": False, "x @ W.T (W [out, in], PyTorch)": True}


def _case(rows: int, n_in: int, n_out: int, transposed: bool, seed: int):
    """(jitted function, numpy function, arguments as numpy arrays)."""
    import jax
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n_in), dtype=np.float32)
    w = (rng.standard_normal((n_out, n_in) if transposed else (n_in, n_out), dtype=np.float32) / np.sqrt(n_in)).astype(
        np.float32)

    def fn(a, b):
        return a @ (b.T if transposed else b)
    return jax.jit(fn), fn, [x, w]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=64, help="tuning trials per case")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--db", help="tuning database (default: a fresh temporary one)")
    ap.add_argument("--name", default="linear_cpu")
    args = ap.parse_args(argv)
    import jax
    db = args.db or str(Path(tempfile.mkdtemp()) / "linear.db")
    peak = fma_peak()
    env = environment({"trials_per_case": args.trials, "fp32_peak": f"{peak['gflops']:.1f} G/s"})
    rows, table = [], []
    for si, (m, k, n) in enumerate(SHAPES):
        for li, (layout, transposed) in enumerate(LAYOUTS.items()):
            jf, nf, arrays = _case(m, k, n, transposed, seed=10 * si + li)
            module = hlotune.load_hlo(jf.lower(*arrays).as_text(dialect="hlo"))
            t0 = time.perf_counter()
            hlotune.tune(module, target="cpu", trials=args.trials, db=db, seed=0, progress=False)
            tuning = time.perf_counter() - t0
            default, tuned = hlotune.compile(module, target="cpu"), hlotune.compile(module, target="cpu", db=db)
            want = nf(*(a.astype(np.float64) for a in arrays))
            jargs = [jax.device_put(a) for a in arrays]

            def xla(jf=jf, jargs=jargs):
                return np.asarray(jax.block_until_ready(jf(*jargs)))
            contenders = {"hlotune default": lambda d=default, a=arrays: d(*a),
                          "hlotune tuned": lambda t=tuned, a=arrays: t(*a),
                          "XLA:CPU": xla, "numpy (OpenBLAS)": lambda a=arrays: nf(*a)}
            for name, fn in contenders.items():     # every answer checked before timing
                got = np.asarray(fn(), np.float64)
                err = np.abs(got - want).max() / np.abs(want).max()
                if not err < 1e-4:
                    raise SystemExit(f"{name} on {m}x{k}x{n} {layout}: relative error {err:.2e}")
            times = interleaved(contenders, repeats=args.repeats)
            flops = 2.0 * m * k * n
            tt = times["hlotune tuned"]
            row = {"rows": m, "in": k, "out": n, "layout": layout, "tuning_s": round(tuning, 1)}
            for name, ts in times.items():
                row[f"{name} ms"] = statistics.median(ts) * 1e3
                row[f"tuned speed / {name}"] = statistics.median([y / x for x, y in zip(tt, ts)])
                for r, t in enumerate(ts):
                    rows.append({"rows": m, "in": k, "out": n, "layout": layout, "contender": name, "repeat": r,
                                 "seconds": t, "gflops": flops / t / 1e9})
            g = flops / statistics.median(tt) / 1e9
            table.append([f"{m} x {k} -> {n}", layout, f"{row['hlotune tuned ms']:.3f}", f"{g:.0f}",
                          f"{100 * g / peak['gflops']:.0f}%", f"{row['XLA:CPU ms']:.3f}", f"{row['numpy (OpenBLAS) ms']:.3f}",
                          f"{row['hlotune default ms']:.3f}", f"{row['tuned speed / XLA:CPU']:.2f}",
                          f"{row['tuned speed / numpy (OpenBLAS)']:.2f}", f"{row['tuned speed / hlotune default']:.2f}",
                          f"{tuning:.0f}"])
            print(table[-1], flush=True)
    md = md_table(["rows x in -> out", "weight layout", "hlotune tuned ms", "GFLOP/s", "of FMA peak", "XLA:CPU ms",
                   "numpy ms", "hlotune default ms", "tuned speed / XLA's", "tuned speed / numpy's",
                   "tuned speed / default's", "tuning s"], table)
    notes = (f"fp32, {args.trials} tuning trials per case (bayes, seed 0, one database for all cases); speeds are "
             f"medians of per-pair ratios over {args.repeats} interleaved repeats of >= 50 ms each after 0.3 s of "
             "quiet; > 1: hlotune tuned is faster. Every contender's answer is checked against numpy's float64 product "
             f"(relative error < 1e-4) before timing. FMA peak (bench/peak.py): {peak['gflops']:.1f} GFLOP/s on "
             f"{peak['threads']} threads.")
    write_results(args.name, rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
