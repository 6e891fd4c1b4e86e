"""How fast do the tuners find good schedules? Measure a task's space once into a log, then
replay ``bayes`` and ``random`` from the log over many seeds (no device needed for the
replay, as Kernel Tuner's simulation mode).

Run: ``python -m bench.tuner_efficiency [--sample 256] [--seeds 10] [--space-cache PATH]``. Tasks: a dot
(batched_matmul), a reduction (the largest of the reductions module) and a convolution (conv2d_nhwc_3x3) from
the corpus. Each space is measured completely when it has at most ``--sample`` points, else
on a uniform sample of that many points, which is then the replayed space for every tuner.
``bayes`` is replayed for ``--trials`` trials, ``random`` over every valid point of the measured
space, so that its trials to within 5% of the best are a number (the target: bayes in at most
half of them).
Writes results/tuner_efficiency.csv and results/tuner_efficiency.md. With ``--space-cache``, the
measured logs are saved to that JSON file (keyed by task and workload key) and read back on
the next run, so tuners can be replayed again without re-measuring.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from pathlib import Path

from hlotune.autotune.measure import Measurer
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tuners import get_tuner
from hlotune.runtime.targets import get_target
from tqdm.auto import tqdm

import hlotune

from .common import environment, md_table, write_results
from .corpus_cpu import DATA

CHECKPOINTS = (8, 16, 32, 64)


def pick_task(module: str, family: str):
    m = hlotune.load_hlo(DATA / f"{module}.hlo")
    tasks = [t for t in extract_tasks(m.outputs, m.params, get_target("cpu")) if t.family == family]
    return max(tasks, key=lambda t: t.flops)


def measure_space(task, sample: int, seed: int = 0) -> dict[str, float | str | None]:
    """config key -> median seconds, or the failure (``invalid``, ``compile_error``, ...), for
    the whole space or a sample of it."""
    configs = list(task.space.all_configs())
    if len(configs) > sample:
        configs = random.Random(seed).sample(configs, sample)
    m = Measurer(task, repeat=3, min_repeat_ms=10.0, timeout=20.0)
    out: dict[str, float | None] = {}
    try:
        for k in tqdm(range(0, len(configs), 8), desc=f"measure {task.family}"):
            for r in m.measure(configs[k:k + 8], screen=False):
                out[json.dumps(r.config, sort_keys=True)] = r.median if r.failure is None else r.failure
    finally:
        m.close()
    return out


def load_cache(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    return json.loads(path.read_text())


def cached_space(cache: dict, label: str, task, sample: int) -> tuple[dict, float] | None:
    """The log recorded for ``task`` under ``label`` with the same sample size, and the seconds
    it took to measure; None when there is none."""
    e = cache.get(label)
    if e and e["key"] == task.key and e["sample"] == sample and e["space_size"] == task.space.size:
        return e["log"], e["seconds"]
    return None


def replay(tuner: str, task, log: dict, seed: int, n: int, batch: int = 4) -> list[float]:
    """Best-so-far time after each trial when ``tuner`` draws from the recorded ``log``. As in
    tuning, a config that broke a template rule (``invalid``) is told to the tuner but is not a
    trial."""
    allowed = [json.loads(k) for k in log]
    t = get_tuner(tuner, task.space, seed, allowed=allowed)
    best, trace = math.inf, []
    while len(trace) < n:
        cs = t.ask(min(batch, n - len(trace)))
        if not cs:
            break
        ys = [log[json.dumps(c, sort_keys=True)] for c in cs]
        t.tell(cs, [math.log(y) if isinstance(y, float) else None for y in ys])
        for y in ys:
            if y == "invalid":
                continue
            if isinstance(y, float):
                best = min(best, y)
            trace.append(best)
    return trace


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sample", type=int, default=256)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--space-cache", type=Path, default=None,
                    help="JSON file of measured spaces: read when it has a task's space, written after measuring")
    ap.add_argument("--tuners", default="bayes,random", help="comma-separated tuner names to replay")
    args = ap.parse_args(argv)
    tuners = args.tuners.split(",")
    cache = load_cache(args.space_cache)
    env = environment({"sample": args.sample, "seeds": args.seeds})
    tasks = [("dot", pick_task("batched_matmul", "dot")), ("reduction", pick_task("reductions", "reduction")),
             ("conv", pick_task("conv2d_nhwc_3x3", "conv"))]
    rows, table, verdicts = [], [], []
    for label, task in tasks:
        cached = cached_space(cache, label, task, args.sample)
        if cached is None:
            t0 = time.perf_counter()
            log = measure_space(task, args.sample)
            mtime = time.perf_counter() - t0
            if args.space_cache is not None:
                cache[label] = {"key": task.key, "sample": args.sample, "space_size": task.space.size,
                                "seconds": mtime, "log": log, "loadavg": env.get("loadavg_before")}
                args.space_cache.write_text(json.dumps(cache))
        else:
            log, mtime = cached
        ok = [v for v in log.values() if isinstance(v, float)]
        invalid = sum(1 for v in log.values() if v == "invalid")
        near = sum(1 for v in ok if v <= 1.05 * min(ok))
        space_best = min(ok)
        need = {}
        valid = len(log) - invalid
        for tuner in tuners:
            # random is replayed over the whole measured space (it is cheap), so its median is a
            # number rather than "more than --trials"; the model-based tuners over --trials
            horizon = valid if tuner == "random" else args.trials
            traces = [replay(tuner, task, log, s, horizon) for s in range(args.seeds)]
            for s, tr in enumerate(traces):
                for k, v in enumerate(tr):
                    rows.append({"task": label, "tuner": tuner, "seed": s, "trial": k + 1,
                                 "best_so_far_s": v, "relative_to_space_best": v / space_best})
            rel = [[tr[min(c, len(tr)) - 1] / space_best for tr in traces] for c in CHECKPOINTS]
            within = []
            for tr in traces:
                hit = next((k + 1 for k, v in enumerate(tr) if v <= 1.05 * space_best), None)
                within.append(hit if hit is not None else math.inf)
            need[tuner] = statistics.median(within)
            table.append([label, f"{len(log)} of {task.space.size}", tuner]
                         + [f"{statistics.median(r):.3f}" for r in rel] + [f"{need[tuner]:g}"])
        def shown(v):
            return f"{v:g}" if math.isfinite(v) else f"more than {args.trials}"
        others = ", ".join(f"{t} {shown(need[t])}" for t in tuners if t not in ("bayes", "random"))
        verdict = f"{label}: trials (median over seeds) to come within 5% of the space's best: " + \
            ", ".join(f"{t} {shown(need[t])}" for t in tuners if t in ("bayes", "random"))
        if "bayes" in need and "random" in need:
            met = need["bayes"] <= need["random"] / 2
            verdict += f" (target, bayes <= half of random: {'met' if met else 'not met'})"
        if others:
            verdict += f"; also {others}"
        verdicts.append(verdict + f"; space measured in {mtime:.0f} s{' (read from the space cache)' if cached else ''}; "
                        f"{near} of {valid} valid configs within 5% of the best; random replayed over all {valid}; "
                        f"{invalid} configs break a template rule (not counted as trials, as in tuning), "
                        f"{len(log) - len(ok) - invalid} failed (told as failures)")
    md = md_table(["task", "configs measured", "tuner"] + [f"best/space best after {c}" for c in CHECKPOINTS]
                  + ["trials to within 5% (median)"], table)
    notes = (f"Median over seeds 0..{args.seeds - 1} of the best time found relative to the best time in the measured space "
             "(1.000 = found the best). " + "\n\n" + "\n".join(f"- {v}" for v in verdicts))
    write_results("tuner_efficiency", rows, md, env, notes)
    print(md)
    print(notes)


if __name__ == "__main__":
    main()
