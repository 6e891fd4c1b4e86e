"""Tune the corpus's matmul_1024 on the CPU, then measure default, tuned, numpy and XLA:CPU
side by side in one process.

Run: ``python -m bench.tune_matmul [--trials 64]`` (needs the ``bench`` extra). Writes
results/tune_matmul_cpu.csv and results/tune_matmul_cpu.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import hlotune
from hlotune.cli import check_outputs

from .common import environment, interleaved, md_table, write_results
from .peak import fma_peak
from .corpus_cpu import DATA, xla_runner


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--tuner", default="bayes")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--db", help="tuning database (default: a fresh temporary one)")
    args = ap.parse_args(argv)
    name = "matmul_1024"
    db = args.db or str(Path(tempfile.mkdtemp()) / "tune_matmul.db")
    m = hlotune.load_hlo(DATA / f"{name}.hlo")
    peak = fma_peak()
    env = environment({"trials": args.trials, "tuner": args.tuner, "fma_peak_gflops": f"{peak['gflops']:.1f}"})
    t0 = time.perf_counter()
    res = hlotune.tune(m, target="cpu", trials=args.trials, db=db, tuner=args.tuner, seed=0, progress=True)
    wall = time.perf_counter() - t0
    z = np.load(DATA / f"{name}.npz")
    a, b = z["arg0"], z["arg1"]
    default = hlotune.compile(m, target="cpu")
    tuned = hlotune.compile(m, target="cpu", db=db)
    xla = xla_runner(name, [a, b])
    for f in (default, tuned):
        assert all(r["ok"] for r in check_outputs((f(a, b),), DATA / f"{name}.npz"))
    assert all(r["ok"] for r in check_outputs((np.matmul(a, b),), DATA / f"{name}.npz"))
    assert all(r["ok"] for r in check_outputs(tuple(xla()), DATA / f"{name}.npz"))
    times = interleaved({"hlotune default": lambda: default(a, b), "hlotune tuned": lambda: tuned(a, b),
                         "numpy (OpenBLAS)": lambda: np.matmul(a, b), "XLA:CPU": xla}, repeats=args.repeats)
    flops = 2.0 * 1024 ** 3
    rows, table = [], []
    tuned_t = times["hlotune tuned"]
    for k, ts in times.items():
        for r, t in enumerate(ts):
            rows.append({"contender": k, "repeat": r, "seconds": t, "gflops": flops / t / 1e9,
                         "tuned_speed_over_this": t / tuned_t[r]})
        med = statistics.median(ts)
        table.append([k, f"{med * 1e3:.2f}", f"{flops / med / 1e9:.1f}", f"{100 * flops / med / 1e9 / peak['gflops']:.0f}%",
                      f"{statistics.median([tuned_t[r] and ts[r] / tuned_t[r] for r in range(len(ts))]):.2f}"])
    fails: dict = {}
    for r in res:
        for f, n in r.failures.items():
            fails[f] = fails.get(f, 0) + n
    rep = hlotune.report(db)
    conv = rep.convergence()
    best_cfg = [r.best_config for r in res]
    numpy_g = flops / statistics.median(times["numpy (OpenBLAS)"]) / 1e9
    tuned_g = flops / statistics.median(tuned_t) / 1e9
    md = md_table(["contender", "ms (median)", "GFLOPS", "of FMA peak", "hlotune tuned speed-up over it (median of pairs)"], table)
    xla_g = flops / statistics.median(times["XLA:CPU"]) / 1e9
    notes = (f"**Tuned: {tuned_g / numpy_g:.2f}x numpy/OpenBLAS (target >= 1.3x), {tuned_g / xla_g:.2f}x XLA:CPU "
             f"(target >= 2x), {100 * tuned_g / peak['gflops']:.0f}% of the machine's fp32 FMA peak (target >= 65%), "
             f"tuning wall time {wall:.0f} s.** FMA peak measured by bench/peak.py's FMA loop: "
             f"{peak['gflops']:.1f} GFLOP/s on {peak['threads']} threads ({peak['vector_bytes'] * 8}-bit vectors).\n\n"
             f"Tuning: {args.trials} trials with `{args.tuner}` (seed 0), wall time {wall:.0f} s, "
             f"{sum(r.trials for r in res)} trials recorded over {len(res)} task(s), failures {fails or 'none'}. "
             f"Best config: `{best_cfg}` (`{{}}` is the default schedule: no candidate beat it).\n\nBest-so-far (us) every 8 trials: "
             + ", ".join(f"{v:.0f}" for v in conv.best_so_far_us.iloc[7::8]) +
             f"\n\n{args.repeats} interleaved repeats of >= 50 ms each, each after 0.3 s of quiet (OpenBLAS's threads spin on after a call); every answer checked against the npz "
             "(rtol 1e-4, atol 1e-5 x max|ref|) before timing. numpy and XLA use all cores, as hlotune's OpenMP.")
    write_results("tune_matmul_cpu", rows, md, env, notes)
    print(md)
    print(notes)


if __name__ == "__main__":
    main()
