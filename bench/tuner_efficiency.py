"""How fast do the tuners find good schedules? Measure a task's space once into a log, then
replay ``bayes`` and ``random`` from the log over many seeds (no device needed for the
replay, as Kernel Tuner's simulation mode).

Run: ``python -m bench.tuner_efficiency [--sample 256] [--samples 3] [--seeds 10] [--space-cache PATH]``.
Tasks: a dot (batched_matmul), a reduction (the largest of the reductions module), a convolution
(conv2d_nhwc_3x3) and an attention (attention_multi_head: both dots and the softmax between them
in one gemm-template task) from the corpus. Each space is measured completely when it has at most ``--sample``
points, else on ``--samples`` uniform samples of that many points (sample seeds 0, 1, ...), each
then a replayed space for every tuner, so that one lucky sample cannot decide: per space the
table gives the median over samples and seeds, and the notes each sample's median.
``bayes`` is replayed for ``--trials`` trials over ``--seeds`` seeds, ``random`` over every
valid point of the measured space and ``--random-seeds`` seeds (it is cheap, and with one or two
configs within 5% of a sample's best, ten seeds of it decide little), so that its trials to
within 5% of the best are a steady number (the target: bayes in at most half of them).
Writes results/NAME.csv and results/NAME.md (``--name``, default tuner_efficiency). With ``--space-cache``, the
measured logs are saved to that JSON file (keyed by task and workload key) and read back on
the next run, so tuners can be replayed again without re-measuring.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import random
import statistics
import time
from pathlib import Path

from hlotune.autotune.measure import Measurer
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tuners import get_tuner
from hlotune.dsl.errors import ConfigError, ScheduleError
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
    """The log recorded for ``task`` under ``label`` (a task and its sample seed) with the same
    sample size, and the seconds it took to measure; None when there is none."""
    e = cache.get(label)
    if e and e["key"] == task.key and e["sample"] == sample and e["space_size"] == task.space.size:
        return e["log"], e["seconds"]
    return None


def recheck(task, log: dict) -> tuple[dict, int]:
    """``log`` with the configs that break the template's rules now marked ``invalid`` (rules are
    checked before a config is compiled, so a log measured under older rules is brought up to
    date without measuring), and how many were marked."""
    out, marked = dict(log), 0
    for key, v in log.items():
        if v == "invalid":
            continue
        try:
            task.schedule(json.loads(key))
        except (ScheduleError, ConfigError):
            out[key], marked = "invalid", marked + 1
    return out, marked


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


#: (label, sample) -> (task, log) of the replays in flight (forked workers inherit it)
_JOBS: dict = {}


def _replay_job(job: tuple) -> list[float]:
    tuner, label, k, seed, n = job
    task, log = _JOBS[(label, k)]
    return replay(tuner, task, log, seed, n)


def replays(jobs: list[tuple], workers: int) -> list[list[float]]:
    """The traces of ``jobs`` ((tuner, label, sample, seed, trials) each), in order; replays
    read only the recorded logs, so they may run in ``workers`` processes (nothing is timed)."""
    if workers <= 1:
        return [_replay_job(j) for j in jobs]
    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(_replay_job, jobs, chunksize=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sample", type=int, default=256)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--samples", type=int, default=3, help="samples of each space too large to measure whole")
    ap.add_argument("--random-seeds", type=int, default=200, help="seeds of the random tuner's replays")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--space-cache", type=Path, default=None,
                    help="JSON file of measured spaces: read when it has a task's space, written after measuring")
    ap.add_argument("--tuners", default="bayes,random", help="comma-separated tuner names to replay")
    ap.add_argument("--jobs", type=int, default=1, help="processes replaying at once (after all measuring)")
    ap.add_argument("--name", default="tuner_efficiency", help="results/NAME.{csv,md}")
    args = ap.parse_args(argv)
    tuners = args.tuners.split(",")
    cache = load_cache(args.space_cache)
    env = environment({"sample": args.sample, "samples": args.samples, "seeds": args.seeds,
                       "random_seeds": args.random_seeds})
    tasks = [("dot", pick_task("batched_matmul", "dot")), ("reduction", pick_task("reductions", "reduction")),
             ("conv", pick_task("conv2d_nhwc_3x3", "conv")),
             ("attention", pick_task("attention_multi_head", "dot"))]
    rows, table, verdicts = [], [], []
    for label, task in tasks:
        whole = task.space.size <= args.sample
        samples = []
        for k in range(1 if whole else args.samples):
            name = label if k == 0 else f"{label}#{k}"
            cached = cached_space(cache, name, task, args.sample)
            if cached is None:
                t0 = time.perf_counter()
                log = measure_space(task, args.sample, seed=k)
                mtime, origin = time.perf_counter() - t0, ""
                if args.space_cache is not None:
                    cache[name] = {"key": task.key, "sample": args.sample, "space_size": task.space.size,
                                   "seconds": mtime, "log": log, "loadavg": env.get("loadavg_before"),
                                   "commit": env.get("hlotune_commit"), "tree": env.get("tree")}
                    args.space_cache.write_text(json.dumps(cache))
            else:
                log, mtime = cached
                log, marked = recheck(task, log)
                e = cache[name]
                origin = f"space cache, measured at {e.get('commit', 'an unrecorded commit')}" + \
                    (f" ({e['tree']} tree)" if e.get("tree", "clean") != "clean" else "") + \
                    (f"; {marked} measured configs break the current template's rules" if marked else "")
            samples.append((k, log, mtime, origin))
        need = {t: [] for t in tuners}          # per sample: median over seeds
        rel = {t: [[] for _ in CHECKPOINTS] for t in tuners}
        facts = []
        for k, log, mtime, origin in samples:
            ok = [v for v in log.values() if isinstance(v, float)]
            invalid = sum(1 for v in log.values() if v == "invalid")
            near = sum(1 for v in ok if v <= 1.05 * min(ok))
            space_best = min(ok)
            valid = len(log) - invalid
            for tuner in tuners:
                # random is replayed over the whole measured space (it is cheap), so its median is a
                # number rather than "more than --trials"; the model-based tuners over --trials
                horizon = valid if tuner == "random" else args.trials
                seeds = args.random_seeds if tuner == "random" else args.seeds
                _JOBS[(label, k)] = (task, log)
                traces = replays([(tuner, label, k, s, horizon) for s in range(seeds)], args.jobs)
                for s, tr in enumerate(traces):
                    for j, v in enumerate(tr):
                        rows.append({"task": label, "sample": k, "tuner": tuner, "seed": s, "trial": j + 1,
                                     "best_so_far_s": v, "relative_to_space_best": v / space_best})
                for c, r in zip(CHECKPOINTS, rel[tuner]):
                    r += [tr[min(c, len(tr)) - 1] / space_best for tr in traces]
                within = [next((j + 1 for j, v in enumerate(tr) if v <= 1.05 * space_best), math.inf)
                          for tr in traces]
                need[tuner].append(statistics.median(within))
            facts.append(f"sample {k}: measured in {mtime:.0f} s{f' ({origin})' if origin else ''}, "
                         f"{near} of {valid} valid configs within 5% of its best, {invalid} break a template rule, "
                         f"{len(log) - len(ok) - invalid} failed")
        def shown(v):
            return f"{v:g}" if math.isfinite(v) else f"more than {args.trials}"

        for tuner in tuners:
            table.append([label, f"{len(samples)} x {len(samples[0][1])} of {task.space.size}", tuner]
                         + [f"{statistics.median(r):.3f}" for r in rel[tuner]]
                         + [shown(statistics.median(need[tuner])),
                            f"{shown(min(need[tuner]))} to {shown(max(need[tuner]))}"])
        med = {t: statistics.median(v) for t, v in need.items()}
        verdict = f"{label}: trials to come within 5% of the sample's best (median over samples of the median " \
            "over seeds): " + ", ".join(f"{t} {shown(med[t])} (per sample: {', '.join(shown(x) for x in need[t])})"
                                      for t in tuners)
        if "bayes" in med and "random" in med:
            met = sum(1 for b, r in zip(need["bayes"], need["random"]) if b <= r / 2)
            verdict += f"; target bayes <= half of random met on {met} of {len(samples)} sample(s)"
        verdicts.append(verdict + "; " + "; ".join(facts) + "; random replayed over every valid point of a sample, "
                        "configs breaking a template rule are not counted as trials, as in tuning")
    md = md_table(["task", "configs measured", "tuner"] + [f"best/space best after {c}" for c in CHECKPOINTS]
                  + ["trials to within 5% (median)", "spread over samples"], table)
    notes = (f"Median over samples and seeds 0..{args.seeds - 1} (random: 0..{args.random_seeds - 1}) of the best time "
             "found relative to the best time in the "
             "measured sample (1.000 = found the best); spread: the lowest and highest per-sample median. " + "\n\n"
             + "\n".join(f"- {v}" for v in verdicts))
    write_results(args.name, rows, md, env, notes)
    print(md)
    print(notes)


if __name__ == "__main__":
    main()
