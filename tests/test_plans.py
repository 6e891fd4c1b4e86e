"""Measured fusion plans (autotune/plans.py): every plan of every corpus module computes XLA's
outputs; tuning measures plans end to end within the trial budget, stores the winner, and tuned
compiles use it; a recorded plan is checked by the fusion template."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hlotune
from hlotune.autotune.database import Database
from hlotune.autotune.plans import plan_key, plan_schedule, segment_plans
from hlotune.autotune.records import validate_record
from hlotune.cli import check_outputs
from hlotune.dsl.errors import ConfigError
from hlotune.dsl.tensor import Graph
from hlotune.runtime.module import CompiledGraph
from hlotune.runtime.targets import get_target

DATA = Path(__file__).parent / "data" / "hlo"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
CPU = get_target("cpu")


def plans_of(task) -> list[dict]:
    """The default plan, each decision flipped alone, and every decision flipped."""
    flips = [{c.knob: 1 - c.default} for c in task.choices]
    every = {k: v for f in flips for k, v in f.items()}
    return [{}] + flips + ([every] if len(flips) > 1 else [])


@pytest.mark.parametrize("name", [m["name"] for m in MANIFEST])
def test_every_plan_of_every_corpus_module_matches_xla(name):
    m = hlotune.load_hlo(DATA / f"{name}.hlo")
    z = np.load(DATA / f"{name}.npz")
    ins = [z[f"arg{k}"] for k in range(len(m.params))]
    segments = {plan_key(p.graph): p for p in segment_plans(m.outputs, m.params, CPU)}
    n = max((len(plans_of(p)) for p in segments.values()), default=1)
    for k in range(n):
        def schedule_fn(g, k=k):
            p = segments.get(plan_key(g))
            plans = plans_of(p) if p is not None else [{}]
            return plan_schedule(g, CPU, plans[min(k, len(plans) - 1)], {}.get)
        outs = CompiledGraph(m.outputs, m.params, CPU, schedule_fn)(*ins)
        rows = check_outputs(outs if isinstance(outs, tuple) else (outs,), DATA / f"{name}.npz")
        assert all(r["ok"] for r in rows), (k, rows)


def test_tuning_measures_plans_within_the_budget_and_compile_uses_the_winner(tmp_path):
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    db_path = tmp_path / "p.db"
    res = hlotune.tune(m, target="cpu", trials=20, db=str(db_path), tuner="random", progress=False, repeat=2,
                       min_repeat_ms=1.0)
    fusion = [r for r in res if r.task.family == "fusion"]
    assert len(fusion) == 1 and fusion[0].trials >= 2
    db = Database(db_path)
    measured = [t for t in db.history() if t.failure != "invalid" and t.run]
    assert len(measured) <= 20         # kernels and plans share the budget
    ptask = fusion[0].task
    # store a plan as the segment's winner: the tuned compile fuses with it
    flip = {ptask.choices[0].knob: 1 - ptask.choices[0].default}
    t = db.best(ptask.key, CPU.key)
    db.set_winner(ptask.key, CPU.key, flip, (t.median, t.median * 0.9, t.median * 1.1), None, [])
    from hlotune.autotune.task import tuned_schedule_fn
    got = tuned_schedule_fn(db, CPU)(ptask.graph)
    from hlotune.schedules.fusion import fuse
    from hlotune.schedules.schedule import Schedule
    want = Schedule(ptask.graph)
    fuse(want, CPU.hardware, flip)
    inlined = lambda s: {n for n, st in s.stages.items() if st.is_inline}   # noqa: E731
    assert inlined(got) == inlined(want) != inlined(tuned_schedule_fn(None, CPU)(ptask.graph))
    ins = m.random_inputs()
    np.testing.assert_allclose(hlotune.compile(m, "cpu", db=str(db_path))(*ins), hlotune.compile(m, "cpu")(*ins),
                               rtol=1e-4, atol=1e-4)


def test_recorded_plans_are_checked():
    rec = {"workload": {"family": "fusion"}, "target": {"kind": "cpu"}, "config": {"inline3": 1, "epilogue7": 0}}
    validate_record(rec)
    # every kind of decision a plan search stores (a shared log of tuned plans imports)
    validate_record({**rec, "config": {"slice25": 0, "onepass12": 1, "online16": 1}})
    for bad in ({"inline": 1}, {"inline3": 2}, {"tile_x": 4}, {"epilogue1": "yes"}, {"online": 1},
                {"onepass3": 2}):
        with pytest.raises(ConfigError):
            validate_record({**rec, "config": bad})


def test_a_segment_without_choices_has_no_plan_task():
    from hlotune import dsl
    A = dsl.placeholder((8, 8), "float32", name="A")
    B = dsl.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    (p,) = segment_plans([B], [A], CPU)
    assert p.choices == [] and plan_key(Graph([B], [A])) == p.key


def test_cli_remeasure_and_the_fusion_view(tmp_path, capsys):
    """``hlotune tune --remeasure`` re-times a small database's finalists (no new trial) and
    stores the winners with intervals; ``report --view fusion`` lists the measured plans."""
    from hlotune.cli import main
    db = str(tmp_path / "r.db")
    f = str(DATA / "mlp_block.hlo")
    assert main(["tune", f, "--trials", "10", "--db", db, "-q", "--tuner", "random"]) == 0
    out = capsys.readouterr().out
    assert "on kernels" in out and "fusion plans" in out and "per measured trial: build" in out
    before = Database(db).history()
    decided = {w["workload"]: w["decided"] for w in Database(db).winners()}
    assert main(["tune", f, "--db", db, "-q", "--remeasure"]) == 0
    assert "re-timed the finalists" in capsys.readouterr().out
    after = Database(db)
    assert len(after.history()) == len(before)          # nothing new was measured as a trial
    assert all(w["decided"] > decided[w["workload"]] and w["lo"] <= w["median"] <= w["hi"]
               for w in after.winners())
    assert main(["report", "--db", db, "--view", "fusion"]) == 0
    assert "default" in capsys.readouterr().out
    # the view shows what the tuner decided: one winner per confirmed segment, re-timed
    import hlotune
    fv = hlotune.report(db).fusion()
    confirmed = {w["workload"] for w in after.winners()} & set(fv.workload)
    assert confirmed
    for w in confirmed:
        rows = fv[fv.workload == w]
        assert rows.winner.sum() == 1 and rows[rows.winner].confirmed_us.notna().all()
        assert rows[rows.plan == "default"].confirmed_speedup.iloc[0] == 1.0
    pytest.importorskip("matplotlib")
    assert main(["report", "--db", db, "--view", "fusion", "--plot", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_plan_answers_are_held_to_the_default_plans_accuracy():
    """A plan's answer gate: the one policy's tolerance, widened per output to twice the
    default plan's own error (a segment of many kernels compounds fp32 rounding), never past
    PLAN_TOL_MAX of the output's magnitude."""
    from autotune_fixtures import matmul_tanh
    from hlotune.autotune.plans import PLAN_TOL_MAX, PlanTask
    from hlotune.dsl.reference import evaluate
    from hlotune.dsl.tolerance import scale_of, tolerance
    outs, ins = matmul_tanh()
    task = PlanTask(Graph(outs, ins), CPU)
    arrays = task.random_inputs(0)
    want = evaluate(task.graph, arrays)
    policy = [tolerance(w.dtype, scale_of(w)) for w in want]
    exact = task.tolerances(arrays, want, policy)
    assert [rt for rt, _ in exact] == [rt for rt, _ in policy]
    assert all(at >= p for (_, at), (_, p) in zip(exact, policy))
    for delta, widened in ((20 * policy[0][1], True), (10 * PLAN_TOL_MAX * scale_of(want[0]), False)):
        off = [w.copy() for w in want]
        off[0].flat[3] += delta          # as if the default plan were this far off the reference
        (_, at), = task.tolerances(arrays, off, policy)
        assert (at >= 2 * delta * 0.99) if widened else at == policy[0][1]


def test_a_rerun_keeps_the_budget_with_plans(tmp_path):
    """The same tune run again (or resumed after a kill) measures nothing beyond its budget: the
    plans' trials of the earlier run count against it (they were granted again on every run)."""
    m = hlotune.load_hlo(DATA / "mlp_block.hlo")
    db_path = tmp_path / "b.db"
    kw = dict(target="cpu", trials=16, db=str(db_path), tuner="random", progress=False, repeat=2, min_repeat_ms=1.0)
    hlotune.tune(m, **kw)
    first = [t for t in Database(db_path).history() if t.failure != "invalid" and t.run]
    hlotune.tune(m, **kw)
    second = [t for t in Database(db_path).history() if t.failure != "invalid" and t.run]
    assert len(first) <= 16 and len(second) == len(first), (len(first), len(second))
