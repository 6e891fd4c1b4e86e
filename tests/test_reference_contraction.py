"""The reference evaluator's contraction path (a float sum of two tensors' product as one
float64 einsum): on random dot shapes (batched, transposed, outer products, axes shorter
than their tensor) it agrees with the general chunked evaluator, and computes exactly what
only it can (float64 accumulation of a float32 dot); other sums never take it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hlotune.dsl import reference
from hlotune.dsl.errors import DSLError
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

from hlotune import dsl

SIZES = st.sampled_from([1, 2, 3, 5, 8, 13])


def _general(C, ins):
    """``C`` by the general evaluator alone."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reference, "_contraction", lambda op, values: None)
        return evaluate(C, ins)[0]


@settings(max_examples=40, deadline=None)
@given(b=st.sampled_from([0, 1, 3]), m=SIZES, n=SIZES, k=SIZES, ta=st.booleans(), tb=st.booleans(),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 99))
def test_contraction_matches_general_path(b, m, n, k, ta, tb, dtype, seed):
    bs = (b,) if b else ()
    A = dsl.placeholder(bs + ((k + 1, m) if ta else (m, k + 1)), dtype, name="A")   # r covers a prefix
    B = dsl.placeholder(bs + ((n, k) if tb else (k, n)), dtype, name="B")
    r = dsl.reduce_axis(k, name="r")

    def f(*ix):
        bb, i, j = ix[:-2], ix[-2], ix[-1]
        a = A[(*bb, r, i)] if ta else A[(*bb, i, r)]
        w = B[(*bb, j, r)] if tb else B[(*bb, r, j)]
        return dsl.sum(a * w, axis=r)
    C = dsl.compute(bs + (m, n), f, name="C")
    rng = np.random.default_rng(seed)
    ins = [rng.standard_normal(t.shape).astype(dtype) for t in (A, B)]
    fast = evaluate(C, ins)[0]
    general = _general(C, ins)
    assert fast.dtype == np.dtype(dtype) and fast.shape == general.shape
    np.testing.assert_allclose(fast, general, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
    a = ins[0][..., :k] if not ta else ins[0][..., :k, :]
    a = np.swapaxes(a, -1, -2) if ta else a
    w = np.swapaxes(ins[1], -1, -2) if tb else ins[1]
    # the oracle's summation order is ours, not the BLAS kernel's (which varies by CPU): an exact
    # sum (math.fsum) of the float64 products, rounded once
    prods = a.astype(np.float64)[..., :, :, None] * w.astype(np.float64)[..., None, :, :]
    exact = np.apply_along_axis(math.fsum, -2, prods)
    if dtype == "float32":     # float64 accumulation: within one float32 ulp of the exact sum
        np.testing.assert_array_max_ulp(fast, exact.astype(np.float32), maxulp=1)
    else:
        np.testing.assert_allclose(fast, exact, rtol=1e-13, atol=1e-13 * max(1.0, float(np.abs(exact).max(initial=0))))


def test_other_sums_take_the_general_path(monkeypatch):
    calls = []
    real = reference._contraction
    monkeypatch.setattr(reference, "_contraction", lambda op, v: calls.append(r := real(op, v)) or r)
    A = dsl.placeholder((4, 6), "float32", name="A")
    r = dsl.reduce_axis(6, name="r")
    sq = dsl.compute((4,), lambda i: dsl.sum(A[i, r] * A[i, r], axis=r), name="sq")       # one tensor twice: fine
    shifted = dsl.compute((3,), lambda i: dsl.sum(A[i + 1, r] * A[i, r], axis=r), name="sh")   # not plain axes
    mx = dsl.compute((4,), lambda i: dsl.max(A[i, r] * A[i, r], axis=r), name="mx")      # not a sum
    a = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
    (s,) = evaluate(sq, [a])
    (h,) = evaluate(shifted, [a])
    (x,) = evaluate(mx, [a])
    np.testing.assert_allclose(s, (a * a).sum(1), rtol=1e-6)
    np.testing.assert_allclose(h, (a[1:] * a[:3]).sum(1), rtol=1e-6)
    np.testing.assert_allclose(x, (a * a).max(1), rtol=1e-6)
    assert calls[0] is not None and calls[1] is None and calls[2] is None


def test_out_of_range_axis_still_reported():
    A = dsl.placeholder((4, 3), "float32", name="A")
    B = dsl.placeholder((5, 4), "float32", name="B")
    r = dsl.reduce_axis(5, name="r")     # longer than A's second axis
    C = dsl.compute((4, 4), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="C")
    with pytest.raises(DSLError, match="leaves"):
        evaluate(C, [np.ones((4, 3), np.float32), np.ones((5, 4), np.float32)])
