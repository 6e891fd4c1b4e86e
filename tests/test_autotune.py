"""The autotuner: measurement isolation, typed failures, the database, resume, tuners."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hlotune.autotune.database import Database, Trial
from hlotune.autotune.measure import Measurer
from hlotune.autotune.records import validate_record
from hlotune.autotune.task import extract_tasks, tuned_schedule_fn
from hlotune.autotune.tune import tune_graph
from hlotune.autotune.tuners import get_tuner
from hlotune.dsl.errors import ConfigError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.cpu import compile_c
from hlotune.runtime.module import CompiledGraph
from hlotune.runtime.targets import get_target

sys.path.insert(0, str(Path(__file__).parent))
from autotune_fixtures import matmul_tanh

HERE = Path(__file__).parent
CPU = get_target("cpu")
FAST = {"batch": 2, "repeat": 2, "min_repeat_ms": 1.0, "progress": False}


def _tasks():
    outs, ins = matmul_tanh()
    return extract_tasks(outs, ins, CPU)


def test_tasks_and_families():
    tasks = _tasks()
    fams = sorted(t.family for t in tasks)
    assert fams == ["dot"]      # tanh(C) + 1 is the dot's epilogue, computed on its tile
    dot = next(t for t in tasks if t.family == "dot")
    assert len(dot.graph.compute_ops) == 2
    assert 2 * 48 * 40 * 32 <= dot.flops <= 2.2 * 48 * 40 * 32     # the dot's work, with its epilogue's
    assert dot.space.size > 100
    assert {k.name for k in dot.space.knobs} >= {"mr", "nr", "mb", "nb", "pack_a", "pack_b", "unroll_k"}
    # every knob value is explicit and valid for the shapes: tiles never exceed the axis
    lanes = CPU.hardware.lanes(4)       # columns come in whole vectors (packs are padded)
    assert max(dot.space.knob("mr").values) <= 48 and max(dot.space.knob("nr").values) <= -(-40 // lanes) * lanes


def test_every_config_of_a_small_space_is_valid_or_invalid_before_compile():
    """Applying a config either raises a ConfigError/ScheduleError (invalid) or lowers."""
    from hlotune.dsl.errors import ScheduleError
    dot = next(t for t in _tasks() if t.family == "dot")
    ok = bad = 0
    configs = list(dot.space.all_configs())
    for k in np.random.default_rng(0).choice(len(configs), 120, replace=False):
        c = configs[k]
        try:
            dot.schedule(c).lower()
            ok += 1
        except (ScheduleError, ConfigError):
            bad += 1
    assert ok > 20


def test_tune_finds_faster_and_compile_uses_db(tmp_path):
    outs, ins = matmul_tanh()
    db = Database(tmp_path / "t.db")
    res = tune_graph(outs, ins, CPU, 14, db, "bayes", seed=1, **FAST)
    assert sum(r.trials for r in res) == 14
    for r in res:
        assert r.default_time and r.best_time and r.best_time <= r.default_time
    # tuned compile gives the reference answer
    a = np.random.default_rng(0).standard_normal((48, 32)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((32, 40)).astype(np.float32)
    cg = CompiledGraph(outs, ins, CPU, tuned_schedule_fn(db, CPU))
    np.testing.assert_allclose(cg(a, b), evaluate(outs, [a, b])[0], rtol=1e-4, atol=1e-5)
    dot = next(r for r in res if r.task.family == "dot")
    if dot.best_config:  # the tuned steps are in the compiled schedule
        text = str(cg.kernels[0].lowered)
        assert "local" in text or "outer" in text


def _so(src_body: str) -> str:
    """A kernel library whose entry does ``src_body``."""
    src = f"""#include <stdint.h>
#include <time.h>
void hl_entry(void** args) {{ {src_body} }}
double hl_bench(void** args, int64_t n) {{ for (int64_t i = 0; i < n; ++i) hl_entry(args); return 1e-3 * n; }}
"""
    return str(compile_c(src))


@pytest.mark.parametrize("body,failure", [
    ("*(volatile int*)0 = 1;", "runtime_error"),
    ("for (;;) {}", "timeout"),
    ("(void)args;", "wrong_answer"),  # leaves the outputs as they were: zeros
])
def test_faulty_candidates_are_typed_failures_and_tuning_goes_on(tmp_path, monkeypatch, body, failure):
    """A crashing, hanging or wrong candidate costs one trial; the run continues."""
    outs, ins = matmul_tanh()
    bad_so = _so(body)
    original = Measurer.build
    state = {"n": 0}

    def build(self, config):
        b = original(self, config)
        if config and b.fields and state["n"] == 0:  # the first tuned candidate of any task
            state["n"] += 1
            b.fields = {"so": bad_so}
        return b

    monkeypatch.setattr(Measurer, "build", build)
    db = Database(tmp_path / "t.db")
    res = tune_graph(outs, ins, CPU, 10, db, "random", seed=3, timeout=3.0, **FAST)
    fails = [t for t in db.history() if t.failure and t.failure != "invalid"]
    assert [t.failure for t in fails] == [failure]
    assert fails[0].message
    assert sum(r.trials for r in res) == 10  # the other trials still ran
    assert sum(1 for t in db.history() if t.ok) == 9


def test_configs_breaking_template_rules_cost_no_budget(tmp_path, monkeypatch):
    """Every other proposed config is declared invalid: recorded, told to the tuner, and the run
    still measures its full budget of valid candidates."""
    from hlotune.autotune import measure
    outs, ins = matmul_tanh()
    original = Measurer.build
    state = {"n": 0}

    def build(self, config):
        if config:
            state["n"] += 1
            if state["n"] % 2:
                return measure._Built(config, [], failure="invalid", message="rule broken (test)")
        return original(self, config)

    monkeypatch.setattr(Measurer, "build", build)
    db = Database(tmp_path / "t.db")
    res = tune_graph(outs, ins, CPU, 8, db, "random", seed=4, **FAST)
    hist = db.history()
    invalid = [t for t in hist if t.failure == "invalid"]
    assert sum(t.message == "rule broken (test)" for t in invalid) >= 3
    assert sum(r.trials for r in res) == 8 == sum(1 for t in hist if t.ok)
    assert len({(t.workload, json.dumps(t.config, sort_keys=True)) for t in hist}) == len(hist)  # none twice


def test_export_import_round_trip_and_tampered_lines(tmp_path):
    outs, ins = matmul_tanh()
    db = Database(tmp_path / "a.db")
    tune_graph(outs, ins, CPU, 6, db, "random", seed=0, **FAST)
    log = tmp_path / "log.jsonl"
    n = db.export_jsonl(log)
    assert n == len(db.history()) and sum(1 for t in db.history() if t.failure != "invalid") == 6
    db2 = Database(tmp_path / "b.db")
    ok, skipped = db2.import_jsonl(log, validate_record)
    assert (ok, skipped) == (n, [])
    key = lambda t: (t.workload, t.target, json.dumps(t.config, sort_keys=True), tuple(t.times))
    assert sorted(map(key, db.history())) == sorted(map(key, db2.history()))
    for w in db.workloads():
        assert db.best(w["key"], CPU.key).config == db2.best(w["key"], CPU.key).config
    # tamper: a negative time, an unknown knob, a knob value outside its domain, broken JSON
    lines = log.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    good = next(r for r in recs if r["config"] and r["failure"] is None)
    bad_time = dict(good, times=[-1.0])
    bad_knob = dict(good, config={**good["config"], "warp_speed": 9})
    k0 = next(iter(good["config"]))
    bad_val = dict(good, config={**good["config"], k0: "banana"})
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([json.dumps(good), json.dumps(bad_time), json.dumps(bad_knob),
                                   json.dumps(bad_val), lines[0][:-5]]) + "\n")
    db3 = Database(tmp_path / "c.db")
    ok, skipped = db3.import_jsonl(tampered, validate_record)
    assert ok == 1
    assert [n for n, _ in skipped] == [2, 3, 4, 5]
    assert "times" in skipped[0][1] and "warp_speed" in skipped[1][1] and "banana" in skipped[2][1]


def test_schema_version_and_migration(tmp_path):
    import sqlite3
    p = tmp_path / "old.db"
    con = sqlite3.connect(p)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, family TEXT NOT NULL,
            shapes TEXT NOT NULL, dtypes TEXT NOT NULL, description TEXT NOT NULL);
        INSERT INTO workloads (key, family, shapes, dtypes, description) VALUES ('w', 'dot', '{}', '[]', 'old');
    """)
    con.commit()
    con.close()
    db = Database(p)
    assert db.schema_version == 3
    # schema 3 keys workloads by op names: the old key is kept as a format-1 key
    assert db.workload("v1:w")["flops"] is None and db.workload("v1:w")["description"] == "old"


def _run_fixture(db, trials, seed, tuner="random"):
    return subprocess.Popen([sys.executable, str(HERE / "autotune_fixtures.py"), str(db), str(trials), str(seed),
                             tuner], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _measured(hist):
    """Trials that used budget (configs breaking a template rule are recorded but free)."""
    return [t for t in hist if t.failure != "invalid"]


def test_kill_minus_9_loses_nothing_and_resumes(tmp_path):
    db_path = tmp_path / "k.db"
    p = _run_fixture(db_path, 24, 5)     # a budget long enough to be killed part-way
    deadline = time.time() + 120
    n = 0
    while time.time() < deadline:
        time.sleep(0.2)
        if db_path.exists():
            try:
                n = len(_measured(Database(db_path).history()))
            except Exception:  # noqa: BLE001  (the file may be mid-creation)
                n = 0
        if n >= 4 or p.poll() is not None:
            break
    assert p.poll() is None, "the run finished before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    before = Database(db_path).history()
    assert len(_measured(before)) >= 4
    # same command again: resumes, re-measures nothing, ends with the full budget
    p2 = _run_fixture(db_path, 24, 5)
    assert p2.wait(timeout=300) == 0, p2.stderr.read().decode()[-2000:]
    after = Database(db_path).history()
    assert len(_measured(after)) == 24
    ids_before = {(t.id, json.dumps(t.config, sort_keys=True)) for t in before}
    assert ids_before <= {(t.id, json.dumps(t.config, sort_keys=True)) for t in after}
    per_task: dict = {}
    for t in after:
        per_task.setdefault(t.workload, []).append(json.dumps(t.config, sort_keys=True))
    for cfgs in per_task.values():
        assert len(cfgs) == len(set(cfgs)), "a finished config was measured again"


def test_two_processes_write_one_database(tmp_path):
    db_path = tmp_path / "shared.db"
    Database(db_path).close()
    ps = [_run_fixture(db_path, 6, seed) for seed in (11, 12)]
    for p in ps:
        assert p.wait(timeout=300) == 0, p.stderr.read().decode()[-2000:]
    hist = Database(db_path).history()
    runs = {t.run for t in hist}
    assert len(runs) == 2
    # the second run knows the first's configs and does not repeat them, so both keep all
    # the trials they measured
    assert len(hist) >= 10


def _replay(tuner_name, space, table, seed, n=12, batch=3, **options):
    t = get_tuner(tuner_name, space, seed, **options)
    seq = []
    while len(seq) < n:
        cs = t.ask(batch)
        if not cs:
            break
        seq += [json.dumps(c, sort_keys=True) for c in cs]
        t.tell(cs, [table[json.dumps(c, sort_keys=True)] for c in cs])
    return seq


@pytest.mark.parametrize("tuner", ["bayes", "random", "grid"])
def test_tuners_replay_deterministically_from_a_log(tuner):
    """Simulation mode: costs come from a recorded table, no device; same seed, same sequence."""
    from hlotune.schedules.templates.base import Knob, Space
    space = Space((Knob("a", (1, 2, 4, 8, 16)), Knob("b", (1, 2, 4, 8)), Knob("c", ("x", "y"))))
    rng = np.random.default_rng(0)
    table = {json.dumps(c, sort_keys=True): (None if rng.random() < 0.1 else float(rng.normal()))
             for c in space.all_configs()}
    s1 = _replay(tuner, space, table, seed=7)
    s2 = _replay(tuner, space, table, seed=7)
    assert s1 == s2 and len(s1) == 12 and len(set(s1)) == 12
    if tuner != "grid":
        assert _replay(tuner, space, table, seed=8) != s1


@pytest.mark.parametrize("estimator", ["auto", "GP", "RF"])
def test_bayes_beats_random_on_a_smooth_space(estimator):
    """On a space with a clear optimum each surrogate finds it in fewer trials than random (median
    of seeds)."""
    from hlotune.schedules.templates.base import Knob, Space
    space = Space((Knob("a", tuple(range(10))), Knob("b", tuple(range(10)))))
    table = {json.dumps(c, sort_keys=True): math.log(1 + (c["a"] - 7) ** 2 + (c["b"] - 3) ** 2)
             for c in space.all_configs()}
    best = min(table.values())

    def trials_to_best(name, seed):
        opts = {"base_estimator": estimator} if name == "bayes" else {}
        seq = _replay(name, space, table, seed, n=30, batch=3, **opts)
        for k, c in enumerate(seq):
            if table[c] == best:
                return k + 1
        return 100 if name == "bayes" else 50 + len(seq)  # random needs ~50 on average here

    bayes = np.median([trials_to_best("bayes", s) for s in range(3)])
    rand = np.median([trials_to_best("random", s) for s in range(3)])
    assert bayes < rand


def test_the_default_surrogate_takes_turns_and_a_prior_gets_a_gp():
    """``auto``: RF and GP propose in turn on raw costs (RF sees the gemm spaces' cliffs, GP
    smooth bowls); over a prior's residuals a GP alone; a named estimator is used throughout."""
    from hlotune.schedules.templates.base import Knob, Space
    space = Space((Knob("a", (1, 2, 4)), Knob("b", (1, 2))))
    t = get_tuner("bayes", space, 0)
    assert [t.kind(k) for k in range(4)] == ["RF", "GP", "RF", "GP"]
    t.prior = lambda cs: np.zeros(len(cs))
    assert {t.kind(k) for k in range(4)} == {"GP"}
    assert {get_tuner("bayes", space, 0, base_estimator="et").kind(k) for k in range(3)} == {"ET"}
    with pytest.raises(ConfigError, match="auto, GP, RF"):
        get_tuner("bayes", space, 0, base_estimator="svm")


def test_config_validation_names_the_knob():
    dot = next(t for t in _tasks() if t.family == "dot")
    c = dot.space.default()
    with pytest.raises(ConfigError, match="mr"):
        dot.schedule({**c, "mr": 9})
    with pytest.raises(ConfigError, match="frobnicate"):
        dot.schedule({**c, "frobnicate": 1})
    with pytest.raises(ConfigError, match="unroll_k"):
        dot.schedule({k: v for k, v in c.items() if k != "unroll_k"})


def test_trial_records_reject_bad_numbers(tmp_path):
    db = Database(tmp_path / "x.db")
    db.add_workload("w", "dot", {}, [], "d")
    db.add_target("t", "cpu", {})
    with pytest.raises(ConfigError):
        db.add_trial(Trial("w", "t", {}, [], [float("nan")]))
    with pytest.raises(ConfigError):
        db.add_trial(Trial("w", "t", {}, [], [], failure="exploded"))
    db.add_trial(Trial("w", "t", {"a": 1}, [], [2e-3, 1e-3, 3e-3]))
    assert db.best("w", "t").median == pytest.approx(2e-3)


def test_warm_start_uses_the_nearest_workload_of_the_family(tmp_path):
    """A new task starts from the best configs of the most similar workload in the database."""
    from autotune_fixtures import matmul_tanh as mk
    from hlotune.autotune.tune import register_task, warm_start_configs
    db = Database(tmp_path / "w.db")
    near = next(t for t in extract_tasks(*mk(48, 40, 64), CPU) if t.family == "dot")
    far = next(t for t in extract_tasks(*mk(8, 8, 8), CPU) if t.family == "dot")
    new = next(t for t in extract_tasks(*mk(48, 40, 32), CPU) if t.family == "dot")
    cfg_near = {**near.space.default(), "mr": 8, "nr": 16}
    cfg_far = {**far.space.default(), "mr": 2, "nr": 8}
    for task, cfg in ((near, cfg_near), (far, cfg_far)):
        register_task(db, task)
        db.add_trial(Trial(task.key, CPU.key, cfg, [], [1e-3, 1e-3]))
    got = warm_start_configs(db, new)
    assert got[0] == cfg_near
    assert all(new.space.validate(c) for c in got)


def test_tune_cli_and_report_formats(tmp_path, capsys):
    from hlotune.cli import main
    hlo = Path(__file__).parent / "data" / "hlo" / "bias_relu.hlo"
    db = str(tmp_path / "cli.db")
    assert main(["tune", str(hlo), "--trials", "4", "--db", db, "-q", "--tuner", "random"]) == 0
    out = capsys.readouterr().out
    assert "tuned" in out and "speed-up" in out
    for fmt in ("table", "csv", "md", "html"):
        assert main(["report", "--db", db, "--format", fmt, "--out", str(tmp_path / f"r.{fmt}")]) == 0
        text = (tmp_path / f"r.{fmt}").read_text()
        assert "elementwise" in text
    assert main(["report", "--db", db, "--view", "tuners"]) == 0
    assert "random" in capsys.readouterr().out
    png = tmp_path / "conv.png"
    assert main(["report", "--db", db, "--view", "convergence", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    log = str(tmp_path / "log.jsonl")
    assert main(["export", log, "--db", db]) == 0
    assert main(["import", log, "--db", str(tmp_path / "other.db")]) == 0


def test_the_run_keeps_blas_on_one_thread_while_workers_time(tmp_path, monkeypatch):
    """OpenBLAS's idle threads spin for about 0.1 s after a call, on the cores the worker times
    on: a run's own numpy work (model fits, references) uses one BLAS thread, and the caller's
    limit comes back afterwards."""
    import scipy.linalg  # noqa: F401  (its OpenBLAS too, as the run loads it)
    from hlotune.autotune import measure
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    real = measure.Measurer.measure

    def spy(self, configs, screen=True):
        seen.append(blas_threads())
        return real(self, configs, screen)

    monkeypatch.setattr(measure.Measurer, "measure", spy)
    outs, ins = matmul_tanh()
    tune_graph(outs, ins, CPU, 3, Database(tmp_path / "t.db"), **FAST)
    assert seen and all(n and set(n) == {1} for n in seen), seen
    assert blas_threads() == before
