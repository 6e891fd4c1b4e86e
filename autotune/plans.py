"""Measured fusion plans: each compute segment's fusion decisions (``schedules.fusion.Choice``: an
elementwise stage with several readers recomputed or materialized; an epilogue on its dot's
register tile or in a pass of its own; attention's scores and softmax computed per head inside
the second dot or materialized whole; a norm's or softmax's row statistics in one pass or two:
schedules/onepass.py) are knobs of a segment-level task, and each plan is
measured end to end: the whole segment compiled with that fusion, every kernel of it with the
best config the database holds for its workload (or its default schedule).

Plans are searched greedily from the default plan, one decision flipped at a time (online-softmax
attention first: it is offered only where a head's keys make several blocks of 256, then slice
fusions, epilogues, inlining and one-pass statistics; a flip is kept when the segment runs at least
``GAIN`` faster, once and then surely in interleaved re-timings against the plan it would
replace). The plan the search ends with is stored as the segment's winner; the winners'
confirmation may then re-time the default plan and the fastest ones as any task's finalists
(autotune/winners.py). Plans are trials of the segment's workload (family ``fusion``), keyed
apart from any kernel's, so they are stored, resumed, exported and reported like kernels'
configs.
"""

from __future__ import annotations

import json
import logging
import time

from ..dsl.tensor import Graph
from ..schedules.fusion import Choice, fuse, stage_default
from ..schedules.rewrites import rewrite
from ..schedules.schedule import Schedule
from ..schedules.templates.base import Knob, Space
from ..schedules.templates.families import TEMPLATES, classify
from .database import config_key
from .task import Task, plan_key, stored_plan
from .winners import Finalist, confirm

log = logging.getLogger(__name__)

#: a flipped decision is kept when the segment gets at least this much faster, measured once
#: and then surely (its interval wholly below the incumbent's) in ``PLAN_ROUNDS`` interleaved
#: re-timings of both: a segment's single timings moved by 15% on a noisy machine
GAIN = 0.03
PLAN_ROUNDS = 2
#: the greedy search flips the decisions that move the most memory first
ORDER = {"online": 0, "slice": 1, "epilogue": 2, "inline": 3, "onepass": 4}    # every fusion.CHOICE_KINDS
#: a plan's answer tolerance never passes this share of the output's magnitude (see tolerances)
PLAN_TOL_MAX = 1e-3


class PlanTask(Task):
    """A compute segment's fusion plans on a target. ``configs`` maps a kernel's workload key to
    the config it runs with in every plan (absent: its default schedule)."""

    def __init__(self, graph: Graph, target, configs: dict | None = None):
        super().__init__(plan_key(graph), graph, "fusion", target)
        self.configs = configs or {}
        self.choices = rewrite(graph, {}, Choice, target.hardware)[1] + fuse(Schedule(graph), target.hardware)

    @property
    def template(self):
        return TEMPLATES["fusion"]

    @property
    def space(self) -> Space:
        return Space(tuple(Knob(c.knob, (c.default, 1 - c.default)) for c in self.choices))

    def build_key(self, config: dict | None) -> str:
        """A plan's schedule depends on its kernels' configs too."""
        return super().build_key(config) + json.dumps(self.configs, sort_keys=True)

    def schedule(self, config: dict | None) -> Schedule:
        """The segment fused by plan ``config`` (None: the default plan), each kernel with its
        stored config or its default schedule."""
        return plan_schedule(self.graph, self.target, config or {}, self.configs.get)

    def tolerances(self, inputs, expected, tols: list) -> list:
        """A plan composes a segment's kernels (a transformer layer: seven dots, two norms), whose
        fp32 rounding compounds past the one policy's tolerance for a single kernel although
        each kernel passed its own gate. A plan's answer therefore passes where the policy says
        or where it is within twice the default plan's own error (per output), up to
        ``PLAN_TOL_MAX`` of the output's magnitude: a plan must be as accurate as the default
        fusion, not more."""
        import numpy as np

        from ..dsl.reference import abs_error
        from ..dsl.tolerance import scale_of
        from ..runtime.build import build
        got = build(self.schedule(None), self.target, "plan_default")(*inputs)
        got = got if isinstance(got, (tuple, list)) else (got,)
        out = []
        for (rt, at), g, w in zip(tols, got, expected):
            err = float(np.max(abs_error(g, w))) if np.size(w) else 0.0
            cap = PLAN_TOL_MAX * scale_of(w)
            if err > cap:
                log.warning("%s: the default plan is off its reference by %.3g (more than %.3g); plans keep "
                            "the one policy's tolerance", self.description, err, cap)
                err = 0.0
            out.append((rt, max(at, 2 * err)))
        return out

    @property
    def description(self) -> str:
        return f"fusion plan of {len(self.graph.compute_ops)} stages ({len(self.choices)} choices): " + \
            super().description.split(": ", 1)[1]


def plan_schedule(g: Graph, target, plan: dict, kernel_config) -> Schedule:
    """Segment ``g`` fused by ``plan``, every root stage scheduled with ``kernel_config(key)`` of
    its stage graph's workload key (a config that no longer applies: the default schedule)."""
    from ..dsl.errors import ConfigError, ScheduleError
    from ..schedules.fusion import try_template
    from ..schedules.templates.families import templates_for
    from .task import fused_schedule
    hw = target.hardware
    s, workload = fused_schedule(g, target, plan)
    for name in [n for n, st in s.stages.items() if st.is_root]:
        st = s.stage(name)
        config = kernel_config(workload(name)[0])
        if config:
            try:
                if try_template(s, st, templates_for(hw)[classify(st, s)], config, hw):
                    continue
            except (ConfigError, ScheduleError):
                pass
        stage_default(s, st, hw)
    return s


def segment_plans(outputs, inputs, target) -> list[PlanTask]:
    """A PlanTask per compute segment of the graph computing ``outputs``."""
    from ..runtime.module import plan_segments
    graph = Graph(list(outputs), inputs)
    return [PlanTask(Graph(outs, ins), target) for item in plan_segments(graph)
            if isinstance(item, tuple) for outs, ins in [item]]


def kernel_configs(db, target) -> dict:
    """workload key -> the config its kernels run with in plans: the confirmed winner, else the
    fastest trial (a snapshot: measurement threads never touch the database)."""
    out = {}
    for w in db.workloads():
        best = db.best(w["key"], target.key)
        if best is not None:
            out[w["key"]] = best.config
    out.update({w["workload"]: w["config"] for w in db.winners(target=target.key)})
    return out


def search_plans(run, task: PlanTask, budget: int, deadline: float | None = None) -> int:
    """Greedy plan search for ``task`` with at most ``budget`` measurements (``run``: the tuning
    run, autotune/tune.py), none started once the last one's duration would take it past
    ``deadline`` (``time.perf_counter()`` seconds; None: no clock); returns the measurements made."""
    db, target = run.db, run.target
    task.register(db)
    task.configs = kernel_configs(db, target)
    done = db.measured_configs(task.key, target.key)
    spent, last = 0, 0.0

    def timed(plan: dict):
        nonlocal spent, last
        k = config_key(plan)
        if k not in done:
            if spent >= budget or (deadline is not None and time.perf_counter() + last > deadline):
                return None
            t0 = time.perf_counter()
            r = run.measurer(task).measure([plan or None])[0]
            last = time.perf_counter() - t0
            run.record(task, r)
            if r.failure != "invalid":      # rule breakers cost no budget, as kernels' do
                spent += 1
                run.bar.update(1)
            done[k] = db.measured_configs(task.key, target.key).get(k)
        t = done.get(k)
        return t.median if t is not None and t.ok else None

    best_plan, best = {}, timed({})
    kept: list = []         # the re-timings that kept the last flip: [incumbent, flip] Finalists
    for c in sorted(task.choices, key=lambda c: ORDER.get(c.kind, len(ORDER))):
        if best is None or spent >= budget:
            break
        trial = {**best_plan, c.knob: 1 - best_plan.get(c.knob, c.default)}
        t = timed(trial)
        if t is None or t >= best * (1 - GAIN):
            continue
        if deadline is not None and time.perf_counter() + 2 * last > deadline:
            break           # no time to re-time it: the plan so far stands
        pair = confirm(run.measurer(task), [best_plan, trial], PLAN_ROUNDS)
        if not _surely_faster(*pair):
            log.info("%s: %s=%d looked %.1f us, not surely faster re-timed", task.description, c.knob,
                     trial[c.knob], t * 1e6)
            continue
        best_plan, best, kept = trial, pair[1].ci()[0], pair
        log.info("%s: %s=%d makes the segment %.1f us", task.description, c.knob, trial[c.knob], best * 1e6)
    if best is not None:
        _store_plan(db, task, best_plan, kept, done.get(config_key({})))
    return spent


def _surely_faster(incumbent, flip) -> bool:
    """Whether re-timed ``flip`` (a Finalist, autotune/winners.py) is ``GAIN`` faster than
    ``incumbent`` by their medians, and its median's interval lies wholly below the other's."""
    if incumbent.failed or flip.failed or not incumbent.times or not flip.times:
        return False
    (m, _, hi), (mi, lo, _) = flip.ci(), incumbent.ci()
    return m < mi * (1 - GAIN) and hi < lo


def _store_plan(db, task: PlanTask, plan: dict, kept: list, default) -> None:
    """The greedy search's plan as the segment's winner (a later confirmation may replace it):
    its fastest measured plan, a flip kept on one noisy measurement, would stand otherwise.
    ``kept``: the re-timings that kept ``plan`` (none: the default plan); ``default``: the
    default plan's trial."""
    timed = Finalist({}, list(default.times)) if default is not None and default.ok else None
    win = kept[1] if kept else timed
    ref = kept[0] if kept and not kept[0].config else timed
    db.set_winner(task.key, task.target.key, plan, win.ci(), ref.ci() if ref else None,
                  [f.as_dict() for f in (kept or [win])])


__all__ = ["GAIN", "PlanTask", "plan_key", "plan_schedule", "search_plans", "segment_plans", "stored_plan"]
