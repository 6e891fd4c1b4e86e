"""bfloat16 and float16 arithmetic computed in f32 and rounded once per op (XLA's semantics), with
the roundings that cannot change a value left out of the generated C: a max, min, negation or
absolute value of values the type holds (they pick an operand), and an op's own rounding right
before the store's conversion (rounding to nearest even twice gives what rounding once does).
Answers are compared bit for bit with numpy over ml_dtypes (each op in f32, rounded), NaNs,
infinities and signed zeros included; ``max(x, -inf)`` is ``x``."""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

NP = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 1e-7, 3.0e38]


def _max(a, b):
    """XLA's max: NaN wins, max(-0, +0) is +0."""
    return np.where((a == 0) & (b == 0), a + b, np.maximum(a, b))


def _min(a, b):
    """XLA's min: NaN wins, min(-0, +0) is -0."""
    return np.where((a == 0) & (b == 0), -(-a - b), np.minimum(a, b))


#: name: (DSL op on expressions, numpy op on float32 arrays)
OPS = {"max": (dsl.maximum, _max), "min": (dsl.minimum, _min),
       "add": (lambda a, b: a + b, np.add), "mul": (lambda a, b: a * b, np.multiply),
       "div": (lambda a, b: a / b, np.divide), "sub": (lambda a, b: a - b, np.subtract)}


def _values(rng, n, d):
    x = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)).astype(np.float32)
    special = rng.random(n) < 0.2
    x[special] = rng.choice(SPECIAL, int(special.sum()))
    x[: len(SPECIAL)] = SPECIAL
    return x.astype(NP[d])


def _same_bits(got, want):
    """Equal values bit for bit, any NaN matching any NaN (payloads are XLA's business)."""
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(got.astype(np.float32))
    assert (nan == np.isnan(want.astype(np.float32))).all()
    g, w = got.view(np.uint16), want.view(np.uint16)
    bad = ~nan & (g != w)
    assert not bad.any(), f"{got[bad][:5]} != {want[bad][:5]}"


@settings(max_examples=25, deadline=None)
@given(d=st.sampled_from(list(NP)), outer=st.sampled_from(list(OPS)), inner=st.sampled_from(list(OPS)),
       pick=st.sampled_from(["max", "min", "neg", "abs"]), seed=st.integers(0, 2 ** 16))
def test_chains_of_narrow_ops_match_numpy_bit_for_bit(d, outer, inner, pick, seed):
    """``outer(pick(inner(A, B)), C)``: each op in f32 and rounded to ``d`` (the picks exact)."""
    n = 257
    rng = np.random.default_rng(seed)
    a, b, c = (_values(rng, n, d) for _ in range(3))
    A, B, C = (dsl.placeholder((n,), d, name=x) for x in "ABC")
    picks = {"max": lambda x: dsl.maximum(x, C[0]), "min": lambda x: dsl.minimum(x, C[0]), "neg": lambda x: -x,
             "abs": dsl.abs}
    c0 = c[:1].astype(np.float32)
    np_picks = {"max": lambda x: _max(x, c0), "min": lambda x: _min(x, c0), "neg": np.negative,
                "abs": np.abs}
    out = dsl.compute((n,), lambda i: OPS[outer][0](picks[pick](OPS[inner][0](A[i], B[i])), C[i]), name="out")
    f = hlotune.build(hlotune.Schedule(out))
    t = NP[d]
    with np.errstate(all="ignore"):
        step = OPS[inner][1](a.astype(np.float32), b.astype(np.float32)).astype(t)
        step = np_picks[pick](step.astype(np.float32)).astype(t)
        want = OPS[outer][1](step.astype(np.float32), c.astype(np.float32)).astype(t)
    _same_bits(f(a, b, c), want)


def test_picks_and_stored_results_are_not_rounded_twice():
    """``out = max(A, B) + C`` in bfloat16: the max of two stored values is not rounded, the sum
    is rounded once (by the store's conversion), and the answer is numpy's."""
    n = 64
    A, B, C = (dsl.placeholder((n,), "bfloat16", name=x) for x in "ABC")
    out = dsl.compute((n,), lambda i: dsl.maximum(A[i], B[i]) + C[i], name="out")
    f = hlotune.build(hlotune.Schedule(out))
    line = next(x for x in f.source.splitlines() if re.search(r"v_out\[.*\] = ", x))
    assert "hl_round_bf16" not in line and "hl_max_f32" in line, line
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(ml_dtypes.bfloat16) for _ in range(3))
    want = (_max(a.astype(np.float32), b.astype(np.float32)) + c.astype(np.float32)).astype(ml_dtypes.bfloat16)
    _same_bits(f(a, b, c), want)


def test_a_constant_the_type_cannot_hold_is_still_rounded():
    """``max(A, 0.1)`` in bfloat16: 0.1 is no bfloat16 value, so the max keeps its rounding."""
    A = dsl.placeholder((16,), "bfloat16", name="A")
    out = dsl.compute((16,), lambda i: dsl.maximum(A[i], dsl.const(0.1, "bfloat16")) * A[i], name="out")
    f = hlotune.build(hlotune.Schedule(out))
    a = np.linspace(-1, 1, 16).astype(ml_dtypes.bfloat16)
    m = _max(a.astype(np.float32), np.float32(0.1)).astype(ml_dtypes.bfloat16)
    _same_bits(f(a), (m.astype(np.float32) * a.astype(np.float32)).astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("d", ["float32", "bfloat16", "float16", "float64"])
def test_max_with_minus_infinity_renders_as_the_value_itself(d):
    """``max(x, -inf)`` and ``min(x, inf)`` print as ``x`` (a loop-invariant max of a softmax's
    row maximum with -inf kept gcc from vectorizing the loop around it); NaN stays NaN, -0.0
    stays -0.0."""
    x = dsl.placeholder((8,), d, name="x")
    out = dsl.compute((8,), lambda i: dsl.maximum(dsl.minimum(x[i], math.inf), -math.inf) * 2, name="out")
    f = hlotune.build(hlotune.Schedule(out))
    stores = [line for line in f.source.splitlines() if re.search(r"v_out\[.*\] = ", line)]
    assert stores and not any("INFINITY" in line for line in stores), stores
    v = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, 1.5, -2.0, 3.0]).astype(NP.get(d, d))
    got = f(v)
    assert np.isnan(got[0]) and np.signbit(got[1]) and not np.signbit(got[2])
    np.testing.assert_array_equal(got[1:], v[1:] * 2)
