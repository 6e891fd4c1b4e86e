"""Floats under 16 bits (float8 family, float6, float4): conversions bit-exact with ml_dtypes in
the generated C, exhaustively over every code of each type and over every float16 and bfloat16
value (and every rounding boundary of the type in float32 and float64); arithmetic computed in
f32 and rounded once, as the reference does, over every pair of codes."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from hlotune.dsl import dtypes as dt
from hlotune.dsl.reference import evaluate
from hlotune.runtime.codegen.typehelpers import float_table
from hlotune.runtime.module import CompiledGraph
from hypothesis import given, settings
from hypothesis import strategies as st

from hlotune import dsl

TYPES = dt.SMALL_FLOATS
N32, N64 = 1 << 18, 1 << 12      # inputs of the conversion kernels (padded with zeros)
IDS = [d.name for d in TYPES]


def codes(d) -> np.ndarray:
    """Every code of ``d`` (its low ``bits`` bits), as an array of ``d``."""
    return np.arange(1 << d.bits, dtype=np.uint8).view(d.np)


def bits_of(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_decode_table_is_ml_dtypes_bit_for_bit(d):
    """Every code decodes to ml_dtypes' float32 (NaNs with their sign and quiet bit)."""
    want = bits_of(codes(d).astype(np.float32))
    assert float_table(d.format) == want.tolist()


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_format_facts_match_ml_dtypes(d):
    fmt, fi = d.format, ml_dtypes.finfo(d.np)
    assert fmt.bits == d.bits
    assert fmt.max == float(fi.max)
    assert fmt.value(0 if fmt.nan == "e8m0" else 1) == float(fi.smallest_subnormal)   # e8m0: no zero
    assert 2.0 ** fmt.emin == float(fi.smallest_normal)


def boundaries(d, ftype) -> np.ndarray:
    """Every value of ``d``, the midpoints between neighbours (ties), one ulp of ``ftype`` either
    side of each, and the ends: where round-to-nearest-even decides."""
    v = codes(d).astype(np.float64)
    fin = np.unique(np.abs(v[np.isfinite(v)]))
    mids = (fin[:-1] + fin[1:]) / 2
    top = fin[-1] + (fin[-1] - fin[-2]) / 2                  # half an ulp past the largest value
    with np.errstate(over="ignore"):
        pts = np.concatenate([fin, mids, [top, 2 * top, fin[0] / 2, fin[0] / 4, 1e-45, 1e-300, 3e38]]).astype(ftype)
    pts = np.concatenate([pts, np.nextafter(pts, ftype(np.inf)), np.nextafter(pts, ftype(0))])
    special = np.array([0.0, np.inf, np.nan], ftype)
    return np.concatenate([pts, -pts, special, -special])


def every_16bit_float() -> np.ndarray:
    """All float16 and bfloat16 values (NaN payloads included), as float32."""
    u = np.arange(1 << 16, dtype=np.uint16)
    return np.concatenate([u.view(np.float16).astype(np.float32), u.view(ml_dtypes.bfloat16).astype(np.float32)])


@functools.cache
def converter(d):
    """A compiled CPU graph: float32 -> d, float64 -> d, d -> float32."""
    x32 = dsl.placeholder((N32,), "float32", "x32")
    x64 = dsl.placeholder((N64,), "float64", "x64")
    c = dsl.placeholder((1 << d.bits,), d, "c")
    outs = [dsl.compute(x32.shape, lambda i: x32[i].astype(d), name="from32"),
            dsl.compute(x64.shape, lambda i: x64[i].astype(d), name="from64"),
            dsl.compute(c.shape, lambda i: c[i].astype("float32"), name="to32")]
    return CompiledGraph(outs, [x32, x64, c], "cpu")


def _pad(a: np.ndarray, n: int) -> np.ndarray:
    assert a.size <= n
    return np.concatenate([a, np.zeros(n - a.size, a.dtype)])


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_c_conversions_are_ml_dtypes_bit_for_bit(d):
    """Exhaustive: every f16/bf16 value and every boundary in f32 -> d; every boundary in f64 -> d
    (one rounding, not through f32); every code -> f32."""
    x32 = np.concatenate([every_16bit_float(), boundaries(d, np.float32)])
    x64 = boundaries(d, np.float64)
    n64 = x64.size
    x32, x64 = _pad(x32, N32), _pad(x64, N64)
    got32, got64, dec = converter(d)(x32, x64, codes(d))
    with np.errstate(over="ignore", invalid="ignore"):
        want32, want64 = x32.astype(d.np), x64.astype(d.np)
    np.testing.assert_array_equal(bits_of(got32), bits_of(want32))
    np.testing.assert_array_equal(bits_of(got64)[:n64], bits_of(want64)[:n64])
    np.testing.assert_array_equal(bits_of(dec), bits_of(codes(d).astype(np.float32)))


@pytest.mark.parametrize("d", TYPES, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64),
       wide=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=64))
def test_c_conversions_of_any_float(d, bits, wide):
    """Any float32 bit pattern (NaN payloads, subnormals) and any float64 converts as ml_dtypes."""
    x32 = np.array(bits, np.uint32).view(np.float32)
    x64 = np.array(wide, np.float64)
    got32, got64, _ = converter(d)(_pad(x32, N32), _pad(x64, N64), codes(d))
    with np.errstate(over="ignore", invalid="ignore"):
        want32, want64 = x32.astype(d.np), x64.astype(d.np)
    np.testing.assert_array_equal(bits_of(got32)[:x32.size], bits_of(want32))
    np.testing.assert_array_equal(bits_of(got64)[:x64.size], bits_of(want64))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal bits, or both NaN (a NaN's sign follows the hardware's default NaN)."""
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    return (bits_of(a) == bits_of(b)) | (np.isnan(fa) & np.isnan(fb))


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_c_arithmetic_on_every_pair_matches_the_reference(d):
    """add/multiply/divide/maximum on every pair of codes: computed in f32, rounded once."""
    n = 1 << d.bits
    a = dsl.placeholder((n, n), d, "a")
    b = dsl.placeholder((n, n), d, "b")
    def op(name, f):
        return dsl.compute((n, n), lambda i, j: f(a[i, j], b[i, j]), name=name)
    outs = [op("add", lambda x, y: x + y), op("mul", lambda x, y: x * y), op("div", lambda x, y: x / y),
            op("max", dsl.maximum)]
    c = codes(d)
    xa, xb = np.repeat(c, n).reshape(n, n), np.tile(c, n).reshape(n, n)
    got = CompiledGraph(outs, [a, b], "cpu")(xa, xb)
    want = evaluate(outs, [xa, xb], [a, b])
    for g, w, name in zip(got, want, ("add", "mul", "div", "max")):
        ok = _same(g, w)
        assert ok.all(), f"{d} {name}: {np.argwhere(~ok)[:3].tolist()} got {g[~ok][:3]} want {w[~ok][:3]}"
        exact = (xa.astype(np.float32) + xb.astype(np.float32)).astype(d.np) if name == "add" else None
        if exact is not None:   # the reference itself: f32 sum rounded once by ml_dtypes
            assert _same(w, exact).all()


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_every_code_converts_to_every_narrow_type(d):
    """d -> each float under 32 bits, for every code: as ml_dtypes through f32 (exact)."""
    targets = [t for t in TYPES + (dt.float16, dt.bfloat16) if t is not d]
    c = dsl.placeholder((1 << d.bits,), d, "c")
    def to(t):
        return dsl.compute(c.shape, lambda i: c[i].astype(t), name=f"to_{t.name}")
    outs = [to(t) for t in targets]
    got = CompiledGraph(outs, [c], "cpu")(codes(d))
    for g, t in zip(got, targets):
        with np.errstate(over="ignore"):
            want = codes(d).astype(np.float32).astype(t.np)
        np.testing.assert_array_equal(bits_of(g), bits_of(want), err_msg=f"{d} -> {t}")


def test_bitcast_keeps_the_code():
    """bitcast f8 <-> u8/s8 and f4 <-> u4/s4 moves codes (finite values round-trip exactly)."""
    def bitcast(c, t):
        return dsl.compute(c.shape, lambda i: dsl.bitcast(c[i], t), name=f"b_{t.name}")
    for d, u, s in ((dt.float8_e4m3fn, dt.uint8, dt.int8), (dt.float4_e2m1fn, dt.uint4, dt.int4)):
        c = dsl.placeholder((1 << d.bits,), d, "c")
        outs = [bitcast(c, u), bitcast(c, s)]
        x = codes(d)
        gu, gs = CompiledGraph(outs, [c], "cpu")(x)
        finite = np.isfinite(x.astype(np.float32))
        np.testing.assert_array_equal(gu.astype(np.int64)[finite], np.arange(1 << d.bits)[finite])
        want_s = np.arange(1 << d.bits) - ((np.arange(1 << d.bits) >> (d.bits - 1)) << d.bits)
        np.testing.assert_array_equal(gs.astype(np.int64)[finite], want_s[finite])


def _opencl():
    from hlotune.dsl.errors import HlotuneError
    from hlotune.runtime.targets import get_target
    try:
        return get_target("opencl")
    except HlotuneError:     # no pyopencl (MissingDependencyError), no device (TargetError)
        return None


@pytest.mark.parametrize("d", (dt.float8_e4m3fn, dt.float8_e5m2fnuz, dt.float8_e8m0fnu, dt.float4_e2m1fn),
                         ids=lambda d: d.name)
def test_opencl_conversions_and_arithmetic_match(d):
    """The same helpers in OpenCL C: every f16 value and every code convert as ml_dtypes; sums of
    every pair of codes as the reference."""
    t = _opencl()
    if t is None:
        pytest.skip("no OpenCL device")
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    xp = dsl.placeholder(x.shape, "float32", "x")
    c = dsl.placeholder((1 << d.bits,), d, "c")
    n = 1 << d.bits
    a = dsl.placeholder((n, n), d, "a")
    b = dsl.placeholder((n, n), d, "b")
    outs = [dsl.compute(x.shape, lambda i: xp[i].astype(d), name="enc"),
            dsl.compute(c.shape, lambda i: c[i].astype("float32"), name="dec"),
            dsl.compute((n, n), lambda i, j: a[i, j] + b[i, j], name="add")]
    cc = codes(d)
    xa, xb = np.repeat(cc, n).reshape(n, n), np.tile(cc, n).reshape(n, n)
    enc, dec, add = CompiledGraph(outs, [xp, c, a, b], t)(x, cc, xa, xb)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(bits_of(enc), bits_of(x.astype(d.np)))
    np.testing.assert_array_equal(bits_of(dec), bits_of(cc.astype(np.float32)))
    assert _same(add, evaluate(outs[2:], [xa, xb], [a, b])[0]).all()
