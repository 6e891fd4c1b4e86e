"""The measurement worker: a separate process that loads candidate kernels, checks their
answer and times them, so a crash or hang costs one candidate, never the tuning run.

Protocol: one JSON request per stdin line, one JSON reply per stdout line.
Request: ``{"so", "inputs": [npy], "expected": [npy], "out": [[shape, dtype]], "rtol", "atol",
"repeat", "min_repeat_ms", "number"}``. Reply: ``{"ok": true, "times": [...], "number": n}`` or
``{"ok": false, "failure": "wrong_answer"|"runtime_error", "message": ...}``.
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
    a = got.astype(np.float64)
    b = want.astype(np.float64)
    same = (np.isnan(a) & np.isnan(b)) | (a == b)
    diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    lim = atol + rtol * np.abs(np.where(np.isfinite(b), b, 0.0))
    bad = diff > lim
    if not bad.any():
        return None
    k = int(np.argmax(np.where(bad, diff, -1)))
    return (f"{int(bad.sum())} of {want.size} elements differ beyond rtol={rtol:g} atol={atol:g}; "
            f"max abs err {float(diff.max()):.3g} at flat index {k} (got {a.flat[k]!r}, want {b.flat[k]!r})")


def handle(req: dict, cache: dict) -> dict:
    from hlotune.runtime.cpu import Library
    from hlotune.runtime.timing import measure
    lib = Library(__import__("pathlib").Path(req["so"]))
    ins = [_load(p, cache) for p in req["inputs"]]
    outs = [np.zeros(shape, dtype=np.dtype(dt) if dt != "bfloat16" else __import__("ml_dtypes").bfloat16)
            for shape, dt in req["out"]]
    ptrs = lib.pack(ins + outs)
    lib.entry(ptrs)
    for k, (o, p) in enumerate(zip(outs, req["expected"])):
        why = compare(o, _load(p, cache), req["rtol"], req["atol"])
        if why:
            return {"ok": False, "failure": "wrong_answer", "message": f"output {k}: {why}"}
    r = measure(lambda n: lib.bench(ptrs, n), req["repeat"], req["min_repeat_ms"], req.get("number"))
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
