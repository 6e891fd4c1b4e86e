"""The one tolerance policy: when an answer counts as equal to its reference, per output and per
dtype. The tuner's answer gate, ``hlotune run --check`` and the tests all call ``check``, so a
config that passes the gate passes ``--check`` on the same answer.

An element passes when ``|got - want| <= atol + rtol * |want|`` (matching NaNs and equal
infinities pass; see ``reference.abs_error``). ``atol`` scales with the output's largest finite
magnitude ``scale``: sums of many terms cancel to values near zero whose absolute error follows
the terms, not the result. Integers, bools and other exact types compare exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reference import abs_error, tolerance_limit

#: (rtol, atol before scaling) by dtype name; other floating types: 4 ulps of 1.0 each
TOLERANCES = {"float16": (2e-2, 2e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5),
              "float64": (1e-9, 1e-12), "complex64": (1e-4, 1e-5), "complex128": (1e-9, 1e-12)}


def _np_dtype(dtype) -> np.dtype:
    np_ = getattr(dtype, "np", None)
    return np.dtype(np_ if np_ is not None else dtype)


def _is_float(d: np.dtype) -> bool:
    if d.kind in "fc":
        return True
    try:
        import ml_dtypes
        ml_dtypes.finfo(d)
        return True
    except (TypeError, ValueError, ImportError):
        return False


def tolerance(dtype, scale: float = 1.0) -> tuple[float, float]:
    """``(rtol, atol)`` for outputs of ``dtype`` (a numpy dtype, a DType or a name) whose largest
    finite magnitude is ``scale`` (values below 1 count as 1)."""
    d = _np_dtype(dtype)
    if not _is_float(d):
        return 0.0, 0.0
    s = max(1.0, float(scale))
    if d.name in TOLERANCES:
        rt, at = TOLERANCES[d.name]
    else:
        import ml_dtypes
        rt = at = 4 * float(ml_dtypes.finfo(d).eps)
    return rt, at * s


def scale_of(want) -> float:
    """The largest finite magnitude of ``want`` (1 when it has none)."""
    w = np.asarray(want)
    if not _is_float(w.dtype) or w.size == 0:
        return 1.0
    a = np.abs(w.astype(np.complex128 if w.dtype.kind == "c" else np.float64))
    fin = a[np.isfinite(a)]
    return float(fin.max()) if fin.size else 1.0


@dataclass(frozen=True)
class Comparison:
    """How one output compares with its reference: ``ok``; the largest absolute error; the
    largest relative error over elements whose reference is not ~0 (None when every reference
    element is ~0: a relative error means nothing there); the tolerances used; the number of
    elements beyond them."""

    ok: bool
    max_abs: float
    max_rel: float | None
    rtol: float
    atol: float
    bad: int
    size: int

    def describe(self) -> str:
        rel = "-" if self.max_rel is None else f"{self.max_rel:.3g}"
        return (f"max abs err {self.max_abs:.3g}, max rel err {rel} (rtol {self.rtol:g}, atol {self.atol:g})"
                + ("" if self.ok else f"; {self.bad} of {self.size} elements beyond"))


def check(got, want, rtol: float | None = None, atol: float | None = None) -> Comparison:
    """Compare ``got`` with ``want`` under the policy (``rtol``/``atol`` override it)."""
    got, want = np.asarray(got), np.asarray(want)
    rt, at = tolerance(want.dtype, scale_of(want))
    rt = rt if rtol is None else rtol
    at = at if atol is None else atol
    if got.shape != want.shape:
        return Comparison(False, float("inf"), None, rt, at, want.size, want.size)
    if not _is_float(want.dtype):
        bad = int(np.count_nonzero(got != want))
        diff = abs_error(got.astype(np.float64), want.astype(np.float64)) if want.size else np.zeros(0)
        return Comparison(bad == 0, float(diff.max(initial=0.0)), None, 0.0, 0.0, bad, want.size)
    diff = abs_error(got, want)
    bad = int(np.count_nonzero(diff > tolerance_limit(want, rt, at)))
    mag = np.abs(want.astype(np.complex128 if want.dtype.kind == "c" else np.float64))
    sig = np.isfinite(mag) & (mag > at)
    max_rel = float((diff[sig] / mag[sig]).max()) if sig.any() else None
    return Comparison(bad == 0, float(diff.max(initial=0.0)), max_rel, rt, at, bad, want.size)


__all__ = ["TOLERANCES", "Comparison", "check", "scale_of", "tolerance"]
