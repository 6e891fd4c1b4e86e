"""Tuning-log records from elsewhere, checked before they touch a database.

A log line is hostile until proven otherwise: ``parse_record`` turns one line into a record
whose every field has the type, range and size a database row needs (or raises ``DataFileError``
naming the field), and ``check_config`` checks its config against the workload's knob space:
the space stored when a task of that workload was registered on that target, else the family's
knob domains and what the workload's shapes imply.

Log schemas: records without a ``schema`` field come from schema 2 and carry format-1 workload
keys (``Op`` positions), which are stored with ``LEGACY_PREFIX`` until a task re-keys them
(``Database.adopt_legacy``); schema 3 records carry current keys.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from enum import Enum

from ..dsl import dtypes as dt
from ..dsl.errors import ConfigError, DataFileError, DSLError, HlotuneError
from ..runtime.backends import backend, kinds
from ..schedules.hardware import Hardware
from ..schedules.templates.families import templates_for

#: the database schema this hlotune writes; a log record carries it as ``schema``
SCHEMA_VERSION = 3
#: log schemas this hlotune reads (2: before workload keys were built from op names)
LOG_SCHEMAS = (2, 3)
#: workload keys of format 1 (schema <= 2) are stored behind this prefix
LEGACY_PREFIX = "v1:"


class Failure(str, Enum):
    """Why a candidate has no time (a str: records, logs and the database hold the value)."""

    INVALID = "invalid"              # the config breaks a template rule: never compiled
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"  # an exception or a crashed worker
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"


FAILURES = tuple(f.value for f in Failure)
#: plausible seconds per kernel call (the one bound: the worker, the Dask check and log imports):
#: below a nanosecond nothing was measured (an empty kernel is clamped to it), above 10^4 s
#: (about 3 hours) no candidate survives a tuning timeout
MIN_TIME, MAX_TIME = 1e-9, 1e4
#: SQLite stores integers in 64 bits
INT64 = (-(2**63), 2**63 - 1)
#: a knob counts loop iterations, vector lanes or blocks: none exceeds the workload's largest
#: extent rounded up to a whole vector of this many lanes
MAX_LANES = 64

_KEY = re.compile(r"[0-9a-f]{20}")
_TEXT_MAX = 100_000
#: a log line, and the schedule steps of one record, as JSON: far beyond any real schedule's
LINE_MAX = 4_000_000
STEPS_MAX = 1_000_000
CONFIG_KNOBS_MAX = 256


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


def plausible_times(times) -> bool:
    """Whether ``times`` is a list of plausible seconds (finite, in [MIN_TIME, MAX_TIME])."""
    return isinstance(times, list) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and MIN_TIME <= x <= MAX_TIME
        for x in times)


def fingerprint(config: dict, times, failure, tuner: str, seed, run: str, started: float, finished: float) -> str:
    """What makes a trial the same trial wherever it is stored (the database keeps one copy)."""
    blob = json.dumps([config, list(times), failure, tuner, seed, run, started, finished], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def parse_record(text: str) -> dict:
    """One log line as a checked record (workload key re-prefixed for format-1 logs)."""
    _need(len(text) <= LINE_MAX, f"a log line of {len(text)} characters (at most {LINE_MAX})")
    try:
        rec = json.loads(text)
    except RecursionError:
        raise DataFileError("JSON nested too deeply") from None
    except ValueError as e:
        raise DataFileError(f"not JSON: {e}") from None
    _need(isinstance(rec, dict), "a record must be a JSON object")
    schema = rec.get("schema", 2)
    _need(_is_int(schema) and schema in LOG_SCHEMAS,
          f"record of schema {_short(schema)}: this hlotune reads log schemas {list(LOG_SCHEMAS)}"
          + ("; upgrade hlotune" if _is_int(schema) and schema > SCHEMA_VERSION else ""))
    for k in ("workload", "target", "config", "steps", "times", "failure", "tuner"):
        _need(k in rec, f"record has no '{k}'")
    return {"schema": schema, "workload": _workload(rec["workload"], schema), "target": _target(rec["target"]),
            **_trial(rec)}


def _trial(rec: dict) -> dict:
    """The trial fields of a record, checked."""
    cfg = rec["config"]
    _need(isinstance(cfg, dict) and len(cfg) <= CONFIG_KNOBS_MAX,
          f"config must be an object of at most {CONFIG_KNOBS_MAX} knob names to values")
    for k, v in cfg.items():
        _need(len(k) <= 100 and _is_knob_value(v), f"knob '{_short(k)}' = {_short(v)}: knob values are integers or "
                                                   "strings")
    _need(isinstance(rec["steps"], list) and all(isinstance(s, dict) for s in rec["steps"]),
          "steps must be a list of objects")
    size = len(json.dumps(rec["steps"]))
    _need(size <= STEPS_MAX, f"steps of {size} characters as JSON (at most {STEPS_MAX})")
    failure, times, seed = rec["failure"], rec["times"], rec.get("seed")
    _need(failure is None or failure in FAILURES, f"unknown failure {_short(failure)}; expected one of {FAILURES}")
    _need(plausible_times(times), f"times must be seconds in [{MIN_TIME:g}, {MAX_TIME:g}], got {_short(times)}")
    _need(failure is not None or times, "a successful trial needs its times")
    _need(seed is None or (_is_int(seed) and INT64[0] <= seed <= INT64[1]),
          f"seed must be null or a 64-bit integer, got {_short(seed)}")
    out = {"config": cfg, "steps": rec["steps"], "failure": failure, "times": times, "seed": seed}
    for k in ("tuner", "message", "run"):
        v = rec.get(k, "")
        _need(isinstance(v, str) and len(v) <= _TEXT_MAX, f"'{k}' must be a string")
        out[k] = v
    for k in ("started", "finished"):
        v = rec.get(k, 0.0)
        _need(_is_num(v) and v >= 0, f"'{k}' must be a finite time stamp, got {_short(v)}")
        out[k] = float(v)
    return out


def _workload(w, schema: int) -> dict:
    _need(isinstance(w, dict), "workload must be an object")
    for k in ("key", "family", "shapes", "dtypes", "description"):
        _need(k in w, f"workload has no '{k}'")
    key = w["key"]
    legacy = isinstance(key, str) and key.startswith(LEGACY_PREFIX)
    bare = key[len(LEGACY_PREFIX):] if legacy else key
    _need(isinstance(key, str) and _KEY.fullmatch(bare) is not None and not (legacy and schema < 3),
          f"workload key must be 20 hex digits, got {_short(key)}")
    if schema < 3:
        key = LEGACY_PREFIX + key
    _need(isinstance(w["family"], str) and len(w["family"]) <= 100, "workload family must be a string")
    sh = w["shapes"]
    _need(isinstance(sh, dict) and set(sh) == {"inputs", "outputs", "reduce"}
          and all(isinstance(sh[g], list) and all(_is_shape(s) for s in sh[g]) for g in ("inputs", "outputs"))
          and _is_shape(sh["reduce"]), "workload shapes must be {inputs: [[dims]], outputs: [[dims]], reduce: [dims]}")
    _need(isinstance(w["dtypes"], list) and all(isinstance(d, str) for d in w["dtypes"]),
          "workload dtypes must be a list of names")
    for d in w["dtypes"]:
        try:
            dt.dtype(d)
        except (DSLError, TypeError, ValueError):
            raise DataFileError(f"unknown dtype {_short(d)} in workload dtypes") from None
    _need(isinstance(w["description"], str) and len(w["description"]) <= _TEXT_MAX,
          "workload description must be a string")
    extra = {}
    for k in ("flops", "bytes"):
        v = w.get(k)
        _need(v is None or (_is_num(v) and v >= 0), f"workload {k} must be null or a finite count")
        extra[k] = v
    return {"key": key, "family": w["family"], "shapes": sh, "dtypes": w["dtypes"],
            "description": w["description"], **extra}


def _target(g) -> dict:
    _need(isinstance(g, dict), "target must be an object")
    for k in ("key", "kind", "provenance"):
        _need(k in g, f"target has no '{k}'")
    kind = g["kind"]
    _need(isinstance(kind, str) and kind in kinds(), f"unknown target kind {_short(kind)}; expected one of {kinds()}")
    _need(isinstance(g["key"], str) and g["key"].startswith(kind + "-") and len(g["key"]) <= 200,
          f"target key must be '{kind}-...', got {_short(g['key'])}")
    _need(isinstance(g["provenance"], dict), "target provenance must be an object")
    if "hardware" in g["provenance"]:       # what the cost model reads the target's rows with
        hw = g["provenance"]["hardware"]
        _need(isinstance(hw, dict), "target provenance hardware must be an object")
        try:
            Hardware.from_dict(hw)
        except ValueError as e:
            _need(False, f"target provenance: {e}")
    return {"key": g["key"], "kind": kind, "provenance": g["provenance"]}


def check_config(rec: dict, space=None) -> None:
    """Raise ConfigError unless ``rec``'s config can schedule its workload: every knob of
    ``space`` (the workload's stored space on this target) set to one of its values, or, with no
    space known, knobs in their family's domains and no count beyond the shapes' extents.
    The empty config (the default schedule) always applies."""
    config = rec["config"]
    if not config:
        return
    fam = rec["workload"]["family"]
    tpl = kind_templates(rec["target"]["kind"])
    if fam not in tpl:
        raise ConfigError(f"unknown kernel family '{fam}'")
    for k, v in config.items():
        if not _is_knob_value(v):
            raise ConfigError(f"knob '{k}' = {_short(v)}: knob values are integers or strings", k)
    if space is not None:
        full = space.validate(tpl[fam].complete(config, space))
        for k in space.knobs:   # 1.0 and True compare equal to 1; templates want the int
            if not any(type(full[k.name]) is type(x) and full[k.name] == x for x in k.values):
                raise ConfigError(f"knob '{k.name}' = {full[k.name]!r} is not one of {list(k.values)}", k.name)
        return
    validate_record(rec)
    sh = rec["workload"]["shapes"]
    dims = [d for s in sh["inputs"] + sh["outputs"] for d in s] + list(sh["reduce"])
    bound = -(-max(dims + [1]) // MAX_LANES) * MAX_LANES
    for k, v in config.items():
        if _is_int(v) and v > bound:
            raise ConfigError(f"knob '{k}' = {v} exceeds what the workload's shapes allow (<= {bound})", k)


@dataclass(frozen=True)
class ImportResult:
    """What importing a log did: trials added, records the database already held, bad lines
    ``(line, why)``, whether the import was committed (not with a bad line and
    ``skip_bad=False``), and how many added trials carry format-1 workload keys."""

    imported: int
    duplicates: int
    skipped: list
    committed: bool
    legacy: int = 0


def export_log(db, path, workload: str | None = None) -> int:
    """Write every trial of ``db`` (of one workload, when given) with its workload and target
    records as JSON lines of the current schema; returns the number written."""
    n = 0
    wl = {w["key"]: w for w in db.workloads()}
    tg = {t["key"]: t for t in db.targets()}
    with open(path, "w") as f:
        for t in db.history(workload):
            rec = {"schema": SCHEMA_VERSION, "workload": wl[t.workload], "target": tg[t.target], "config": t.config,
                   "steps": t.steps, "times": t.times, "failure": t.failure, "message": t.message,
                   "tuner": t.tuner, "seed": t.seed, "run": t.run, "started": t.started, "finished": t.finished}
            f.write(json.dumps(rec, sort_keys=True) + "\n")
            n += 1
    return n


def import_log(db, path, validate=None, skip_bad: bool = True) -> ImportResult:
    """Import a JSON-lines log into ``db`` in one transaction. Each record is parsed
    (``parse_record``), must agree with the workload and target the database holds under its
    keys, and its config must pass ``check_config`` (and ``validate(record)`` when given). A bad
    line is skipped, or with ``skip_bad=False`` rolls the whole import back; either way no
    record is half-written. A record the database already holds is not added again."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed by the ``with`` below)
    except OSError as e:
        raise DataFileError(f"cannot read tuning log {path}: {e.strerror or e}") from None
    added = dup = legacy = 0
    skipped: list[tuple[int, str]] = []
    with f:
        db._write("BEGIN IMMEDIATE")
        try:
            for n, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    skipped.append((n, f"DataFileError: not UTF-8 text (byte {raw[e.start]:#04x} at {e.start})"))
                    continue
                if not text.strip():
                    continue
                try:
                    rec = parse_record(text)
                    new = _import_one(db, rec, validate)
                except (HlotuneError, ValueError, TypeError, KeyError, RecursionError) as e:
                    skipped.append((n, f"{type(e).__name__}: {e}"))
                    continue
                added += new
                dup += not new
                legacy += new and rec["schema"] < 3
            if skipped and not skip_bad:
                db.conn.execute("ROLLBACK")
                return ImportResult(0, 0, skipped, False)
            db.conn.execute("COMMIT")
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
    return ImportResult(added, dup, skipped, True, legacy)


def _import_one(db, rec: dict, validate) -> bool:
    """Check one parsed record against ``db`` and store it (inside a savepoint, so a failure
    leaves no workload or target row behind); True if its trial was new."""
    w, g = rec["workload"], rec["target"]
    have = db.workload(w["key"])
    fields = ("family", "shapes", "dtypes", "description")
    if have is not None and [have[k] for k in fields] != [w[k] for k in fields]:
        raise DataFileError(f"workload {w['key']} is a {have['family']} {have['shapes']} {have['dtypes']} "
                            f"({_short(have['description'])}) in the database; the record says {w['family']} "
                            f"{w['shapes']} {w['dtypes']} ({_short(w['description'])}): another kernel's key")
    tgt = db.target(g["key"])
    if tgt is not None and tgt["kind"] != g["kind"]:
        raise DataFileError(f"target {g['key']} is of kind {tgt['kind']} in the database; the record says {g['kind']}")
    check_config(rec, db.space(w["key"], g["key"]))
    if validate is not None:
        validate(rec)
    t = Trial(w["key"], g["key"], rec["config"], rec["steps"], rec["times"], rec["failure"], rec["message"],
              rec["tuner"], rec["seed"], rec["run"], rec["started"], rec["finished"])
    db.conn.execute("SAVEPOINT record")
    try:
        wid = db.add_workload(w["key"], w["family"], w["shapes"], w["dtypes"], w["description"], w["flops"],
                              w["bytes"])
        gid = db.add_target(g["key"], g["kind"], g["provenance"])
        _, new = db._insert(wid, gid, t)
    except BaseException:
        db.conn.execute("ROLLBACK TO record")
        db.conn.execute("RELEASE record")
        raise
    db.conn.execute("RELEASE record")
    return new


def _need(cond, msg: str) -> None:
    if not cond:
        raise DataFileError(msg)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_knob_value(v) -> bool:
    """Knob values are integers or strings in every template (a float or bool is not 1)."""
    return (isinstance(v, str) and len(v) <= 100) or (_is_int(v) and INT64[0] <= v <= INT64[1])


def _is_shape(s) -> bool:
    return isinstance(s, list) and len(s) <= 64 and all(_is_int(d) and 0 <= d < 2**62 for d in s)


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."





def kind_templates(kind: str) -> dict:
    """The templates of a generic device of target kind ``kind`` (the device that made a log
    need not be here)."""
    return templates_for(backend(kind).hardware())


def validate_record(rec: dict) -> None:
    """Check a tuning-log record's config against its family's knob domains (the templates
    of the record's target kind)."""
    fam = rec["workload"].get("family")
    tpl = kind_templates((rec.get("target") or {}).get("kind", "cpu"))
    if fam not in tpl:
        raise ConfigError(f"unknown kernel family '{fam}'")
    tpl[fam].check_domain(rec["config"])


__all__ = [
    "FAILURES",
    "LEGACY_PREFIX",
    "LOG_SCHEMAS",
    "MAX_TIME",
    "MIN_TIME",
    "SCHEMA_VERSION",
    "Failure",
    "ImportResult",
    "Trial",
    "check_config",
    "export_log",
    "fingerprint",
    "import_log",
    "kind_templates",
    "parse_record",
    "plausible_times",
    "validate_record",
]
