"""Convolutions with inf and NaN in inputs and weights, as XLA:CPU computes them.

XLA:CPU pads the input with zeros and multiplies every tap, so a padded tap under an inf or NaN
weight contributes 0 * inf = NaN; with an lhs (base) dilation it skips padding and holes (its
elemental emitter). The expectation here is numpy written out by hand: pad, take patches,
multiply, sum (in float64, so only non-finite values can differ)."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.dsl.reference import evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune


def np_conv(x, w, stride, pad, ldil, rdil, groups, skip_padding=None):
    """NHWC x HWIO convolution; a tap outside the input multiplies 0 by the weight unless the
    input is dilated, where taps off real elements are skipped (XLA:CPU). ``skip_padding``
    overrides that choice (True: the old, wrong semantics)."""
    n, h, wd, c = x.shape
    kh, kw, cg, o = w.shape
    og = o // groups
    dil = (ldil[0] > 1 or ldil[1] > 1) if skip_padding is None else skip_padding
    size = [(h - 1) * ldil[0] + 1, (wd - 1) * ldil[1] + 1]
    xd = np.zeros((n, size[0], size[1], c))
    real = np.zeros(size, bool)
    xd[:, ::ldil[0], ::ldil[1]] = x
    real[::ldil[0], ::ldil[1]] = True
    eh, ew = (kh - 1) * rdil[0] + 1, (kw - 1) * rdil[1] + 1
    oh = max((size[0] + pad[0][0] + pad[0][1] - eh) // stride[0] + 1, 0)
    ow = max((size[1] + pad[1][0] + pad[1][1] - ew) // stride[1] + 1, 0)
    out = np.zeros((n, oh, ow, o))
    with np.errstate(invalid="ignore"):
        for y in range(oh):
            for z in range(ow):
                for a in range(kh):
                    for b in range(kw):
                        p, q = y * stride[0] + a * rdil[0] - pad[0][0], z * stride[1] + b * rdil[1] - pad[1][0]
                        inside = 0 <= p < size[0] and 0 <= q < size[1]
                        if inside and not real[p, q] or not inside and dil:
                            continue
                        v = xd[:, p, q] if inside else np.zeros((n, c))
                        for g in range(groups):
                            out[:, y, z, g * og:(g + 1) * og] += v[:, g * cg:(g + 1) * cg] @ w[a, b, :, g * og:(g + 1) * og]
    return out


def _module(x, w, o_shape, stride, pad, ldil, rdil, groups):
    win = (f"size={w.shape[0]}x{w.shape[1]} stride={stride[0]}x{stride[1]} "
           f"pad={pad[0][0]}_{pad[0][1]}x{pad[1][0]}_{pad[1][1]} lhs_dilate={ldil[0]}x{ldil[1]} "
           f"rhs_dilate={rdil[0]}x{rdil[1]}")
    return f"""HloModule m
ENTRY e {{
  x = f32[{','.join(map(str, x.shape))}] parameter(0)
  w = f32[{','.join(map(str, w.shape))}] parameter(1)
  ROOT c = f32[{','.join(map(str, o_shape))}] convolution(x, w), window={{{win}}}, dim_labels=b01f_01io->b01f, feature_group_count={groups}
}}"""


def _reference(text, x, w):
    low = lower_module(parse_hlo(text, file="t.hlo"))
    with np.errstate(invalid="ignore", over="ignore"):
        return evaluate(low.outputs, dict(zip(low.params, [x, w])))[0]


def _same(got, want, what):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, what
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=f"{what}: +inf positions")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"{what}: -inf positions")
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-4, atol=1e-4, err_msg=what)


def _case(rng, n, h, wd, c, kh, kw, o, groups, x_bad=(), w_bad=()):
    x = rng.standard_normal((n, h, wd, c)).astype(np.float32)
    w = rng.standard_normal((kh, kw, c // groups, o)).astype(np.float32)
    for idx, v in x_bad:
        x[idx] = v
    for idx, v in w_bad:
        w[idx] = v
    return x, w


DEPTHWISE = {"stride": (1, 1), "pad": ((1, 1), (1, 1)), "ldil": (1, 1), "rdil": (1, 1), "groups": 4}
CASES = {
    # depthwise 3x3, SAME padding: an inf corner weight of channel 1 and an inf input pixel
    "depthwise": ({"n": 1, "h": 5, "wd": 5, "c": 4, "kh": 3, "kw": 3, "o": 4, "groups": 4,
                       "x_bad": [((0, 2, 2, 0), np.inf)], "w_bad": [((0, 0, 0, 1), np.inf)]}, DEPTHWISE),
    # dense conv, strided, asymmetric padding, NaN weight and -inf input
    "dense": ({"n": 2, "h": 6, "wd": 5, "c": 3, "kh": 3, "kw": 2, "o": 2, "groups": 1,
                   "x_bad": [((1, 0, 4, 2), -np.inf)], "w_bad": [((2, 1, 0, 1), np.nan)]},
              {"stride": (2, 1), "pad": ((2, 1), (0, 1)), "ldil": (1, 1), "rdil": (1, 1), "groups": 1}),
    # grouped, rhs-dilated and negatively padded in one dimension
    "grouped_dilated": ({"n": 1, "h": 7, "wd": 6, "c": 4, "kh": 2, "kw": 3, "o": 6, "groups": 2,
                             "w_bad": [((0, 2, 1, 4), -np.inf), ((1, 0, 0, 0), np.inf)]},
                        {"stride": (1, 2), "pad": ((3, -1), (2, 2)), "ldil": (1, 1), "rdil": (2, 1), "groups": 2}),
    # transposed-conv form (lhs dilation): padding and holes are skipped, as on XLA:CPU
    "lhs_dilated": ({"n": 1, "h": 3, "wd": 4, "c": 2, "kh": 3, "kw": 3, "o": 2, "groups": 1, "w_bad": [((0, 0, 1, 0), np.inf)]},
                    {"stride": (1, 1), "pad": ((2, 2), (1, 2)), "ldil": (2, 2), "rdil": (1, 1), "groups": 1}),
}


def _build(name, seed=0):
    shape, cfg = CASES[name]
    x, w = _case(np.random.default_rng(seed), **shape)
    want = np_conv(x.astype(np.float64), w.astype(np.float64), **cfg)
    return _module(x, w, want.shape, **cfg), x, w, want


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_hand_computed(name):
    text, x, w, want = _build(name)
    skipped = np_conv(x.astype(np.float64), w.astype(np.float64), **CASES[name][1], skip_padding=True)
    # not vacuous: padded taps under bad weights are NaN where skipping them is not
    assert (np.isnan(want) != np.isnan(skipped)).any() == (name != "lhs_dilated")
    _same(_reference(text, x, w), want, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_cpu_matches_hand_computed(name):
    text, x, w, want = _build(name)
    with np.errstate(invalid="ignore", over="ignore"):
        got = hlotune.compile(text)(x, w)
    _same(got, want, name)


def test_padded_tap_under_inf_weight_is_nan():
    """The depthwise case of the issue: only the border outputs of channel 1 see its inf corner
    weight through padding (NaN); its interior outputs see it on real pixels (inf)."""
    text, x, w, _want = _build("depthwise")
    got = _reference(text, np.ones_like(x), w)
    ch1 = got[0, :, :, 1]
    assert np.isnan(ch1[0, :]).all() and np.isnan(ch1[:, 0]).all()
    assert np.isposinf(ch1[1:, 1:]).all()
    assert np.isfinite(got[0, :, :, [0, 2, 3]]).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_convolutions_with_nonfinite_values(data):
    d = data.draw
    groups = d(st.sampled_from([1, 2]))
    c, o = groups * d(st.integers(1, 2)), groups * d(st.integers(1, 2))
    kh, kw = d(st.integers(1, 3)), d(st.integers(1, 3))
    h, wd = d(st.integers(1, 5)), d(st.integers(1, 5))
    stride = (d(st.integers(1, 2)), d(st.integers(1, 2)))
    pad = tuple((d(st.integers(-1, 2)), d(st.integers(-1, 2))) for _ in range(2))
    ldil = (d(st.integers(1, 2)), d(st.integers(1, 2)))
    rdil = (d(st.integers(1, 2)), d(st.integers(1, 2)))
    seed = d(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x, w = _case(rng, 1, h, wd, c, kh, kw, o, groups)
    bad = [np.inf, -np.inf, np.nan]
    for a in (x, w):
        flat = a.reshape(-1)
        hit = rng.random(flat.size) < 0.15
        flat[hit] = rng.choice(bad, hit.sum())
    cfg = {"stride": stride, "pad": pad, "ldil": ldil, "rdil": rdil, "groups": groups}
    want = np_conv(x.astype(np.float64), w.astype(np.float64), **cfg)
    if min(want.shape) <= 0:
        return
    _same(_reference(_module(x, w, want.shape, **cfg), x, w), want, str(cfg))


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_computed_matches_xla(name):
    """The expectation above is what XLA:CPU computes (when JAX is installed)."""
    pytest.importorskip("jax")
    from jax import lax
    _, x, w, want = _build(name)
    _, cfg = CASES[name]
    got = lax.conv_general_dilated(x, w, cfg["stride"], list(cfg["pad"]), lhs_dilation=cfg["ldil"],
                                   rhs_dilation=cfg["rdil"], feature_group_count=cfg["groups"],
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _same(np.asarray(got), want, name)
