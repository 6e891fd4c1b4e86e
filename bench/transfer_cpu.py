"""Does the tuning database teach a new shape anything? Transfer across shapes of a family.

Run: ``python -m bench.transfer_cpu [--family dot] [--train-trials 24] [--few 8] [--long 256]
[--save-log LOG | --train-log LOG]``.

1. Ten shapes of the family are tuned into one database (``--train-trials`` each, bayes), and
   with ``--save-log`` written as a tuning log. With ``--train-log`` the database is that log
   instead, imported: recorded on another machine, it measures transfer across machine kinds
   (the log's target differs from this one, so its records teach through the warm start and the
   cost model only, never as this machine's own).
2. Five held-back shapes are each tuned three ways from the same start (their default
   measured first, then the trials):
   - ``long``: ``--long`` trials in a fresh database (the shape's own best, the yardstick);
   - ``with database``: ``--few`` trials in a copy of the trained database (warm-start configs of
     the nearest shapes and the cost model trained across it, autotune/costmodel.py);
   - ``alone``: ``--few`` trials in a fresh database (no model: the space-filling start).
   Each tuned best is then re-timed in one process, interleaved with the others, so the ratios
   compare kernels, not moments.
3. The trained database's cost model is replayed leave-one-shape-out (``costmodel.replay``) for
   each model kind (and extra trees without the gemm features, to compare): the median Spearman
   correlation of predicted and measured times, and the time of each model's first pick against
   the shape's best.

Families: ``dot`` (matmuls with a tanh epilogue), ``conv`` (3x3 NHWC convolutions). Writes
results/NAME.csv and results/NAME.md (``--name``; default transfer_cpu, transfer_cpu_conv).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from hlotune.autotune import costmodel
from hlotune.autotune.database import Database
from hlotune.autotune.task import tuned_schedule_fn
from hlotune.autotune.tune import tune_graph
from hlotune.runtime.module import CompiledGraph
from hlotune.runtime.targets import get_target

from hlotune import dsl

from .common import environment, interleaved, md_table, write_results

#: (train shapes, held-back shapes) per family
SHAPES = {
    "dot": ([(128, 128, 128), (256, 128, 256), (128, 512, 256), (512, 256, 128), (384, 384, 384),
             (256, 768, 256), (640, 256, 512), (96, 1024, 192), (768, 512, 256), (512, 512, 512)],
            [(256, 256, 256), (192, 640, 384), (448, 320, 512), (1024, 256, 128), (320, 960, 320)]),
    "conv": ([(28, 28, 32, 32), (14, 14, 64, 64), (56, 56, 16, 32), (28, 28, 64, 32), (14, 14, 128, 128),
              (7, 7, 256, 128), (28, 28, 48, 48), (14, 14, 96, 64), (56, 56, 32, 16), (7, 7, 128, 256)],
             [(28, 28, 96, 96), (14, 14, 48, 96), (56, 56, 24, 24), (7, 7, 192, 192), (28, 28, 16, 64)]),
}


def graph(family: str, shape: tuple):
    if family == "dot":
        m, n, k = shape
        A = dsl.placeholder((m, k), "float32", name="A")
        B = dsl.placeholder((k, n), "float32", name="B")
        r = dsl.reduce_axis(k, name="r")
        C = dsl.compute((m, n), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="C")
        D = dsl.compute((m, n), lambda i, j: dsl.tanh(C[i, j]), name="D")
        return [D], [A, B]
    h, w, ci, co = shape
    X = dsl.placeholder((1, h + 2, w + 2, ci), "float32", name="X")
    W = dsl.placeholder((3, 3, ci, co), "float32", name="W")
    ry, rx, rc = dsl.reduce_axis(3, name="ry"), dsl.reduce_axis(3, name="rx"), dsl.reduce_axis(ci, name="rc")
    Y = dsl.compute((1, h, w, co), lambda b, y, x, c: dsl.sum(X[b, y + ry, x + rx, rc] * W[ry, rx, rc, c],
                                                              axis=[ry, rx, rc]), name="Y")
    return [Y], [X, W]


def tune(family, shape, db_path, trials, cost_model=True):
    outs, ins = graph(family, shape)
    db = Database(db_path)
    t0 = time.perf_counter()
    res = tune_graph(outs, ins, get_target("cpu"), trials, db, "bayes", 0, progress=False, confirm_rounds=0,
                     plan_share=0.0, cost_model=cost_model, module_key=f"{family}{shape}")
    wall = time.perf_counter() - t0
    return res, db, wall


def runner(family, shape, db):
    outs, ins = graph(family, shape)
    cpu = get_target("cpu")
    cg = CompiledGraph(outs, ins, cpu, schedule_fn=tuned_schedule_fn(db, cpu))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(t.shape).astype(np.float32) for t in ins]
    return lambda: cg(*args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--family", default="dot", choices=sorted(SHAPES))
    ap.add_argument("--train-trials", type=int, default=24)
    ap.add_argument("--few", type=int, default=8)
    ap.add_argument("--long", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="a folder to keep the tuning databases in")
    ap.add_argument("--save-log", type=Path, default=None, help="write the trained database as a tuning log")
    ap.add_argument("--train-log", type=Path, default=None,
                    help="a tuning log (from another machine) to use instead of training here")
    ap.add_argument("--name", default=None, help="the results' name")
    args = ap.parse_args(argv)
    env = environment({"family": args.family, "train_trials": args.train_trials, "few": args.few,
                       "long": args.long})
    train, held = SHAPES[args.family]
    tmp = Path(tempfile.mkdtemp()) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    trained = tmp / "trained.db"
    t0 = time.perf_counter()
    if args.train_log is None:
        for shape in train:
            tune(args.family, shape, trained, args.train_trials)
        if args.save_log is not None:
            Database(trained).export_jsonl(args.save_log)
    else:
        res = Database(trained).import_log(args.train_log, skip_bad=False)
        if not res.committed:
            raise SystemExit(f"{args.train_log}: bad lines {res.skipped[:3]}")
    train_wall = time.perf_counter() - t0
    training = _training_note(args, Database(trained), train, train_wall)
    rows, table = [], []
    for shape in held:
        dbs = {"long": tmp / f"long{shape}.db", "with database": tmp / f"with{shape}.db",
               "alone": tmp / f"alone{shape}.db"}
        shutil.copy(trained, dbs["with database"])
        walls = {}
        for how, trials in (("long", args.long), ("with database", args.few), ("alone", args.few)):
            _, _, walls[how] = tune(args.family, shape, dbs[how], trials, cost_model=how != "alone")
        runs = {how: runner(args.family, shape, Database(p)) for how, p in dbs.items()}
        times = interleaved(runs, repeats=args.repeats)
        med = {how: statistics.median(ts) for how, ts in times.items()}
        for how in dbs:
            rows.append({"shape": "x".join(map(str, shape)), "how": how, "seconds": med[how],
                         "vs_long": med[how] / med["long"], "tuning_wall_s": walls[how]})
        table.append(["x".join(map(str, shape)), f"{med['long'] * 1e6:.0f}",
                      f"{med['with database'] / med['long']:.3f}", f"{med['alone'] / med['long']:.3f}",
                      f"{walls['with database']:.0f} / {walls['alone']:.0f}"])
    within = {how: sum(1 for r in rows if r["how"] == how and r["vs_long"] <= 1.05) for how in ("with database", "alone")}
    hw = get_target("cpu").hardware
    replay = costmodel.replay(Database(trained), args.family, "cpu", hw=hw)
    replay.update({f"{k} without gemm features": v
                   for k, v in costmodel.replay(Database(trained), args.family, "cpu", ("ET",)).items()})
    md = md_table(["held-back shape", f"{args.long}-trial best (us)", f"{args.few} trials with database / long",
                   f"{args.few} trials alone / long", "tuning wall s (with / alone)"], table)
    md += "\n\nCost model replayed leave-one-shape-out on the trained database:\n\n" + md_table(
        ["model", "shapes", "Spearman (median)", "first pick / shape's best (median)"],
        [[k, v["workloads"], f"{v['spearman']:.2f}" if v["spearman"] is not None else "-",
          f"{v['first_pick_vs_best']:.3f}" if v["first_pick_vs_best"] is not None else "-"]
         for k, v in replay.items()])
    notes = (f"**{args.family}: with the database, {within['with database']} of {len(held)} held-back shapes end within "
             f"5% of their own {args.long}-trial best after {args.few} trials; alone, {within['alone']} of "
             f"{len(held)}** (target: within 5% of the 256-trial best in <= 8 trials; the yardstick here is "
             f"{args.long} trials). {training} Each best re-timed interleaved, {args.repeats} repeats of >= 50 ms.")
    name = args.name or (f"transfer_cpu_{args.family}" if args.family != "dot" else "transfer_cpu")
    write_results(name, rows, md, env, notes)
    print(md)
    print(notes)


def _machine(prov: dict) -> str:
    hw = prov.get("hardware") or {}
    isa = ",".join(hw.get("isa") or []) or "ISA not recorded"
    return f"{prov.get('cpu_model', '?')} ({prov.get('cpu_id', 'cpu id not recorded')}; {isa})"


def _training_note(args, db: Database, train, wall: float) -> str:
    here = get_target("cpu")
    if args.train_log is None:
        saved = f" Saved as the tuning log {args.save_log}." if args.save_log else ""
        return (f"Training: {len(train)} shapes x {args.train_trials} trials on this machine, {wall:.0f} s.{saved}"
                " Transfer to another CPU kind: not measured in this run.")
    others = [t["provenance"] for t in db.targets() if t["kind"] == "cpu" and t["key"] != here.key]
    trials = sum(1 for t in db.history() if t.config)
    where = "; ".join(_machine(p) for p in others) or "this machine (no other target in the log)"
    return (f"**Across machines:** the database is the log {args.train_log} ({trials} tuned trials), recorded on "
            f"{where}; tuned and timed here on {_machine(here.provenance)}.")


if __name__ == "__main__":
    main()
