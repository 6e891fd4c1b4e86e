"""Noise-aware winners (autotune/winners.py): finalists re-timed interleaved with bootstrap
intervals; a config replaces the default only when its interval is wholly faster; an outlier
measurement (a candidate once timed far too fast, a default once timed far too slow) never
becomes the stored winner."""

from __future__ import annotations

import json

import numpy as np
from autotune_fixtures import matmul_tanh

from hlotune.autotune import measure
from hlotune.autotune.database import Database, config_key
from hlotune.autotune.task import tuned_schedule_fn
from hlotune.autotune.tune import tune_graph
from hlotune.autotune.winners import Finalist, decide, median_ci
from hlotune.runtime.targets import get_target

CPU = get_target("cpu")
FAST = dict(batch=2, repeat=3, min_repeat_ms=1.0, progress=False)


def test_median_ci_brackets_the_median_and_shrinks_with_samples():
    rng = np.random.default_rng(0)
    few = 1e-3 * (1 + 0.1 * rng.standard_normal(6))
    many = 1e-3 * (1 + 0.1 * rng.standard_normal(200))
    for t in (few, many):
        m, lo, hi = median_ci(t)
        assert lo <= m <= hi
    assert (median_ci(many)[2] - median_ci(many)[1]) < (median_ci(few)[2] - median_ci(few)[1])


def test_decide_keeps_the_default_unless_surely_faster():
    d = Finalist({}, [1.00e-3, 1.01e-3, 0.99e-3, 1.02e-3, 0.98e-3, 1.00e-3])
    near = Finalist({"a": 1}, [0.97e-3, 1.03e-3, 0.99e-3, 0.98e-3, 1.01e-3, 0.96e-3])    # overlaps
    fast = Finalist({"a": 2}, [0.70e-3, 0.71e-3, 0.69e-3, 0.72e-3, 0.70e-3, 0.71e-3])
    assert decide([d, near])[0] is d
    assert decide([d, near, fast])[0] is fast
    assert decide([d, Finalist({"a": 3}, [], "runtime_error: boom"), fast])[0] is fast


def test_outliers_never_become_stored_winners(tmp_path, monkeypatch):
    """A synthetic noisy measurer: the first tuned candidate is timed once at 10 ns
    (and is in truth 20x slower than measured), the default once at 250x its time. The search's
    one-off figures crown the outlier; the confirmed winner (what runs and what reports show)
    never is it, and the default's stored figure is its real one."""
    outs, ins = matmul_tanh()
    original = measure.Measurer.run
    state = {"bad": None, "seen": {}}

    def run(self, b, screen=True):
        r = original(self, b, screen)
        if r.failure:
            return r
        key = config_key(b.config)
        n = state["seen"][key] = state["seen"].get(key, 0) + 1
        if b.config and state["bad"] is None:
            state["bad"] = key
        if key == state["bad"]:
            r.times = [1e-8] * len(r.times) if n == 1 else [t * 20 for t in r.times]
        elif not b.config and n == 1:
            r.times = [t * 250 for t in r.times]
        return r

    monkeypatch.setattr(measure.Measurer, "run", run)
    db = Database(tmp_path / "n.db")
    res = tune_graph(outs, ins, CPU, 10, db, "random", seed=2, plan_share=0, **FAST)
    (task_res,) = [r for r in res if r.task.family == "dot"]
    key, tgt = task_res.task.key, CPU.key
    assert config_key(db.best(key, tgt).config) == state["bad"]       # the search's raw figure
    win = db.winner(key, tgt)
    assert win is not None and config_key(win["config"]) != state["bad"]
    assert win["lo"] <= win["median"] <= win["hi"]
    default_first = next(t for t in db.history(key, tgt) if t.config == {})
    assert win["default_median"] < default_first.median / 20           # re-timed, not the outlier
    bad = [f for f in win["finalists"] if config_key(f["config"]) == state["bad"]]
    assert bad and (bad[0]["failed"] or bad[0]["median"] > win["median"])
    assert task_res.best_config == win["config"] and task_res.best_ci == (win["lo"], win["hi"])
    # what compile(db=) runs is the confirmed winner
    steps = tuned_schedule_fn(db, CPU)(task_res.task.graph).to_json()
    expected = task_res.task.schedule(win["config"] or None).to_json()
    assert json.loads(steps) == json.loads(expected)


def test_screening_times_a_slow_candidate_once():
    """In the search, a candidate whose checked call already lasts SCREEN x the best median so
    far is timed by that call alone; confirmation (screen=False) always times in full, and a
    screened figure never lowers the measurer's best."""
    from hlotune.autotune.task import extract_tasks
    outs, ins = matmul_tanh()
    task = next(t for t in extract_tasks(outs, ins, CPU) if t.family == "dot")
    m = measure.Measurer(task, repeat=4, min_repeat_ms=1.0)
    try:
        (full,) = m.measure([None])
        assert not full.failure and measure.LEAST <= len(full.times) <= 4 and m.best == full.median
        m.best = full.median / 1000          # pretend a candidate 1000x faster was seen
        (cut,) = m.measure([None])
        assert not cut.failure and len(cut.times) == 1 and cut.times[0] > measure.SCREEN * m.best
        assert m.best == full.median / 1000
        (again,) = m.measure([None], screen=False)
        assert len(again.times) == 4
    finally:
        m.close()


def test_search_repeats_end_early_and_confirmation_takes_all(monkeypatch):
    """In the search, repeats stop once LEAST of them agree within SPREAD (a spread of 100%
    here always agrees), or after one repeat when the candidate's fastest repeat is SLOWER x the
    best median so far; a confirmation, or ``adaptive=False``, takes every repeat."""
    from hlotune.autotune.task import extract_tasks
    outs, ins = matmul_tanh()
    task = next(t for t in extract_tasks(outs, ins, CPU) if t.family == "dot")
    monkeypatch.setattr(measure, "SPREAD", 1.0)
    monkeypatch.setattr(measure, "SCREEN", 1e9)      # the checked call never ranks it alone
    m = measure.Measurer(task, repeat=6, min_repeat_ms=1.0)
    fixed = measure.Measurer(task, repeat=6, min_repeat_ms=1.0, adaptive=False)
    try:
        (agreed,) = m.measure([None])
        assert not agreed.failure and len(agreed.times) == measure.LEAST
        assert len(m.measure([None], screen=False)[0].times) == 6
        assert len(fixed.measure([None])[0].times) == 6
        m.best = agreed.median / 1000         # a candidate 1000x faster was seen: this one lost
        (lost,) = m.measure([None])
        assert len(lost.times) == 1 and lost.times[0] > measure.SLOWER * m.best
        assert m.best == agreed.median / 1000
    finally:
        m.close()
        fixed.close()
