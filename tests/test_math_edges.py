"""Every elementwise function against XLA:CPU at its edges: signed zeros, subnormals, +-inf, NaN,
the ends of the finite range and the points where a function saturates (tanh, logistic, erf to
+-1 or 0/1, exp to 0 or inf). Special results (NaN, infinities, zeros with their sign) must be
XLA's exactly; finite ones within a few ulps of XLA's, or within one ulp of the correctly rounded
value where XLA is further off (expm1 near overflow). Subnormals: XLA:CPU runs with
denormals-are-zero and flush-to-zero, hlotune with IEEE gradual underflow (docs/hlo_ops.md), so
a subnormal input or result counts as the zero of its sign on both sides. The functions run
vectorized, as the CPU kernels of real modules do (the vector math paths)."""

from __future__ import annotations

import numpy as np
import pytest

import hlotune
from hlotune import dsl

jax = pytest.importorskip("jax", reason="XLA (jax) is the oracle of these tests")
jnp = pytest.importorskip("jax.numpy")

TINY = np.float32(np.finfo(np.float32).tiny)
SUB = np.float32(1e-40)      # a subnormal
EDGES = np.float32([0.0, -0.0, TINY, -TINY, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0,
                    8.9, -8.9, 9.02, -9.02, 15.0, -15.0, 20.0, -20.0, 87.3, -87.3, 88.72, 88.73, -88.73,
                    -103.0, -104.0, 1e10, -1e10, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan])

#: HLO opcode -> the JAX function XLA lowers to it, and the ulps allowed on finite results
FUNCS = {
    "exponential": (jnp.exp, 2), "exponential-minus-one": (jnp.expm1, 2), "log": (jnp.log, 2),
    "log-plus-one": (jnp.log1p, 2), "sqrt": (jnp.sqrt, 1), "rsqrt": (jax.lax.rsqrt, 2), "cbrt": (jnp.cbrt, 2),
    "tanh": (jnp.tanh, 2), "logistic": (jax.nn.sigmoid, 3), "erf": (jax.lax.erf, 3), "sine": (jnp.sin, 2),
    "cosine": (jnp.cos, 2), "tan": (jnp.tan, 4), "floor": (jnp.floor, 0), "ceil": (jnp.ceil, 0),
    "round-nearest-even": (jnp.round, 0), "abs": (jnp.abs, 0), "sign": (jnp.sign, 0), "negate": (jnp.negative, 0),
}


def _module(op: str, n: int) -> str:
    return f"HloModule m\nENTRY e {{\n  p = f32[{n}] parameter(0)\n  ROOT r = f32[{n}] {op}(p)\n}}\n"


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps (on the integer line of the bit patterns)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, np.int64(-(2**31)) - ia, ia)
    ib = np.where(ib < 0, np.int64(-(2**31)) - ib, ib)
    return np.abs(ia - ib)


def _flush(a: np.ndarray) -> np.ndarray:
    """Subnormals as the zero of their sign (XLA:CPU's flush-to-zero)."""
    return np.where(np.abs(a) < TINY, np.copysign(np.float32(0), a), a).astype(np.float32)


def _correct(fn_name: str, x: np.ndarray) -> np.ndarray:
    """The correctly rounded float32 result (numpy's float64 function, rounded once)."""
    import math
    f64 = {"exponential-minus-one": np.expm1, "exponential": np.exp, "log": np.log, "log-plus-one": np.log1p,
           "tanh": np.tanh, "sine": np.sin, "cosine": np.cos, "tan": np.tan, "cbrt": np.cbrt, "sqrt": np.sqrt,
           "rsqrt": lambda v: 1 / np.sqrt(v), "erf": np.vectorize(math.erf),
           "logistic": lambda v: 1 / (1 + np.exp(-v))}.get(fn_name)
    with np.errstate(all="ignore"):
        return f64(x.astype(np.float64)).astype(np.float32) if f64 else np.full(x.shape, np.nan, np.float32)


@pytest.mark.parametrize("op", sorted(FUNCS))
def test_elementwise_edges_match_xla(op):
    fn, ulps = FUNCS[op]
    # the edges, and the edges again inside a vector-sized block (both vector and tail paths)
    x = np.concatenate([EDGES, np.tile(EDGES, 2)]).astype(np.float32)
    with np.errstate(all="ignore"):
        got = _flush(hlotune.compile(hlotune.load_hlo(_module(op, x.size)))(x))
        want = _flush(np.asarray(jax.jit(fn)(x)))
    special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0)
    bad = [(float(a), float(g), float(w)) for a, g, w, s in zip(x, got, want, special)
           if s and not (np.array_equal(g, w, equal_nan=True) and (np.isnan(w) or np.signbit(g) == np.signbit(w)))]
    assert not bad, f"{op}: special values differ from XLA's (input, hlotune, XLA): {bad[:6]}"
    fin = ~special
    far = (_ulps(got[fin], want[fin]) > ulps) & (_ulps(got[fin], _correct(op, x[fin])) > 1)
    assert not far.any(), (f"{op}: beyond {ulps} ulps of XLA's and 1 of the correctly rounded value: "
                           f"{list(zip(x[fin][far][:6], got[fin][far][:6], want[fin][far][:6]))}")


def test_subnormal_inputs_are_ieee_not_flushed():
    """hlotune keeps IEEE gradual underflow where XLA:CPU flushes (documented difference): a
    subnormal input is a number, not zero."""
    x = np.float32([SUB, -SUB])
    got = hlotune.compile(hlotune.load_hlo(_module("sqrt", 2)))(x)
    assert got[0] > 0 and np.isnan(got[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_and_min_order_signed_zeros_as_xla(dtype):
    """maximum(+0, -0) = +0 and minimum(+0, -0) = -0 in either order, as XLA:CPU's (jax 0.10.2:
    IEEE 754-2019's maximum/minimum); NaN still propagates."""
    z = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, -0.0], dtype)
    w = np.array([-0.0, 0.0, 0.0, -0.0, -0.0, np.nan, -1.0], dtype)
    A, B = dsl.placeholder((7,), dtype, name="A"), dsl.placeholder((7,), dtype, name="B")
    hi = dsl.compute((7,), lambda i: dsl.max(A[i], B[i]), name="hi")
    lo = dsl.compute((7,), lambda i: dsl.min(A[i], B[i]), name="lo")
    for T, want in ((hi, [0.0, 0.0, 0.0, -0.0, np.nan, np.nan, -0.0]), (lo, [-0.0, -0.0, 0.0, -0.0, np.nan, np.nan, -1.0])):
        got = hlotune.build(hlotune.Schedule(T), target="cpu")(z, w)
        want = np.array(want, dtype)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.array_equal(got[ok], want[ok]) and np.array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
