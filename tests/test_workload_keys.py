"""Workload keys stay valid (issue 10, item 6): built from op, dtype and reducer names, pinned
for a fixed graph and for every corpus module's tasks; a database or log of the old key
format (``Op`` positions) is migrated, not silently ignored.

The corpus keys live in tests/data/workload_keys.json. When a change of lowering, fusion or
key format changes them on purpose, every stored trial of those workloads stops applying:
say so in the commit, bump the database schema if the key *format* changed (with a
migration), and regenerate the file with ``python tests/test_workload_keys.py --regenerate``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hlotune.autotune.database import Database, Trial
from hlotune.autotune.records import LEGACY_PREFIX
from hlotune.autotune.task import extract_tasks, legacy_workload_key, tuned_schedule_fn, workload_key
from hlotune.dsl.ops import Op
from hlotune.dsl.tensor import Graph
from hlotune.runtime.targets import get_target

import hlotune
from hlotune import dsl
from hlotune.cli import main

HERE = Path(__file__).parent
GOLDEN = HERE / "data" / "workload_keys.json"
CORPORA = {"tests/data/hlo": HERE / "data" / "hlo", "shared/hlo": HERE.parents[1] / "shared" / "hlo"}
CPU = get_target("cpu")
REGENERATE = "python tests/test_workload_keys.py --regenerate"


def fixed_graph() -> Graph:
    """A dot, a max reduction, compare/select, unary math, casts and an integer input."""
    A = dsl.placeholder((8, 16), "float32", name="A")
    B = dsl.placeholder((16, 4), "float32", name="B")
    Ix = dsl.placeholder((8,), "int32", name="I")
    k = dsl.reduce_axis(16, name="k")
    C = dsl.compute((8, 4), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name="C")
    r = dsl.reduce_axis(4, name="r")
    M = dsl.compute((8,), lambda i: dsl.max(C[i, r], axis=r), name="M")
    D = dsl.compute((8, 4), lambda i, j: (dsl.select(C[i, j] > M[i] * 0.5, dsl.tanh(C[i, j]), dsl.exp(-C[i, j]))
                                          .astype("float16") + Ix[i].astype("float16")), name="D")
    return Graph([D], [A, B, Ix])


#: pinned: a different value orphans every stored trial and shared log
FIXED_KEY = "53b7bc8dac694beae5c3"
#: the key hlotune gave the same graph before keys named ops (schema <= 2, computed by hlotune at
#: commit f4e007e): old databases hold it
FIXED_LEGACY_KEY = "d87b21bd0ed6757b2b97"


def corpus_modules() -> dict[str, Path]:
    out = {}
    for name, folder in CORPORA.items():
        if folder.is_dir():
            for f in sorted(folder.iterdir()):
                if f.suffix in (".hlo", ".mlir"):
                    out[f"{name}/{f.name}"] = f
    return out


def module_keys(path: Path) -> list[str]:
    m = hlotune.load_hlo(path)
    return sorted(t.key for t in extract_tasks(m.outputs, m.params, CPU))


def test_the_fixed_graphs_key_is_pinned():
    g = fixed_graph()
    assert workload_key(g) == FIXED_KEY, f"workload keys changed format: see {__name__}'s docstring"
    assert legacy_workload_key(g) == FIXED_LEGACY_KEY
    assert workload_key(fixed_graph()) == FIXED_KEY        # names do not matter, rebuilding does not


def test_keys_do_not_depend_on_where_an_op_sits_in_the_enum(monkeypatch):
    """Adding an opcode anywhere in ``Op`` renumbers the members after it: keys must not move."""
    g = fixed_graph()
    before = (workload_key(g), legacy_workload_key(g))
    for n, op in enumerate(Op):
        monkeypatch.setattr(op, "_value_", 1000 - n)
    assert (workload_key(fixed_graph()), legacy_workload_key(fixed_graph())) == before


def test_golden_file_covers_the_corpus():
    golden = json.loads(GOLDEN.read_text())["modules"]
    missing = sorted(set(corpus_modules()) - set(golden))
    assert not missing, f"corpus modules without pinned keys: {missing}; regenerate with '{REGENERATE}'"


@pytest.mark.parametrize("name", sorted(corpus_modules()))
def test_corpus_task_keys_are_pinned(name):
    golden = json.loads(GOLDEN.read_text())["modules"]
    if name not in golden:
        pytest.fail(f"{name} has no pinned keys; regenerate with '{REGENERATE}'")
    got = module_keys(corpus_modules()[name])
    assert got == golden[name], (
        f"the tasks of {name} changed keys: tuning stored for them no longer applies. If that is meant (a change "
        f"of lowering, fusion or key format), regenerate with '{REGENERATE}' and see this file's docstring")


# ----------------------------------------------------------------------------- migration

ROWSUM = """HloModule rowsum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[64,256] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(p, z), dimensions={1}, to_apply=add
}
"""
GOOD = {"order": "inner", "split_k": 4, "unroll_k": 0, "vector_k": 1, "cache": 0, "parallel": 1}


def _task():
    m = hlotune.load_hlo(ROWSUM)
    (t,) = extract_tasks(m.outputs, m.params, CPU)
    return t


def _schema2_db(path, task, configs) -> None:
    """A database as hlotune wrote it before schema 3: format-1 workload keys, no fingerprints,
    no spaces."""
    db = Database(path)
    task.register(db)
    for n, c in enumerate(configs):
        db.add_trial(Trial(task.key, CPU.key, c, [], [1e-4 * (n + 1)], tuner="random", started=n + 1.0,
                           finished=n + 2.0))
    old = legacy_workload_key(task.graph)
    db.conn.execute("UPDATE workloads SET key=? WHERE key=?", (old, task.key))
    db.conn.execute("DROP INDEX trials_once")
    db.conn.execute("ALTER TABLE trials DROP COLUMN fingerprint")
    db.conn.execute("DROP TABLE spaces")
    db.conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    db.close()


def test_a_schema_2_database_is_migrated_found_by_run_and_rekeyed_by_tune(tmp_path, caplog):
    task = _task()
    old = legacy_workload_key(task.graph)
    _schema2_db(tmp_path / "old.db", task, [GOOD, {}])
    db = Database(tmp_path / "old.db")
    assert db.schema_version == 3 and "format-1 keys" in caplog.text
    assert [w["key"] for w in db.workloads()] == [LEGACY_PREFIX + old]
    # run finds the old trials through the format-1 key (and changes nothing)
    m = hlotune.load_hlo(ROWSUM)
    g = Graph(m.outputs, m.params)
    fresh = Database(tmp_path / "fresh.db")
    task.register(fresh)
    fresh.add_trial(Trial(task.key, CPU.key, GOOD, [], [1e-4]))
    assert tuned_schedule_fn(db, CPU)(g).to_json() == tuned_schedule_fn(fresh, CPU)(g).to_json()
    assert db.has_legacy()
    # tuning registers the task: the workload takes its new key with every trial
    task.register(db)
    assert [w["key"] for w in db.workloads()] == [task.key] and not db.has_legacy()
    assert [t.config for t in db.history(task.key)] == [GOOD, {}]
    assert db.space(task.key, CPU.key).validate(GOOD)


def test_rekeying_merges_with_trials_already_under_the_new_key(tmp_path):
    task = _task()
    _schema2_db(tmp_path / "old.db", task, [GOOD, {}])
    db = Database(tmp_path / "old.db")
    log = tmp_path / "old.jsonl"
    db.export_jsonl(log)
    other = Database(tmp_path / "other.db")
    task.register(other)                          # tuned again meanwhile under the new key
    other.add_trial(Trial(task.key, CPU.key, {**GOOD, "split_k": 8}, [], [3e-5]))
    assert other.import_log(log).imported == 2
    assert {w["key"] for w in other.workloads()} == {task.key, LEGACY_PREFIX + legacy_workload_key(task.graph)}
    other.adopt_legacy(legacy_workload_key(task.graph), task.key)
    assert [w["key"] for w in other.workloads()] == [task.key]
    assert sorted(t.config["split_k"] if t.config else 0 for t in other.history()) == [0, 4, 8]
    assert other.import_log(log).imported == 2    # the log still names the old key: kept apart again


def test_a_log_of_schema_2_is_imported_under_format_1_keys_with_a_notice(tmp_path, capsys):
    task = _task()
    db = Database(tmp_path / "a.db")
    task.register(db)
    db.add_trial(Trial(task.key, CPU.key, GOOD, [], [1e-4], tuner="random", started=1.0, finished=2.0))
    log = tmp_path / "a.jsonl"
    db.export_jsonl(log)
    rec = json.loads(log.read_text())
    assert rec["schema"] == 3
    del rec["schema"]                             # as hlotune wrote logs before schema 3
    rec["workload"]["key"] = legacy_workload_key(task.graph)
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps(rec) + "\n")
    target = tmp_path / "b.db"
    assert main(["import", str(old), "--db", str(target)]) == 0
    out = capsys.readouterr().out
    assert "imported 1 trials" in out and "format 1" in out and "hlotune tune" in out
    b = Database(target)
    assert [w["key"] for w in b.workloads()] == [LEGACY_PREFIX + legacy_workload_key(task.graph)]
    m = hlotune.load_hlo(ROWSUM)
    g = Graph(m.outputs, m.params)
    assert tuned_schedule_fn(b, CPU)(g).to_json() != tuned_schedule_fn(None, CPU)(g).to_json()
    # a format-1 key inside a schema-3 record is kept; a bare one in a schema-2 record gets the prefix
    rec["schema"] = 3
    rec["workload"]["key"] = LEGACY_PREFIX + legacy_workload_key(task.graph)
    old.write_text(json.dumps(rec) + "\n")
    assert b.import_log(old).duplicates == 1


def regenerate() -> None:
    modules = {name: module_keys(path) for name, path in corpus_modules().items()}
    GOLDEN.write_text(json.dumps({
        "about": "workload keys (format 2) of every corpus module's tasks, sorted; regenerate deliberately with "
                 f"'{REGENERATE}' (see tests/test_workload_keys.py)",
        "fixed_graph": workload_key(fixed_graph()), "modules": modules}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}: {len(modules)} modules, {sum(map(len, modules.values()))} task keys")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(f"usage: {REGENERATE}")
    regenerate()


def test_a_deeply_shared_expression_is_keyed_fast_and_as_before():
    """A chain where each stage reads the one before twice: the key's text doubles
    with every stage (2^16 leaves here), as in an erfc polynomial or a layer's residual chain.
    The stored key is still the SHA-256 of that text, but it is written out once per distinct
    workload in a process (fusion plans ask for the same stage graphs' keys for every plan)."""
    import hashlib
    import time

    from hlotune.autotune.task import _graph_key, _hash
    X = dsl.placeholder((8,), "float32", name="X")

    def square_plus_one(p, k):
        return dsl.compute((8,), lambda i: p[i] * p[i] + 1.0, name=f"S{k}")
    t = X
    for k in range(16):
        t = square_plus_one(t, k)
    g = Graph([t], [X])
    key = _graph_key(g, None)
    assert _hash(key) == hashlib.sha256(repr(key).encode()).hexdigest()[:20]
    t0 = time.perf_counter()
    for _ in range(50):
        assert workload_key(Graph([t], [X])) == _hash(key)
    assert time.perf_counter() - t0 < 1.0     # 50 keys; writing the text out once takes about 1 s


def test_a_graph_whose_key_tree_is_exponential_is_keyed_at_once():
    """A chain of stages each reading the one before twice (a log-step scan) writes out as a
    tree of 2^steps leaves: it is keyed by its DAG digest, fast, and still tells workloads apart."""
    import time

    from hlotune import dsl
    from hlotune.autotune.task import workload_key

    def chain(steps: int, op):
        x = dsl.placeholder((64,), "float32", name="x")
        t = x
        for k in range(steps):
            t = dsl.compute((64,), (lambda prev: lambda i: op(prev[i], prev[dsl.maximum(i - 1, 0)]))(t), name=f"s{k}")
        return dsl.Graph([t], [x])

    t0 = time.perf_counter()
    keys = {workload_key(chain(30, lambda a, b: a + b)), workload_key(chain(30, lambda a, b: a * b)),
            workload_key(chain(31, lambda a, b: a + b))}
    assert len(keys) == 3 and time.perf_counter() - t0 < 20
    assert workload_key(chain(30, lambda a, b: a + b)) in keys          # stable
