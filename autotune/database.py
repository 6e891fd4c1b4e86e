"""The tuning database: SQLite in WAL mode, one row per measured (or failed) trial.

Tables: ``workloads`` (structural key, family, shapes, dtypes, description), ``targets``
(key + provenance), ``trials`` (config, schedule steps, every repeat time, failure, tuner,
seed, timestamps). Each trial commits as it finishes, so a killed run loses nothing; several
processes may write one database at once (WAL + busy timeout + retried writes).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..dsl.errors import ConfigError, HlotuneError

SCHEMA_VERSION = 2

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS workloads (
        id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, family TEXT NOT NULL,
        shapes TEXT NOT NULL, dtypes TEXT NOT NULL, description TEXT NOT NULL,
        flops REAL, bytes REAL)""",
    """CREATE TABLE IF NOT EXISTS targets (
        id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, kind TEXT NOT NULL, provenance TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS trials (
        id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads(id),
        target_id INTEGER NOT NULL REFERENCES targets(id), config TEXT NOT NULL, config_key TEXT NOT NULL,
        steps TEXT NOT NULL, times TEXT NOT NULL, median REAL, failure TEXT, message TEXT,
        tuner TEXT NOT NULL, seed INTEGER, run TEXT, started REAL NOT NULL, finished REAL NOT NULL,
        hlotune_version TEXT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS trials_task ON trials (workload_id, target_id, median)""",
]

# migrations[v] upgrades a database at version v to v + 1
_MIGRATIONS = {
    1: ["ALTER TABLE workloads ADD COLUMN flops REAL", "ALTER TABLE workloads ADD COLUMN bytes REAL"],
}

FAILURES = ("invalid", "compile_error", "runtime_error", "wrong_answer", "timeout")


@dataclass(frozen=True)
class Trial:
    """One measured or failed configuration of a task."""

    workload: str
    target: str
    config: dict
    steps: list
    times: list[float]
    failure: str | None = None
    message: str = ""
    tuner: str = ""
    seed: int | None = None
    run: str = ""
    started: float = 0.0
    finished: float = 0.0
    id: int | None = None

    @property
    def median(self) -> float | None:
        if self.failure or not self.times:
            return None
        s = sorted(self.times)
        n = len(s)
        return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])

    @property
    def ok(self) -> bool:
        return self.failure is None


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


class Database:
    """A tuning database file (SQLite). ``Database(":memory:")`` works for tests."""

    def __init__(self, path: str | Path = "tuning.db"):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self._write("PRAGMA journal_mode=WAL") if self.path != ":memory:" else None
        self.conn.execute("PRAGMA busy_timeout=60000")
        self._init_schema()

    # ------------------------------------------------------------------ schema
    def _write(self, sql: str, params=()):
        for attempt in range(50):
            try:
                return self.conn.execute(sql, params)
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise HlotuneError(f"tuning database {self.path} stayed locked")

    def _init_schema(self) -> None:
        self._write("BEGIN IMMEDIATE")
        try:
            have = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
            version = None
            if have:
                row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                version = int(row["value"]) if row else None
            if version is None:
                for sql in _SCHEMA:
                    self.conn.execute(sql)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif version > SCHEMA_VERSION:
                raise HlotuneError(f"tuning database {self.path} has schema {version}, newer than this "
                                   f"hlotune's {SCHEMA_VERSION}: upgrade hlotune")
            else:
                while version < SCHEMA_VERSION:
                    for sql in _MIGRATIONS[version]:
                        self.conn.execute(sql)
                    version += 1
                for sql in _SCHEMA:
                    self.conn.execute(sql)
                self.conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()["value"])

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ registration
    def add_workload(self, key: str, family: str, shapes, dtypes, description: str,
                     flops: float | None = None, nbytes: float | None = None) -> int:
        self._write("INSERT OR IGNORE INTO workloads (key, family, shapes, dtypes, description, flops, bytes) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, family, json.dumps(shapes), json.dumps(dtypes), description, flops, nbytes))
        return self._id("workloads", key)

    def add_target(self, key: str, kind: str, provenance: dict) -> int:
        self._write("INSERT OR IGNORE INTO targets (key, kind, provenance) VALUES (?, ?, ?)",
                    (key, kind, json.dumps(provenance, sort_keys=True)))
        return self._id("targets", key)

    def _id(self, table: str, key: str) -> int:
        row = self.conn.execute(f"SELECT id FROM {table} WHERE key=?", (key,)).fetchone()
        if row is None:
            raise HlotuneError(f"{table[:-1]} '{key}' is not in {self.path}")
        return int(row["id"])

    def workload(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM workloads WHERE key=?", (key,)).fetchone()
        return None if row is None else _workload_row(row)

    def workloads(self) -> list[dict]:
        return [_workload_row(r) for r in self.conn.execute("SELECT * FROM workloads ORDER BY id")]

    def targets(self) -> list[dict]:
        return [{"key": r["key"], "kind": r["kind"], "provenance": json.loads(r["provenance"])}
                for r in self.conn.execute("SELECT * FROM targets ORDER BY id")]

    # ------------------------------------------------------------------ trials
    def add_trial(self, t: Trial) -> int:
        """Store one trial and commit it at once."""
        from hlotune import __version__
        if t.failure is not None and t.failure not in FAILURES:
            raise ConfigError(f"unknown failure kind '{t.failure}'; expected one of {FAILURES}")
        if any(not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0) for x in t.times):
            raise ConfigError(f"trial times must be finite positive seconds, got {t.times}")
        w = self._id("workloads", t.workload)
        g = self._id("targets", t.target)
        cur = self._write(
            "INSERT INTO trials (workload_id, target_id, config, config_key, steps, times, median, failure, "
            "message, tuner, seed, run, started, finished, hlotune_version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (w, g, json.dumps(t.config, sort_keys=True), config_key(t.config), json.dumps(t.steps),
             json.dumps(list(t.times)), t.median, t.failure, t.message[:4000], t.tuner, t.seed, t.run,
             t.started or time.time(), t.finished or time.time(), __version__))
        return int(cur.lastrowid)

    def _trials(self, where: str, params, order: str = "t.id", limit: int | None = None) -> list[Trial]:
        sql = ("SELECT t.*, w.key AS wkey, g.key AS gkey FROM trials t JOIN workloads w ON t.workload_id=w.id "
               f"JOIN targets g ON t.target_id=g.id WHERE {where} ORDER BY {order}")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_trial_row(r) for r in self.conn.execute(sql, params)]

    def history(self, workload: str | None = None, target: str | None = None) -> list[Trial]:
        """Every trial (of a task, when given) in the order they finished."""
        conds, params = ["1=1"], []
        if workload is not None:
            conds.append("w.key=?")
            params.append(workload)
        if target is not None:
            conds.append("g.key=?")
            params.append(target)
        return self._trials(" AND ".join(conds), params)

    def top_k(self, workload: str, target: str, k: int = 5) -> list[Trial]:
        """The ``k`` fastest successful trials of a task (one per distinct config)."""
        rows = self._trials("w.key=? AND g.key=? AND t.failure IS NULL", (workload, target), "t.median ASC")
        out, seen = [], set()
        for r in rows:
            ck = config_key(r.config)
            if ck not in seen:
                seen.add(ck)
                out.append(r)
            if len(out) >= k:
                break
        return out

    def best(self, workload: str, target: str) -> Trial | None:
        """The fastest successful trial of a task, or None."""
        top = self.top_k(workload, target, 1)
        return top[0] if top else None

    def measured_configs(self, workload: str, target: str) -> dict[str, Trial]:
        """config_key -> the trial of each config already tried for a task (to resume)."""
        return {config_key(t.config): t for t in self.history(workload, target)}

    # ------------------------------------------------------------------ logs
    def export_jsonl(self, path, workload: str | None = None) -> int:
        """Write every trial (with its workload and target records) as JSON lines."""
        n = 0
        wl = {w["key"]: w for w in self.workloads()}
        tg = {t["key"]: t for t in self.targets()}
        with open(path, "w") as f:
            for t in self.history(workload):
                rec = {"workload": wl[t.workload], "target": tg[t.target], "config": t.config, "steps": t.steps,
                       "times": t.times, "failure": t.failure, "message": t.message, "tuner": t.tuner,
                       "seed": t.seed, "run": t.run, "started": t.started, "finished": t.finished}
                f.write(json.dumps(rec, sort_keys=True) + "\n")
                n += 1
        return n

    def import_jsonl(self, path, validate=None) -> tuple[int, list[tuple[int, str]]]:
        """Import a JSON-lines log. Each record is checked (fields, failure kind, finite positive
        times, and ``validate(record)`` which raises ConfigError for unknown knobs or values
        outside the space); bad lines are skipped with a reason. Returns (imported, skipped)."""
        ok, skipped = 0, []
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    _check_record(rec)
                    if validate is not None:
                        validate(rec)
                    w, g = rec["workload"], rec["target"]
                    self.add_workload(w["key"], w["family"], w["shapes"], w["dtypes"], w["description"],
                                      w.get("flops"), w.get("bytes"))
                    self.add_target(g["key"], g["kind"], g["provenance"])
                    self.add_trial(Trial(w["key"], g["key"], rec["config"], rec["steps"], rec["times"],
                                         rec["failure"], rec.get("message", ""), rec["tuner"], rec.get("seed"),
                                         rec.get("run", ""), rec.get("started", 0.0), rec.get("finished", 0.0)))
                    ok += 1
                except (json.JSONDecodeError, ConfigError, KeyError, TypeError, ValueError) as e:
                    skipped.append((n, f"{type(e).__name__}: {e}"))
        return ok, skipped


def _check_record(rec: dict) -> None:
    for k in ("workload", "target", "config", "steps", "times", "failure", "tuner"):
        if k not in rec:
            raise ConfigError(f"record has no '{k}'")
    if not isinstance(rec["config"], dict):
        raise ConfigError("config must be an object")
    if rec["failure"] is not None and rec["failure"] not in FAILURES:
        raise ConfigError(f"unknown failure '{rec['failure']}'")
    times = rec["times"]
    if not isinstance(times, list) or any(
            not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x <= 0 for x in times):
        raise ConfigError(f"times must be a list of finite positive numbers, got {times!r}")
    if rec["failure"] is None and not times:
        raise ConfigError("a successful trial needs its times")
    for k in ("key", "family", "shapes", "dtypes", "description"):
        if k not in rec["workload"]:
            raise ConfigError(f"workload has no '{k}'")
    for k in ("key", "kind", "provenance"):
        if k not in rec["target"]:
            raise ConfigError(f"target has no '{k}'")


def _workload_row(r) -> dict:
    return {"key": r["key"], "family": r["family"], "shapes": json.loads(r["shapes"]),
            "dtypes": json.loads(r["dtypes"]), "description": r["description"], "flops": r["flops"],
            "bytes": r["bytes"]}


def _trial_row(r) -> Trial:
    return Trial(r["wkey"], r["gkey"], json.loads(r["config"]), json.loads(r["steps"]), json.loads(r["times"]),
                 r["failure"], r["message"] or "", r["tuner"], r["seed"], r["run"] or "", r["started"],
                 r["finished"], r["id"])


def iter_jsonl(path) -> Iterator[dict]:
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


__all__ = ["FAILURES", "SCHEMA_VERSION", "Database", "Trial", "config_key", "iter_jsonl"]
