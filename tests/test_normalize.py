"""batch-norm-training/inference/grad, stochastic-convert and dynamic-reshape
(frontend/handlers/normalize.py) against numpy statements of XLA's expansions, over shapes and
feature dimensions (hypothesis), compiled for the CPU and in the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune


def s(shape, ty="f32"):
    return f"{ty}[{','.join(map(str, shape))}]"


def bn_module(kind, shape, f, eps=1e-3):
    c = s((shape[f],))
    x = s(shape)
    if kind == "training":
        params, root = [x, c, c], f"({x}, {c}, {c}) batch-norm-training(p0, p1, p2)"
    elif kind == "inference":
        params, root = [x, c, c, c, c], f"{x} batch-norm-inference(p0, p1, p2, p3, p4)"
    else:
        params, root = [x, c, c, c, x], f"({x}, {c}, {c}) batch-norm-grad(p0, p1, p2, p3, p4)"
    lines = "\n".join(f"  p{k} = {t} parameter({k})" for k, t in enumerate(params))
    return f"HloModule bn\nENTRY e {{\n{lines}\n  ROOT r = {root}, epsilon={eps}, feature_index={f}\n}}\n"


def bn_numpy(kind, f, eps, x, *p):
    axes = tuple(d for d in range(x.ndim) if d != f)
    b = [1] * x.ndim
    b[f] = -1

    def bc(v):
        return v.reshape(b)
    if kind == "training":
        scale, offset = p
        mean, var = x.mean(axes), (x * x).mean(axes) - x.mean(axes) ** 2
        return (x - bc(mean)) / np.sqrt(bc(var) + eps) * bc(scale) + bc(offset), mean, var
    if kind == "inference":
        scale, offset, mean, var = p
        return ((x - bc(mean)) / np.sqrt(bc(var) + eps) * bc(scale) + bc(offset),)
    scale, mean, var, dy = p
    n = x.size // x.shape[f]
    xc = x - bc(mean)
    g_off = dy.sum(axes)
    g_scale = (dy * xc).sum(axes) / np.sqrt(var + eps)
    gx = bc(scale) / np.sqrt(bc(var) + eps) / n * (n * dy - bc(g_off) - xc * bc((dy * xc).sum(axes)) / (bc(var) + eps))
    return gx, g_scale, g_off


def inputs(kind, shape, f, r):
    x = r.standard_normal(shape).astype(np.float32) * 2 + 0.5
    c = shape[f]
    scale, offset = r.uniform(0.5, 2, c).astype(np.float32), r.standard_normal(c).astype(np.float32)
    if kind == "training":
        return [x, scale, offset]
    mean, var = r.standard_normal(c).astype(np.float32), r.uniform(0.5, 3, c).astype(np.float32)
    if kind == "inference":
        return [x, scale, offset, mean, var]
    return [x, scale, mean, var, r.standard_normal(shape).astype(np.float32)]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["training", "inference", "grad"]),
       st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_batch_norm_matches_its_formulas(kind, shape, data):
    f = data.draw(st.integers(0, len(shape) - 1))
    r = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    args = inputs(kind, tuple(shape), f, r)
    low = lower_module(parse_hlo(bn_module(kind, tuple(shape), f)))
    got = evaluate(low.outputs, args)
    want = bn_numpy(kind, f, np.float32(1e-3), *(a.astype(np.float64) for a in args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("kind", ["training", "inference", "grad"])
def test_batch_norm_compiled(kind):
    shape, f = (4, 6, 5, 3), 3
    args = inputs(kind, shape, f, np.random.default_rng(3))
    got = hlotune.compile(hlotune.load_hlo(bn_module(kind, shape, f)), target="cpu")(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = bn_numpy(kind, f, np.float32(1e-3), *(a.astype(np.float64) for a in args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)


def stochastic_numpy(x, rnd, out):
    """XLA's StochasticConvertDecomposer, in numpy."""
    info = np.iinfo(out)
    a = np.abs(x)
    whole = np.floor(a)
    frac = (a - whole).astype(np.float32 if x.dtype == np.float16 else x.dtype)
    with np.errstate(invalid="ignore"):
        fixed = np.clip(np.nan_to_num(frac * 2.0 ** (rnd.dtype.itemsize * 8), nan=0), 0,
                        np.iinfo(rnd.dtype).max).astype(rnd.dtype)
        t = np.nan_to_num(whole, nan=0, posinf=info.max, neginf=info.min).clip(info.min, info.max).astype(out)
    t = np.where(rnd < fixed, t + out(1), t)
    r = np.where(np.sign(x) < 0, -t, t)
    r = np.where(x <= info.min, info.min, r)
    return np.where(x >= info.max, info.max, r).astype(out)


@pytest.mark.parametrize("ty, ut, out, np_in, np_u", [("f32", "u32", "s8", np.float32, np.uint32),
                                                       ("f32", "u32", "s32", np.float32, np.uint32),
                                                       ("f16", "u16", "s8", np.float16, np.uint16)])
def test_stochastic_convert(ty, ut, out, np_in, np_u):
    r = np.random.default_rng(4)
    x = np.concatenate([r.uniform(-140, 140, 2000), [0.5, -0.5, 2.0, -2.0, 1e9, -1e9, np.nan, 127.9, -128.5]])
    with np.errstate(over="ignore"):
        x = x.astype(np_in)      # 1e9 is inf in f16
    rnd = r.integers(0, np.iinfo(np_u).max, x.shape, dtype=np_u)
    n = len(x)
    text = (f"HloModule sc\nENTRY e {{\n  x = {ty}[{n}] parameter(0)\n  r = {ut}[{n}] parameter(1)\n"
            f"  ROOT c = {out}[{n}] stochastic-convert(x, r)\n}}\n")
    npo = np.dtype("int8" if out == "s8" else "int32").type
    want = stochastic_numpy(x, rnd, npo)
    low = lower_module(parse_hlo(text))
    np.testing.assert_array_equal(evaluate(low.outputs, [x, rnd])[0], want)
    np.testing.assert_array_equal(hlotune.compile(hlotune.load_hlo(text), target="cpu")(x, rnd), want)
    fin = np.abs(x) < 100
    assert np.all((want[fin] == np.floor(x[fin])) | (want[fin] == np.ceil(x[fin])))


def test_stochastic_rounding_is_unbiased():
    x = np.full(20000, 2.3, np.float32)
    rnd = np.random.default_rng(5).integers(0, 2**32, x.shape, dtype=np.uint64).astype(np.uint32)
    text = ("HloModule sc\nENTRY e {\n  x = f32[20000] parameter(0)\n  r = u32[20000] parameter(1)\n"
            "  ROOT c = s32[20000] stochastic-convert(x, r)\n}\n")
    (c,) = evaluate(lower_module(parse_hlo(text)).outputs, [x, rnd])
    assert set(np.unique(c)) == {2, 3} and abs(c.mean() - 2.3) < 0.02


def test_dynamic_reshape_to_a_static_shape():
    text = ("HloModule d\nENTRY e {\n  x = f32[2,6] parameter(0)\n  a = s32[] constant(3)\n"
            "  b = s32[] constant(4)\n  ROOT r = f32[3,4] dynamic-reshape(x, a, b)\n}\n")
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(evaluate(lower_module(parse_hlo(text)).outputs, [x])[0], x.reshape(3, 4))
    bad = text.replace("dynamic-reshape(x, a, b)", "dynamic-reshape(x, a)")
    with pytest.raises(HloParseError, match="one scalar size per result dimension"):
        lower_module(parse_hlo(bad, verify=False))


def test_stablehlo_batch_norm_ops():
    text = """func.func @main(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>)
        -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
      %1 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
      %2:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %x) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
      return %0#0, %0#1, %0#2, %1, %2#0, %2#1, %2#2 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
    }"""
    from hlotune.frontend.stablehlo import parse_stablehlo
    r = np.random.default_rng(6)
    x = r.standard_normal((2, 3, 4)).astype(np.float32)
    s, o, m = (r.standard_normal(3).astype(np.float32) for _ in range(3))
    v = r.uniform(0.5, 2, 3).astype(np.float32)
    got = evaluate(lower_module(parse_stablehlo(text)).outputs, [x, s, o, m, v])
    eps = np.float32(1e-3)
    want = list(bn_numpy("training", 1, eps, *(a.astype(np.float64) for a in (x, s, o))))
    want += list(bn_numpy("inference", 1, eps, *(a.astype(np.float64) for a in (x, s, o, m, v))))
    want += list(bn_numpy("grad", 1, eps, *(a.astype(np.float64) for a in (x, s, m, v, x))))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)
