"""Tests of the HLO -> tensor-expression lowering (hlotune.frontend.lower).

Every corpus module, unoptimized and XLA:CPU-optimized, is lowered and evaluated with the
numpy reference; its outputs must match what XLA computed (the .npz files). Small hand-written
modules check the tricky semantics against numpy.

Tolerances (rtol, atol) by op family of the module (from the manifest's opcodes):
elementwise f32 (1e-5, 1e-6); transcendental f32 (2e-5, 1e-5); reductions / dot / conv
(1e-4, 1e-4), as summation order differs from XLA's. Integers and pred compare exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _checks import mutate_token
from hlotune.dsl.errors import UnsupportedOpError
from hlotune.dsl.reference import evaluate
from hlotune.frontend.lower import HANDLERS, lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.read import load_module_file

DATA = Path(__file__).parent / "data" / "hlo"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
CASES = [(e["name"], form) for e in MANIFEST for form in (".hlo", ".opt.hlo")]

TOL_ELEMENTWISE = (1e-5, 1e-6)
TOL_TRANSCENDENTAL = (2e-5, 1e-5)
TOL_REDUCTION = (1e-4, 1e-4)
_REDUCING = {"dot", "reduce", "convolution", "reduce-window", "while"}
_TRANSCENDENTAL = {"exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "erf",
                   "rsqrt", "sqrt", "sine", "cosine", "power", "logistic"}
#: (module, form, output) -> (rtol, atol) where XLA's optimizer changed the arithmetic: in
#: per-output exceptions to the family tolerances (none: the lowering mirrors XLA:CPU's excess
#: precision for bfloat16, see lower_convert)
SPECIAL_TOL: dict = {}


def family_tol(entry) -> tuple[float, float]:
    ops = set(entry["opcodes"])
    if ops & _REDUCING:
        return TOL_REDUCTION
    if ops & _TRANSCENDENTAL:
        return TOL_TRANSCENDENTAL
    return TOL_ELEMENTWISE


def assert_matches(got, want, rtol, atol, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype.kind == "f" or got.dtype == np.dtype(ml_dtypes.bfloat16):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def binop(name: str, op: str, ty: str = "f32") -> str:
    """A two-parameter scalar computation ``name`` returning ``op(a, b)``."""
    return f"{name} {{ a = {ty}[] parameter(0)\n b = {ty}[] parameter(1)\n ROOT c = {ty}[] {op}(a, b) }}"


def run_hlo(text: str, *args):
    low = lower_module(parse_hlo(text, file="t.hlo"))
    outs = evaluate(low.outputs, {p: a for p, a in zip(low.params, args)})
    return outs if low.tuple_result else outs[0]


# ----------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("name,form", CASES, ids=[n + f for n, f in CASES])
def test_corpus_module(name, form):
    entry = next(e for e in MANIFEST if e["name"] == name)
    data = np.load(DATA / f"{name}.npz")
    low = lower_module(load_module_file(DATA / f"{name}{form}"))
    assert [p.shape for p in low.params] == [tuple(s) for s, _ in entry["inputs"]]
    assert low.tuple_result == (len(entry["outputs"]) > 1)
    args = [data[f"arg{k}"] for k in range(len(low.params))]
    outs = evaluate(low.outputs, dict(zip(low.params, args)))
    assert len(outs) == len(entry["outputs"])
    rtol, atol = family_tol(entry)
    for k, got in enumerate(outs):
        r, a = SPECIAL_TOL.get((name, form, k), (rtol, atol))
        assert_matches(got, data[f"out{k}"], r, a, f"{name}{form} out{k}")


def test_params_and_computes_named_after_hlo():
    low = lower_module(load_module_file(DATA / "fori_loop.hlo"))
    assert [p.name for p in low.params] == ["a.1", "v.1"]
    assert [p.shape for p in low.params] == [(64, 64), (64,)]
    assert low.outputs[1].shape == () and low.module.name == "jit_fori_loop"
    low = lower_module(load_module_file(DATA / "bias_relu.hlo"))
    assert f"{low.outputs[0].op.name} =" in (DATA / "bias_relu.hlo").read_text()


# ----------------------------------------------------------------------------- shape ops

def np_pad(x, value, cfg):
    """numpy pad with (lo, hi, interior) per dim; negative lo/hi crop."""
    for d, (lo, hi, interior) in enumerate(cfg):
        n = x.shape[d]
        y = np.full(x.shape[:d] + (n + max(n - 1, 0) * interior,) + x.shape[d + 1:], value, x.dtype)
        y[(slice(None),) * d + (slice(None, None, interior + 1),)] = x
        y = np.pad(y, [(0, 0)] * d + [(max(lo, 0), max(hi, 0))] + [(0, 0)] * (x.ndim - d - 1),
                   constant_values=value)
        x = y[(slice(None),) * d + (slice(max(-lo, 0), y.shape[d] - max(-hi, 0)),)]
    return x


def test_pad_negative_and_interior():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    cfg = [(1, -1, 1), (-2, 2, 2)]
    want = np_pad(x, np.float32(-7), cfg)
    got = run_hlo(f"""HloModule m
ENTRY e {{
  x = f32[3,4] parameter(0)
  c = f32[] constant(-7)
  ROOT p = f32[{want.shape[0]},{want.shape[1]}] pad(x, c), padding=1_-1_1x-2_2_2
}}""", x)
    assert_matches(got, want, 0, 0, "pad")


def test_concat_slice_reverse_transpose_reshape_broadcast_iota():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = -np.arange(8, dtype=np.float32).reshape(2, 1, 4)
    outs = run_hlo("""HloModule m
ENTRY e {
  x = f32[2,3,4] parameter(0)
  y = f32[2,1,4] parameter(1)
  c = f32[2,7,4] concatenate(x, y, x), dimensions={1}
  r = f32[2,3,4] reverse(x), dimensions={0,2}
  t = f32[4,2,3] transpose(x), dimensions={2,0,1}
  h = f32[6,2,2] reshape(x)
  b = f32[3,2,4,5] broadcast(x), dimensions={1,0,2}
  i = s32[3,5] iota(), iota_dimension=1
  s = f32[2,2,2] slice(c), slice={[0:2], [1:6:3], [0:4:2]}
  ROOT o = (f32[2,7,4], f32[2,3,4], f32[4,2,3], f32[6,2,2], f32[3,2,4,5], s32[3,5], f32[2,2,2]) tuple(c, r, t, h, b, i, s)
}""", x, y)
    c = np.concatenate([x, y, x], axis=1)
    want = [c, x[::-1, :, ::-1], x.transpose(2, 0, 1), x.reshape(6, 2, 2),
            np.broadcast_to(x.transpose(1, 0, 2)[..., None], (3, 2, 4, 5)),
            np.broadcast_to(np.arange(5, dtype=np.int32), (3, 5)), c[:, 1:6:3, 0:4:2]]
    for k, (g, w) in enumerate(zip(outs, want)):
        assert_matches(g, w, 0, 0, f"out{k}")


def test_bitcast_uses_layouts():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = run_hlo("""HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  x = f32[2,3]{0,1} copy(p)
  a = f32[3,2]{1,0} bitcast(x)
  b = f32[6]{0} bitcast(x)
  c = f32[3,2]{0,1} bitcast(p)
  ROOT t = (f32[3,2], f32[6], f32[3,2]) tuple(a, b, c)
}""", x)
    assert_matches(outs[0], x.T, 0, 0, "col-major -> row-major")
    assert_matches(outs[1], x.ravel(order="F"), 0, 0, "col-major -> flat")
    assert_matches(outs[2], x.T, 0, 0, "row-major -> col-major")


def test_small_and_large_array_constants():
    small = np.array([[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]], np.float32)
    big = np.arange(40, dtype=np.int32).reshape(5, 8) * 3 - 7
    lit = "{" + ",".join("{" + ",".join(map(str, r)) + "}" for r in big.tolist()) + "}"
    outs = run_hlo(f"""HloModule m
ENTRY e {{
  a = f32[2,3] constant({{{{1.5, -2, 3.25}}, {{0, 7, -1}}}})
  b = s32[5,8] constant({lit})
  n = f32[3] constant({{nan, -0, inf}})
  ROOT t = (f32[2,3], s32[5,8], f32[3]) tuple(a, b, n)
}}""")
    assert_matches(outs[0], small, 0, 0, "small constant")
    assert_matches(outs[1], big, 0, 0, "large constant")
    assert np.isnan(outs[2][0]) and np.signbit(outs[2][1]) and outs[2][2] == np.inf


# ----------------------------------------------------------------------------- elementwise

def test_compare_totalorder_nan_and_signed_zero():
    v = np.array([np.nan, -0.0, 0.0, -np.inf, 1.0, -np.nan, 2.5, -1.0], np.float32)
    a, b = np.meshgrid(v, v, indexing="ij")
    outs = run_hlo("""HloModule m
ENTRY e {
  a = f32[8,8] parameter(0)
  b = f32[8,8] parameter(1)
  lt = pred[8,8] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[8,8] compare(a, b), direction=EQ, type=TOTALORDER
  fl = pred[8,8] compare(a, b), direction=LT
  fe = pred[8,8] compare(a, b), direction=EQ
  ROOT t = (pred[8,8], pred[8,8], pred[8,8], pred[8,8]) tuple(lt, eq, fl, fe)
}""", a, b)

    def key(x):  # IEEE totalOrder rank
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF) - 1, i)
    assert_matches(outs[0], key(a) < key(b), 0, 0, "TOTALORDER LT")
    assert_matches(outs[1], key(a) == key(b), 0, 0, "TOTALORDER EQ")
    with np.errstate(invalid="ignore"):
        assert_matches(outs[2], a < b, 0, 0, "float LT")
        assert_matches(outs[3], a == b, 0, 0, "float EQ")
    assert outs[0][1, 2] and not outs[1][1, 2] and outs[3][1, 2]  # -0 < +0 in total order only


def test_unsigned_compare_and_bit_ops():
    a = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 12345], np.uint32)
    b = np.array([3, 0xFFFFFFFF, 1, 31, 4], np.uint32)
    outs = run_hlo("""HloModule m
ENTRY e {
  a = u32[5] parameter(0)
  b = u32[5] parameter(1)
  lt = pred[5] compare(a, b), direction=LT
  sa = s32[5] bitcast-convert(a)
  sb = s32[5] bitcast-convert(b)
  ult = pred[5] compare(sa, sb), direction=LT, type=UNSIGNED
  srl = s32[5] shift-right-logical(sa, sb)
  pc = u32[5] popcnt(a)
  cz = u32[5] count-leading-zeros(a)
  ROOT t = (pred[5], pred[5], s32[5], u32[5], u32[5]) tuple(lt, ult, srl, pc, cz)
}""", a, b)
    srl = np.where(b < 32, a >> np.minimum(b, 31), 0).astype(np.uint32).view(np.int32)
    assert_matches(outs[0], a < b, 0, 0, "u32 LT")
    assert_matches(outs[1], a < b, 0, 0, "s32 LT type=UNSIGNED")
    assert_matches(outs[2], srl, 0, 0, "shift-right-logical (amount >= 32 gives 0)")
    assert_matches(outs[3], np.array([int(x).bit_count() for x in a], np.uint32), 0, 0, "popcnt")
    assert_matches(outs[4], np.array([32 - int(x).bit_length() for x in a], np.uint32), 0, 0, "clz")


def test_rounding_convert_and_logistic():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.7, -3.7, np.nan, 3e9, -3e9], np.float32)
    outs = run_hlo("""HloModule m
ENTRY e {
  x = f32[11] parameter(0)
  ra = f32[11] round-nearest-afz(x)
  re = f32[11] round-nearest-even(x)
  ci = s32[11] convert(x)
  lg = f32[11] logistic(x)
  bf = bf16[11] convert(x)
  rp = f32[11] reduce-precision(x), exponent_bits=8, mantissa_bits=7
  ROOT t = (f32[11], f32[11], s32[11], f32[11], bf16[11], f32[11]) tuple(ra, re, ci, lg, bf, rp)
}""", x)
    with np.errstate(invalid="ignore", over="ignore"):
        afz = np.where(np.isnan(x), x, np.sign(x) * np.floor(np.abs(x.astype(np.float64)) + 0.5))
        assert_matches(outs[0], afz.astype(np.float32), 0, 0, "round-nearest-afz")
        assert_matches(outs[1], np.rint(x), 0, 0, "round-nearest-even")
        sat = np.nan_to_num(np.clip(np.trunc(x.astype(np.float64)), -2**31, 2**31 - 1), nan=0)
        assert_matches(outs[2], sat.astype(np.int32), 0, 0, "convert saturates, NaN -> 0")
        assert_matches(outs[3], (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32),
                       *TOL_TRANSCENDENTAL, "logistic")
    bf = x.astype(ml_dtypes.bfloat16)
    assert_matches(outs[4], bf, 0, 0, "convert to bf16")
    assert_matches(outs[5], bf.astype(np.float32), 0, 0, "reduce-precision to bf16")


def test_integer_divide_remainder_and_clamp():
    a = np.array([7, -7, 7, -7, 5, np.iinfo(np.int32).min], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1], np.int32)
    outs = run_hlo("""HloModule m
ENTRY e {
  a = s32[6] parameter(0)
  b = s32[6] parameter(1)
  d = s32[6] divide(a, b)
  r = s32[6] remainder(a, b)
  lo = s32[] constant(-3)
  hi = s32[] constant(4)
  c = s32[6] clamp(lo, a, hi)
  ROOT t = (s32[6], s32[6], s32[6]) tuple(d, r, c)
}""", a, b)
    assert_matches(outs[0], np.array([3, -3, -3, 3, -1, np.iinfo(np.int32).min], np.int32), 0, 0, "div")
    assert_matches(outs[1], np.array([1, -1, 1, -1, 5, 0], np.int32), 0, 0, "rem")
    assert_matches(outs[2], np.clip(a, -3, 4), 0, 0, "clamp with scalar bounds")


# ----------------------------------------------------------------------------- indexing

def test_dynamic_slice_and_update_clamp_starts():
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    u = -np.ones((2, 3), np.float32)
    text = """HloModule m
ENTRY e {
  x = f32[5,8] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  u = f32[2,3] parameter(3)
  ds = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}
  du = f32[5,8] dynamic-update-slice(x, u, i, j)
  ROOT t = (f32[2,3], f32[5,8]) tuple(ds, du)
}"""
    for i, j in [(1, 2), (-3, 100), (4, 6), (0, -1)]:
        outs = run_hlo(text, x, np.int32(i), np.int32(j), u)
        ci, cj = min(max(i, 0), 3), min(max(j, 0), 5)
        want = x.copy()
        want[ci:ci + 2, cj:cj + 3] = u
        assert_matches(outs[0], x[ci:ci + 2, cj:cj + 3], 0, 0, f"dynamic-slice {i},{j}")
        assert_matches(outs[1], want, 0, 0, f"dynamic-update-slice {i},{j}")


def test_gather_general_and_batching_dims():
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    idx = np.array([[0, 0], [4, 5], [-2, 3], [1, 2]], np.int32)
    got = run_hlo("""HloModule m
ENTRY e {
  x = f32[5,6] parameter(0)
  i = s32[4,2] parameter(1)
  ROOT g = f32[4,2,3] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,3}
}""", x, idx)
    want = []
    for a, b in idx:
        a, b = min(max(a, 0), 3), min(max(b, 0), 3)
        want.append(x[a:a + 2, b:b + 3])
    assert_matches(got, np.stack(want), 0, 0, "gather")
    y = np.arange(40, dtype=np.float32).reshape(2, 5, 4)
    ids = np.array([[[1], [4], [0]], [[2], [2], [3]]], np.int32)
    got = run_hlo("""HloModule m
ENTRY e {
  y = f32[2,5,4] parameter(0)
  i = s32[2,3,1] parameter(1)
  ROOT g = f32[2,3,4] gather(y, i), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,4}
}""", y, ids)
    assert_matches(got, np.take_along_axis(y, ids, axis=1), 0, 0, "batched gather")


SCATTER = """HloModule m
{comb}
ENTRY e {{
  x = f32[5,3] parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4,3] parameter(2)
  ROOT s = f32[5,3] scatter(x, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=comb
}}"""


def test_scatter_add_skips_out_of_bounds_and_custom_combiner():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    u = np.arange(12, dtype=np.float32).reshape(4, 3) + 100
    add = binop("comb", "add")
    idx = np.array([[0], [2], [0], [7]], np.int32)
    want = x.copy()
    np.add.at(want, idx[:3, 0], u[:3])
    assert_matches(run_hlo(SCATTER.format(comb=add), x, idx, u), want, 0, 0, "scatter add")
    custom = ("comb { a = f32[] parameter(0)\n b = f32[] parameter(1)\n two = f32[] constant(2)\n"
              " m = f32[] multiply(b, two)\n ROOT c = f32[] subtract(m, a) }")
    idx = np.array([[4], [1], [-1], [3]], np.int32)
    want = x.copy()
    for k in (0, 1, 3):
        want[idx[k, 0]] = 2 * u[k] - want[idx[k, 0]]
    assert_matches(run_hlo(SCATTER.format(comb=custom), x, idx, u), want, 0, 0, "scatter custom")


# ----------------------------------------------------------------------------- dot / conv

def test_dot_with_batch_dims_and_bf16_operands():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2, 5)).astype(np.float32)
    outs = run_hlo("""HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[4,2,5] parameter(1)
  d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ab = bf16[2,3,4] convert(a)
  bb = bf16[4,2,5] convert(b)
  e = f32[2,3,5] dot(ab, bb), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={0}
  o = f32[5,3] dot(b, a), lhs_contracting_dims={0,1}, rhs_contracting_dims={2,0}
  ROOT t = (f32[2,3,5], f32[2,3,5], f32[5,3]) tuple(d, e, o)
}""", a, b)
    assert_matches(outs[0], np.einsum("bik,kbj->bij", a, b), *TOL_REDUCTION, "batched dot")
    ab = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    bb = b.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert_matches(outs[1], np.einsum("bik,kbj->bij", ab, bb), *TOL_REDUCTION, "bf16 dot -> f32")
    assert_matches(outs[2], np.einsum("kbj,bik->ji", b, a), *TOL_REDUCTION, "two contracting dims")


def np_conv(x, w, stride, pad, ldil, rdil, groups):
    """NHWC x HWIO reference convolution (lhs dilation = interior padding)."""
    (kh, kw, cg, o), og = w.shape, w.shape[3] // groups
    xd = np_pad(x.astype(np.float64), 0.0, [(0, 0, 0), (*pad[0], ldil[0] - 1),
                                             (*pad[1], ldil[1] - 1), (0, 0, 0)])
    eh, ew = (kh - 1) * rdil[0] + 1, (kw - 1) * rdil[1] + 1
    oh, ow = (xd.shape[1] - eh) // stride[0] + 1, (xd.shape[2] - ew) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for y in range(oh):
        for z in range(ow):
            patch = xd[:, y * stride[0]:y * stride[0] + eh:rdil[0], z * stride[1]:z * stride[1] + ew:rdil[1]]
            for g in range(groups):
                out[:, y, z, g * og:(g + 1) * og] = np.einsum(
                    "nhwc,hwco->no", patch[..., g * cg:(g + 1) * cg], w[..., g * og:(g + 1) * og])
    return out.astype(np.float32)


def test_convolution_stride_dilation_groups():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 6)).astype(np.float32)
    want = np_conv(x, w, (2, 1), ((1, 2), (0, -1)), (1, 2), (2, 1), 2)
    got = run_hlo(f"""HloModule m
ENTRY e {{
  x = f32[2,7,6,4] parameter(0)
  w = f32[3,2,2,6] parameter(1)
  ROOT c = f32[2,{want.shape[1]},{want.shape[2]},6] convolution(x, w), window={{size=3x2 stride=2x1 pad=1_2x0_-1 lhs_dilate=1x2 rhs_dilate=2x1}}, dim_labels=b01f_01io->b01f, feature_group_count=2
}}""", x, w)
    assert_matches(got, want, *TOL_REDUCTION, "conv")
    # NCHW / OIHW labels on the same problem without groups
    w1 = rng.standard_normal((3, 3, 4, 5)).astype(np.float32)
    want = np_conv(x, w1, (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 1)
    got = run_hlo(f"""HloModule m
ENTRY e {{
  x = f32[2,4,7,6] parameter(0)
  w = f32[5,4,3,3] parameter(1)
  ROOT c = f32[2,5,{want.shape[1]},{want.shape[2]}] convolution(x, w), window={{size=3x3 stride=1x2 pad=1_1x1_1}}, dim_labels=bf01_oi01->bf01
}}""", x.transpose(0, 3, 1, 2).copy(), w1.transpose(3, 2, 0, 1).copy())
    assert_matches(got, want.transpose(0, 3, 1, 2), *TOL_REDUCTION, "conv NCHW")


# ----------------------------------------------------------------------------- reductions

ARGMAX = """HloModule m
argmax {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  li = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, li)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, a, b)
  k = s32[] select(keep, i, j)
  ROOT r = (f32[], s32[]) tuple(v, k)
}
ENTRY e {
  x = f32[4,7] parameter(0)
  io = s32[4,7] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[4], s32[4]) reduce(x, io, ninf, zero), dimensions={1}, to_apply=argmax
}"""


def test_argmax_variadic_reduce():
    x = np.array([[1, 5, 5, 2, 0, 5, 1], [-1, -2, -3, -4, -5, -6, -7], [0, 0, 0, 0, 0, 0, 9],
                  [3, 8, 1, 8, 2, 7, 8]], np.float32)
    vals, idx = run_hlo(ARGMAX, x)
    assert_matches(vals, x.max(axis=1), 0, 0, "max")
    assert_matches(idx, x.argmax(axis=1).astype(np.int32), 0, 0, "argmax (first index)")


def test_reduce_init_folding():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    outs = run_hlo(f"""HloModule m
{binop("add", "add")}
selmax {{ a = f32[] parameter(0)
  b = f32[] parameter(1)
  g = pred[] compare(a, b), direction=GT
  ROOT c = f32[] select(g, a, b) }}
ENTRY e {{
  x = f32[3,4] parameter(0)
  p = f32[] parameter(1)
  ten = f32[] constant(10)
  s = f32[3] reduce(x, ten), dimensions={{1}}, to_apply=add
  q = f32[4] reduce(x, p), dimensions={{0}}, to_apply=selmax
  c = f32[] constant(4.5)
  k = f32[4] reduce(x, c), dimensions={{0}}, to_apply=selmax
  a = f32[] reduce(x, p), dimensions={{0,1}}, to_apply=add
  ROOT t = (f32[3], f32[4], f32[4], f32[]) tuple(s, q, k, a)
}}""", x, np.float32(5.5))
    assert_matches(outs[0], x.sum(1) + 10, 0, 0, "sum with init 10")
    assert_matches(outs[1], np.maximum(x.max(0), 5.5), 0, 0, "custom reducer, parameter init")
    assert_matches(outs[2], np.maximum(x.max(0), 4.5), 0, 0, "custom reducer, constant init")
    assert_matches(outs[3], np.float32(x.sum() + 5.5), 0, 0, "rank-0 result, parameter init")


def test_reduce_window_padding_and_dilation():
    x = np.arange(1, 31, dtype=np.float32).reshape(5, 6)
    got = run_hlo(f"""HloModule m
{binop("mx", "maximum")}
ENTRY e {{
  x = f32[5,6] parameter(0)
  i = f32[] constant(-inf)
  ROOT r = f32[3,3] reduce-window(x, i), window={{size=2x3 stride=2x2 pad=1_0x1_2 rhs_dilate=1x2}}, to_apply=mx
}}""", x)
    xp = np_pad(x, -np.inf, [(1, 0, 0), (1, 2, 0)])
    want = np.array([[xp[2 * a:2 * a + 2, 2 * b:2 * b + 5:2].max() for b in range(3)] for a in range(3)])
    assert_matches(got, want.astype(np.float32), 0, 0, "reduce-window max")
    # init 1 is not add's identity: taps in padding and dilation holes are skipped (XLA's
    # evaluator), the init is folded in once; the same through a custom combiner a - (-b)
    xs = np.array([1, 2, 3, 4], np.int32)
    custom = "sub { a = s32[] parameter(0)\n b = s32[] parameter(1)\n n = s32[] negate(b)\n" \
             " ROOT c = s32[] subtract(a, n) }"
    for comp in (binop("add", "add", "s32"), custom):
        got = run_hlo(f"""HloModule m
{comp}
ENTRY e {{
  x = s32[4] parameter(0)
  i = s32[] constant(1)
  ROOT r = s32[5] reduce-window(x, i), window={{size=3 stride=2 pad=1_3 lhs_dilate=2}}, to_apply={comp[:3]}
}}""", xs)
        # dilated and padded: [P 1 H 2 H 3 H 4 P P P]; windows at 0, 2, 4, 6, 8
        assert_matches(got, np.array([2, 3, 4, 5, 1], np.int32), 0, 0, f"reduce-window {comp[:3]}")


# ----------------------------------------------------------------------------- control flow

def test_conditional_sort_topk():
    x = np.array([[3.0, -1.0, np.nan, 2.0, -0.0, 0.0], [5.0, 5.0, 1.0, -2.0, 7.0, 5.0]], np.float32)
    text = """HloModule m
neg { p = f32[2,6] parameter(0)
  ROOT n = f32[2,6] negate(p) }
ident { p = f32[2,6] parameter(0)
  ROOT c = f32[2,6] copy(p) }
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER }
absgt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ROOT c = pred[] compare(aa, ab), direction=GT }
ENTRY e {
  x = f32[2,6] parameter(0)
  k = s32[] parameter(1)
  c = f32[2,6] conditional(k, x, x), branch_computations={neg, ident}
  io = s32[2,6] iota(), iota_dimension=1
  s = (f32[2,6], s32[2,6]) sort(x, io), dimensions={1}, is_stable=true, to_apply=lt
  sv = f32[2,6] get-tuple-element(s), index=0
  si = s32[2,6] get-tuple-element(s), index=1
  sa = f32[2,6] sort(x), dimensions={1}, is_stable=true, to_apply=absgt
  tk = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target="TopK"
  tv = f32[2,3] get-tuple-element(tk), index=0
  ti = s32[2,3] get-tuple-element(tk), index=1
  ROOT t = (f32[2,6], f32[2,6], s32[2,6], f32[2,6], f32[2,3], s32[2,3]) tuple(c, sv, si, sa, tv, ti)
}"""
    for k, want in [(0, -x), (1, x), (7, x), (-1, x)]:
        outs = run_hlo(text, x, np.int32(k))
        assert_matches(outs[0], want, 0, 0, f"conditional branch {k}")
    order = np.argsort(x, axis=1, kind="stable")  # numpy sorts NaN last, -0.0 == 0.0 ...
    order[0] = [1, 4, 5, 3, 0, 2]                 # ... totalOrder puts -0.0 before +0.0
    assert_matches(outs[1], np.take_along_axis(x, order, 1), 0, 0, "sort values")
    assert_matches(outs[2], order.astype(np.int32), 0, 0, "sort indices")
    by_abs = np.argsort(-np.abs(np.nan_to_num(x, nan=0.0)), axis=1, kind="stable")
    assert_matches(outs[3][1], x[1][by_abs[1]], 0, 0, "sort by custom comparator")
    assert_matches(outs[4], np.array([[np.nan, 3, 2], [7, 5, 5]], np.float32), 0, 0, "TopK values")
    assert_matches(outs[5], np.array([[2, 0, 3], [4, 0, 1]], np.int32), 0, 0, "TopK indices")


def test_while_counts_and_call_inlines():
    got = run_hlo("""HloModule m
body { s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[3] call(v), to_apply=twice
  ROOT t = (s32[], f32[3]) tuple(j, w) }
twice { p = f32[3] parameter(0)
  ROOT a = f32[3] add(p, p) }
cond { s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT }
ENTRY e {
  x = f32[3] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[3]) tuple(z, x)
  ROOT w = (s32[], f32[3]) while(t), condition=cond, body=body
}""", np.array([1, -2, 0.5], np.float32))
    assert int(got[0]) == 5
    assert_matches(got[1], np.array([32, -64, 16], np.float32), 0, 0, "while")


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("body,op", [
    ("ROOT y = f32[4] frobnicate(x)", "frobnicate"),
    ("ROOT r = f32[4] rng(a, b), distribution=rng_binomial", "rng"),
    ('ROOT r = f32[4] custom-call(x), custom_call_target="Foo"', "custom-call")])
def test_unsupported_op_names_op_and_line(body, op):
    text = ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  a = f32[] constant(0)\n"
            f"  b = f32[] constant(1)\n  {body}\n}}\n")
    with pytest.raises(UnsupportedOpError) as info:
        lower_module(parse_hlo(text, file="bad.hlo"))
    err = info.value
    assert err.opcode == op and err.line == 6 and err.file == "bad.hlo"
    assert op in str(err) and "bad.hlo:6" in str(err)


def test_handler_table_covers_corpus():
    ops = {op for e in MANIFEST for op in e["opcodes"]} - {"parameter"}
    assert ops <= set(HANDLERS)


# ----------------------------------------------------------------------------- mutated modules

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SMALL = ["softmax", "int32_arith", "concat_slice_pad", "reductions", "dynamic_slice", "embedding_gather",
          "conv2d_stride2_bias_relu", "causal_mask", "transpose_reshape", "fori_loop"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(_SMALL), opt=st.booleans(), data=st.data())
def test_mutated_modules_parse_and_lower_or_raise_located_errors(name, opt, data):
    """Mutated corpus texts (a number changed, a token deleted or duplicated, an opcode swapped)
    either lower or raise HloParseError/UnsupportedOpError: never anything else."""
    from hlotune.dsl.errors import HloParseError, UnsupportedOpError
    from hlotune.frontend.lower import lower_module
    from hlotune.frontend.parser import parse_hlo
    text = (DATA / f"{name}{'.opt.hlo' if opt else '.hlo'}").read_text()
    mutated = mutate_token(text, data, r"[A-Za-z_][\w.-]*|\d+|[^\s\w]",
                           ["add", "dot", "reduce", "transpose", "broadcast", "slice", "tanh"])
    try:
        lower_module(parse_hlo(mutated, file="m.hlo"))
    except (HloParseError, UnsupportedOpError) as e:
        assert "m.hlo" in str(e) or "<hlo>" in str(e) or "unsupported" in str(e)
