"""The measurement worker: a separate process that loads candidate kernels, checks their
answer and times them, so a crash or hang costs one candidate, never the tuning run.

Protocol: one JSON request per stdin line, one JSON reply per stdout line.
Request: ``{"so", "inputs": [npy], "expected": [npy], "out": [[shape, dtype]], "rtol", "atol",
"repeat", "min_repeat_ms", "number"}``. Reply: ``{"ok": true, "times": [...], "number": n}`` or
``{"ok": false, "failure": "wrong_answer"|"runtime_error", "message": ...}``.

OpenCL candidates take two requests, so that building and running have their own time limits:
``{"kind": "opencl_build", "program": spec}`` (``spec``: ``runtime.opencl.launch_spec``, the
rendered source with its device and launches) builds the program on its device (reply
``{"ok": true}`` or ``failure`` ``compile_error``); then ``{"kind": "opencl", ...}`` with the
fields of a CPU request but no ``so`` runs the program built last, checks it and times it with
profiling events.
"""

from __future__ import annotations

import json
import sys
import traceback

import numpy as np


def _load(path: str, cache: dict) -> np.ndarray:
    if path not in cache:
        cache[path] = np.load(path)
    return cache[path]


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``want`` (NaNs and infinities must match too), else why not."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if want.dtype.kind in "iub":
        bad = np.count_nonzero(got != want)
        return None if bad == 0 else f"{bad} of {want.size} integer elements differ"
    from hlotune.dsl.reference import abs_error, tolerance_limit
    diff = abs_error(got, want)
    bad = diff > tolerance_limit(want, rtol, atol)
    if not bad.any():
        return None
    k = int(np.argmax(np.where(bad, diff, -1)))
    return (f"{int(bad.sum())} of {want.size} elements differ beyond rtol={rtol:g} atol={atol:g}; "
            f"max abs err {float(diff.max()):.3g} at flat index {k} "
            f"(got {float(got.flat[k])!r}, want {float(want.flat[k])!r})")


def _outputs(specs) -> list[np.ndarray]:
    return [np.zeros(shape, dtype=np.dtype(dt) if dt != "bfloat16" else __import__("ml_dtypes").bfloat16)
            for shape, dt in specs]


def _check(outs, req, cache) -> dict | None:
    for k, (o, p) in enumerate(zip(outs, req["expected"])):
        why = compare(o, _load(p, cache), req["rtol"], req["atol"])
        if why:
            return {"ok": False, "failure": "wrong_answer", "message": f"output {k}: {why}"}
    return None


#: the first candidate a worker times runs this long untimed first: measured on the CPU OpenCL
#: device, a fresh process's first ~150 ms ran the same kernel up to 1.9x slower
FIRST_WARMUP_MS = 250.0


def _warmup_ms(cache: dict) -> float:
    first = not cache.get("warm")
    cache["warm"] = True
    return FIRST_WARMUP_MS if first else 0.0


def handle_opencl(req: dict, cache: dict) -> dict:
    from hlotune.dsl.errors import CompileError
    from hlotune.runtime.opencl import SpecRunner
    if req["kind"] == "opencl_build":
        cache.pop("opencl", None)
        try:
            cache["opencl"] = SpecRunner(req["program"])
        except CompileError as e:
            return {"ok": False, "failure": "compile_error", "message": str(e)}
        return {"ok": True}
    runner = cache.get("opencl")
    if runner is None:
        return {"ok": False, "failure": "runtime_error", "message": "no OpenCL program was built"}
    ins = [_load(p, cache) for p in req["inputs"]]
    outs = _outputs(req["out"])
    runner.run(ins, outs)
    bad = _check(outs, req, cache)
    if bad:
        return bad
    r = runner.time(req["repeat"], req["min_repeat_ms"], req.get("number"), warmup_ms=_warmup_ms(cache))
    return {"ok": True, "times": [max(t, 1e-12) for t in r.times], "number": r.number}


def handle(req: dict, cache: dict) -> dict:
    if req.get("kind", "cpu").startswith("opencl"):
        return handle_opencl(req, cache)
    from hlotune.runtime.cpu import Library
    from hlotune.runtime.timing import measure
    lib = Library(__import__("pathlib").Path(req["so"]))
    ins = [_load(p, cache) for p in req["inputs"]]
    outs = _outputs(req["out"])
    ptrs = lib.pack(ins + outs)
    lib.entry(ptrs)
    bad = _check(outs, req, cache)
    if bad:
        return bad
    r = measure(lambda n: lib.bench(ptrs, n), req["repeat"], req["min_repeat_ms"], req.get("number"),
                warmup_ms=_warmup_ms(cache))
    return {"ok": True, "times": list(r.times), "number": r.number}


def main() -> None:
    cache: dict = {}
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line), cache)
        except Exception as e:  # noqa: BLE001  (any failure of the candidate is reported, not raised)
            reply = {"ok": False, "failure": "runtime_error",
                     "message": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
