"""HLO and StableHLO ops about element types: bitcast-convert between widths, reduce-precision of
every IEEE type, quantized types (uniform_quantize/dequantize, dequantize-op-quantize), dynamic ops
with constant sizes, convolution with batch_group_count; malformed or unknowable inputs raise
located, typed errors (hypothesis mutations of texts using the new types)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from _checks import mutate_token
from hlotune.dsl.errors import HloParseError, UnsupportedOpError
from hlotune.frontend.read import parse_module_text
from hlotune.frontend.lower import lower_module
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.frontend.stablehlo_types import QuantShape
from hlotune.dsl.reference import evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune


def run(text, *args, target="cpu"):
    """(compiled outputs, reference outputs) of a module on ``args``."""
    m = hlotune.load_hlo(text)
    got = hlotune.compile(m, target=target)(*args)
    ref = evaluate(list(m.outputs), list(args), list(m.params))
    return (got if isinstance(got, tuple) else (got,)), ref


# ----------------------------------------------------------------------------- bitcast-convert

BITCASTS = [  # (operand type, result type, operand dims, numpy: operand -> result)
    ("pred[64]", "s64[]", lambda x: np.packbits(x, bitorder="little").view(np.int64).reshape(())),
    ("s64[]", "pred[64]", lambda x: np.unpackbits(x.reshape(1).view(np.uint8), bitorder="little").astype(bool)),
    ("f64[3]", "s32[3,2]", lambda x: x.view(np.int32).reshape(3, 2)),
    ("s32[3,2]", "f64[3]", lambda x: x.reshape(-1).view(np.float64)),
    ("c128[2]", "c64[2,2]", lambda x: x.view(np.complex64).reshape(2, 2)),
    ("c64[2,2]", "c128[2]", lambda x: x.reshape(-1).view(np.complex128)),
    ("c64[3]", "f64[3]", lambda x: x.view(np.float64)),
    ("u32[2]", "u8[2,4]", lambda x: x.view(np.uint8).reshape(2, 4)),
    ("u8[2,4]", "u32[2]", lambda x: x.reshape(-1).view(np.uint32)),
    ("f32[2]", "f16[2,2]", lambda x: x.view(np.float16).reshape(2, 2)),
    ("u8[3]", "u4[3,2]", lambda x: np.stack([x & 15, x >> 4], axis=-1).astype(ml_dtypes.uint4)),
    ("s4[3,2]", "u8[3]", lambda x: ((x.astype(np.int64) & 15)[:, 0] | ((x.astype(np.int64) & 15)[:, 1] << 4))
     .astype(np.uint8)),
]


def _random(shape: str, rng):
    et, dims = shape.split("[")
    dims = tuple(int(d) for d in dims.rstrip("]").split(",") if d)
    n = int(np.prod(dims))
    raw = rng.integers(0, 256, size=n * 16, dtype=np.uint8)
    npd = {"pred": np.bool_, "s64": np.int64, "f64": np.float64, "s32": np.int32, "c128": np.complex128,
           "c64": np.complex64, "u32": np.uint32, "u8": np.uint8, "f32": np.float32,
           "s4": ml_dtypes.int4}[et]
    if et == "pred":
        return (raw[:n] & 1).astype(bool).reshape(dims)
    if et == "s4":
        return (raw[:n].astype(np.int64) % 16 - 8).astype(ml_dtypes.int4).reshape(dims)
    return raw[:n * np.dtype(npd).itemsize].view(npd).reshape(dims)


@pytest.mark.parametrize("src,dst,fn", BITCASTS, ids=[f"{a}->{b}" for a, b, _ in BITCASTS])
def test_bitcast_convert_between_widths(src, dst, fn):
    text = f"HloModule m\nENTRY e {{\n  x = {src} parameter(0)\n  ROOT y = {dst} bitcast-convert(x)\n}}\n"
    x = _random(src, np.random.default_rng(7))
    (got,), (ref,) = run(text, x)
    want = fn(x)
    for r in (got, ref):
        assert r.dtype == want.dtype and r.shape == want.shape
        np.testing.assert_array_equal(r.reshape(-1).view(np.uint8), np.ascontiguousarray(want).reshape(-1).view(np.uint8))


# ----------------------------------------------------------------------------- reduce-precision

def _reduce_precision(et: str, ebits: int, mbits: int) -> str:
    return (f"HloModule m\nENTRY e {{\n  x = {et}[64] parameter(0)\n"
            f"  ROOT y = {et}[64] reduce-precision(x), exponent_bits={ebits}, mantissa_bits={mbits}\n}}\n")


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=64), min_size=64, max_size=64))
def test_reduce_precision_of_f64_to_f16_is_f16_rounding(xs):
    """e5m10 of a double: float16's rounding, but values under float16's smallest normal flush to
    a signed zero (reduce-precision keeps no subnormals) and overflow goes to infinity."""
    x = np.array(xs, np.float64)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16).astype(np.float64)
    want = np.where(np.abs(h) < 2.0 ** -14, np.copysign(0.0, x), h)
    (got,), (ref,) = run(_reduce_precision("f64", 5, 10), x)
    for r in (got, ref):
        np.testing.assert_array_equal(r, want)
        np.testing.assert_array_equal(np.signbit(r), np.signbit(want))


@pytest.mark.parametrize("et,npd,ebits,mbits", [("f16", np.float16, 5, 10), ("bf16", ml_dtypes.bfloat16, 8, 7),
                                                ("f32", np.float32, 8, 23), ("f64", np.float64, 11, 52)])
def test_reduce_precision_to_its_own_format_is_identity_and_nan_rules(et, npd, ebits, mbits):
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**63, size=64, dtype=np.uint64).view(np.uint8)[:64 * np.dtype(npd).itemsize]
    x = bits.view(npd).copy()
    x[:3] = [np.nan, np.inf, -np.inf]
    (got,), (ref,) = run(_reduce_precision(et, ebits, mbits), x)
    for r in (got, ref):
        fin = ~np.isnan(x.astype(np.float64))
        np.testing.assert_array_equal(r.view(np.uint8).reshape(64, -1)[fin], x.view(np.uint8).reshape(64, -1)[fin])
        assert np.isnan(r[0].astype(np.float64))
    (got0,), (ref0,) = run(_reduce_precision(et, ebits, 0), x)
    for r in (got0, ref0):    # no mantissa bits: a NaN becomes +infinity (XLA)
        assert r[0].astype(np.float64) == np.inf


# ----------------------------------------------------------------------------- quantized types

def _quantize(x, scale, zp, lo, hi):
    return np.round(np.clip(x / scale + zp, lo, hi)).astype(np.int64)


def test_quantize_dequantize_per_tensor_and_per_axis():
    text = """func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xi8>, tensor<2x3xf32>, tensor<2x3xi8>) {
  %q = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>
  %d = stablehlo.uniform_dequantize %q : (tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3xf32>
  %p = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8<-127:127>:f32:0, {0.1:10,0.5}>>
  %qi = stablehlo.bitcast_convert %q : (tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3xi8>
  %pi = stablehlo.bitcast_convert %p : (tensor<2x3x!quant.uniform<i8<-127:127>:f32:0, {0.1:10,0.5}>>) -> tensor<2x3xi8>
  func.return %qi, %d, %pi : tensor<2x3xi8>, tensor<2x3xf32>, tensor<2x3xi8>
}"""
    x = np.array([[0.0, 1.23, -7.5], [100.0, -100.0, 0.0251]], np.float32)
    (qi, d, pi), ref = run(text, x)
    want_q = _quantize(x.astype(np.float32), np.float32(0.05), -3, -128, 127)
    want_p = np.stack([_quantize(x[0], np.float32(0.1), 10, -127, 127), _quantize(x[1], np.float32(0.5), 0, -127, 127)])
    for got in ((qi, d, pi), ref):
        np.testing.assert_array_equal(got[0].astype(np.int64), want_q)
        np.testing.assert_allclose(got[1], (want_q + 3) * np.float32(0.05), rtol=1e-6)
        np.testing.assert_array_equal(got[2].astype(np.int64), want_p)


def test_ops_on_quantized_tensors_dequantize_compute_and_quantize():
    text = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi8> {
  %qa = stablehlo.uniform_quantize %a : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.1:-30>>
  %qb = stablehlo.uniform_quantize %b : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-20>>
  %s = stablehlo.add %qa, %qb : (tensor<4x!quant.uniform<i8:f32, 0.1:-30>>, tensor<4x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-20>>
  %r = stablehlo.bitcast_convert %s : (tensor<4x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<4xi8>
  func.return %r : tensor<4xi8>
}"""
    a = np.array([1.0, 2.0, -3.3, 10.0], np.float32)
    b = np.array([3.0, 4.0, 1.1, 50.0], np.float32)
    (got,), (ref,) = run(text, a, b)
    qa, qb = _quantize(a, np.float32(0.1), -30, -128, 127), _quantize(b, np.float32(0.5), -20, -128, 127)
    s = (qa + 30).astype(np.float32) * np.float32(0.1) + (qb + 20).astype(np.float32) * np.float32(0.5)
    want = _quantize(s, np.float32(0.5), -20, -128, 127)
    np.testing.assert_array_equal(got.astype(np.int64), want)
    np.testing.assert_array_equal(ref.astype(np.int64), want)


def test_quantized_types_parse_to_storage_shapes():
    mod = parse_stablehlo("""func.func @main(%x: tensor<3x!quant.uniform<ui8:f32, 2.5e-1:7>>) -> tensor<3xf32> {
  %d = stablehlo.uniform_dequantize %x : (tensor<3x!quant.uniform<ui8:f32, 2.5e-1:7>>) -> tensor<3xf32>
  func.return %d : tensor<3xf32>
}""")
    p = mod.entry_computation.params[0].shape
    assert isinstance(p, QuantShape) and p.element_type == "u8" and p.dims == (3,)
    q = p.quant
    assert (q.scales, q.zero_points, q.axis, q.storage_min, q.storage_max) == ((0.25,), (7,), None, 0, 255)


@pytest.mark.parametrize("ty", ["!quant.uniform<f32:f32, 0.1:1>", "!quant.uniform<i8:f32>",
                                "!quant.uniform<i8:f32:0, 0.1:1>", "!quant.uniform<i8:f32, {0.1:1}>"])
def test_malformed_quantized_types_are_located_parse_errors(ty):
    with pytest.raises(HloParseError, match="quant.uniform"):
        parse_stablehlo(f"func.func @main(%x: tensor<2x{ty}>) -> tensor<2x{ty}> {{\n"
                        f"  func.return %x : tensor<2x{ty}>\n}}\n", "q.mlir")


# ----------------------------------------------------------------------------- dynamic ops

def test_dynamic_ops_with_constant_sizes_are_their_static_ops():
    text = """func.func @main(%x: tensor<2x3xf32>) -> (tensor<3x4xi32>, tensor<6xf32>, tensor<2x3x2xf32>, tensor<4x4xf32>) {
  %shape = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %i = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<3x4xi32>
  %six = stablehlo.constant dense<[6]> : tensor<1xi64>
  %r = stablehlo.dynamic_reshape %x, %six : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  %dims = stablehlo.constant dense<[2, 3, 2]> : tensor<3xi64>
  %b = "stablehlo.dynamic_broadcast_in_dim"(%x, %dims) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3x2xf32>
  %zero = stablehlo.constant dense<0.5> : tensor<f32>
  %lo = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %in = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %p = stablehlo.dynamic_pad %x, %zero, %lo, %hi, %in : (tensor<2x3xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x4xf32>
  func.return %i, %r, %b, %p : tensor<3x4xi32>, tensor<6xf32>, tensor<2x3x2xf32>, tensor<4x4xf32>
}"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got, ref = run(text, x)
    pad = np.full((4, 5), 0.5, np.float32)
    pad[1:3, ::2] = x
    want = [np.tile(np.arange(4, dtype=np.int32), (3, 1)), x.reshape(6), np.repeat(x[..., None], 2, axis=2),
            pad[:, :4]]
    for res in (got, ref):
        for r, w in zip(res, want):
            np.testing.assert_array_equal(r, w)


def test_dynamic_sizes_known_only_at_run_time_are_refused_by_name():
    text = """func.func @main(%x: tensor<6xf32>, %s: tensor<1xi64>) -> tensor<6xf32> {
  %r = stablehlo.dynamic_reshape %x, %s : (tensor<6xf32>, tensor<1xi64>) -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}"""
    with pytest.raises(UnsupportedOpError, match="dynamic_reshape.*not a constant"):
        parse_stablehlo(text)


def test_dynamic_sizes_that_contradict_the_result_type_are_parse_errors():
    text = """func.func @main() -> tensor<3x4xi32> {
  %shape = stablehlo.constant dense<[4, 3]> : tensor<2xi64>
  %i = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi64>) -> tensor<3x4xi32>
  func.return %i : tensor<3x4xi32>
}"""
    with pytest.raises(HloParseError, match="result type"):
        parse_stablehlo(text, "d.mlir")


# ----------------------------------------------------------------------------- batch_group_count

def test_convolution_with_batch_group_count():
    """The lhs batch splits into groups; output feature o belongs to group o // (O / groups)."""
    text = """HloModule m
ENTRY e {
  x = f32[4,5,2] parameter(0)
  w = f32[3,2,6] parameter(1)
  ROOT y = f32[2,3,6] convolution(x, w), window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=2
}"""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 5, 2)).astype(np.float32), rng.standard_normal((3, 2, 6)).astype(np.float32)
    (got,), (ref,) = run(text, x, w)
    want = np.zeros((2, 3, 6), np.float32)
    for b in range(2):
        for o in range(6):
            g = o // 3
            for s in range(3):
                want[b, s, o] = np.sum(x[g * 2 + b, s:s + 3, :] * w[:, :, o])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- mutations

_TEXTS = [
    """func.func @main(%x: tensor<2xcomplex<f32>>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<[(1.0, 0x7FC00000), (-2.5, 3.0)]> : tensor<2xcomplex<f32>>
  %m = stablehlo.multiply %x, %c : tensor<2xcomplex<f32>>
  %r = stablehlo.real %m : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}""",
    """func.func @main(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  %q = stablehlo.uniform_quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32:0, {0.1:-3,0.2,0.3:1,0.4:2}>>
  %d = stablehlo.uniform_dequantize %q : (tensor<4x!quant.uniform<i8:f32:0, {0.1:-3,0.2,0.3:1,0.4:2}>>) -> tensor<4xf32>
  %f = stablehlo.convert %d : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  func.return %f : tensor<4xf8E4M3FN>
}""",
    """func.func @main(%x: tensor<2x3xi4>) -> tensor<6xi4> {
  %s = stablehlo.constant dense<[6]> : tensor<1xi64>
  %r = stablehlo.dynamic_reshape %x, %s : (tensor<2x3xi4>, tensor<1xi64>) -> tensor<6xi4>
  %b = stablehlo.bitcast_convert %r : (tensor<6xi4>) -> tensor<6xui4>
  %c = stablehlo.bitcast_convert %b : (tensor<6xui4>) -> tensor<6xi4>
  func.return %c : tensor<6xi4>
}""",
    """func.func @main(%x: tensor<1x4x4x1xf32>, %w: tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32> {
  %padding = stablehlo.constant dense<1> : tensor<2x2xi64>
  %r = "stablehlo.dynamic_conv"(%x, %w, %padding) {window_strides = array<i64: 4, 4>, lhs_dilation = array<i64: 2, 2>, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> tensor<1x2x2x1xf32>
  %v = stablehlo.constant dense<-1.0> : tensor<f32>
  %lo = stablehlo.constant dense<[0, 0, 0, 0]> : tensor<4xi64>
  %in = stablehlo.constant dense<[0, 0, 0, 0]> : tensor<4xi64>
  %p = stablehlo.dynamic_pad %r, %v, %lo, %lo, %in : (tensor<1x2x2x1xf32>, tensor<f32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x2x1xf32>
  func.return %p : tensor<1x2x2x1xf32>
}""",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(0, len(_TEXTS) - 1), data=st.data())
def test_mutated_texts_with_new_types_parse_and_lower_or_raise_located_errors(k, data):
    mutated = mutate_token(_TEXTS[k], data, r"%[\w#]+|[A-Za-z_][\w.-]*|0x[0-9A-F]+|\d+|[^\s\w]",
                           ["complex", "f8E5M2", "i2", "ui4", "f4E2M1FN", "!quant.uniform", "stablehlo.real",
                            "stablehlo.uniform_quantize", "stablehlo.dynamic_iota", "tensor", "{", "<", ":"],
                           ("number", "delete", "duplicate", "replace", "truncate"))
    try:
        lower_module(parse_module_text(mutated, file="t.mlir"))
    except HloParseError as e:
        assert e.file == "t.mlir" and e.line >= 1 and "internal" not in e.reason, str(e)
    except UnsupportedOpError as e:
        assert e.opcode and "unsupported" in str(e)


# ----------------------------------------------------------------------------- dots on the new types

def test_float8_dot_accumulates_in_f32_and_rounds_once():
    text = """HloModule m
ENTRY e {
  a = f8e4m3fn[4,64] parameter(0)
  b = f8e4m3fn[64,3] parameter(1)
  ROOT d = f8e4m3fn[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 64)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((64, 3)).astype(ml_dtypes.float8_e4m3fn)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.float8_e4m3fn)
    (got,), (ref,) = run(text, a, b)
    for r in (got, ref):    # summation order aside, one rounding: within one f8 step of the exact
        np.testing.assert_allclose(r.astype(np.float32), want.astype(np.float32), rtol=0.07, atol=0.02)


def test_complex_convolution_matches_numpy():
    text = """HloModule m
ENTRY e {
  x = c64[1,6,2] parameter(0)
  w = c64[3,2,2] parameter(1)
  ROOT y = c64[1,4,2] convolution(x, w), window={size=3}, dim_labels=b0f_0io->b0f
}"""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((1, 6, 2)) + 1j * rng.standard_normal((1, 6, 2))).astype(np.complex64)
    w = (rng.standard_normal((3, 2, 2)) + 1j * rng.standard_normal((3, 2, 2))).astype(np.complex64)
    want = np.stack([np.einsum("ki,kio->o", x[0, s:s + 3].astype(np.complex128), w.astype(np.complex128))
                     for s in range(4)])[None]
    (got,), (ref,) = run(text, x, w)
    for r in (got, ref):
        np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)


def test_quantized_dot_general_dequantizes_multiplies_and_quantizes():
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xi8> {
  %qa = stablehlo.uniform_quantize %a : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.05:2>>
  %qb = stablehlo.uniform_quantize %b : (tensor<3x2xf32>) -> tensor<3x2x!quant.uniform<i8:f32:1, {0.1,0.02:-4}>>
  %d = stablehlo.dot_general %qa, %qb, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 0.05:2>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.1,0.02:-4}>>) -> tensor<2x2x!quant.uniform<i32:f32, 0.01>>
  %c = stablehlo.uniform_quantize %d : (tensor<2x2x!quant.uniform<i32:f32, 0.01>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:1>>
  %r = stablehlo.bitcast_convert %c : (tensor<2x2x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<2x2xi8>
  func.return %r : tensor<2x2xi8>
}"""
    a = np.array([[1.0, -0.5, 2.0], [0.3, 0.0, -1.25]], np.float32)
    b = np.array([[0.5, 0.1], [-1.0, 0.2], [0.25, -0.3]], np.float32)
    qa = _quantize(a, np.float32(0.05), 2, -128, 127)
    sb, zb = np.array([0.1, 0.02], np.float32), np.array([0, -4])
    qb = _quantize(b, sb, zb, -128, 127)
    fa, fb = (qa - 2).astype(np.float32) * np.float32(0.05), (qb - zb).astype(np.float32) * sb
    d = _quantize(fa @ fb, np.float32(0.01), 0, -2**31, 2**31 - 1)
    want = _quantize(d.astype(np.float32) * np.float32(0.01), np.float32(0.25), 1, -128, 127)
    (got,), (ref,) = run(text, a, b)
    np.testing.assert_array_equal(got.astype(np.int64), want)
    np.testing.assert_array_equal(ref.astype(np.int64), want)
