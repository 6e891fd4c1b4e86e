"""What adaptive repeats save (autotune/measure.py, runtime.timing.Stop): each module is tuned
twice into fresh databases (and fresh kernel caches, so both compile from cold) with the same seed, repeats ending early (the default) and every
candidate given all its repeats (``--full-repeats``); then both tuned modules are timed
interleaved, so the saving in tuning time is set against what it costs in the result.

Run: ``python -m bench.measure_cost [--trials 32] [--repeats 7]``. Writes
results/measure_cost.{csv,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from hlotune.autotune.task import extract_tasks
from hlotune.runtime.targets import get_target

import hlotune

from .common import environment, interleaved, md_table, write_results

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hlo"
MODULES = ("mlp_block", "conv2d_nhwc_3x3", "attention_multi_head", "layernorm")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=32, help="trials per task")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    env = environment({"trials_per_task": args.trials})
    rows, table = [], []
    for name in MODULES:
        m = hlotune.load_hlo(DATA / f"{name}.hlo")
        ntasks = len(extract_tasks(list(m.outputs), list(m.params), get_target("cpu")))
        got = {}
        for mode, adaptive in (("adaptive", True), ("full", False)):
            db = str(Path(tempfile.mkdtemp()) / f"{name}_{mode}.db")
            os.environ["HLOTUNE_CACHE"] = tempfile.mkdtemp()     # both runs compile from cold
            t0 = time.perf_counter()
            res = hlotune.tune(m, target="cpu", trials=args.trials * ntasks, db=db, progress=False,
                               adaptive=adaptive)
            wall = time.perf_counter() - t0
            measure = sum(r.seconds["measure"] for r in res)
            trials = sum(r.trials for r in res)
            got[mode] = (hlotune.compile(m, db=db), wall, measure, trials)
        a = m.random_inputs()
        times = interleaved({k: (lambda f=v[0], a=a: f(*a)) for k, v in got.items()}, repeats=args.repeats)
        ratio = statistics.median([x / y for x, y in zip(times["adaptive"], times["full"])])
        for mode, (_, wall, measure, trials) in got.items():
            rows.append({"module": name, "mode": mode, "tuning_wall_s": wall, "measure_s": measure, "trials": trials,
                         "tuned_ms": statistics.median(times[mode]) * 1e3})
        (_, wa, ma, ta), (_, wf, mf, tf) = got["adaptive"], got["full"]
        table.append([name, ta, f"{wa:.1f}", f"{wf:.1f}", f"{ma / ta * 1e3:.0f}", f"{mf / tf * 1e3:.0f}",
                      f"{ma / mf:.2f}", f"{statistics.median(times['adaptive']) * 1e3:.3f}",
                      f"{statistics.median(times['full']) * 1e3:.3f}", f"{ratio:.3f}"])
        print(" | ".join(map(str, table[-1])), flush=True)
    md = md_table(["module", "trials", "tuning wall s (adaptive)", "tuning wall s (full)",
                   "measure ms/trial (adaptive)", "measure ms/trial (full)", "measure time adaptive / full",
                   "tuned ms (adaptive)", "tuned ms (full)", "tuned time adaptive / full"], table)
    notes = (f"Each module tuned with {args.trials} trials per task (bayes, seed 0, cost model on) into a fresh "
             "database, once with adaptive repeats (repeats end once three agree within 2%, or after one when the "
             "candidate is 1.5x the task's best so far) and once with every candidate given all 5 repeats "
             "(`--full-repeats`); each run compiles from a fresh kernel cache. Measure: the seconds the measurement worker spent on the trials (checks and "
             "timing; builds apart). The tuned modules are then timed interleaved "
             f"({args.repeats} repeats, median of per-pair ratios): a ratio near 1 means the cheaper "
             "measurements cost nothing in the result.")
    write_results("measure_cost", rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
