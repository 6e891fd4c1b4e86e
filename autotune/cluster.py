"""Measurement on a Dask cluster (the ``dask`` extra).

``DaskMeasurer`` has ``Measurer``'s interface: ``measure(configs)`` sends each candidate to a
Dask worker, which builds it and times it in its own isolated measurement process (one
``Measurer`` per task per worker process, so the inputs and the reference answer are computed
once there, and a crashing candidate still costs one trial). The client keeps the database:
results come back as ``MeasureResult`` values and are recorded where tuning runs.

A worker only measures for the target it is: when the task's target, described on the worker's
machine (CPU model, compiler version, OpenCL device and driver), has another key than on the
client, the candidate is a ``runtime_error`` naming both keys, so a database never holds times
from a machine it does not describe.

Faults: a candidate whose worker dies (or whose future is lost or cancelled) is submitted again
to the workers left, up to ``retries`` times, then recorded as a ``runtime_error``; when no
worker is left for ``no_worker_s`` seconds the remaining candidates fail the same way. The task
travels with each candidate (nothing scattered that a dying worker could take with it).

Trust: Dask sends pickles both ways and workers run the code they are sent, so everyone who
can reach the scheduler can run code on the client and the workers. Use TLS with certificates
signed by a CA only the cluster's machines hold (``security``: ``distributed.security.Security``
or a spec, see ``security()``). A worker's answer is still checked as data: a
``MeasureResult`` for the config that was sent, a known failure kind, finite plausible times
and the schedule steps the client derives from the config itself.

Timings are only comparable when candidates do not share a machine's cores: start one worker
per machine with one thread (``dask worker ADDRESS --nworkers 1 --nthreads 1``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from concurrent.futures import CancelledError
from pathlib import Path

from ..dsl.errors import ClusterError, HlotuneError, MissingDependencyError
from ..schedules.steps import step_to_json
from .database import config_key
from .measure import Measurer, MeasureResult
from .records import FAILURES, MAX_TIME, MIN_TIME
from .task import Task

log = logging.getLogger(__name__)

#: per worker process: (task key, target key, options) -> Measurer
_MEASURERS: dict = {}
_SECURITY_KEYS = ("require_encryption", "tls_ca_file", "tls_ciphers", "tls_min_version", "tls_max_version",
                  "tls_client_key", "tls_client_cert", "tls_scheduler_key", "tls_scheduler_cert",
                  "tls_worker_key", "tls_worker_cert")


def _distributed():
    try:
        import distributed
    except ImportError as e:
        raise MissingDependencyError("dask[distributed]", "dask") from e
    return distributed


def security(spec):
    """A ``distributed.security.Security`` from ``spec``: a Security (returned as is), a dict of
    its keywords, a path to a YAML/JSON file of them (relative file names are relative to that
    file), or ``key=value,key=value`` (e.g. ``tls_ca_file=ca.pem,tls_client_cert=me.pem,
    tls_client_key=me.key``). TLS files must exist; ``require_encryption`` defaults to true."""
    Security = _distributed().security.Security
    if spec is None or isinstance(spec, Security):
        return spec
    base = Path.cwd()
    if isinstance(spec, str) and "=" not in spec:
        path = Path(spec)
        try:
            text = path.read_text()
        except OSError as e:
            raise ClusterError(f"Dask security file {spec}: {e.strerror or e}") from None
        spec, base = _parse_mapping(text, spec), path.parent
    elif isinstance(spec, str):
        pairs = [p.split("=", 1) for p in spec.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ClusterError(f"Dask security spec {spec!r}: expected key=value,key=value")
        spec = {k.strip(): v.strip() for k, v in pairs}
    if not isinstance(spec, dict):
        raise ClusterError(f"Dask security: expected a Security, a dict, a file or key=value pairs, "
                           f"got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(_SECURITY_KEYS))
    if unknown:
        raise ClusterError(f"Dask security: unknown option(s) {unknown}; known: {', '.join(_SECURITY_KEYS)}")
    opts = dict(spec)
    enc = opts.pop("require_encryption", True)
    if isinstance(enc, str):
        if enc.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ClusterError(f"Dask security: require_encryption={enc!r} is not a boolean")
        enc = enc.lower() in ("true", "1", "yes")
    for k, v in opts.items():
        if k.endswith(("_file", "_key", "_cert")) and isinstance(v, str) and "-----BEGIN" not in v:
            f = base / v
            if not f.is_file():
                raise ClusterError(f"Dask security: {k} file {f} does not exist")
            opts[k] = str(f)
    try:
        return Security(require_encryption=bool(enc), **opts)
    except (TypeError, ValueError, OSError) as e:
        raise ClusterError(f"Dask security: {e}") from None


def _parse_mapping(text: str, name: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import yaml
            data = yaml.safe_load(text)
        except Exception as e:  # noqa: BLE001  (yaml's errors have no common base we can name)
            raise ClusterError(f"Dask security file {name} is neither JSON nor YAML: {e}") from None
    if not isinstance(data, dict):
        raise ClusterError(f"Dask security file {name} must hold a mapping of Security options")
    return data


def connect(address_or_client, security_spec=None):
    """A ``distributed.Client`` for a scheduler address (``tcp://host:8786``, ``tls://...`` with
    ``security_spec``) or a Client."""
    distributed = _distributed()
    if isinstance(address_or_client, distributed.Client):
        return address_or_client
    sec = security(security_spec)
    address = str(address_or_client)
    tls = address.startswith("tls://")
    if tls and sec is None:
        raise ClusterError(f"the Dask scheduler {address} speaks TLS: give its certificates (--dask-security / "
                           "security=)")
    if sec is not None and sec.require_encryption and not tls:
        raise ClusterError(f"Dask security requires encryption, but {address} is not a tls:// address")
    try:
        return distributed.Client(address, security=sec, timeout=30)
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        raise ClusterError(f"cannot connect to the Dask scheduler at {address}: {e}") from None


def measure_on_worker(task: Task, config: dict | None, options: dict, expected_key: str) -> MeasureResult:
    """Build and time one candidate on this worker (runs inside a Dask worker process).
    ``expected_key`` is the target key the client tunes; the task's target, described on this
    machine (CPU model, compiler version, device), must have the same key."""
    t0 = time.time()
    here = task.target.key
    if here != expected_key:
        return MeasureResult(config or {}, [], [], "runtime_error",
                             f"this worker's machine is target {here}, not {expected_key} that is being tuned; "
                             "run the workers on machines of the tuned target", t0, time.time())
    key = (task.key, here, tuple(sorted(options.items())))
    m = _MEASURERS.get(key)
    if m is None:
        m = _MEASURERS[key] = Measurer(task, **options)
    return m.measure([config], screen=False)[0]


def _lost_errors() -> tuple:
    """Exceptions of a future whose worker died or whose data was lost (worth another try)."""
    d = _distributed()
    errs = [CancelledError, d.client.FutureCancelledError, OSError, d.comm.CommClosedError]
    killed = getattr(d, "KilledWorker", None) or getattr(d.scheduler, "KilledWorker", None)
    return tuple(e for e in [*errs, killed] if e is not None)


class DaskMeasurer:
    """Measures one task's candidates on the workers of ``client`` (see the module docstring)."""

    def __init__(self, task: Task, client, retries: int = 2, no_worker_s: float = 120.0, **options):
        self.task, self.client, self.options = task, client, options
        self.retries, self.no_worker_s = retries, no_worker_s
        self._steps: dict[str, list] = {}

    def _submit(self, config):
        return self.client.submit(measure_on_worker, self.task, config, self.options, self.task.target.key,
                                  pure=False)

    def measure(self, configs: list[dict | None], screen: bool = True) -> list[MeasureResult]:
        """Every candidate on some worker, timed in full (``screen`` is for the local measurer:
        workers do not share a best time)."""
        distributed = _distributed()
        lost = _lost_errors()
        results: list[MeasureResult | None] = [None] * len(configs)
        tries = [0] * len(configs)
        pending = {self._submit(c): i for i, c in enumerate(configs)}
        idle_since = None
        while pending:
            try:
                distributed.wait(list(pending), timeout=5, return_when="FIRST_COMPLETED")
            except (TimeoutError, *lost):   # wait() raises for cancelled futures: sorted out below
                pass
            done = [f for f in pending if f.status in ("finished", "error", "cancelled")]
            if not done:
                idle_since = self._check_workers(idle_since, pending, results, configs)
                continue
            idle_since = None
            for fut in done:
                i = pending.pop(fut)
                try:
                    r = fut.result()
                except lost as e:
                    tries[i] += 1
                    if tries[i] <= self.retries:
                        log.warning("dask: candidate %d lost its worker (%s: %s); submitting it again (%d/%d)",
                                    i, type(e).__name__, e, tries[i], self.retries)
                        pending[self._submit(configs[i])] = i
                    else:
                        results[i] = self._failed(configs[i], f"lost its Dask worker {tries[i]} times; last: "
                                                  f"{type(e).__name__}: {e}", infra=True)
                    continue
                except Exception as e:  # noqa: BLE001  (whatever a worker raised is this candidate's failure)
                    results[i] = self._failed(configs[i], f"the Dask worker raised {type(e).__name__}: {e}")
                    continue
                results[i] = self.validate(configs[i], r)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        pass

    def _check_workers(self, idle_since, pending, results, configs):
        """Say at once when no worker is connected; after ``no_worker_s`` without one, cancel
        what is pending and stop the run (ClusterError): its finished trials are in the database
        and the same command resumes once workers are back."""
        if self.client.scheduler_info().get("workers"):
            return None
        now = time.monotonic()
        if idle_since is None:
            log.warning("dask: no worker is connected to the scheduler; waiting up to %g s for one",
                        self.no_worker_s)
            return now
        if now - idle_since >= self.no_worker_s:
            for fut in list(pending):
                fut.cancel()
            pending.clear()
            raise ClusterError(f"every Dask worker was lost: none connected for {self.no_worker_s:g} s. The finished "
                               "trials are in the database; run the same command again once workers are back (the "
                               "unfinished candidates are measured then)")
        return idle_since

    def _failed(self, config, message: str, infra: bool = False) -> MeasureResult:
        """A failed candidate (``infra``: the cluster's fault; the run does not record it, so a
        later run measures it again)."""
        t = time.time()
        return MeasureResult(config or {}, [], [], "runtime_error", message, t, t, infra=infra)

    def _expected_steps(self, config) -> list | None:
        k = config_key(config or {})
        if k not in self._steps:
            try:
                self._steps[k] = [step_to_json(x) for x in self.task.schedule(config).steps]
            except HlotuneError:
                self._steps[k] = None
        return self._steps[k]

    def validate(self, config: dict | None, r) -> MeasureResult:
        """``r`` as a MeasureResult built from checked fields, or a ``runtime_error`` saying
        what is wrong with what the worker sent (see the module docstring)."""
        why = _check_result(config or {}, r)
        if why is None and r.failure != "invalid" and r.steps != self._expected_steps(config):
            why = "its schedule steps are not those of the config that was sent"
        if why:
            log.warning("dask: rejected a worker's result: %s", why)
            return self._failed(config, f"the Dask worker's result was rejected: {why}")
        now = time.time()
        started, finished = float(r.started), float(r.finished)
        if not (math.isfinite(started) and math.isfinite(finished) and started <= finished <= now + 300):
            started = finished = now
        return MeasureResult(dict(config or {}), list(r.steps), [float(t) for t in r.times], r.failure,
                             r.message[:8000], started, finished)


def _check_result(config: dict, r) -> str | None:
    """Why ``r`` is not a plausible measurement of ``config``, or None."""
    if not isinstance(r, MeasureResult):
        return f"it is a {type(r).__name__}, not a MeasureResult"
    if not isinstance(r.config, dict) or config_key(r.config) != config_key(config):
        return f"it is for config {str(r.config)[:200]}, not the one sent ({config})"
    if r.failure is not None and r.failure not in FAILURES:
        return f"unknown failure kind {str(r.failure)[:50]!r}"
    if not isinstance(r.message, str) or not isinstance(r.steps, list):
        return "its message or steps have the wrong type"
    if not isinstance(r.times, list) or not all(isinstance(t, (int, float)) and not isinstance(t, bool)
                                                for t in r.times):
        return "its times are not a list of numbers"
    if r.failure is None:
        lo, hi = MIN_TIME, MAX_TIME
        if not r.times:
            return "a success without times"
        bad = [t for t in r.times if not (math.isfinite(t) and lo <= t <= hi)]
        if bad:
            return f"implausible time(s) {bad[:3]} (seconds per call must lie in [{lo:g}, {hi:g}])"
    elif r.times:
        return f"a {r.failure} with times"
    if not isinstance(r.started, (int, float)) or not isinstance(r.finished, (int, float)):
        return "its start/finish stamps are not numbers"
    return None


__all__ = ["DaskMeasurer", "connect", "measure_on_worker", "security"]
