"""Tuning a graph: tasks, budget shares, warm starts, resumable runs, a progress bar.

The trial budget is shared across tasks by their share of the default schedule's time (as
Ansor's task scheduler): every task first measures its default schedule, then the rest of the
budget goes to tasks in proportion to ``weight x default time``. A run has an id (module,
target, budget, tuner, seed): running the same command again resumes it; configs already in
the database (from any run) are told to the tuner, not measured again. A config that breaks
its template's rules (``invalid``, found before anything compiles) is recorded and told to the
tuner but costs no budget, as Kernel Tuner's restrictions: ``trials`` counts measured candidates.

With a time budget (``budget`` seconds of wall time for the whole run) the batches go where
they pay instead: after the defaults, autotune/scheduler.py picks the task whose program-time
gradient per second of tuning is steepest, batch by batch, until the budget's search share is
spent; fusion plans get up to ``plan_share`` of it (the time they leave goes back to the
kernels) and the winners' confirmation ``CONFIRM_SHARE``.
Neither starts a measurement that would end past the budget at the pace measured so far: the
heaviest tasks are confirmed first, the rest keep their fastest measured configs.
The bayes tuner's prior is a cost model trained across the whole database
(autotune/costmodel.py), refitted as the family's trials grow.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass, field

from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from ..dsl.errors import ClusterError, ConfigError
from ..dsl.tensor import Graph
from ..runtime.targets import Target
from .costmodel import Prior, for_task, training_rows
from .database import Database, Trial, config_key
from .lock import run_lock
from .measure import Measurer, MeasureResult, Worker
from .plans import search_plans, segment_plans
from .report import kernel_name
from .scheduler import TaskScheduler
from .task import Task, extract_tasks
from .tuners import get_tuner
from .winners import ROUNDS, confirm_task

log = logging.getLogger(__name__)


@dataclass
class TaskResult:
    task: Task
    trials: int = 0
    failures: dict = field(default_factory=dict)
    default_time: float | None = None
    best_time: float | None = None
    best_config: dict | None = None
    best_ci: tuple | None = None        # (lo, hi) seconds, when the winner was confirmed
    default_ci: tuple | None = None
    #: wall seconds this run spent on the task: build (schedule, lower, render, compile; builds of
    #: a batch overlap), measure (in the worker), tuner (ask/tell), confirm (re-timing finalists)
    seconds: dict = field(default_factory=lambda: dict.fromkeys(("build", "measure", "tuner", "confirm"), 0.0))
    #: wall seconds of this run spent on the task, all steps together (its share of a budget)
    wall: float = 0.0


def register_task(db: Database, task: Task) -> None:
    task.register(db)


def warm_start_configs(db: Database, task: Task, k: int = 4) -> list[dict]:
    """Best configs of the most similar workloads in the database (same family and target
    kind, nearest shapes in log space, this target's records before other machines') that are
    valid in this task's space."""
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
    here = task.target.key
    targets = sorted((t for t in db.targets() if t["kind"] == task.target.kind), key=lambda t: t["key"] != here)
    for _, key in sorted(cands)[:3]:
        for tgt in targets:
            for t in db.top_k(key, tgt["key"], k):
                c = task.template.complete(t.config, space)
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


#: share of a time budget kept for confirming the winners
CONFIRM_SHARE = 0.1
#: a time budget's defaults are timed twice when timing them once took at most this share of it
RETIME_SHARE = 0.05
#: a family's cost model is refitted when its training rows have grown by this factor
REFIT_GROWTH = 1.25


def check_cold(cold) -> None:
    """ConfigError naming ``cold`` unless it is True, False or "auto"."""
    if not (isinstance(cold, bool) or cold == "auto"):
        raise ConfigError(f"cold must be True, False or 'auto', got {cold!r}", "cold")


def cold_bytes(inputs, target: Target, cold: bool | str) -> int:
    """``Measurer.cold_bytes`` for a graph with ``inputs`` (placeholder tensors): twice the
    target's last-level cache when ``cold`` is True, or "auto" and the inputs' bytes together
    exceed half of that cache (the rest holds the intermediates and packs); else 0. Measured on
    a BERT-base layer (27 MiB of weights, 32 MiB of L3): its tasks timed hot summed to 10.6 ms,
    timed cold 11.6 ms, the whole layer ran in 11.7 ms."""
    check_cold(cold)
    llc = target.hardware.l3 or target.hardware.l2
    if cold == "auto":
        cold = 2 * sum(math.prod(t.shape) * t.dtype.itemsize for t in inputs or ()) > llc
    return 2 * llc if cold else 0


def run_id(module_key: str, target: Target, trials, tuner: str, seed: int) -> str:
    return hashlib.sha256(json.dumps([module_key, target.key, trials, tuner, seed]).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TuneOptions:
    """How a graph is tuned (every option of ``tune_graph`` but the graph, target, budget and
    database): the tuner and its options, the seed, candidates per batch, measurement
    (``timeout`` s per candidate, ``repeat`` repeats of at least ``min_repeat_ms``), the
    progress bar, the run's module key, a Dask scheduler and its ``security``, and
    ``confirm_rounds`` of noise-aware re-timing of each task's finalists (0: none;
    autotune/winners.py)."""

    tuner: str = "bayes"
    seed: int = 0
    batch: int = 4
    timeout: float = 20.0
    repeat: int = 5
    min_repeat_ms: float = 20.0
    progress: bool = True
    tuner_options: dict | None = None
    module_key: str = ""
    dask: object = None
    security: object = None
    confirm_rounds: int = ROUNDS
    #: at most this share of the trials goes to measured fusion plans (autotune/plans.py)
    plan_share: float = 0.25
    #: wall seconds for the whole run (None: ``trials`` alone bounds it); see the module docstring
    budget: float | None = None
    #: the bayes tuner starts from a cost model trained across the database (autotune/costmodel.py)
    cost_model: bool = True
    #: the search's repeats end early once they agree, or once a candidate has lost
    #: (autotune/measure.py); ``repeat`` is then the most a candidate gets
    adaptive: bool = True
    #: time each call with its inputs out of the caches (``Measurer.cold_bytes``: twice the
    #: last-level cache of argument copies in turn), as a program whose data outgrow the caches
    #: runs its kernels; "auto": when the graph's inputs fill half of the last-level cache
    cold: bool | str = "auto"


def tune_graph(outputs, inputs, target: Target, trials: int | None, db: Database, tuner: str = "bayes",
               seed: int = 0, **options) -> list[TaskResult]:
    """Tune every task of the graph computing ``outputs`` with ``trials`` measurements, or
    within ``budget=`` seconds (then ``trials`` may be None: no cap) (options:
    ``TuneOptions``'s fields); returns one TaskResult per task. ``dask`` (a scheduler address or
    ``distributed.Client``) measures on that cluster's workers, a round of ``max(batch,
    workers)`` candidates at a time; ``security`` (a Dask ``Security`` or a spec of one) secures
    the connection (see autotune/cluster.py). The run holds a lock on ``db`` (autotune/lock.py):
    the same run started again meanwhile stops with RunLockedError. ``trials=0`` with
    ``confirm_rounds`` re-times the finalists the database holds (``hlotune tune --remeasure``)."""
    opts = TuneOptions(tuner=tuner, seed=seed, **options)
    if opts.security is not None and opts.dask is None:
        raise ClusterError("Dask security options were given without a Dask scheduler (dask=/--dask)")
    if trials is None and opts.budget is None:
        raise ConfigError("give trials, a time budget, or both", "trials")
    tasks = extract_tasks(outputs, inputs, target)
    size = trials if opts.budget is None else [trials, f"{opts.budget:g}s"]
    rid = run_id(opts.module_key or "|".join(sorted(t.key for t in tasks)), target, size, tuner, seed)
    # the run's own numpy work (the tuners' model fits, the references) on one BLAS thread:
    # OpenBLAS's idle threads spin for about 0.1 s after a call, on the cores a worker times on
    # (the first candidates of a run whose kernels were cached, so no build came between the
    # fit and the timing, ran 1.4-3.5x slower for 20-60 ms of repeats). scipy.linalg, whose
    # OpenBLAS the GP fits call, is loaded first: a limit covers the libraries loaded by then
    import scipy.linalg  # noqa: F401
    with run_lock(db.path, rid), threadpool_limits(limits=1, user_api="blas"):
        run = _Run(tasks, rid, target, trials, db, opts)
        run.cold_bytes = cold_bytes(Graph(outputs, inputs).inputs, target, opts.cold)
        run.plans = [p for p in segment_plans(outputs, inputs, target) if p.choices]
        return run.tune()


class _Run:
    """One tuning run's state: its tasks and results, measurers (one per task), the database
    records and the progress bar."""

    def __init__(self, tasks, rid, target, trials, db, opts: TuneOptions):
        self.tasks, self.rid, self.target, self.db, self.opts = tasks, rid, target, db, opts
        self.trials = trials if trials is not None else 1 << 62      # a budget alone: no cap
        self.start = time.perf_counter()
        self.results = {t.key: TaskResult(t) for t in tasks}
        self.tuners: dict[str, list] = {}        # task key -> [tuner, warm-start queue]
        self.models: dict[str, tuple] = {}       # family -> (cost model, its training rows)
        self.measurers: dict[str, Measurer] = {}
        self.worker: Worker | None = None        # the local measurers' one measurement process
        self.client = None
        self.batch = opts.batch
        self.bar = None
        self.plans: list = []       # PlanTasks of the graph's segments (measured fusion plans)
        self.cold_bytes = 0         # Measurer.cold_bytes (set by tune_graph from ``opts.cold``)
        self.sched: TaskScheduler | None = None     # a time budget's task scheduler

    def record(self, task: Task, r: MeasureResult) -> None:
        if r.infra:      # the cluster failed, not the candidate: left for a later run to measure
            log.warning("%s: not recorded (%s)", task.key[:12], r.message)
            return
        sec = self.results[task.key].seconds
        sec["build"] += r.build_s
        sec["measure"] += max(r.finished - r.started, 0.0)
        o = self.opts
        self.db.add_trial(Trial(task.key, self.target.key, r.config, r.steps, r.times, r.failure, r.message, o.tuner,
                                o.seed, self.rid, r.started, r.finished))

    def measurer(self, task: Task) -> Measurer:
        if task.key not in self.measurers:
            o = self.opts
            kw = {"repeat": o.repeat, "min_repeat_ms": o.min_repeat_ms, "timeout": o.timeout, "seed": o.seed,
                  "adaptive": o.adaptive, "cold_bytes": self.cold_bytes}
            if self.client is not None:
                from .cluster import DaskMeasurer
                self.measurers[task.key] = DaskMeasurer(task, self.client, **kw)
            else:
                self.worker = self.worker or Worker()
                self.measurers[task.key] = Measurer(task, worker=self.worker, **kw)
        return self.measurers[task.key]

    def tune(self) -> list[TaskResult]:
        o, db, target, tasks = self.opts, self.db, self.target, self.tasks
        if o.dask is not None:
            from .cluster import connect
            self.client = connect(o.dask, o.security)
            self.batch = max(self.batch, len(self.client.scheduler_info().get("workers", {})))
        timed = o.budget is not None
        self.bar = tqdm(total=None if timed else self.trials, desc="tuning", disable=not o.progress, unit="trial")
        try:
            used = self._defaults()
            want = sum(len(p.choices) + 1 for p in self.plans)
            plan_done = sum(1 for p in self.plans for x in db.history(p.key, target.key)
                            if x.run == self.rid and x.failure != "invalid")   # an earlier run of this one
            plan_budget = max(min(want, int(o.plan_share * self.trials)) - plan_done, 0) if self.plans else 0
            plan_budget = min(plan_budget, max(self.trials - used, 0))
            # the kernels' search and the plans end by then, leaving the confirmation its share
            plans_end = self.start + o.budget * (1 - CONFIRM_SHARE * bool(o.confirm_rounds)) if timed else None
            if timed:
                rest = 1.0 - (o.plan_share if self.plans else 0.0) - (CONFIRM_SHARE if o.confirm_rounds else 0.0)
                used += self._search_timed(self.start + o.budget * rest, self.trials - used - plan_budget)
                plan_budget = min(plan_budget, max(self.trials - used, 0), self._fits(plans_end))
            else:
                self._search(max(self.trials - used - plan_budget, 0))
            # 3. fusion plans, measured end to end with the kernels' best configs
            for k, p in enumerate(self.plans):
                self.results[p.key] = TaskResult(p)
                share = plan_budget // (len(self.plans) - k)
                if share > 0:
                    t0 = time.perf_counter()
                    spent = search_plans(self, p, share, plans_end)
                    plan_budget -= spent
                    used += spent
                    self.results[p.key].wall += time.perf_counter() - t0
            # what the plans left goes back to the kernels
            if timed:
                if plans_end > time.perf_counter():
                    self._search_timed(plans_end, self.trials - used)
            elif plan_budget > 0:
                self._search(plan_budget)
            # 4. noise-aware winners: each task's finalists and default re-timed, interleaved
            if o.confirm_rounds:
                self._confirm(self.start + o.budget if timed else None)
        finally:
            self.bar.close()
            for m in self.measurers.values():
                m.close()
            if self.worker is not None:
                self.worker.close()
            if self.client is not None and self.client is not o.dask:   # a client made here from an address
                self.client.close()
        # plans that no trial of this run or an earlier one measured are not reported
        done = [*tasks, *(p for p in self.plans if p.key in self.results and db.top_k(p.key, target.key, 1))]
        for task in done:
            _summarize(db, task, target, self.results[task.key])
        return [self.results[t.key] for t in done]

    def _confirm(self, deadline: float | None) -> None:
        """4. Each task's finalists and default re-timed (autotune/winners.py), the tasks that
        weigh most first; with a ``deadline`` (``time.perf_counter()`` seconds), a task whose
        confirmation would not end by then (at the mean duration of those before it) keeps its
        fastest measured config as it stands."""
        db, target, res = self.db, self.target, self.results
        plans = {p.key for p in self.plans}
        todo = sorted((t for t in [*self.tasks, *self.plans] if t.key in res and db.top_k(t.key, target.key, 1)),
                      key=lambda t: (t.key in plans, -t.weight * (res[t.key].default_time or 0.0)))
        took: list[float] = []
        for k, task in enumerate(todo):
            if deadline is not None and time.perf_counter() + (sum(took) / len(took) if took else 0.0) > deadline:
                log.info("%d of %d tasks not re-timed within the budget: their fastest measured configs stand",
                         len(todo) - k, len(todo))
                break
            t0 = time.perf_counter()
            confirm_task(db, task, self.measurer(task), self.opts.confirm_rounds)
            took.append(time.perf_counter() - t0)
            res[task.key].seconds["confirm"] += took[-1]
            res[task.key].wall += took[-1]

    def _defaults(self) -> int:
        """1. every task's default schedule (unless the database has it); returns the budget used
        by this run so far."""
        db, target = self.db, self.target
        keys = [t.key for t in self.tasks] + [p.key for p in self.plans]   # plans share the budget
        done = [x for k in keys for x in db.history(k, target.key) if x.run == self.rid]
        used = sum(1 for x in done if x.failure != "invalid")
        self.bar.update(min(used, self.trials))
        timing = 0.0        # seconds the worker spent timing the defaults (their builds apart)
        for task in self.tasks:
            register_task(db, task)
            prior = db.measured_configs(task.key, target.key)
            if config_key({}) in prior:
                d = prior[config_key({})]
            elif used < self.trials:
                d = self._time_default(task)
                timing += max(d.finished - d.started, 0.0)
                used += 1
            else:
                d = None
            self.results[task.key].default_time = d.median if d is not None else None
        if self.opts.budget is not None and 0.0 < timing <= RETIME_SHARE * self.opts.budget:
            used = self._retime_defaults(used)
        return used

    def _retime_defaults(self, used: int) -> int:
        """A time budget's split follows each task's default time and what its batches gain on
        it, so a default measured during a transient slowdown (this VM ran kernels 2x slower
        for seconds at a time) would draw the budget to gains that are only noise: each default
        is timed once more, after every other task's, and the faster time stands (interference
        only slows), where timing them took at most ``RETIME_SHARE`` of the budget (their builds
        are cached by then). Returns the budget used so far."""
        for task in self.tasks:
            res = self.results[task.key]
            if res.default_time is None or used >= self.trials:
                continue
            d = self._time_default(task)
            used += 1
            if d.median is not None:
                res.default_time = min(res.default_time, d.median)
        return used

    def _time_default(self, task: Task) -> MeasureResult:
        """``task``'s default schedule measured, recorded and counted on its wall time."""
        t0 = time.perf_counter()
        d = self.measurer(task).measure([None])[0]
        self.record(task, d)
        self.results[task.key].wall += time.perf_counter() - t0
        self.bar.update(1)
        return d

    def _search(self, left: int) -> None:
        """2. the remaining budget shared by weight x default time; a task whose space runs out
        hands the rest of its share on, to the next task and then to another round over those
        that still have configs left."""
        tasks, results = self.tasks, self.results
        weights = {t.key: t.weight * (results[t.key].default_time or 1e-6) for t in tasks}
        total = sum(weights.values()) or 1.0
        shares = {k: int(left * w / total) for k, w in weights.items()}
        for k in sorted(weights, key=weights.get, reverse=True)[: left - sum(shares.values())]:
            shares[k] += 1
        spare, order = 0, sorted(tasks, key=lambda t: -weights[t.key])
        while order:
            more = []
            for task in order:
                share = shares.pop(task.key, 0) + spare
                t0 = time.perf_counter()
                spent = _tune_task(self, task, share)
                self.results[task.key].wall += time.perf_counter() - t0
                spare = share - spent
                if spent == share and share:
                    more.append(task)
            order = more if spare else []


    def _search_timed(self, deadline: float, cap: int) -> int:
        """2'. batches by the task scheduler until ``deadline`` (perf_counter seconds) or ``cap``
        measurements; a task leaves when its space runs out or its next trial would not fit in
        the time left. Returns the measurements made."""
        res = self.results
        if self.sched is None:       # one scheduler for the run: a second call goes on where it was
            known = [r.default_time for r in res.values() if r.default_time]
            fallback = float(sorted(known)[len(known) // 2]) if known else 1e-3
            self.sched = TaskScheduler({t.key: (t.weight, res[t.key].default_time or fallback)
                                        for t in self.tasks}, self.opts.seed)
        sched = self.sched
        alive = {t.key: t for t in self.tasks}
        made = 0
        while alive and made < cap:
            key = sched.pick(sorted(alive))
            r = res[key]
            n = min(self.batch, cap - made)
            per = r.wall / max(r.trials, 1) if r.trials else None     # seconds per trial so far
            if per is not None:
                n = min(n, int((deadline - time.perf_counter()) / per))
            if n < 1 or time.perf_counter() >= deadline:
                del alive[key]
                continue
            log.debug("budget: %d trials to %s (gradient %.3g us/s, %.1f s left)", n, key[:12],
                      sched.gradient(key) * 1e6, deadline - time.perf_counter())
            t0 = time.perf_counter()
            spent = _tune_task(self, alive[key], n)
            dt = time.perf_counter() - t0
            r.wall += dt
            r.trials += spent
            made += spent
            best = self.db.best(key, self.target.key)
            sched.record(key, dt, best.median if best is not None else None)
            if spent < n:
                del alive[key]
        return made

    def _fits(self, deadline: float) -> int:
        """Measurements that fit before ``deadline`` at this run's seconds per trial so far."""
        left = deadline - time.perf_counter()
        n = sum(r.trials for r in self.results.values())
        wall = sum(r.wall for r in self.results.values())
        return max(int(left / (wall / n)), 0) if n and left > 0 else 0

    def tuner(self, task: Task) -> list:
        """[tuner, warm-start queue] of ``task``, made on first use (told what the database
        knows of the task); its prior is the family's cost model, refitted as it grows."""
        st = self.tuners.get(task.key)
        if st is None:
            o = self.opts
            tuner = get_tuner(o.tuner, task.space, o.seed, **(o.tuner_options or {}))
            prior = self.db.measured_configs(task.key, task.target.key)
            known = []
            for t in prior.values():
                c = task.template.complete(t.config, task.space)
                if t.config and _in_space(task.space, c):      # configs of an older template are not told
                    known.append((c, None if t.failure else math.log(t.median)))
            # the default schedule, measured first, is a point of the space where the template made
            # it: the tuner starts from what it knows rather than from the space's corners
            d = prior.get(config_key({}))
            point = task.default_point() if d is not None and not d.failure else None
            if point is not None and config_key(point) not in {config_key(c) for c, _ in known}:
                known.append((point, math.log(d.median)))
            if known:
                tuner.tell([c for c, _ in known], [y for _, y in known])
            seen = {config_key(c) for c, _ in known}
            st = self.tuners[task.key] = [tuner, [c for c in warm_start_configs(self.db, task)
                                                  if config_key(c) not in seen]]
        if self.opts.cost_model and self.opts.tuner == "bayes":
            st[0].prior = self._prior(task, st[0].prior)
        return st

    def _prior(self, task: Task, old):
        """The cost model of ``task``'s family as a prior for it (None: too little data); ``old``:
        the prior the task's tuner has, kept while the model is."""
        model, n = self.models.get(task.family, (None, 0))
        rows = training_rows(self.db, task.family, task.target.kind)
        if len(rows) >= max(REFIT_GROWTH * n, n + 1):
            model = for_task(self.db, task, rows=rows)
            self.models[task.family] = (model, len(rows))
        if model is None:
            return None
        return old if isinstance(old, Prior) and old.model is model else Prior(model, task)


def _tune_task(run: _Run, task: Task, budget: int) -> int:
    """Tune one task with up to ``budget`` measurements; returns how many it made."""
    if budget <= 0:
        return 0
    db, res = run.db, run.results[task.key]
    st = run.tuner(task)
    tuner = st[0]
    spent = rejected = 0
    while spent < budget and not tuner.exhausted:
        if rejected > max(256, 16 * budget):
            log.warning("%s: %d configs in a row broke the template's rules; stopping this task", task.key,
                        rejected)
            break
        n = min(run.batch, budget - spent)
        cands, st[1] = st[1][:n], st[1][n:]
        if len(cands) < n:
            t0 = time.perf_counter()
            cands += [c for c in tuner.ask(n - len(cands)) if c not in cands]
            res.seconds["tuner"] += time.perf_counter() - t0
        if not cands:
            break
        rs = run.measurer(task).measure(cands)
        for r in rs:
            run.record(task, r)
        t0 = time.perf_counter()
        tuner.tell([r.config for r in rs], [None if r.failure else math.log(r.median) for r in rs])
        res.seconds["tuner"] += time.perf_counter() - t0
        measured = sum(1 for r in rs if r.failure != "invalid")   # rule breakers cost no budget
        rejected = 0 if measured else rejected + len(rs)
        spent += measured
        run.bar.update(measured)
        best = db.best(task.key, task.target.key)
        if best is not None:    # named, with its own default: each task's numbers stand alone
            d = f", default {res.default_time * 1e6:.1f} us" if res.default_time else ""
            run.bar.set_postfix_str(f"{kernel_name(task.description)}: best {best.median * 1e6:.1f} us{d}")
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
    win = db.winner(task.key, target.key)
    if win is not None:     # confirmed: the re-timed medians decide, not the search's one-off times
        res.best_time, res.best_config, res.best_ci = win["median"], win["config"], (win["lo"], win["hi"])
        if win["default_median"] is not None:
            res.default_time, res.default_ci = win["default_median"], (win["default_lo"], win["default_hi"])
        return
    d = [t for t in hist if t.config == {} and t.ok]
    if d:       # timed twice under a budget (``_retime_defaults``): the faster stands
        res.default_time = min(t.median for t in d)


def overhead_line(results: list[TaskResult], wall: float | None = None) -> str:
    """Where the tuning time went, per measured trial: building (schedule, lower, render,
    compile), measuring in the worker, the tuner's ask/tell; and the confirmation re-timing."""
    n = sum(r.trials for r in results) or 1
    tot = {k: sum(r.seconds[k] for r in results) for k in ("build", "measure", "tuner", "confirm")}
    head = f"tuning wall time {wall:.1f} s; " if wall is not None else ""
    return (f"{head}per measured trial: build {tot['build'] / n * 1e3:.0f} ms (overlapping within a batch), "
            f"measure {tot['measure'] / n * 1e3:.0f} ms, tuner {tot['tuner'] / n * 1e3:.0f} ms; "
            f"confirming winners {tot['confirm']:.1f} s")


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
                     "tuning s": r.wall,
                     "default us": r.default_time * 1e6 if r.default_time else None,
                     "best us": r.best_time * 1e6 if r.best_time else None, "speed-up": sp})
    cols = ["task", "trials", "invalid", "failed", "tuning s", "default us", "best us", "speed-up"]
    df = pd.DataFrame(rows, columns=cols)
    note = "tuning s: this run's wall time on the task (default, search, plans, confirmation). " + TRIALS_NOTE
    return text_table(df.astype({"tuning s": float, "default us": float, "best us": float, "speed-up": float}),
                      width) + "\n" + textwrap.fill(note, width)


__all__ = ["TaskResult", "TuneOptions", "check_cold", "cold_bytes", "overhead_line", "summary_table", "tune_graph", "warm_start_configs"]
