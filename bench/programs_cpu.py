"""Whole programs against XLA:CPU: loops with state, decode steps, scans, mixture of experts,
sampling, training steps and linear algebra (bench/programs.py), in both forms JAX prints
(HLO text and StableHLO), with default schedules and, with ``--trials-per-task N``, tuned.

Per program and form: compile time (parse, lower, schedule, build), the answer checked against
jax.jit's, the kernel launches per call and the calls from Python into C (counted while one call
runs; one where the module's driver runs every kernel) and the host steps (extern ops run in
Python, by kind). Then every contender is timed interleaved (A B A B, after 0.3 s of
quiet, >= 50 ms per repeat) on the same arrays.

Run: ``python -m bench.programs_cpu [--trials-per-task 32] [--repeats 5] [--only NAME ...]``.
Writes results/programs_cpu.{csv,md}.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np
from hlotune.runtime import build as rbuild
from hlotune.runtime.module import _ExternStep

import hlotune

from .common import environment, interleaved, md_table, write_results
from .programs import programs, texts


def _leaves(x) -> list[np.ndarray]:
    import jax
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(x)]


def check(got, want) -> tuple[bool, float]:
    """(every output matches, the largest error relative to its output's largest magnitude):
    floats within 2e-3 of that magnitude, integers and booleans exactly."""
    got = list(got) if isinstance(got, tuple) else [got]
    if len(got) != len(want):
        return False, math.inf
    ok, worst = True, 0.0
    for g, w in zip(got, want):
        g = np.asarray(g)
        if g.shape != w.shape:
            return False, math.inf
        if w.dtype.kind in "fc" or str(w.dtype) == "bfloat16":
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            fin = np.isfinite(w64)
            if not np.array_equal(fin, np.isfinite(g64)) or not np.array_equal(g64[~fin], w64[~fin]):
                return False, math.inf
            scale = float(np.max(np.abs(w64[fin]), initial=0.0)) or 1.0
            err = float(np.max(np.abs(g64[fin] - w64[fin]), initial=0.0)) / scale
            worst = max(worst, err)
            ok &= err <= 2e-3
        else:
            bad = float(np.mean(g != w)) if g.size else 0.0
            worst = max(worst, bad)
            ok &= bad == 0.0
    return bool(ok), worst


class _Launches:
    """Counts compiled-kernel calls while active."""

    def __enter__(self):
        self.n = 0
        self._saved = rbuild.Kernel.run_trusted, rbuild.Kernel.__call__
        run_trusted, call = self._saved
        me = self

        def counted_run(k, *a, **kw):
            me.n += 1
            return run_trusted(k, *a, **kw)

        def counted_call(k, *a, **kw):
            me.n += 1
            return call(k, *a, **kw)
        rbuild.Kernel.run_trusted, rbuild.Kernel.__call__ = counted_run, counted_call
        return self

    def __exit__(self, *exc):
        rbuild.Kernel.run_trusted, rbuild.Kernel.__call__ = self._saved


def host_steps(compiled) -> str:
    """The extern ops a call runs in Python, by kind (a loop's inner ones counted once)."""
    c = Counter(s.op.kind for s in compiled.graph.steps if isinstance(s, _ExternStep))
    for sub in compiled.graph._sub.values():
        c.update(s.op.kind for s in sub.steps if isinstance(s, _ExternStep))
    return ", ".join(f"{k} x{n}" for k, n in sorted(c.items())) or "none"


def prepare(text: str, args, want, db=None) -> dict:
    """Load, compile and check one form; the record of what happened."""
    t0 = time.perf_counter()
    try:
        c = hlotune.compile(hlotune.load_hlo(text), target="cpu", db=db)
    except hlotune.HlotuneError as e:
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
    compile_s = time.perf_counter() - t0
    with _Launches() as n:
        got = c(*args)
    ok, err = check(got, want)
    prog = c.graph.program        # every step compiled: the driver runs them in one C call
    launches, entries = (len(c.graph.steps), 1) if prog is not None else (n.n, n.n)
    return {"fn": c, "compile_s": compile_s, "launches": launches, "entries": entries, "host": host_steps(c),
            "ok": ok, "err": err}


def main(argv=None):
    import jax
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials-per-task", type=int, default=0, help="tune each program's HLO form (0: default only)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="program names (default: all)")
    ap.add_argument("--suffix", default="")
    args = ap.parse_args(argv)
    env = environment({"trials_per_task": args.trials_per_task, "repeats": args.repeats})
    rows, table = [], []
    for name, (fn, params, kind) in programs().items():
        if args.only and name not in args.only:
            continue
        hlo, shlo = texts(fn, params)
        jf = jax.jit(fn)
        jargs = [jax.device_put(a) for a in params]
        want = _leaves(jf(*jargs))
        contenders = {"XLA:CPU": lambda jf=jf, a=jargs: jax.block_until_ready(jf(*a))}
        forms = {}
        for form, text in (("hlo", hlo), ("stablehlo", shlo)):
            try:
                forms[form] = prepare(text, params, want)
            except Exception as e:  # noqa: BLE001  (a bug: reported in the table, the run goes on)
                forms[form] = {"error": f"untyped {type(e).__name__}: {e}"[:160]}
                traceback.print_exc()
        tune_s, trials = 0.0, 0
        if args.trials_per_task and "fn" in forms["hlo"]:
            from hlotune.autotune.task import extract_tasks
            from hlotune.runtime.targets import get_target
            m = hlotune.load_hlo(hlo)
            ntasks = len(extract_tasks(list(m.outputs), list(m.params), get_target("cpu")))
            db = str(Path(tempfile.mkdtemp()) / f"{name}.db")
            t0 = time.perf_counter()
            res = hlotune.tune(m, target="cpu", trials=args.trials_per_task * max(ntasks, 1), db=db, progress=False)
            tune_s, trials = time.perf_counter() - t0, sum(r.trials for r in res)
            for form, text in (("hlo", hlo), ("stablehlo", shlo)):
                forms[form + " tuned"] = prepare(text, params, want, db=db)
        for form, rec in forms.items():
            if rec.get("ok"):
                contenders[f"hlotune {form}"] = lambda f=rec["fn"], p=params: f(*p)
        times = interleaved(contenders, repeats=args.repeats)
        x = times["XLA:CPU"]
        xla_ms = statistics.median(x) * 1e3
        ratio = {k: statistics.median([a / b for a, b in zip(ts, x)]) for k, ts in times.items()}
        for form, rec in forms.items():
            k = f"hlotune {form}"
            row = {"program": name, "kind": kind, "form": form, "xla_ms": xla_ms,
                   "ms": statistics.median(times[k]) * 1e3 if k in times else None,
                   "ratio_to_xla": ratio.get(k), "compile_s": rec.get("compile_s"), "launches": rec.get("launches"),
                   "entries": rec.get("entries"),
                   "host_steps": rec.get("host"), "matches_jax": rec.get("ok"), "max_rel_err": rec.get("err"),
                   "error": rec.get("error", ""), "tune_s": tune_s, "trials": trials}
            rows.append(row)
        line = [name, kind, f"{xla_ms:.3f}"]
        for form in ("hlo", "stablehlo", *(("hlo tuned", "stablehlo tuned") if trials else ())):
            rec = forms.get(form, {})
            k = f"hlotune {form}"
            line.append(f"{ratio[k]:.2f}" if k in ratio else ("wrong" if "ok" in rec else "error"))
        h = forms["hlo"]
        line += [h.get("launches", "-"), h.get("entries", "-"), h.get("host", h.get("error", "-")),
                 f"{h['compile_s']:.1f}" if "compile_s" in h else "-",
                 f"{forms['stablehlo']['compile_s']:.1f}" if "compile_s" in forms["stablehlo"] else "-"]
        if trials:
            line.append(f"{tune_s:.0f}")
        table.append(line)
        print(" | ".join(map(str, line)), flush=True)
    head = ["program", "kind", "XLA:CPU ms", "HLO default / XLA", "StableHLO default / XLA",
            *(["HLO tuned / XLA", "StableHLO tuned / XLA"] if args.trials_per_task else []),
            "launches per call (HLO)", "calls into C per call (HLO)", "host steps (HLO)", "compile s (HLO)", "compile s (StableHLO)",
            *(["tuning s"] if args.trials_per_task else [])]
    md = md_table(head, table)
    summary = []
    for form in ("hlo", "stablehlo", "hlo tuned", "stablehlo tuned"):
        rs = [r["ratio_to_xla"] for r in rows if r["form"] == form and r["ratio_to_xla"]]
        if rs:
            g = math.exp(statistics.mean(math.log(v) for v in rs))
            summary.append([form, len(rs), f"{g:.2f}", f"{max(rs):.2f}",
                            sum(1 for r in rows if r["form"] == form and not r["ratio_to_xla"])])
    md += "\n\n" + md_table(["form", "programs timed", "geomean time / XLA", "worst", "not timed (error or wrong)"],
                            summary)
    notes = ("Ratios are hlotune's time over XLA's (< 1: hlotune faster), median of per-pair ratios over "
             f"{args.repeats} interleaved repeats. Every timed answer matched jax.jit's (floats within 2e-3 of the "
             "output's largest magnitude, integers exactly); 'wrong' and 'error' rows are not timed. Launches: "
             "compiled kernels run in one call of the program (a while loop compiled whole is one); calls into C: "
             "trips from Python into compiled code (1 where every step is compiled: one driver runs them all). "
             "Host steps: "
             "extern ops run in Python (inside a loop run on the host, counted once). Compile: load, lower, "
             "schedule and build with default schedules (gcc's cache warm or cold as it happened).")
    write_results("programs_cpu" + args.suffix, rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
