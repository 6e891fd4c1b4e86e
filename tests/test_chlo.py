"""CHLO ops (``frontend/handlers/chlo_math.py``), decomposed as XLA's CHLO legalization does:
accuracy against scipy/numpy in ulps over wide ranges, extreme and special values, on the
compiled CPU code and the numpy reference; erfc keeps relative accuracy in its tail; mulhi and
next_after exact for any input (hypothesis).

Bounds are those of XLA's own decompositions (the same algorithms run by jax.jit measure the
same errors): e.g. lgamma's Lanczos sum is accurate to ~100 ulps away from its zeros, erfc in
f32 to ~50 ulps down to 1e-37 because exp(-x^2) amplifies the rounding of x^2.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp
from hlotune.dsl.errors import HloParseError
from hlotune.frontend.lower import lower_module
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune

R = np.random.default_rng(11)
F32, F64 = np.float32, np.float64


def ulps(got, want, dtype) -> np.ndarray:
    """Distance in units in the last place of ``dtype`` (0 for matching NaNs, inf for a NaN
    against a number), over the monotone integer image of the floats."""
    it = np.int32 if dtype == F32 else np.int64
    a = np.asarray(got, dtype).view(it).astype(np.int64)
    b = np.asarray(want, dtype).view(it).astype(np.int64)
    lo = np.iinfo(it).min
    a = np.where(a < 0, lo - a, a)
    b = np.where(b < 0, lo - b, b)
    d = np.abs(a - b).astype(np.float64)
    gn, wn = np.isnan(np.asarray(got, dtype)), np.isnan(np.asarray(want, dtype))
    return np.where(gn & wn, 0.0, np.where(gn ^ wn, np.inf, d))


def spread(lo: float, hi: float, n: int = 3000) -> np.ndarray:
    """Uniform points in [lo, hi] and log-spaced magnitudes down to 1e-30 on each side."""
    parts = [R.uniform(lo, hi, n)]
    if hi > 0:
        parts.append(np.geomspace(1e-30, hi, n))
    if lo < 0:
        parts.append(-np.geomspace(1e-30, -lo, n))
    return np.concatenate(parts)


#: op -> (scipy/numpy reference, inputs, {dtype: max ulps}[, floor]). With a ``floor``, the error
#: counts in ulps of max(|f(x)|, floor): lgamma and digamma have zeros between their poles on
#: the negative axis, where any absolute error is an unbounded number of ulps of the value
CASES = {
    "erfc": (sp.erfc, spread(-9.0, 9.0), {F32: 64, F64: 16}),
    "erf_inv": (sp.erfinv, spread(-1.0, 1.0), {F32: 64, F64: 256}),
    "lgamma": (sp.gammaln, np.concatenate([R.uniform(2.5, 30, 3000), np.geomspace(30, 1e30, 3000),
                                           np.geomspace(1e-30, 0.5, 3000),
                                           -R.uniform(0.05, 0.95, 3000) - R.integers(0, 30, 3000)]),
               {F32: 32, F64: 32}, 1.0),
    "digamma": (sp.digamma, np.concatenate([R.uniform(2.0, 50, 3000), np.geomspace(50, 1e6, 2000),
                                            np.geomspace(1e-30, 1.0, 2000),
                                            -R.uniform(0.1, 0.9, 3000) - R.integers(0, 30, 3000)]),
                {F32: 32, F64: 32}, 1.0),
    "sinh": (np.sinh, spread(-88.0, 88.0), {F32: 32, F64: 32}),
    "cosh": (np.cosh, spread(-88.0, 88.0), {F32: 32, F64: 32}),
    "asin": (np.arcsin, spread(-1.0, 1.0), {F32: 4, F64: 4}),
    "acos": (np.arccos, spread(-1.0, 1.0), {F32: 4, F64: 4}),
    "atan": (np.arctan, spread(-1e30, 1e30), {F32: 4, F64: 4}),
    "asinh": (np.arcsinh, spread(-1e30, 1e30), {F32: 4, F64: 4}),
    "acosh": (np.arccosh, 1 + np.geomspace(1e-7, 1e30, 4000), {F32: 8, F64: 8}),
    "atanh": (np.arctanh, spread(-0.999999, 0.999999), {F32: 4, F64: 4}),
    "bessel_i1e": (sp.i1e, spread(-1e4, 1e4), {F32: 16, F64: 16}),
}

#: op -> [(input, expected)] at special and extreme values (every dtype)
SPECIAL = {
    "erfc": [(0.0, 1.0), (-0.0, 1.0), (math.inf, 0.0), (-math.inf, 2.0), (math.nan, math.nan),
             (30.0, 0.0), (-30.0, 2.0)],
    "erf_inv": [(1.0, math.inf), (-1.0, -math.inf), (0.0, 0.0), (1.5, math.nan), (-2.0, math.nan),
                (math.nan, math.nan)],
    "lgamma": [(1.0, 0.0), (2.0, 0.0), (0.0, math.inf), (-1.0, math.inf), (-7.0, math.inf),
               (math.inf, math.inf), (-math.inf, math.inf), (math.nan, math.nan)],
    "digamma": [(0.0, math.nan), (-1.0, math.nan), (-12.0, math.nan), (math.nan, math.nan)],
    "sinh": [(0.0, 0.0), (math.inf, math.inf), (-math.inf, -math.inf), (math.nan, math.nan),
             (1000.0, math.inf), (-1000.0, -math.inf)],
    "cosh": [(0.0, 1.0), (math.inf, math.inf), (-math.inf, math.inf), (math.nan, math.nan),
             (1000.0, math.inf)],
    "asin": [(1.0, math.pi / 2), (-1.0, -math.pi / 2), (1.5, math.nan), (math.nan, math.nan)],
    "acos": [(1.0, 0.0), (-1.0, math.pi), (-1.5, math.nan), (math.nan, math.nan)],
    "atan": [(math.inf, math.pi / 2), (-math.inf, -math.pi / 2), (0.0, 0.0), (math.nan, math.nan)],
    "asinh": [(math.inf, math.inf), (-math.inf, -math.inf), (0.0, 0.0), (math.nan, math.nan)],
    "acosh": [(1.0, 0.0), (0.5, math.nan), (-1.0, math.nan), (math.inf, math.inf), (math.nan, math.nan)],
    "atanh": [(1.0, math.inf), (-1.0, -math.inf), (1.5, math.nan), (0.0, 0.0), (math.nan, math.nan)],
    "bessel_i1e": [(0.0, 0.0), (math.nan, math.nan)],
}


def chlo_module(ops: list[tuple[str, int]], ty: str) -> str:
    """@main taking one ``tensor<N x ty>`` per (op, N) and returning ``chlo.op`` of each."""
    args = ", ".join(f"%a{k}: tensor<{n}x{ty}>" for k, (_, n) in enumerate(ops))
    res = ", ".join(f"tensor<{n}x{ty}>" for _, n in ops)
    body = "\n".join(f"    %r{k} = chlo.{op} %a{k} : tensor<{n}x{ty}> -> tensor<{n}x{ty}>"
                     for k, (op, n) in enumerate(ops))
    rets = ", ".join(f"%r{k}" for k in range(len(ops)))
    return (f"func.func public @main({args}) -> ({res}) {{\n{body}\n    return {rets} : {res}\n}}\n")


def run_both(text: str, inputs: list[np.ndarray]):
    """(compiled cpu outputs, numpy reference outputs) of a StableHLO module."""
    m = hlotune.load_hlo(text)
    got = hlotune.compile(m, target="cpu")(*inputs)
    low = lower_module(parse_stablehlo(text))
    ref = evaluate(low.outputs, dict(zip(low.params, inputs)))
    return list(got) if isinstance(got, tuple) else [got], ref


@pytest.fixture(scope="module", params=[F32, F64], ids=["f32", "f64"])
def results(request):
    """Every op of CASES and SPECIAL in one module per dtype, compiled once."""
    dtype = request.param
    names = list(CASES)
    inputs = [CASES[n][1].astype(dtype) for n in names]
    inputs += [np.array([v for v, _ in SPECIAL[n]], dtype) for n in names]
    ops = [(n, len(x)) for n, x in zip(names + names, inputs)]
    got, ref = run_both(chlo_module(ops, "f32" if dtype == F32 else "f64"), inputs)
    k = len(names)
    return dtype, {n: (inputs[i], got[i], ref[i], inputs[k + i], got[k + i], ref[k + i])
                   for i, n in enumerate(names)}


@pytest.mark.parametrize("op", sorted(CASES))
def test_accuracy_in_ulps_against_scipy(results, op):
    dtype, res = results
    fn, _, bound, *floor = CASES[op]
    x, got, ref, *_ = res[op]
    want = fn(x.astype(np.float64))
    tiny = np.finfo(dtype).tiny
    normal = np.isfinite(want) & (np.abs(want) >= tiny)      # subnormal results: XLA:CPU flushes them
    for name, out in (("cpu", got), ("reference", ref)):
        if floor:
            scale = np.spacing(np.maximum(np.abs(want[normal]), floor[0]).astype(dtype))
            err = np.abs(out[normal].astype(np.float64) - want[normal]) / scale
        else:
            err = ulps(out[normal], want[normal].astype(dtype), dtype)
        worst = int(np.argmax(err))
        assert err[worst] <= bound[dtype], (
            f"{op} ({name}, {dtype.__name__}) is {err[worst]:g} ulps off at x={x[normal][worst]!r}: "
            f"{out[normal][worst]!r} vs {want[normal][worst]!r}")


@pytest.mark.parametrize("op", sorted(SPECIAL))
def test_special_values(results, op):
    dtype, res = results
    *_, x, got, ref = res[op]
    want = np.array([w for _, w in SPECIAL[op]], dtype)
    for out in (got, ref):
        np.testing.assert_allclose(out, want, rtol=4 * np.finfo(dtype).eps,
                                   atol=8 * np.finfo(dtype).eps, equal_nan=True, err_msg=f"{op} at {x}")


@pytest.mark.parametrize("dtype", [F32, F64])
def test_erfc_keeps_relative_accuracy_in_its_tail(dtype):
    """1 - erf(x) is 0 from x ~ 4 (f32) and ~6 (f64) on; the decomposition is not."""
    x = np.linspace(3.0, 9.0 if dtype == F32 else 26.0, 2001).astype(dtype)
    got, ref = run_both(chlo_module([("erfc", len(x))], "f32" if dtype == F32 else "f64"), [x])
    want = sp.erfc(x.astype(np.float64))
    ok = want >= np.finfo(dtype).tiny
    assert ok.sum() > 1000
    for out in (got[0], ref[0]):
        rel = np.abs(out[ok] / want[ok] - 1)
        assert rel.max() < (64 if dtype == F32 else 16) * np.finfo(dtype).eps, rel.max()


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_sixteen_bit_floats_compute_in_f32(dtype):
    """erfc, lgamma and sinh of f16/bf16 upcast to f32 and round once (materializeWithUpcast)."""
    ty = "f16" if dtype == np.float16 else "bf16"
    x = np.linspace(-3, 6, 200).astype(dtype)
    xl = np.linspace(0.1, 20, 200).astype(dtype)
    got, ref = run_both(chlo_module([("erfc", 200), ("lgamma", 200), ("sinh", 200)], ty), [x, xl, x])
    wants = [sp.erfc(x.astype(F64)), sp.gammaln(xl.astype(F64)), np.sinh(x.astype(F64))]
    eps = float(np.finfo(dtype).eps)
    for out in (got, ref):
        for o, w in zip(out, wants):
            assert o.dtype == dtype
            np.testing.assert_allclose(o.astype(F64), w.astype(dtype).astype(F64), rtol=eps, atol=eps)


def test_polygamma_and_zeta():
    x = R.uniform(1.1, 30, 500)
    q = R.uniform(0.2, 10, 500)
    n = R.integers(0, 5, 500).astype(F64)
    text = """func.func public @main(%x: tensor<500xf64>, %q: tensor<500xf64>, %n: tensor<500xf64>)
        -> (tensor<500xf64>, tensor<500xf64>) {
      %z = chlo.zeta %x, %q : tensor<500xf64>, tensor<500xf64> -> tensor<500xf64>
      %p = chlo.polygamma %n, %q : tensor<500xf64>, tensor<500xf64> -> tensor<500xf64>
      return %z, %p : tensor<500xf64>, tensor<500xf64>
    }"""
    got, ref = run_both(text, [x, q, n])
    for out in (got, ref):
        assert ulps(out[0], sp.zeta(x, q), F64).max() <= 8
        assert ulps(out[1], sp.polygamma(n.astype(int), q), F64).max() <= 8192
    special = """func.func public @main(%x: tensor<6xf32>, %q: tensor<6xf32>) -> tensor<6xf32> {
      %z = chlo.zeta %x, %q : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
      return %z : tensor<6xf32>
    }"""
    xs = np.array([1.0, 0.5, 2.0, 3.0, 2.5, 4.0], F32)
    qs = np.array([2.0, 2.0, -1.0, -1.0, -1.5, 0.0], F32)
    got, ref = run_both(special, [xs, qs])
    want = np.array([np.inf, np.nan, np.inf, np.nan, np.nan, np.inf], F32)
    for out in (got[0], ref[0]):
        np.testing.assert_array_equal(out, want)


def _binary_module(op: str, ty: str, n: int) -> str:
    t = f"tensor<{n}x{ty}>"
    return (f"func.func public @main(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %r = chlo.{op} %a, %b : {t}, {t} -> {t}\n  return %r : {t}\n}}\n")


_NEXT_AFTER = {ty: _binary_module("next_after", ty, 64) for ty in ("f32", "f64")}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["f32", "f64"]), st.data())
def test_next_after_is_numpy_nextafter(ty, data):
    dtype = F32 if ty == "f32" else F64
    width = 32 if ty == "f32" else 64
    floats = st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    pick = st.one_of(floats, st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0]))
    x = np.array(data.draw(st.lists(pick, min_size=64, max_size=64)), dtype)
    y = np.array(data.draw(st.lists(pick, min_size=64, max_size=64)), dtype)
    low = lower_module(parse_stablehlo(_NEXT_AFTER[ty]))
    (out,) = evaluate(low.outputs, dict(zip(low.params, [x, y])))
    with np.errstate(over="ignore"):
        want = np.nextafter(x, y)
    same = (out.view(f"u{width // 8}") == want.view(f"u{width // 8}")) | (np.isnan(out) & np.isnan(want))
    assert same.all(), (x[~same], y[~same], out[~same], want[~same])


def test_next_after_compiled_matches_numpy():
    x = np.array([0.0, -0.0, 1.0, 1.0, -1.0, np.inf, np.nan, 3.0, 1e-45, -1e-45, 3.4e38], F32)
    y = np.array([1.0, -1.0, 2.0, 0.0, -np.inf, 0.0, 1.0, 3.0, 0.0, 0.0, np.inf], F32)
    t = _binary_module("next_after", "f32", len(x))
    got, _ = run_both(t, [x, y])
    np.testing.assert_array_equal(got[0].view(np.uint32), np.nextafter(x, y).view(np.uint32))


_INT_TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
              "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64}


def _mulhi_want(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    return np.array([(int(x) * int(y)) >> bits for x, y in zip(a, b)], dtype=object).astype(
        np.int64 if a.dtype.kind == "i" else np.uint64).astype(a.dtype) if bits < 64 else \
        np.array([((int(x) * int(y)) >> 64) & ((1 << 64) - 1) for x, y in zip(a, b)],
                 dtype=object).astype(np.uint64).view(a.dtype)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(_INT_TYPES)), st.data())
def test_mulhi_is_the_high_half_of_the_product(ty, data):
    dtype = np.dtype(_INT_TYPES[ty])
    info = np.iinfo(dtype)
    ints = st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2]))
    a = np.array(data.draw(st.lists(ints, min_size=16, max_size=16)), dtype)
    b = np.array(data.draw(st.lists(ints, min_size=16, max_size=16)), dtype)
    low = lower_module(parse_stablehlo(_binary_module("mulhi", ty, 16)))
    (out,) = evaluate(low.outputs, dict(zip(low.params, [a, b])))
    np.testing.assert_array_equal(out, _mulhi_want(a, b))


def test_mulhi_compiled_for_every_width():
    ins = []
    for ty, d in _INT_TYPES.items():
        info = np.iinfo(d)
        a = np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 5 if info.min else 7], d)
        b = np.array([info.max, info.max, info.min, info.max, info.min if info.min else 3, 12345 % int(info.max)], d)
        ins.append((ty, a, b))
    for ty, a, b in ins:
        got, _ = run_both(_binary_module("mulhi", ty, len(a)), [a, b])
        np.testing.assert_array_equal(got[0], _mulhi_want(a, b), err_msg=ty)


def test_chlo_ops_check_their_operands():
    """The verifier refuses CHLO functions of the wrong element types, located at the op."""
    bad = """func.func public @main(%a: tensor<4xi32>) -> tensor<4xi32> {
      %r = chlo.erfc %a : tensor<4xi32> -> tensor<4xi32>
      return %r : tensor<4xi32>
    }"""
    with pytest.raises(HloParseError, match="chlo.erfc.*floating-point") as e:
        lower_module(parse_stablehlo(bad))
    assert e.value.line == 2
    with pytest.raises(HloParseError, match="chlo.mulhi.*integer"):
        lower_module(parse_stablehlo(_binary_module("mulhi", "f32", 4)))


def test_broadcasting_chlo_ops_constants_and_conj():
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>)
        -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = chlo.broadcast_compare %a, %b {comparison_direction = #chlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
      %2 = chlo.broadcast_power %s, %a : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %3 = "chlo.constant_like"(%a) {value = 1.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %4 = chlo.conj %a : tensor<2x3xf32> -> tensor<2x3xf32>
      %5 = chlo.broadcast_next_after %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    a, b, s = np.arange(6, dtype=F32).reshape(2, 3), F32([1, 5, 2]), F32(2)
    low = lower_module(parse_stablehlo(text))
    add, gt, pw, one5, conj, nxt = evaluate(low.outputs, [a, b, s])
    np.testing.assert_array_equal(add, a + b)
    np.testing.assert_array_equal(gt, a > b)
    np.testing.assert_allclose(pw, s ** a)
    np.testing.assert_array_equal(one5, np.full((2, 3), 1.5, F32))
    np.testing.assert_array_equal(conj, a)
    np.testing.assert_array_equal(nxt, np.nextafter(a, np.broadcast_to(b, a.shape)))
