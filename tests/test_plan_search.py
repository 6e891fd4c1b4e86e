"""The greedy plan search under noise (autotune/plans.py): a flip that looked faster once is kept
only when interleaved re-timings find it surely faster, and the plan the search ends with is
stored as the segment's winner; a measurer re-times a config it built without building it
again; under a time budget, the time the plans leave goes back to the kernels."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from hlotune.autotune.database import Database, Trial
from hlotune.autotune.measure import Measurer, MeasureResult
from hlotune.autotune.plans import search_plans, segment_plans
from hlotune.autotune.task import stored_plan
from hlotune.runtime.targets import get_target

import hlotune

DATA = Path(__file__).parent / "data" / "hlo"
CPU = get_target("cpu")


class ScriptedMeasurer:
    """Times each plan by ``seconds(config, screen)`` (screen: the search's one measurement;
    not: a re-timing), three repeats within 0.2% of each other."""

    def __init__(self, seconds):
        self.seconds, self.calls = seconds, []

    def measure(self, configs, screen=True):
        out = []
        for c in configs:
            c = c or {}
            self.calls.append((c, screen))
            t = self.seconds(c, screen)
            now = time.time()
            out.append(MeasureResult(c, [], [t, t * 1.001, t * 0.999], started=now, finished=now))
        return out


def search(seconds, budget=16):
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    (task,) = segment_plans(m.outputs, m.params, CPU)
    db = Database(":memory:")
    meas = ScriptedMeasurer(seconds)

    def record(task, r):
        db.add_trial(Trial(task.key, CPU.key, r.config, r.steps, r.times, r.failure, r.message, "greedy", 0,
                           "run", r.started, r.finished))
    run = SimpleNamespace(db=db, target=CPU, measurer=lambda t: meas, record=record,
                          bar=SimpleNamespace(update=lambda n: None))
    spent = search_plans(run, task, budget)
    return task, db, meas, spent


def first_flip(task):
    from hlotune.autotune.plans import ORDER
    c = min(task.choices, key=lambda c: ORDER[c.kind])
    return c.knob, 1 - c.default


def test_a_flip_fast_once_but_not_when_retimed_is_not_kept():
    knob = {}

    def seconds(c, screen):
        return 0.8e-3 if c == knob and screen else 1e-3      # a quiet moment in the search only
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    (t0,) = segment_plans(m.outputs, m.params, CPU)
    k, v = first_flip(t0)
    knob.update({k: v})
    task, db, meas, spent = search(seconds)
    assert spent == len(task.choices) + 1
    assert db.best(task.key, CPU.key).config == knob         # its one timing is the fastest trial
    assert (knob, False) in meas.calls and ({}, False) in meas.calls   # re-timed against the default
    win = db.winner(task.key, CPU.key)
    assert win is not None and win["config"] == {}
    assert stored_plan(db, task.graph, CPU) == {}            # the compile fuses with the default plan


def test_a_flip_surely_faster_is_kept_and_later_flips_are_judged_against_it():
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    (t0,) = segment_plans(m.outputs, m.params, CPU)
    k, v = first_flip(t0)

    def seconds(c, screen):
        return 0.8e-3 if c.get(k) == v else 1e-3
    task, db, meas, _ = search(seconds)
    win = db.winner(task.key, CPU.key)
    assert win["config"] == {k: v}
    assert abs(win["median"] - 0.8e-3) < 1e-5 and abs(win["default_median"] - 1e-3) < 1e-5
    # every later flip kept the first (as good as it, not GAIN faster): measured once, not re-timed
    later = [c for c, screen in meas.calls if screen and len(c) > 1]
    assert later and all(c[k] == v for c in later)
    assert [c for c, screen in meas.calls if not screen] == [{}, {k: v}] * 2
    assert stored_plan(db, task.graph, CPU) == {k: v}


def test_a_measurer_retimes_a_built_config_without_building_it_again(monkeypatch):
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    (task,) = segment_plans(m.outputs, m.params, CPU)
    meas = Measurer(task, repeat=2, min_repeat_ms=1.0)
    builds = []
    real = Measurer.build
    monkeypatch.setattr(Measurer, "build", lambda self, c: builds.append(c) or real(self, c))
    try:
        a, b = meas.measure([None, None])
        c, = meas.measure([None], screen=False)
        assert len(builds) == 1 and a.build_s > 0 and b.build_s == c.build_s == 0.0
        assert all(r.failure is None and r.times for r in (a, b, c))
        task.configs = {"some workload": {"mr": 4}}      # a plan's kernels changed: built anew
        meas.measure([None])
        assert len(builds) == 2
    finally:
        meas.close()


def test_under_a_budget_the_time_plans_leave_goes_back_to_the_kernels(tmp_path):
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    db_path = tmp_path / "t.db"
    res = hlotune.tune(m, target="cpu", trials=None, budget=12.0, db=str(db_path), progress=False, repeat=2,
                       min_repeat_ms=1.0, plan_share=0.7, confirm_rounds=0)
    plan = next(r.task for r in res if r.task.family == "fusion")
    db = Database(db_path)
    plan_trials = [t for t in db.history(plan.key, CPU.key) if t.failure != "invalid"]
    assert 2 <= len(plan_trials) <= len(plan.choices) + 1       # the greedy search ended well within its share
    after = [t for r in res if r.task.family != "fusion" for t in db.history(r.task.key, CPU.key)
             if t.started > max(p.finished for p in plan_trials)]
    assert after, "no kernel was measured after the plans"
