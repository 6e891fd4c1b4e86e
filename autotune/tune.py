"""Tuning a graph: tasks, budget shares, warm starts, resumable runs, a progress bar.

The trial budget is shared across tasks by their share of the default schedule's time (as
Ansor's task scheduler): every task first measures its default schedule, then the rest of the
budget goes to tasks in proportion to ``weight x default time``. A run has an id (module,
target, budget, tuner, seed): running the same command again resumes it; configs already in
the database (from any run) are told to the tuner, not measured again. A config that breaks
its template's rules (``invalid``, found before anything compiles) is recorded and told to the
tuner but costs no budget, as Kernel Tuner's restrictions: ``trials`` counts measured candidates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from ..dsl.errors import ClusterError, ConfigError
from ..runtime.targets import Target
from .database import Database, Trial, config_key
from .lock import run_lock
from .measure import Measurer, MeasureResult
from .report import kernel_name
from .task import Task, extract_tasks
from .tuners import get_tuner

log = logging.getLogger(__name__)


@dataclass
class TaskResult:
    task: Task
    trials: int = 0
    failures: dict = field(default_factory=dict)
    default_time: float | None = None
    best_time: float | None = None
    best_config: dict | None = None


def register_task(db: Database, task: Task) -> None:
    task.register(db)


def warm_start_configs(db: Database, task: Task, k: int = 4) -> list[dict]:
    """Best configs of the most similar workloads in the database (same family and target
    kind, nearest shapes in log space) that are valid in this task's space."""
    space = task.space
    own = {w["key"] for w in db.workloads() if w["key"] == task.key}
    cands = []
    mine = _shape_vec(task.shapes)
    for w in db.workloads():
        if w["family"] != task.family or w["key"] in own:
            continue
        other = _shape_vec(w["shapes"])
        if len(other) != len(mine):
            continue
        dist = sum(abs(math.log2(max(a, 1)) - math.log2(max(b, 1))) for a, b in zip(mine, other))
        cands.append((dist, w["key"]))
    out: list[dict] = []
    for _, key in sorted(cands)[:3]:
        for tgt in db.targets():
            if tgt["kind"] != task.target.kind:
                continue
            for t in db.top_k(key, tgt["key"], k):
                c = task.template.complete(t.config)
                try:
                    space.validate(c)
                except ConfigError:
                    continue
                if c not in out:
                    out.append(c)
    return out[:k]


def _shape_vec(shapes: dict) -> list[int]:
    v: list[int] = []
    for grp in ("inputs", "outputs", "reduce"):
        for s in shapes.get(grp, []):
            v.extend(s if isinstance(s, list) else [s])
    return v


def run_id(module_key: str, target: Target, trials: int, tuner: str, seed: int) -> str:
    return hashlib.sha256(json.dumps([module_key, target.key, trials, tuner, seed]).encode()).hexdigest()[:16]


def tune_graph(outputs, inputs, target: Target, trials: int, db: Database, tuner: str = "bayes",
               seed: int = 0, batch: int = 4, timeout: float = 20.0, repeat: int = 5,
               min_repeat_ms: float = 20.0, progress: bool = True, tuner_options: dict | None = None,
               module_key: str = "", dask=None, security=None) -> list[TaskResult]:
    """Tune every task of the graph computing ``outputs``; returns one TaskResult per task.
    ``dask`` (a scheduler address or ``distributed.Client``) measures on that cluster's workers,
    a round of ``max(batch, workers)`` candidates at a time; ``security`` (a Dask ``Security``
    or a spec of one) secures the connection (see autotune/cluster.py). The run holds a lock on
    ``db`` (autotune/lock.py): the same run started again meanwhile stops with RunLockedError."""
    if security is not None and dask is None:
        raise ClusterError("Dask security options were given without a Dask scheduler (dask=/--dask)")
    tasks = extract_tasks(outputs, inputs, target)
    rid = run_id(module_key or "|".join(sorted(t.key for t in tasks)), target, trials, tuner, seed)
    with run_lock(db.path, rid):
        return _tune_run(tasks, rid, target, trials, db, tuner, seed, batch, timeout, repeat, min_repeat_ms,
                         progress, tuner_options, dask, security)


def _tune_run(tasks, rid, target, trials, db, tuner, seed, batch, timeout, repeat, min_repeat_ms, progress,
              tuner_options, dask, security) -> list[TaskResult]:
    client = None
    if dask is not None:
        from .cluster import connect
        client = connect(dask, security)
        batch = max(batch, len(client.scheduler_info().get("workers", {})))
    results = {t.key: TaskResult(t) for t in tasks}
    measurers: dict[str, Measurer] = {}
    bar = tqdm(total=trials, desc="tuning", disable=not progress, unit="trial")

    def record(task: Task, r: MeasureResult) -> None:
        db.add_trial(Trial(task.key, target.key, r.config, r.steps, r.times, r.failure, r.message, tuner,
                           seed, rid, r.started, r.finished))

    def measurer(task: Task) -> Measurer:
        if task.key not in measurers:
            opts = {"repeat": repeat, "min_repeat_ms": min_repeat_ms, "timeout": timeout, "seed": seed}
            if client is not None:
                from .cluster import DaskMeasurer
                measurers[task.key] = DaskMeasurer(task, client, **opts)
            else:
                measurers[task.key] = Measurer(task, **opts)
        return measurers[task.key]

    try:
        done_in_run = {t.key: [x for x in db.history(t.key, target.key) if x.run == rid] for t in tasks}
        used = sum(1 for v in done_in_run.values() for x in v if x.failure != "invalid")
        bar.update(min(used, trials))
        # 1. every task's default schedule
        for task in tasks:
            register_task(db, task)
            prior = db.measured_configs(task.key, target.key)
            if config_key({}) in prior:
                d = prior[config_key({})]
            elif used < trials:
                d = measurer(task).measure([None])[0]
                record(task, d)
                used += 1
                bar.update(1)
                done_in_run[task.key].append(d)
            else:
                d = None
            res = results[task.key]
            res.default_time = d.median if d is not None else None
        # 2. share the remaining budget by weight x default time
        left = max(trials - used, 0)
        weights = {t.key: t.weight * (results[t.key].default_time or 1e-6) for t in tasks}
        total = sum(weights.values()) or 1.0
        shares = {k: int(left * w / total) for k, w in weights.items()}
        for k in sorted(weights, key=weights.get, reverse=True)[: left - sum(shares.values())]:
            shares[k] += 1
        # a task whose space runs out hands the rest of its share on, to the next task and
        # then to another round over those that still have configs left
        spare, order = 0, sorted(tasks, key=lambda t: -weights[t.key])
        while order:
            more = []
            for task in order:
                share = shares.pop(task.key, 0) + spare
                spent = _tune_task(task, share, db, tuner, seed, batch, measurer, record, results[task.key], bar,
                                   tuner_options or {})
                spare = share - spent
                if spent == share and share:
                    more.append(task)
            order = more if spare else []
    finally:
        bar.close()
        for m in measurers.values():
            m.close()
        if client is not None and client is not dask:   # a client made here from an address
            client.close()
    for task in tasks:
        _summarize(db, task, target, results[task.key])
    return [results[t.key] for t in tasks]


def _tune_task(task, budget, db, tuner_name, seed, batch, measurer, record, res, bar, options) -> int:
    """Tune one task with up to ``budget`` measurements; returns how many it made."""
    if budget <= 0:
        return 0
    space = task.space
    tuner = get_tuner(tuner_name, space, seed, **options)
    prior = db.measured_configs(task.key, task.target.key)
    known = []
    for t in prior.values():
        c = task.template.complete(t.config)
        if t.config and _in_space(space, c):      # configs of an older template are not told
            known.append((c, None if t.failure else math.log(t.median)))
    if known:
        tuner.tell([c for c, _ in known], [y for _, y in known])
    seen = {config_key(c) for c, _ in known}
    queue = [c for c in warm_start_configs(db, task) if config_key(c) not in seen]
    spent = rejected = 0
    while spent < budget and not tuner.exhausted:
        if rejected > max(256, 16 * budget):
            log.warning("%s: %d configs in a row broke the template's rules; stopping this task", task.key,
                        rejected)
            break
        n = min(batch, budget - spent)
        cands = queue[:n]
        queue = queue[n:]
        if len(cands) < n:
            cands += [c for c in tuner.ask(n - len(cands)) if c not in cands]
        if not cands:
            break
        rs = measurer(task).measure(cands)
        for r in rs:
            record(task, r)
        tuner.tell([r.config for r in rs], [None if r.failure else math.log(r.median) for r in rs])
        measured = sum(1 for r in rs if r.failure != "invalid")   # rule breakers cost no budget
        rejected = 0 if measured else rejected + len(rs)
        spent += measured
        bar.update(measured)
        best = db.best(task.key, task.target.key)
        if best is not None:    # named, with its own default: each task's numbers stand alone
            d = f", default {res.default_time * 1e6:.1f} us" if res.default_time else ""
            bar.set_postfix_str(f"{kernel_name(task.description)}: best {best.median * 1e6:.1f} us{d}")
    return spent


def _in_space(space, config) -> bool:
    try:
        space.validate(config)
    except ConfigError:
        return False
    return True


def _summarize(db, task, target, res: TaskResult) -> None:
    hist = db.history(task.key, target.key)
    res.trials = sum(1 for t in hist if t.failure != "invalid")
    res.failures = {}
    for t in hist:
        if t.failure:
            res.failures[t.failure] = res.failures.get(t.failure, 0) + 1
    best = db.best(task.key, target.key)
    if best is not None:
        res.best_time, res.best_config = best.median, best.config
    d = [t for t in hist if t.config == {} and t.ok]
    if d:
        res.default_time = d[0].median


def summary_table(results: list[TaskResult], module: str | None = None, width: int = 100) -> str:
    """A plain-text table of tuning results, one row per task named as reports name it
    (``module/op family type``, wrapped, never cut): measured trials, their failures, configs
    rejected by template rules before compiling (``invalid``, free of budget), default and best
    time; trials are counted as ``hlotune report`` counts them (``report.TRIALS_NOTE``)."""
    import textwrap

    import pandas as pd

    from .report import TRIALS_NOTE, text_table
    rows = []
    for r in results:
        sp = (r.default_time / r.best_time) if r.default_time and r.best_time else None
        rows.append({"task": kernel_name(r.task.description, module), "trials": r.trials,
                     "invalid": r.failures.get("invalid", 0),
                     "failed": sum(n for k, n in r.failures.items() if k != "invalid"),
                     "default us": r.default_time * 1e6 if r.default_time else None,
                     "best us": r.best_time * 1e6 if r.best_time else None, "speed-up": sp})
    df = pd.DataFrame(rows, columns=["task", "trials", "invalid", "failed", "default us", "best us", "speed-up"])
    return text_table(df.astype({"default us": float, "best us": float, "speed-up": float}), width) + "\n" + \
        textwrap.fill(TRIALS_NOTE, width)


__all__ = ["TaskResult", "summary_table", "tune_graph", "warm_start_configs"]
