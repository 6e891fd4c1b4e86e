"""The measurement worker: a separate process that loads candidate kernels, checks their
answer and times them, so a crash or hang costs one candidate, never the tuning run.

Protocol: one JSON request per stdin line, one JSON reply per stdout line. Every request names
the target's ``backend`` (runtime/backends) and an ``op``:
- ``build`` (backends that build in the worker, e.g. OpenCL programs, so that a crashing driver
  costs one candidate): the backend's fields; reply ``{"ok": true}`` or ``failure``
  ``compile_error``.
- ``run``: the backend's fields (e.g. the cpu's ``so``) and ``"inputs": [npy], "expected":
  [npy], "out": [[shape, dtype]], "rtol", "atol", "repeat", "min_repeat_ms", "number"``, and
  optionally ``"cutoff_s"`` (a checked call this slow is its only timing), ``"stop"`` (the
  fields of a ``runtime.timing.Stop``: repeats may end early) and ``"cold_bytes"`` (calls take
  turns over copies of the arguments spanning that many bytes, for backends with
  ``cold_inputs``: each finds its inputs out of the caches); the
  backend's runner computes the outputs, they are checked, then timed. Reply ``{"ok": true,
  "times": [...], "number": n}`` or ``{"ok": false, "failure": "wrong_answer"|"runtime_error",
  "message": ...}``.

An exception that marks the process itself unusable (``restart_worker``: a CUDA context that
could not be rebuilt after a fault) is replied to, then the worker exits; the parent starts a
fresh one for the next candidate.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import numpy as np
from hlotune.autotune.records import MIN_TIME
from hlotune.runtime.timing import Stop


def _load(path: str, cache: dict) -> np.ndarray:
    if path not in cache:
        cache[path] = np.load(path)
    return cache[path]


def _keep_arrays(cache: dict, paths) -> None:
    """Forget the loaded arrays other than ``paths`` (a worker shared by a run's tasks holds one
    task's inputs and references at a time)."""
    for k in [k for k in cache if k.endswith(".npy") and k not in paths]:
        del cache[k]


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``want`` under the tolerance policy (dsl/tolerance.py), else why
    not."""
    from hlotune.dsl.tolerance import check
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    c = check(got, want, rtol, atol)
    return None if c.ok else c.describe()


def _outputs(specs) -> list[np.ndarray]:
    return [np.zeros(shape, dtype=np.dtype(dt) if dt != "bfloat16" else __import__("ml_dtypes").bfloat16)
            for shape, dt in specs]


def _check(outs, req, cache) -> dict | None:
    for k, (o, p) in enumerate(zip(outs, req["expected"])):
        why = compare(o, _load(p, cache), req["rtol"][k], req["atol"][k])
        if why:
            return {"ok": False, "failure": "wrong_answer", "message": f"output {k}: {why}"}
    return None


#: at most this many argument sets rotate through a cold measurement
MAX_COLD_SETS = 64


def _cold_sets(ins, outs, req: dict, cache: dict) -> list:
    """Copies of the arguments (``(ins, outs)`` pairs) that, with the originals, span at least
    ``cold_bytes``: calls that take them in turn find their inputs in memory, not in the caches
    (as a kernel of a program whose data outgrow the caches finds its weights). Kept while the
    task's inputs are (its candidates share them)."""
    key = f"cold:{int(req['cold_bytes'])}:" + "|".join(req["inputs"])
    if key not in cache:
        for k in [k for k in cache if k.startswith("cold:")]:
            del cache[k]
        size = max(sum(a.nbytes for a in ins) + sum(o.nbytes for o in outs), 1)
        n = min(-(-int(req["cold_bytes"]) // size) - 1, MAX_COLD_SETS - 1)
        cache[key] = [([a.copy() for a in ins], [np.zeros_like(o) for o in outs]) for _ in range(max(n, 0))]
    return cache[key]


#: the first candidate a worker times runs this long untimed first: measured on the CPU OpenCL
#: device, a fresh process's first ~150 ms ran the same kernel up to 1.9x slower
FIRST_WARMUP_MS = 250.0


def _warmup_ms(cache: dict) -> float:
    first = not cache.get("warm")
    cache["warm"] = True
    return FIRST_WARMUP_MS if first else 0.0


def _backend(req: dict):
    """The request's backend: a registered kind, else the ``module:Class`` the parent named (a
    backend registered at run time in the parent, as a plug-in or a test does)."""
    from hlotune.dsl.errors import TargetError
    from hlotune.runtime.backends import backend, register
    try:
        return backend(req["backend"])
    except TargetError:
        if not req.get("backend_import"):
            raise
    from importlib import import_module
    mod, cls = req["backend_import"].split(":")
    return register(getattr(import_module(mod), cls)())


def handle(req: dict, cache: dict) -> dict:
    """One request: build (backends that build here) or run, check and time a candidate."""
    b = _backend(req)
    if req["op"] == "build":
        return b.worker_build(req, cache)
    runner = b.runner(req, cache)
    _keep_arrays(cache, {*req["inputs"], *req["expected"]})
    ins = [_load(p, cache) for p in req["inputs"]]
    outs = _outputs(req["out"])
    t0 = time.perf_counter()
    runner.run(ins, outs)
    first = time.perf_counter() - t0
    bad = _check(outs, req, cache)
    if bad:
        return bad
    if req.get("cutoff_s") and first > req["cutoff_s"]:     # slow already: this call ranks it
        return {"ok": True, "times": [first], "number": 1, "screened": True}
    stop = Stop(**req["stop"]) if req.get("stop") else None
    cold = _cold_sets(ins, outs, req, cache) if req.get("cold_bytes") else None
    r = runner.time(req["repeat"], req["min_repeat_ms"], req.get("number"), _warmup_ms(cache), stop=stop,
                    **({"cold": cold} if cold else {}))
    return {"ok": True, "times": [max(t, MIN_TIME) for t in r.times], "number": r.number}


def main() -> None:
    cache: dict = {}
    for line in sys.stdin:
        stop = False
        try:
            reply = handle(json.loads(line), cache)
        except Exception as e:  # noqa: BLE001  (any failure of the candidate is reported, not raised)
            reply = {"ok": False, "failure": "runtime_error",
                     "message": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
            stop = getattr(e, "restart_worker", False)   # the device is unusable in this process
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if stop:
            return


if __name__ == "__main__":
    main()
