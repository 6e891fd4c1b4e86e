"""The tuning database: SQLite in WAL mode, one row per measured (or failed) trial.

Tables: ``workloads`` (structural key, family, shapes, dtypes, description), ``targets``
(key + provenance), ``trials`` (config, schedule steps, every repeat time, failure, tuner,
seed, timestamps, and a fingerprint that keeps one copy of each trial), ``spaces`` (each
workload's knob space on each target, stored when a task registers, to check imported
configs against). Each trial commits as it finishes, so a killed run loses nothing; several
processes may write one database at once (WAL + busy timeout + retried writes).

Schema 3 keys workloads by op names (format 2); a database of schema 2 or older is migrated:
its workload keys (format 1, built from ``Op`` positions) are kept behind ``LEGACY_PREFIX``
until a task of the same workload re-keys them (``adopt_legacy``), and ``run`` reads them
through ``autotune.task.legacy_workload_key`` meanwhile.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

from ..dsl.errors import ConfigError, DataFileError, HlotuneError
from .records import FAILURES, LEGACY_PREFIX, SCHEMA_VERSION, Trial, fingerprint, plausible_times

log = logging.getLogger(__name__)

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
        hlotune_version TEXT NOT NULL, fingerprint TEXT)""",
    """CREATE INDEX IF NOT EXISTS trials_task ON trials (workload_id, target_id, median)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS trials_once ON trials (workload_id, target_id, fingerprint)""",
    """CREATE TABLE IF NOT EXISTS spaces (
        workload_id INTEGER NOT NULL REFERENCES workloads(id), target_id INTEGER NOT NULL REFERENCES targets(id),
        knobs TEXT NOT NULL, PRIMARY KEY (workload_id, target_id))""",
    # a task's confirmed winner: the finalists re-timed interleaved, medians with bootstrap
    # confidence intervals; the default stays unless the winner's interval is wholly faster
    """CREATE TABLE IF NOT EXISTS winners (
        workload_id INTEGER NOT NULL REFERENCES workloads(id), target_id INTEGER NOT NULL REFERENCES targets(id),
        config TEXT NOT NULL, median REAL NOT NULL, lo REAL NOT NULL, hi REAL NOT NULL,
        default_median REAL, default_lo REAL, default_hi REAL, finalists TEXT NOT NULL, decided REAL NOT NULL,
        PRIMARY KEY (workload_id, target_id))""",
]


def _migrate_1(conn) -> None:
    conn.execute("ALTER TABLE workloads ADD COLUMN flops REAL")
    conn.execute("ALTER TABLE workloads ADD COLUMN bytes REAL")


def _migrate_2(conn) -> None:
    """Fingerprint every trial (dropping copies that repeated imports made) and put the
    format-1 workload keys behind LEGACY_PREFIX."""
    if _has_table(conn, "trials"):
        conn.execute("ALTER TABLE trials ADD COLUMN fingerprint TEXT")
        seen, dup = set(), []
        for r in conn.execute("SELECT * FROM trials ORDER BY id").fetchall():
            fp = fingerprint(json.loads(r["config"]), json.loads(r["times"]), r["failure"], r["tuner"], r["seed"],
                             r["run"] or "", r["started"], r["finished"])
            if (r["workload_id"], r["target_id"], fp) in seen:
                dup.append((r["id"],))
            else:
                seen.add((r["workload_id"], r["target_id"], fp))
                conn.execute("UPDATE trials SET fingerprint=? WHERE id=?", (fp, r["id"]))
        conn.executemany("DELETE FROM trials WHERE id=?", dup)
        if dup:
            log.warning("tuning database: dropped %d duplicate trials while migrating to schema 3", len(dup))
    n = conn.execute("UPDATE workloads SET key=? || key WHERE key NOT LIKE ?",
                     (LEGACY_PREFIX, LEGACY_PREFIX + "%")).rowcount
    if n:
        log.warning("tuning database: %d workloads keep their format-1 keys (%s...) until 'hlotune tune' re-keys "
                    "them; 'hlotune run --db' still finds them", n, LEGACY_PREFIX)


# _MIGRATIONS[v] upgrades a database at schema v to v + 1
_MIGRATIONS = {1: _migrate_1, 2: _migrate_2}


def _has_table(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _explain(e: Exception, path: str) -> DataFileError | None:
    """A DataFileError naming the real cause of SQLite error ``e`` on ``path`` (a read-only file
    or folder, a full disk), or None when it is none of those."""
    msg = str(e).lower()
    where = Path(path).resolve().parent
    if "readonly" in msg or "read-only" in msg:
        return DataFileError(f"tuning database {path} is read-only (the file, or its folder {where}, which must hold "
                             "its -wal and -shm files, cannot be written): fix the permissions or give another --db")
    if "disk is full" in msg or "disk i/o error" in msg and not os.access(where, os.W_OK):
        return DataFileError(f"the disk holding tuning database {path} is full (or fails to write): free space on "
                             f"{where} or give another --db; the trials recorded so far are kept")
    if "unable to open database file" in msg:
        return DataFileError(f"cannot open tuning database {path}: its folder {where} must be writable (SQLite "
                             "keeps -wal and -shm files beside it)")
    return None


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


class Database:
    """A tuning database file (SQLite). ``Database(":memory:")`` works for tests.

    ``create=False`` refuses a path with no database (reports, exports, ``run --db``); a new
    database is made only in a folder that exists. A file that is not a tuning database of a
    schema this hlotune knows raises DataFileError."""

    def __init__(self, path: str | Path = "tuning.db", create: bool = True):
        self.path = str(path)
        if self.path != ":memory:":
            _check_path(Path(self.path), create)
        try:
            self.conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        except sqlite3.Error as e:
            raise DataFileError(f"cannot open tuning database {self.path}: {e}") from None
        self.conn.row_factory = sqlite3.Row
        try:
            self._stored_version()      # refuse a foreign or newer file before writing to it
            self._write("PRAGMA journal_mode=WAL") if self.path != ":memory:" else None
            self.conn.execute("PRAGMA busy_timeout=60000")
            self._init_schema()
        except HlotuneError:
            self.conn.close()
            raise
        except (sqlite3.DatabaseError, ValueError, TypeError) as e:
            self.conn.close()
            raise _explain(e, self.path) or DataFileError(
                f"{self.path} is not a usable tuning database ({e}); give another --db, or move it away to start "
                "a new one") from None

    # ------------------------------------------------------------------ schema
    def _write(self, sql: str, params=()):
        for attempt in range(50):
            try:
                return self.conn.execute(sql, params)
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise _explain(e, self.path) or e
                time.sleep(0.05 * (attempt + 1))
        raise HlotuneError(f"tuning database {self.path} stayed locked")

    def _init_schema(self) -> None:
        self._write("BEGIN IMMEDIATE")
        try:
            version = self._stored_version()
            if version is None:
                for sql in _SCHEMA:
                    self.conn.execute(sql)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            else:
                while version < SCHEMA_VERSION:
                    _MIGRATIONS[version](self.conn)
                    version += 1
                for sql in _SCHEMA:
                    self.conn.execute(sql)
                self.conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
            self.conn.execute("COMMIT")
        except BaseException:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:    # the transaction never began (a read-only file, a full disk)
                pass
            raise

    def _stored_version(self) -> int | None:
        """The schema of an existing tuning database; None for an empty file."""
        if not _has_table(self.conn, "meta"):
            if self.conn.execute("SELECT 1 FROM sqlite_master").fetchone() is not None:
                raise DataFileError(f"{self.path} is an SQLite database but not a tuning database")
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            version = int(row["value"])
        except (TypeError, ValueError):
            version = 0
        if version < 1:
            raise DataFileError(f"{self.path} has no valid schema version; it is not a tuning database")
        if version > SCHEMA_VERSION:
            raise DataFileError(f"tuning database {self.path} has schema {version}, newer than this "
                                f"hlotune's {SCHEMA_VERSION}: upgrade hlotune")
        return version

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()["value"])

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ registration
    def add_workload(self, key: str, family: str, shapes, dtypes, description: str,
                     flops: float | None = None, nbytes: float | None = None, authoritative: bool = False) -> int:
        """Record a workload. ``authoritative``: the fields come from the workload itself (a task
        made from its graph), so they replace what an imported log may have said under this key."""
        row = (family, json.dumps(shapes), json.dumps(dtypes), description, flops, nbytes)
        self._write("INSERT OR IGNORE INTO workloads (key, family, shapes, dtypes, description, flops, bytes) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", (key, *row))
        if authoritative:
            old = self.conn.execute("SELECT family, shapes, dtypes, description, flops, bytes FROM workloads "
                                    "WHERE key=?", (key,)).fetchone()
            if old is not None and tuple(old) != row:
                log.warning("workload %s: the database described it as %s %s; it is %s %s (corrected)", key,
                            old["family"], old["description"][:80], family, description[:80])
                self._write("UPDATE workloads SET family=?, shapes=?, dtypes=?, description=?, flops=?, bytes=? "
                            "WHERE key=?", (*row, key))
        return self._id("workloads", key)

    def add_target(self, key: str, kind: str, provenance: dict) -> int:
        self._write("INSERT OR IGNORE INTO targets (key, kind, provenance) VALUES (?, ?, ?)",
                    (key, kind, json.dumps(provenance, sort_keys=True)))
        return self._id("targets", key)

    def add_space(self, workload: str, target: str, space) -> None:
        """Store the knob space (a ``Space``) of a registered workload on a target."""
        knobs = json.dumps([[k.name, list(k.values)] for k in space.knobs])
        self._write("INSERT OR REPLACE INTO spaces VALUES (?, ?, ?)",
                    (self._id("workloads", workload), self._id("targets", target), knobs))

    def space(self, workload: str, target: str):
        """The stored knob space of a workload on a target, or None."""
        from ..schedules.templates.base import Knob, Space
        row = self.conn.execute("SELECT s.knobs FROM spaces s JOIN workloads w ON s.workload_id=w.id "
                                "JOIN targets g ON s.target_id=g.id WHERE w.key=? AND g.key=?",
                                (workload, target)).fetchone()
        return None if row is None else Space(tuple(Knob(n, tuple(v)) for n, v in json.loads(row["knobs"])))

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

    def name_workload(self, key: str, module: str) -> None:
        """Record that module ``module`` has workload ``key`` (reports name kernels by module)."""
        self._write("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                    (f"module:{key}:{module}", json.dumps([key, module])))

    def workload_modules(self) -> dict[str, list[str]]:
        """The modules recorded for each workload (``name_workload``), in the order recorded."""
        out: dict[str, list[str]] = {}
        for r in self.conn.execute("SELECT value FROM meta WHERE key LIKE 'module:%' ORDER BY rowid"):
            key, module = json.loads(r["value"])
            out.setdefault(key, []).append(module)
        return out

    def target(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM targets WHERE key=?", (key,)).fetchone()
        return None if row is None else _target_row(row)

    def targets(self) -> list[dict]:
        return [_target_row(r) for r in self.conn.execute("SELECT * FROM targets ORDER BY id")]

    # ------------------------------------------------------------------ format-1 keys
    def has_legacy(self) -> bool:
        """Whether some workload still has a format-1 key."""
        return self.conn.execute("SELECT 1 FROM workloads WHERE key LIKE ? LIMIT 1",
                                 (LEGACY_PREFIX + "%",)).fetchone() is not None

    def adopt_legacy(self, old: str, new: str) -> int:
        """Re-key the workload of format-1 key ``old`` as ``new`` (its trials join those of
        ``new`` when both exist, one copy of each). Returns how many trials it had."""
        row = self.conn.execute("SELECT id FROM workloads WHERE key=?", (LEGACY_PREFIX + old,)).fetchone()
        if row is None:
            return 0
        wid = int(row["id"])
        self._write("BEGIN IMMEDIATE")
        try:
            n = self.conn.execute("SELECT COUNT(*) FROM trials WHERE workload_id=?", (wid,)).fetchone()[0]
            have = self.conn.execute("SELECT id FROM workloads WHERE key=?", (new,)).fetchone()
            if have is None:
                self.conn.execute("UPDATE workloads SET key=? WHERE id=?", (new, wid))
            else:
                self.conn.execute("UPDATE OR IGNORE trials SET workload_id=? WHERE workload_id=?", (have["id"], wid))
                for table in ("trials", "spaces"):
                    self.conn.execute(f"DELETE FROM {table} WHERE workload_id=?", (wid,))
                self.conn.execute("DELETE FROM workloads WHERE id=?", (wid,))
            self.conn.execute("COMMIT")
        except BaseException:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:    # the transaction never began (a read-only file, a full disk)
                pass
            raise
        log.info("re-keyed workload %s%s (%d trials) as %s", LEGACY_PREFIX, old, n, new)
        return n

    # ------------------------------------------------------------------ trials
    def add_trial(self, t: Trial) -> int:
        """Store one trial and commit it at once; a trial already stored is kept once.
        Returns its row id."""
        if t.failure is not None and t.failure not in FAILURES:
            raise ConfigError(f"unknown failure kind '{t.failure}'; expected one of {FAILURES}")
        if not plausible_times(list(t.times)):
            raise ConfigError(f"trial times must be plausible seconds per call, got {t.times}")
        t = replace(t, times=list(t.times), started=t.started or time.time(), finished=t.finished or time.time())
        return self._insert(self._id("workloads", t.workload), self._id("targets", t.target), t)[0]

    def _insert(self, wid: int, gid: int, t: Trial) -> tuple[int, bool]:
        """Insert a checked trial (its workload and target rows ``wid``, ``gid``) unless its
        fingerprint is stored; (row id, inserted)."""
        from ..runtime.targets import hlotune_version
        fp = fingerprint(t.config, t.times, t.failure, t.tuner, t.seed, t.run, t.started, t.finished)
        cur = self._write(
            "INSERT OR IGNORE INTO trials (workload_id, target_id, config, config_key, steps, times, median, "
            "failure, message, tuner, seed, run, started, finished, hlotune_version, fingerprint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (wid, gid, json.dumps(t.config, sort_keys=True), config_key(t.config), json.dumps(t.steps),
             json.dumps(t.times), t.median, t.failure, t.message[:4000], t.tuner, t.seed, t.run, t.started,
             t.finished, hlotune_version(), fp))
        if cur.rowcount:
            return int(cur.lastrowid), True
        row = self.conn.execute("SELECT id FROM trials WHERE workload_id=? AND target_id=? AND fingerprint=?",
                                (wid, gid, fp)).fetchone()
        return int(row["id"]), False

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

    def family_medians(self, family: str, kind: str) -> list[tuple[str, str, dict, float]]:
        """(workload key, target key, config, median seconds) of every successful trial of a
        kernel family on targets of one kind, in the order they finished (a cost model's data)."""
        sql = ("SELECT w.key AS wkey, g.key AS gkey, t.config, t.median FROM trials t JOIN workloads w ON "
               "t.workload_id=w.id JOIN targets g ON t.target_id=g.id WHERE w.family=? AND g.kind=? AND "
               "t.failure IS NULL AND t.median > 0 ORDER BY t.id")
        return [(r["wkey"], r["gkey"], json.loads(r["config"]), r["median"])
                for r in self.conn.execute(sql, (family, kind))]

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

    def set_winner(self, workload: str, target: str, config: dict, ci: tuple, default_ci: tuple | None,
                   finalists: list[dict]) -> None:
        """Store a task's confirmed winner: ``config`` with its (median, lo, hi) seconds, the
        default's, and every finalist's ``{"config", "median", "lo", "hi", "times"}``."""
        for v in (*ci, *(default_ci or ())):
            if not (isinstance(v, float) and math.isfinite(v) and v > 0):
                raise ConfigError(f"winner of {workload}: implausible time {v!r}")
        self._write("INSERT OR REPLACE INTO winners VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (self._id("workloads", workload), self._id("targets", target), json.dumps(config, sort_keys=True),
                     *ci, *(default_ci or (None, None, None)), json.dumps(finalists), time.time()))

    def winner(self, workload: str, target: str) -> dict | None:
        """A task's confirmed winner (see ``set_winner``), or None."""
        rows = self.winners(workload, target)
        return rows[0] if rows else None

    def winners(self, workload: str | None = None, target: str | None = None) -> list[dict]:
        """Confirmed winners as dicts: workload, target, config, median, lo, hi, default_median,
        default_lo, default_hi, finalists, decided."""
        sql = ("SELECT x.*, w.key AS wkey, g.key AS gkey FROM winners x JOIN workloads w ON x.workload_id=w.id "
               "JOIN targets g ON x.target_id=g.id WHERE (? IS NULL OR w.key=?) AND (? IS NULL OR g.key=?)")
        out = []
        for r in self.conn.execute(sql, (workload, workload, target, target)):
            out.append({"workload": r["wkey"], "target": r["gkey"], "config": json.loads(r["config"]),
                        "median": r["median"], "lo": r["lo"], "hi": r["hi"], "default_median": r["default_median"],
                        "default_lo": r["default_lo"], "default_hi": r["default_hi"],
                        "finalists": json.loads(r["finalists"]), "decided": r["decided"]})
        return out

    def measured_configs(self, workload: str, target: str) -> dict[str, Trial]:
        """config_key -> the trial of each config already tried for a task (to resume)."""
        return {config_key(t.config): t for t in self.history(workload, target)}

    # ------------------------------------------------------------------ logs
    def export_jsonl(self, path, workload: str | None = None) -> int:
        """Write every trial (with its workload and target records) as JSON lines."""
        from .records import export_log
        return export_log(self, path, workload)

    def import_log(self, path, validate=None, skip_bad: bool = True):
        """Import a JSON-lines log in one transaction; see ``records.import_log``."""
        from .records import import_log
        return import_log(self, path, validate, skip_bad)

    def import_jsonl(self, path, validate=None, skip_bad: bool = True) -> tuple[int, list[tuple[int, str]]]:
        """Import a JSON-lines log: (trials added, [(line, why) for each bad line]). Every
        record is checked (``records.parse_record``, ``records.check_config`` against the
        workload's stored space, and ``validate(record)`` when given); bad lines are skipped, or
        with ``skip_bad=False`` nothing is imported. Records already stored are not added twice."""
        r = self.import_log(path, validate, skip_bad)
        return r.imported, r.skipped


def _check_path(p: Path, create: bool) -> None:
    if p.exists():
        if not p.is_file():
            raise DataFileError(f"tuning database {p} is not a file")
    elif not create:
        raise DataFileError(f"no tuning database at {p}: tune first ('hlotune tune MODULE --db {p}') "
                            "or give the path of an existing one")
    elif not p.parent.is_dir():
        raise DataFileError(f"cannot create tuning database {p}: folder '{p.parent}' does not exist "
                            "(create it first)")


def _workload_row(r) -> dict:
    return {"key": r["key"], "family": r["family"], "shapes": json.loads(r["shapes"]),
            "dtypes": json.loads(r["dtypes"]), "description": r["description"], "flops": r["flops"],
            "bytes": r["bytes"]}


def _target_row(r) -> dict:
    return {"key": r["key"], "kind": r["kind"], "provenance": json.loads(r["provenance"])}


def _trial_row(r) -> Trial:
    return Trial(r["wkey"], r["gkey"], json.loads(r["config"]), json.loads(r["steps"]), json.loads(r["times"]),
                 r["failure"], r["message"] or "", r["tuner"], r["seed"], r["run"] or "", r["started"],
                 r["finished"], r["id"])



__all__ = ["FAILURES", "SCHEMA_VERSION", "Database", "Trial", "config_key"]
