"""Measurement: build candidates in parallel, run each in an isolated worker with a timeout,
verify the answer against the numpy reference, then time it (every repeat kept).

Failures are values (``MeasureResult.failure``): ``invalid`` (the config breaks a rule; never
compiled), ``compile_error``, ``runtime_error`` (an exception or a crashed worker),
``wrong_answer``, ``timeout``.

CPU candidates are compiled to shared libraries in the parent. OpenCL candidates are rendered in
the parent (a launch spec: the program source and its launches) and built by the driver in the
worker (a driver that crashes or hangs while compiling costs one candidate, ``compile_error``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError, ConfigError, DSLError, LoweringError, ScheduleError, TargetError
from ..dsl.reference import evaluate
from ..dsl.tolerance import scale_of, tolerance
from ..runtime.backends import backend
from ..runtime.cachedir import clean_stale_scratch, scratch_dir
from ..schedules.steps import step_to_json
from .task import Task

log = logging.getLogger(__name__)

@dataclass
class MeasureResult:
    config: dict
    steps: list = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    failure: str | None = None
    message: str = ""
    started: float = 0.0
    finished: float = 0.0
    build_s: float = 0.0        # scheduling, lowering, rendering and compiling (in parallel with others)
    infra: bool = False         # failed for the infrastructure (a lost worker), not the candidate: not recorded

    @property
    def median(self) -> float | None:
        if self.failure or not self.times:
            return None
        return float(np.median(self.times))


@dataclass
class _Built:
    config: dict
    steps: list
    fields: dict | None = None   # what the target's backend prepared for the worker
    failure: str | None = None
    message: str = ""
    build_s: float = 0.0


class Worker:
    """A persistent measurement process; restarted after a crash or a timeout."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None

    def _start(self):
        env = dict(os.environ)
        # the worker imports what the parent can (a backend or test module registered at run time)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        self.proc = subprocess.Popen([sys.executable, "-m", "hlotune.autotune.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     bufsize=1)

    def request(self, req: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            return {"ok": False, "failure": "timeout", "message": f"no answer within {timeout:g}s"}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    def _died(self) -> dict:
        code = self.proc.wait() if self.proc else None
        self.proc = None
        sig = f" (signal {-code})" if code is not None and code < 0 else ""
        return {"ok": False, "failure": "runtime_error", "message": f"worker died with exit code {code}{sig}"}

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


@cache
def _clean_stale_once(tmp: str) -> None:
    """Remove scratch folders that killed runs left in ``tmp`` (once per process)."""
    clean_stale_scratch(tmp)


#: a candidate whose checked call lasts this many times the best median so far is timed once
SCREEN = 3.0
#: in the search, repeats end early (runtime.timing.Stop): after LEAST repeats within SPREAD of
#: each other, or once a candidate's fastest repeat is SLOWER times the best median so far
LEAST, SPREAD, SLOWER = 3, 0.02, 1.5


class Measurer:
    """Builds and measures configs of one task. Inputs and reference outputs are computed
    once (numpy reference evaluator) and handed to the worker as .npy files; ``cold_bytes``:
    see the attribute. ``worker``: a
    measurement process shared with other measurers (a tuning run's tasks share one, so only
    the first pays for its start and warm-up); by default the measurer starts its own."""

    def __init__(self, task: Task, repeat: int = 5, min_repeat_ms: float = 20.0, timeout: float = 20.0,
                 build_workers: int | None = None, seed: int = 0, compile_timeout: float = 60.0,
                 adaptive: bool = True, worker: Worker | None = None, cold_bytes: int = 0):
        self.task = task
        #: calls take turns over copies of the arguments spanning this many bytes, so each finds
        #: its inputs out of the caches (0: every call on the same, cached, arguments); backends
        #: without ``cold_inputs`` ignore it
        self.cold_bytes = cold_bytes if backend(task.target.kind).cold_inputs else 0
        self.repeat = repeat
        self.adaptive = adaptive
        self.min_repeat_ms = min_repeat_ms
        self.timeout = timeout
        self.compile_timeout = compile_timeout
        self.build_workers = build_workers or os.cpu_count() or 1
        self.best: float | None = None      # the fastest median this measurer timed in full
        self.built: dict[str, _Built] = {}   # Task.build_key -> a candidate built without failure
        _clean_stale_once(tempfile.gettempdir())
        self.dir = scratch_dir("measure")     # hlotune_measure_<pid>_*: removed by a later run if killed
        self.own_worker = worker is None      # a shared worker (one per tuning run) is closed by its owner
        self.worker = worker or Worker()
        ins = task.random_inputs(seed)
        outs = evaluate(task.graph, ins)
        self.inputs = self._save("in", ins)
        self.expected = self._save("ref", outs)
        self.out_specs = [[list(t.shape), t.dtype.name] for t in task.graph.outputs]
        # the one tolerance policy, per output (its dtype and magnitude), as `hlotune run --check`
        tols = task.tolerances(ins, outs, [tolerance(o.dtype, scale_of(o)) for o in outs])
        self.rtol, self.atol = [r for r, _ in tols], [a for _, a in tols]

    def _save(self, prefix: str, arrays) -> list[str]:
        paths = []
        for k, a in enumerate(arrays):
            p = Path(self.dir.name) / f"{prefix}{k}.npy"
            np.save(p, np.require(np.asarray(a), requirements="C"))   # 0-d arrays stay 0-d
            paths.append(str(p))
        return paths

    def build(self, config: dict | None) -> _Built:
        """``_prepare``, timed."""
        t0 = time.perf_counter()
        b = self._prepare(config)
        b.build_s = time.perf_counter() - t0
        return b

    def _prepare(self, config: dict | None) -> _Built:
        """Schedule (``invalid`` on a broken rule), render and prepare one config for the worker
        (the target's backend: the cpu compiles a library here; OpenCL renders a program that
        the worker builds)."""
        t = self.task.target
        try:
            s = self.task.schedule(config)
            steps = [step_to_json(x) for x in s.steps]
            fn = s.lower()
        except (ScheduleError, ConfigError, LoweringError, DSLError, TargetError) as e:
            return _Built(config or {}, [], failure="invalid", message=str(e))
        try:
            fields = backend(t).prepare(fn, t, self.compile_timeout)
        except (ScheduleError, LoweringError, DSLError, TargetError, MemoryError) as e:
            return _Built(config or {}, steps, failure="invalid", message=str(e))
        except CompileError as e:
            return _Built(config or {}, steps, failure="compile_error", message=str(e))
        return _Built(config or {}, steps, fields=fields)

    def _stop(self) -> dict | None:
        """The search's early end of repeats (``adaptive``), as the worker's ``stop`` field."""
        if not self.adaptive:
            return None
        return {"least": min(LEAST, self.repeat), "spread": SPREAD,
                "slower_s": SLOWER * self.best if self.best else None}

    def run(self, b: _Built, screen: bool = True) -> MeasureResult:
        """Check and time a built candidate in the worker. With ``screen`` (the search; a
        confirmation times in full): one whose checked call already lasts ``SCREEN`` times this
        measurer's best median is timed by that call alone (its rank is settled; the time saved
        goes to other candidates), and with ``adaptive`` the repeats end early (``_stop``)."""
        t0 = time.time()
        if b.failure:
            return MeasureResult(b.config, b.steps, [], b.failure, b.message, t0, time.time(), b.build_s)
        kind = self.task.target.kind
        b_ = backend(kind)
        where = f"{type(b_).__module__}:{type(b_).__qualname__}"     # a backend registered at run time
        common = {"backend": kind, "backend_import": where, "inputs": self.inputs, "expected": self.expected, "out": self.out_specs,
                  "rtol": self.rtol, "atol": self.atol, "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms,
                  "cutoff_s": SCREEN * self.best if screen and self.best else None,
                  "stop": self._stop() if screen else None, "cold_bytes": self.cold_bytes}
        for req in b_.worker_plan(b.fields):
            if req["op"] == "build":
                rep = self.worker.request({"backend": kind, "backend_import": where, **req}, self.compile_timeout)
                if not rep["ok"]:
                    return MeasureResult(b.config, b.steps, [], "compile_error",
                                         f"{kind} build ({rep['failure']}): {rep.get('message', '')}", t0, time.time(),
                                         b.build_s)
                continue
            rep = self.worker.request({**common, **req}, self.timeout)
            if not rep["ok"]:
                break
        if rep["ok"]:
            if not rep.get("screened"):
                m = float(np.median(rep["times"]))
                self.best = m if self.best is None else min(self.best, m)
            return MeasureResult(b.config, b.steps, rep["times"], None, "", t0, time.time(), b.build_s)
        return MeasureResult(b.config, b.steps, [], rep["failure"], rep.get("message", ""), t0, time.time(), b.build_s)

    def measure(self, configs: list[dict | None], screen: bool = True) -> list[MeasureResult]:
        """Build in parallel, then run one at a time (timings are not disturbed by builds);
        a config built before is run again as it was built (no build time); ``screen``: see
        ``run``."""
        keys = [self.task.build_key(c) for c in configs]
        new = {k: c for k, c in zip(keys, configs) if k not in self.built}
        with ThreadPoolExecutor(self.build_workers) as ex:
            fresh = dict(zip(new, ex.map(self.build, new.values())))
        out, first = [], set()
        for k in keys:
            if k in fresh and k not in first:
                first.add(k)
                b = fresh[k]
                if not b.failure:
                    self.built[k] = b
            else:       # built before, or a repeat within this batch
                b = replace(self.built.get(k, fresh.get(k)), build_s=0.0)
            out.append(self.run(b, screen))
        return out

    def close(self):
        if self.own_worker:
            self.worker.close()
        self.dir.cleanup()
