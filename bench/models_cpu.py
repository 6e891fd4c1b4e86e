"""Real model layers (bench/model_layers.py, written in JAX with published sizes): hlotune's
default kernels and hlotune tuned against XLA:CPU (``jax.jit``), side by side in one process.

Run: ``python -m bench.models_cpu [--trials-per-task 32] [--only NAME ...] [--busy]`` (needs the
``bench`` extra). Each layer is dumped as HLO text by JAX; every contender's answer is checked
against JAX's before it is timed; times are interleaved (A B C A B C ...). With ``--busy`` the
timing is repeated while one other process keeps a core busy, and the slowdown of each contender
is reported. One transformer layer's time is split by kernel kind (each task timed alone).
Writes results/models_cpu.csv and results/models_cpu.md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import hlotune

from .common import environment, interleaved, md_table, write_results
from .model_layers import hlo_text, layers


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100000):
            x += 1


class Busy:
    """One process keeping a core busy while the ``with`` block runs."""

    def __enter__(self):
        self.stop = mp.Event()
        self.proc = mp.Process(target=_spin, args=(self.stop,), daemon=True)
        self.proc.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.proc.join(5)


def kind_of(task) -> str:
    """dots/convs, softmax, norms (other reductions) or elementwise."""
    from hlotune.dsl.expr import walk
    from hlotune.dsl.ops import Op
    if task.family in ("dot", "conv"):
        return "dots/convs"
    if task.family == "reduction":
        ops = {e.op for op in task.graph.compute_ops for e in walk(list(op.body))}
        return "softmax" if Op.EXP in ops else "norms/reductions"
    return "elementwise"


def breakdown(module, db, repeat: int) -> dict[str, dict[str, float]]:
    """Seconds per call by kernel kind ({'default': {...}, 'tuned': {...}}): every task of the
    module timed alone (its weight times its median), as the tuner measures it; a task's default
    and tuned kernels are timed in turn, three rounds, the median of each kept."""
    from hlotune.autotune.task import extract_tasks, tuned_schedule_fn
    from hlotune.runtime.build import build
    from hlotune.runtime.targets import get_target
    t = get_target("cpu")
    out: dict[str, dict[str, float]] = {"default": {}, "tuned": {}}
    fn = tuned_schedule_fn(db, t) if db is not None else None
    for task in extract_tasks(list(module.outputs), list(module.params), t):
        ins = task.random_inputs()
        kernels = {which: build(sched, t) for which, sched in
                   (("default", task.schedule(None)), ("tuned", fn(task.graph) if fn else None)) if sched is not None}
        times: dict[str, list[float]] = {which: [] for which in kernels}
        for _ in range(3):
            for which, k in kernels.items():
                times[which].append(k.time(*ins, repeat=repeat, min_repeat_ms=20).median)
        for which, ts in times.items():
            sec = statistics.median(ts) * task.weight
            out[which][kind_of(task)] = out[which].get(kind_of(task), 0.0) + sec
    return out


def main(argv=None):
    import jax
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials-per-task", type=int, default=32, help="0: default schedules only")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="layer names (default: all)")
    ap.add_argument("--busy", action="store_true", help="time again with one competing busy process")
    ap.add_argument("--db", help="tuning database (default: a fresh temporary one)")
    ap.add_argument("--suffix", default="", help="results/models_cpu{SUFFIX} and fusion_cpu{SUFFIX}")
    args = ap.parse_args(argv)
    db_path = args.db or str(Path(tempfile.mkdtemp()) / "models.db")
    env = environment({"trials_per_task": args.trials_per_task})
    rows, table, busy_table, kinds, fusion_rows = [], [], [], None, []
    for name, (fn, params) in layers().items():
        if args.only and name not in args.only:
            continue
        m = hlotune.load_hlo(hlo_text(fn, params))
        jf = jax.jit(fn)
        jargs = [jax.device_put(a) for a in params]
        ref = np.asarray(jf(*jargs))
        contenders = {"XLA:CPU": lambda jf=jf, a=jargs: jf(*a).block_until_ready()}
        default = hlotune.compile(m, target="cpu")
        contenders["hlotune default"] = lambda f=default, p=params: f(*p)
        tune_s, trials, ntasks = 0.0, 0, 0
        if args.trials_per_task:
            from hlotune.autotune.task import extract_tasks
            from hlotune.runtime.targets import get_target
            ntasks = len(extract_tasks(list(m.outputs), list(m.params), get_target("cpu")))
            t0 = time.perf_counter()
            res = hlotune.tune(m, target="cpu", trials=args.trials_per_task * ntasks, db=db_path, progress=True)
            tune_s = time.perf_counter() - t0
            trials = sum(r.trials for r in res)
            tuned = hlotune.compile(m, target="cpu", db=db_path)
            contenders["hlotune tuned"] = lambda f=tuned, p=params: f(*p)
            # the same tuned kernels with every segment fused by the default plan (issue 13's ablation)
            from hlotune.autotune.task import tuned_schedule_fn

            from hlotune.api import CompiledModule, _db
            t = get_target("cpu")
            nofuse = CompiledModule(m, t, tuned_schedule_fn(_db(db_path, create=False), t, plans=False))
            contenders["hlotune tuned, default fusion"] = lambda f=nofuse, p=params: f(*p)
        # the same kernels (tuned when tuned) called from inside jax.jit through the XLA FFI op
        op = jax.jit(hlotune.jax_op(fn, db=db_path if trials else None))
        contenders["hlotune via jax_op inside jax.jit"] = lambda f=op, a=jargs: f(*a).block_until_ready()
        for k, f in contenders.items():
            got = np.asarray(f())
            scale = float(np.max(np.abs(ref))) or 1.0
            err = float(np.max(np.abs(got - ref))) / scale
            assert err < 1e-4, f"{name}: {k} differs from JAX (max error {err:.2e} of max |ref|)"
        times = interleaved(contenders, repeats=args.repeats)
        busy = None
        if args.busy:
            with Busy():
                busy = interleaved(contenders, repeats=args.repeats)
        x = times["XLA:CPU"]
        for k, ts in times.items():
            for r, t in enumerate(ts):
                rows.append({"layer": name, "contender": k, "repeat": r, "seconds": t, "busy": False,
                             "ratio_to_xla": t / x[r], "tune_s": tune_s, "trials": trials})
                if busy:
                    rows.append({"layer": name, "contender": k, "repeat": r, "seconds": busy[k][r], "busy": True,
                                 "ratio_to_xla": busy[k][r] / busy["XLA:CPU"][r], "tune_s": tune_s,
                                 "trials": trials})
        ours = [k for k in contenders if k != "XLA:CPU"]
        line = [name, *(f"{statistics.median(times[k]) * 1e3:.2f}" for k in contenders),
                *(f"{statistics.median([a / b for a, b in zip(times[k], x)]):.2f}" for k in ours)]
        if trials:
            line += [f"{tune_s:.0f}", f"{trials} / {ntasks}"]
        table.append(line)
        if trials:
            fusion_rows.append(_fusion_row(name, times, db_path, m))
        if busy:
            slow = [name] + [f"{statistics.median(busy[k]) / statistics.median(times[k]):.2f}" for k in contenders]
            busy_table.append(slow)
        if kinds is None and ("encoder" in name or "decoder" in name):
            kinds = (name, breakdown(m, hlotune.api._db(db_path) if trials else None, 3))
        print(" | ".join(line), flush=True)
    tuned = bool(args.trials_per_task)
    head = ["layer", "XLA:CPU ms", "hlotune default ms",
            *(["hlotune tuned ms", "tuned, default fusion ms"] if tuned else []),
            "jax_op in jax.jit ms", "default / XLA (time)", *(["tuned / XLA (time)"] if tuned else []),
            *(["tuned, default fusion / XLA (time)"] if tuned else []),
            "jax_op / XLA (time)", *(["tuning wall s", "trials / tasks"] if tuned else [])]
    md = md_table(head, table)
    if busy_table:
        md += "\n\nWith one competing busy process: each contender's median time over its quiet median\n\n"
        md += md_table(["layer", *[f"{k} slowdown" for k in contenders]], busy_table)
    if kinds is not None:
        lname, kd = kinds
        krow = [[k, f"{kd['default'].get(k, 0) * 1e3:.2f}", f"{kd['tuned'].get(k, 0) * 1e3:.2f}" if kd["tuned"] else "-"]
                for k in ("dots/convs", "softmax", "norms/reductions", "elementwise")]
        md += f"\n\nKernel time of `{lname}` by kind (each task timed alone, ms)\n\n"
        md += md_table(["kind", "default", "tuned"], krow)
    notes = (f"Time ratios are hlotune's time over XLA's (< 1: hlotune faster), median of per-pair ratios over "
             f"{args.repeats} interleaved repeats of >= 50 ms, each after 0.3 s of quiet (other thread pools stop spinning). Tuned: `hlotune.tune` with "
             f"{args.trials_per_task} trials per task (bayes, seed 0). Inputs are the same arrays for every "
             "contender; every answer matched JAX's (max error < 1e-4 of max |ref|) before timing. Batch 1, fp32; "
             "XLA:CPU and hlotune use all cores. jax_op: the layer inside jax.jit as hlotune's XLA FFI custom call "
             "(hlotune.jax_op, the tuned kernels when tuned) against plain jax.jit.")
    write_results("models_cpu" + args.suffix, rows, md, env, notes)
    print(md)
    if fusion_rows:
        write_fusion(fusion_rows, env, args)


def _fusion_row(name: str, times: dict, db_path: str, m) -> dict:
    """One layer's fusion ablation: tuned with measured plans over tuned with default fusion, and
    the plans the database chose (non-default winners of the report's fusion view) for the
    segments of module ``m``."""
    from hlotune.autotune.plans import segment_plans
    from hlotune.runtime.targets import get_target
    plans, default = times["hlotune tuned"], times["hlotune tuned, default fusion"]
    fv = hlotune.report(db_path).fusion()
    # this layer's segments only (the database holds every layer tuned so far)
    fv = fv[fv.workload.isin({p.key for p in segment_plans(list(m.outputs), list(m.params), get_target("cpu"))})]
    chosen = []
    if len(fv):
        for _, grp in fv.groupby("workload"):
            won = grp[grp.winner]
            if len(won):    # the confirmed winner, with its gain re-timed interleaved with the default
                best = won.iloc[0]
                gain = best.confirmed_speedup
            else:           # no confirmation: the fastest trial
                best = grp.loc[grp.median_us.idxmin()]
                gain = best.speedup
            if best.plan != "default":
                chosen.append(f"{best.plan} ({gain:.2f}x)")
    return {"layer": name, "plans_ms": statistics.median(plans) * 1e3,
            "default_fusion_ms": statistics.median(default) * 1e3,
            "speedup": statistics.median([b / a for a, b in zip(plans, default)]),
            "segments_measured": int(fv.workload.nunique()) if len(fv) else 0,
            "plans_measured": len(fv), "chosen": "; ".join(chosen) or "default everywhere"}


def write_fusion(fusion_rows: list[dict], env: dict, args) -> None:
    """results/fusion_cpu.{csv,md}: what measured fusion plans were worth on each layer."""
    table = [[r["layer"], f"{r['default_fusion_ms']:.2f}", f"{r['plans_ms']:.2f}", f"{r['speedup']:.2f}",
              f"{r['plans_measured']} / {r['segments_measured']}", r["chosen"]] for r in fusion_rows]
    md = md_table(["layer", "tuned, default fusion ms", "tuned, measured plans ms",
                   "speed-up of plans (median of pairs)", "plans / segments measured", "plans chosen (their gain)"],
                  table)
    faster = sum(r["speedup"] >= 1.10 for r in fusion_rows)
    slower = sum(r["speedup"] < 0.97 for r in fusion_rows)
    notes = (f"{faster} of {len(fusion_rows)} layers >= 10% faster with measured fusion plans than with the "
             f"default fusion (target: at least half), {slower} more than 3% slower (target: none). Both "
             f"columns use the same tuning database ({args.trials_per_task} trials per task, a quarter of them "
             "at most spent on fusion plans, autotune/plans.py) and the same tuned kernels; the second compiles "
             "every segment with its stored plan, the first with the default fusion. Timed interleaved with "
             f"the other contenders of results/models_cpu{args.suffix}.md.")
    write_results("fusion_cpu" + args.suffix, fusion_rows, md, env, notes)
    print(md)
    print(notes)


if __name__ == "__main__":
    main()
