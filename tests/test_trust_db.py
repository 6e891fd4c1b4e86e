"""A tuning log or database cannot break or fool a run (issue 10, item 4): imports check each
config against its workload's knob space, are atomic and idempotent and survive hostile lines;
at run time a stored config that no longer applies, or has implausible times, is skipped."""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hlotune.autotune.database import Database, Trial
from hlotune.autotune.records import MAX_TIME, MIN_TIME, parse_record
from hlotune.autotune.task import extract_tasks, tuned_schedule_fn
from hlotune.dsl.errors import ConfigError
from hlotune.dsl.reference import evaluate
from hlotune.dsl.tensor import Graph
from hlotune.runtime.module import plan_segments
from hlotune.runtime.targets import get_target
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import hlotune
from hlotune.cli import main

CPU = get_target("cpu")
ROWSUM = """HloModule rowsum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[64,256] parameter(0)
  z = f32[] constant(0)
  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add
  ROOT e = f32[64] exponential(r)
}
"""
#: a valid config of the row sum (a reduction to one axis: order "outer" is not in its space)
GOOD = {"order": "inner", "split_k": 4, "unroll_k": 0, "vector_k": 1, "cache": 0, "parallel": 1}


def _module():
    return hlotune.load_hlo(ROWSUM)


def _tasks():
    m = _module()
    tasks = extract_tasks(m.outputs, m.params, CPU)
    red = next(t for t in tasks if t.family == "reduction")
    return red, [t for t in tasks if t is not red]


def _tuned_db(path) -> Database:
    """A database as tuning leaves it: tasks registered (with their spaces) and trials."""
    db = Database(path)
    red, others = _tasks()
    for t in [red, *others]:
        t.register(db)
        db.add_trial(Trial(t.key, CPU.key, {}, [], [2e-4, 2e-4], tuner="random", started=1.0, finished=2.0))
    assert red.space.validate(GOOD)
    db.add_trial(Trial(red.key, CPU.key, GOOD, [], [5e-5, 6e-5, 5e-5], tuner="random", seed=1, started=3.0,
                       finished=4.0))
    return db


def _log(db: Database, path) -> list[dict]:
    db.export_jsonl(path)
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def _write(path, lines) -> Path:
    Path(path).write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n"
                                    for x in lines))
    return Path(path)


def _rows(db: Database) -> dict:
    return {t: db.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("workloads", "targets", "trials", "spaces")}


def _good_record(tmp_path) -> dict:
    recs = _log(_tuned_db(tmp_path / "origin.db"), tmp_path / "origin.jsonl")
    return next(r for r in recs if r["config"] == GOOD)


def _with(rec: dict, **config) -> dict:
    return {**rec, "config": {**rec["config"], **config}}


# ----------------------------------------------------------------------------- import checks

def test_import_checks_each_config_against_its_workloads_stored_space(tmp_path):
    good = _good_record(tmp_path)
    bad = {
        "split_k = 2^40": (_with(good, split_k=2**40), "split_k"),
        "split_k outside the space": (_with(good, split_k=64), "split_k"),
        "order outer, illegal here": (_with(good, order="outer"), "order"),
        "a config of another family": ({**good, "config": {"vector": 4, "parallel": 1}}, "vector"),
        "bool for an int": (_with(good, parallel=True), "parallel"),
        "family disagrees": ({**good, "workload": {**good["workload"], "family": "elementwise"}}, "elementwise"),
        "shapes disagree": ({**good, "workload": {**good["workload"], "shapes": {
            "inputs": [[64, 512]], "outputs": [[64]], "reduce": [512]}}}, "512"),
    }
    db = _tuned_db(tmp_path / "b.db")     # knows the workload's space on this target
    before = _rows(db)
    for why, (rec, word) in bad.items():
        r = db.import_log(_write(tmp_path / "one.jsonl", [rec]))
        assert (r.imported, len(r.skipped)) == (0, 1), why
        assert word in r.skipped[0][1], (why, r.skipped)
    assert _rows(db) == before
    r = db.import_log(_write(tmp_path / "ok.jsonl", [{**_with(good, split_k=8), "seed": 5}]))
    assert (r.imported, r.skipped) == (1, [])


def test_import_into_a_database_without_the_workload_checks_domains_and_shapes(tmp_path):
    good = _good_record(tmp_path)
    db = Database(tmp_path / "fresh.db")
    for rec, word in ((_with(good, split_k=2**40), "shapes allow"), (_with(good, split_k=3), "split_k"),
                      (_with(good, parallel=True), "parallel"), (_with(good, split_k=4.0), "split_k"),
                      (_with(good, tile_q=2), "tile_q")):
        r = db.import_log(_write(tmp_path / "one.jsonl", [rec]))
        assert r.imported == 0 and word in r.skipped[0][1], r.skipped
    assert _rows(db) == {"workloads": 0, "targets": 0, "trials": 0, "spaces": 0}
    # what no shape can rule out goes in (a run skips it if it does not apply: next test)
    r = db.import_log(_write(tmp_path / "outer.jsonl", [_with(good, order="outer")]))
    assert (r.imported, r.skipped) == (1, [])


def test_import_is_one_transaction_and_all_or_nothing_when_asked(tmp_path, capsys):
    good = _good_record(tmp_path)
    log = _write(tmp_path / "mixed.jsonl", [good, _with(good, split_k=2**40), {**good, "times": [1e-300]}])
    db = Database(tmp_path / "strict.db")
    r = db.import_log(log, skip_bad=False)
    assert not r.committed and r.imported == 0 and [n for n, _ in r.skipped] == [2, 3]
    assert _rows(db) == {"workloads": 0, "targets": 0, "trials": 0, "spaces": 0}   # line 1 left no trace
    r = db.import_log(log, skip_bad=True)
    assert r.committed and r.imported == 1 and [n for n, _ in r.skipped] == [2, 3]
    assert _rows(db) == {"workloads": 1, "targets": 1, "trials": 1, "spaces": 0}  # no orphan rows
    # the CLI imports all or nothing unless --skip-bad, and leaves no empty database behind
    new = tmp_path / "cli.db"
    assert main(["import", str(log), "--db", str(new)]) == 1
    out = capsys.readouterr().out
    assert "nothing imported" in out and "line 2" in out and "--skip-bad" in out and not new.exists()
    assert main(["import", str(log), "--db", str(new), "--skip-bad"]) == 1
    assert "imported 1 trials" in capsys.readouterr().out and new.exists()


def test_import_is_idempotent(tmp_path, capsys):
    db = _tuned_db(tmp_path / "a.db")
    log = tmp_path / "a.jsonl"
    n = len(_log(db, log))
    r = db.import_log(log)                       # into the database it came from
    assert (r.imported, r.duplicates, r.skipped) == (0, n, [])
    other = tmp_path / "b.db"
    assert main(["import", str(log), "--db", str(other)]) == 0
    assert main(["import", str(log), "--db", str(other)]) == 0
    assert f"imported 0 trials into {other}; {n} were there already" in capsys.readouterr().out
    b = Database(other)
    assert len(b.history()) == n
    key = lambda t: (t.workload, t.target, json.dumps(t.config, sort_keys=True), t.times, t.started)
    assert sorted(map(key, b.history())) == sorted(map(key, db.history()))


def test_a_schema_2_database_with_repeated_imports_is_deduplicated_on_migration(tmp_path):
    db = _tuned_db(tmp_path / "old.db")
    n = len(db.history())
    db.conn.execute("DROP INDEX trials_once")
    rows = db.conn.execute("SELECT * FROM trials").fetchall()
    cols = [c for c in rows[0].keys() if c != "id"]  # noqa: SIM118 (a Row iterates over values)
    for _ in range(2):                            # as two more imports of the same log did
        for r in rows:
            db.conn.execute(f"INSERT INTO trials ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                            [r[c] for c in cols])
    db.conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    for sql in ("ALTER TABLE trials DROP COLUMN fingerprint", "DROP TABLE spaces"):
        db.conn.execute(sql)
    db.close()
    assert sqlite3.connect(tmp_path / "old.db").execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 3 * n
    db = Database(tmp_path / "old.db")
    assert db.schema_version == 3 and len(db.history()) == n


# ----------------------------------------------------------------------------- hostile lines

def _hostile_lines(good: dict) -> dict:
    w, g = good["workload"], good["target"]
    return {
        "seed 2^70": {**good, "seed": 2**70},
        "workload as a string": {**good, "workload": "abc"},
        "not UTF-8": b'{"workload": "\xff\xfe\xfa"}',
        "100k-deep nesting": b"[" * 100_000 + b"]" * 100_000,
        "100k-deep config": json.dumps({**good, "config": {}})[:-1].encode() + b', "x": ' + b"[" * 100_000
        + b"]" * 100_000 + b"}",
        "time 1e-300": {**good, "times": [1e-300]},
        "time 1e308": {**good, "times": [1e308]},
        "negative time": {**good, "times": [-1.0]},
        "NaN time": json.dumps({**good, "times": [math.nan]}).encode(),
        "infinite time": json.dumps({**good, "times": [math.inf]}).encode(),
        "times as text": {**good, "times": "fast"},
        "schema 4": {**good, "schema": 4},
        "schema as text": {**good, "schema": "3"},
        "schema true": {**good, "schema": True},
        "target kind tpu": {**good, "target": {**g, "kind": "tpu", "key": "tpu-" + g["key"][4:]}},
        "target key of another kind": {**good, "target": {**g, "key": "opencl-1234"}},
        "huge knob value": _with(good, split_k=10**30),
        "nested knob value": _with(good, split_k={"a": 1}),
        "negative dims": {**good, "workload": {**w, "shapes": {"inputs": [[-1]], "outputs": [[4]], "reduce": []}}},
        "unknown dtype": {**good, "workload": {**w, "dtypes": ["float128x"]}},
        "description a number": {**good, "workload": {**w, "description": 5}},
        "short workload key": {**good, "workload": {**w, "key": "abc"}},
        "failure exploded": {**good, "failure": "exploded"},
        "started NaN": json.dumps({**good, "started": math.nan}).encode(),
        "a list": [good],
        "a number": 7,
        "an empty object": {},
        "half a line": json.dumps(good)[:40].encode(),
    }


def test_hostile_lines_are_skipped_with_a_reason_and_never_crash(tmp_path):
    good = _good_record(tmp_path)
    lines = _hostile_lines(good)
    db = _tuned_db(tmp_path / "t.db")
    before = _rows(db)
    r = db.import_log(_write(tmp_path / "hostile.jsonl", list(lines.values())))
    assert r.imported == 0 and len(r.skipped) == len(lines)
    reasons = dict(zip(lines, (why for _, why in r.skipped)))
    assert "upgrade hlotune" in reasons["schema 4"] and "tpu" in reasons["target kind tpu"]
    assert "seed" in reasons["seed 2^70"] and "nested too deeply" in reasons["100k-deep nesting"]
    assert "UTF-8" in reasons["not UTF-8"]
    for k in ("time 1e-300", "time 1e308", "negative time", "NaN time", "infinite time"):
        assert "times must be seconds" in reasons[k], reasons[k]
    assert _rows(db) == before


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                     max_leaves=8)
_fields = ["workload", "target", "config", "steps", "times", "failure", "tuner", "seed", "run", "started",
           "finished", "message", "schema", "workload.key", "workload.family", "workload.shapes",
           "workload.dtypes", "workload.flops", "target.kind", "target.key", "target.provenance",
           "config.split_k", "config.order", "config.new_knob"]


@pytest.fixture(scope="module")
def good_record(tmp_path_factory) -> dict:
    return _good_record(tmp_path_factory.mktemp("good"))


#: values a field may validly take, drawn as often as arbitrary JSON
_valid = {"seed": st.integers(0, 2**63 - 1) | st.none(), "run": st.text(max_size=20), "tuner": st.text(max_size=9),
          "message": st.text(max_size=20), "times": st.lists(st.floats(MIN_TIME, MAX_TIME), min_size=1, max_size=4),
          "started": st.floats(0, 2e9), "finished": st.floats(0, 2e9), "failure": st.sampled_from([None, "timeout"]),
          "config.split_k": st.sampled_from([1, 4, 8, 16, 32]), "config.order": st.just("inner"),
          "config.parallel": st.sampled_from([0, 1]), "schema": st.sampled_from([2, 3])}
_change = st.sampled_from(_fields + sorted(set(_valid) - set(_fields))).flatmap(
    lambda f: st.tuples(st.just(f), _json | _valid.get(f, _json)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(_change, min_size=1, max_size=3))
def test_mutated_records_are_imported_only_when_valid(tmp_path_factory, good_record, changes):
    tmp = tmp_path_factory.mktemp("fuzz")
    rec = json.loads(json.dumps(good_record))
    for path, value in changes:
        head, _, tail = path.partition(".")
        if tail and isinstance(rec.get(head), dict):
            rec[head][tail] = value
        elif not tail:
            rec[head] = value
    db = Database(tmp / "f.db")
    line = json.dumps(rec, allow_nan=True)
    r = db.import_log(_write(tmp / "f.jsonl", [line.encode()]))
    assert r.imported + len(r.skipped) + r.duplicates == 1
    event("imported" if r.imported else "skipped")
    for t in db.history():                     # what went in is what a record may hold
        assert all(MIN_TIME <= x <= MAX_TIME for x in t.times)
        assert all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in t.config.values())
    if r.imported:
        parse_record(line)                     # and parsing it again agrees
    n = _rows(db)
    assert n["workloads"] == n["targets"] == n["trials"] == r.imported   # no orphans


def test_implausible_times_are_refused_when_recorded_too(tmp_path):
    db = _tuned_db(tmp_path / "t.db")
    red, _ = _tasks()
    for times in ([1e-300], [1e308], [-1e-3], [math.nan], [math.inf], [0.0]):
        with pytest.raises(ConfigError, match="plausible"):
            db.add_trial(Trial(red.key, CPU.key, GOOD, [], times))


# ----------------------------------------------------------------------------- run time

def _segment(m, family: str) -> Graph:
    """The compute segment of ``m`` holding the task of ``family``."""
    for item in plan_segments(Graph(m.outputs, m.params)):
        if isinstance(item, tuple):
            g = Graph(*item)
            if any(t.family == family for t in extract_tasks(g.outputs, g.inputs, CPU)):
                return g
    raise AssertionError(family)


def _inject(db: Database, key: str, config: dict, times) -> None:
    """A trial written straight into the file, past every check (a hand-edited database)."""
    wid = db.conn.execute("SELECT id FROM workloads WHERE key=?", (key,)).fetchone()[0]
    gid = db.conn.execute("SELECT id FROM targets WHERE key=?", (CPU.key,)).fetchone()[0]
    db.conn.execute("INSERT INTO trials (workload_id, target_id, config, config_key, steps, times, median, tuner, "
                    "started, finished, hlotune_version) VALUES (?, ?, ?, '', '[]', ?, ?, 'x', 1, 1, 'x')",
                    (wid, gid, json.dumps(config), json.dumps(times), min(times)))


def test_run_skips_stored_configs_that_no_longer_apply(tmp_path, caplog):
    m = _module()
    red, _ = _tasks()
    g = _segment(m, "reduction")
    want = tuned_schedule_fn(_tuned_db(tmp_path / "good.db"), CPU)(g).to_json()
    default = tuned_schedule_fn(None, CPU)(g).to_json()
    assert want != default
    db = _tuned_db(tmp_path / "bad.db")
    for cfg in ({**GOOD, "order": "outer"}, {**GOOD, "split_k": 2**40}, {"vector": 4, "parallel": 1},
                {**GOOD, "split_k": 4.0}):
        _inject(db, red.key, cfg, [1e-6])       # faster than anything: would win
    _inject(db, red.key, {**GOOD, "split_k": 16}, [1e-300])      # implausible: ignored
    with caplog.at_level(logging.WARNING, logger="hlotune.autotune.task"):
        got = tuned_schedule_fn(db, CPU)(g).to_json()
    assert got == want                          # the next best valid config
    text = caplog.text
    assert text.count("no longer applies") == 4 and "implausible times" in text
    only_bad = Database(tmp_path / "only_bad.db")
    red.register(only_bad)
    _inject(only_bad, red.key, {**GOOD, "order": "outer"}, [1e-6])
    assert tuned_schedule_fn(only_bad, CPU)(g).to_json() == default


def test_hlotune_run_with_an_imported_config_that_does_not_apply(tmp_path, capsys):
    """The issue's case: a record that passes every import check the shapes allow (order
    "outer") used to make ``hlotune run --db`` fail with rc 2."""
    good = _good_record(tmp_path)
    db = tmp_path / "imported.db"
    outer = {**_with(good, order="outer"), "times": [1e-6]}
    assert main(["import", str(_write(tmp_path / "l.jsonl", [outer, good])), "--db", str(db)]) == 0
    m = _module()
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32) * 0.05
    ref = evaluate(m.outputs, [x], m.params)[0]
    module, npz = tmp_path / "rowsum.hlo", tmp_path / "io.npz"
    module.write_text(ROWSUM)
    np.savez(npz, arg0=x, out0=ref)
    capsys.readouterr()
    assert main(["run", str(module), "--db", str(db), "--inputs", str(npz), "--check", str(npz)]) == 0
    assert "check passed" in capsys.readouterr().out


# ----------------------------------------------------------------------------- sizes, keys, causes

def test_oversized_fields_are_refused_without_touching_the_database(tmp_path, monkeypatch):
    """A record whose steps run to megabytes (a 50 MB field was once stored) is refused."""
    from hlotune.autotune import records
    rec = _good_record(tmp_path)
    db = Database(tmp_path / "d.db")
    before = _rows(db)
    monkeypatch.setattr(records, "STEPS_MAX", 2000)
    big = {**rec, "steps": [{"step": "Split", "stage": "x" * 3000, "axis": "i", "factor": 2}]}
    f = _write(tmp_path / "big.jsonl", [big])
    assert main(["import", str(f), "--db", str(tmp_path / "d.db")]) != 0
    assert _rows(Database(tmp_path / "d.db")) == before
    with pytest.raises(Exception, match="at most"):
        parse_record("x" * (records.LINE_MAX + 1))


def test_a_record_reusing_another_kernels_key_is_refused(tmp_path):
    rec = _good_record(tmp_path)
    db = _tuned_db(tmp_path / "mine.db")
    liar = {**rec, "workload": {**rec["workload"], "description": "dot of someone else's kernel"}}
    f = _write(tmp_path / "liar.jsonl", [liar])
    before = _rows(db)
    assert main(["import", str(f), "--db", str(tmp_path / "mine.db")]) != 0
    assert _rows(Database(tmp_path / "mine.db")) == before


def test_a_mislabelled_workload_is_corrected_when_its_task_registers(tmp_path):
    """A log may name a key this database has not seen with a wrong description; the task made
    from the real graph registers the key's true description over it (reports stay right)."""
    rec = _good_record(tmp_path)
    liar = {**rec, "workload": {**rec["workload"], "description": "dot of someone else's kernel"}}
    path = tmp_path / "fresh.db"
    Database(path)
    assert main(["import", str(_write(tmp_path / "l.jsonl", [liar])), "--db", str(path)]) == 0
    db = Database(path)
    assert db.workload(rec["workload"]["key"])["description"] == "dot of someone else's kernel"
    red, _ = _tasks()
    red.register(db)
    assert db.workload(red.key)["description"] == red.description != "dot of someone else's kernel"


@pytest.mark.parametrize("error,words", [("attempt to write a readonly database", "is read-only"),
                                         ("database or disk is full", "is full")])
def test_the_real_cause_is_named(tmp_path, monkeypatch, error, words):
    """A read-only database or a full disk is said as such, with the path (not 'not a usable
    tuning database', nor 'cannot rollback - no transaction is active')."""
    from hlotune.dsl.errors import DataFileError
    path = tmp_path / "c.db"
    Database(path).close()
    real = Database._write

    def failing(self, sql, params=()):
        if sql.startswith("BEGIN") or sql.startswith("INSERT"):
            raise sqlite3.OperationalError(error)
        return real(self, sql, params)
    monkeypatch.setattr(Database, "_write", failing)
    with pytest.raises(DataFileError, match=words) as e:
        Database(path)
    assert str(path) in str(e.value) and "rollback" not in str(e.value)


def test_a_config_that_fails_on_a_rewritten_segment_falls_back(tmp_path, caplog):
    """A segment compiled with a plan that rewrites its graph (a one-pass softmax, an online
    fold): a stored config that does not apply there is skipped and the stage takes its default,
    on the rewritten graph (the fallback once replayed the schedule on the original graph)."""
    from hlotune.autotune.plans import PlanTask
    from hlotune.autotune.task import fused_schedule
    from hlotune.dsl.tensor import compute, placeholder

    from hlotune import dsl
    x = placeholder((64, 256), name="x")
    k = dsl.reduce_axis(256, name="k")
    mx = compute((64,), lambda i: dsl.max(x[i, k], axis=k), name="mx")
    e = compute((64, 256), lambda i, j: dsl.exp(x[i, j] - mx[i]), name="e")
    k2 = dsl.reduce_axis(256, name="k2")
    sm = compute((64,), lambda i: dsl.sum(e[i, k2], axis=k2), name="sm")
    y = compute((64, 256), lambda i, j: e[i, j] / sm[i], name="y")
    g = Graph([y], [x])
    pt = PlanTask(g, CPU)
    rewrites = [c.knob for c in pt.choices if c.knob.startswith(("onepass", "online"))]
    assert rewrites, [c.knob for c in pt.choices]
    db = Database(tmp_path / "p.db")
    pt.register(db)
    _inject(db, pt.key, {c.knob: (1 - c.default if c.knob in rewrites else c.default) for c in pt.choices}, [1e-6])
    s0, _ = fused_schedule(g, CPU, {c.knob: 1 - c.default for c in pt.choices if c.knob in rewrites})
    assert s0.graph is not g
    for t in extract_tasks([y], [x], CPU):
        t.register(db)
        _inject(db, t.key, {"no_such_knob": 1}, [1e-6])
    with caplog.at_level(logging.WARNING, logger="hlotune.autotune.task"):
        s = tuned_schedule_fn(db, CPU)(g)
    f = hlotune.build(s, target="cpu")
    v = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    want = np.exp(v - v.max(1, keepdims=True))
    np.testing.assert_allclose(f(v), want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
