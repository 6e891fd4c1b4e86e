"""chlo.ragged_dot (HLO ragged-dot) in its three modes and chlo.scan
(frontend/handlers/ragged.py), against numpy statements of their definitions: groups of random
sizes (empty ones and rows past the last group included, hypothesis), batched group sizes,
forward and reverse scans with several inputs and carries."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hlotune.frontend.lower import lower_module
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.errors import HloParseError
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune


def t(shape, ty="f32"):
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{ty}>"


def ragged_module(ls, rs, gs, out, dims, gty="i64"):
    lb, rb, lc, rc, lr, rg = (", ".join(map(str, d)) for d in dims)
    return f"""func.func @main(%l: {t(ls)}, %r: {t(rs)}, %g: {t(gs, gty)}) -> {t(out)} {{
  %0 = "chlo.ragged_dot"(%l, %r, %g) {{ragged_dot_dimension_numbers = #chlo.ragged_dot<
      lhs_batching_dimensions = [{lb}], rhs_batching_dimensions = [{rb}],
      lhs_contracting_dimensions = [{lc}], rhs_contracting_dimensions = [{rc}],
      lhs_ragged_dimensions = [{lr}], rhs_group_dimensions = [{rg}]>}} : ({t(ls)}, {t(rs)}, {t(gs, gty)}) -> {t(out)}
  return %0 : {t(out)}
}}"""


def evaluate_text(text, *args, compiled=False):
    if compiled:
        out = hlotune.compile(hlotune.load_hlo(text), target="cpu")(*args)
        return out if isinstance(out, tuple) else (out,)
    low = lower_module(parse_stablehlo(text))
    return tuple(evaluate(low.outputs, dict(zip(low.params, args))))


def groups_of(sizes, n):
    """Group of each of n positions (len(sizes): past the last group)."""
    ends = np.cumsum(sizes)
    return np.array([int(np.sum(ends <= p)) for p in range(n)])


@st.composite
def sizes(draw, g, n):
    return [draw(st.integers(0, n)) for _ in range(g)]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 7), st.integers(1, 4), st.integers(1, 3), st.data())
def test_mode1_rows_use_their_groups_rhs(g, m, k, n, data):
    gs = np.array(data.draw(sizes(g, m)), np.int64)
    r = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    lhs, rhs = r.standard_normal((m, k)).astype(np.float32), r.standard_normal((g, k, n)).astype(np.float32)
    text = ragged_module((m, k), (g, k, n), (g,), (m, n), ([], [], [1], [1], [0], [0]))
    (got,) = evaluate_text(text, lhs, rhs, gs)
    grp = groups_of(gs, m)
    want = np.stack([lhs[i] @ rhs[grp[i]] if grp[i] < g else np.zeros(n, np.float32) for i in range(m)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 7), st.integers(1, 3), st.data())
def test_mode2_one_product_per_group_of_k(g, m, k, n, data):
    gs = np.array(data.draw(sizes(g, k)), np.int32)
    r = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    lhs, rhs = r.standard_normal((m, k)).astype(np.float32), r.standard_normal((k, n)).astype(np.float32)
    text = ragged_module((m, k), (k, n), (g,), (g, m, n), ([], [], [1], [0], [1], []), "i32")
    (got,) = evaluate_text(text, lhs, rhs, gs)
    grp = groups_of(gs, k)
    want = np.stack([lhs[:, grp == j] @ rhs[grp == j] for j in range(g)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batched_group_sizes_and_mode3_compiled():
    r = np.random.default_rng(1)
    b, m, k, n, g = 2, 5, 3, 4, 3
    lhs, rhs = r.standard_normal((b, m, k)).astype(np.float32), r.standard_normal((g, b, k, n)).astype(np.float32)
    gs = np.array([[1, 2, 1], [0, 5, 0]], np.int64)
    text = ragged_module((b, m, k), (g, b, k, n), (b, g), (b, m, n), ([0], [1], [2], [2], [1], [0]))
    want = np.zeros((b, m, n), np.float32)
    for bi in range(b):
        grp = groups_of(gs[bi], m)
        for i in range(m):
            if grp[i] < g:
                want[bi, i] = lhs[bi, i] @ rhs[grp[i], bi]
    for compiled in (False, True):
        np.testing.assert_allclose(evaluate_text(text, lhs, rhs, gs, compiled=compiled)[0], want,
                                   rtol=1e-5, atol=1e-5)
    rhs3 = r.standard_normal((b, k, n)).astype(np.float32)
    text3 = ragged_module((b, m, k), (b, k, n), (b,), (b, m, n), ([0], [0], [2], [1], [0], []))
    np.testing.assert_allclose(evaluate_text(text3, lhs, rhs3, np.array([1, 1]))[0], lhs @ rhs3,
                               rtol=1e-5, atol=1e-5)


SCAN = """func.func @main(%x: tensor<3x5xf32>, %i: tensor<3x5xi32>, %c0: tensor<3xf32>, %c1: tensor<3xi32>)
    -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>) {
  %0:4 = chlo.scan(%x, %i) inits(%c0, %c1) dimension=1 REVERSE {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xi32>, %ca: tensor<3xf32>, %cb: tensor<3xi32>):
    %s = stablehlo.add %a, %ca : tensor<3xf32>
    %m = stablehlo.maximum %b, %cb : tensor<3xi32>
    stablehlo.return %s, %m, %s, %m : tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xi32>
  } : (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>) -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>
}"""


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_stacks_outputs_and_returns_carries(reverse):
    text = SCAN.replace(" REVERSE", " attributes {is_reverse = true}" if reverse else "")
    r = np.random.default_rng(2)
    x, i = r.standard_normal((3, 5)).astype(np.float32), r.integers(-9, 9, (3, 5)).astype(np.int32)
    c0, c1 = np.float32([1, 2, 3]), np.int32([0, 5, -20])
    xs, is_ = (x[:, ::-1], i[:, ::-1]) if reverse else (x, i)
    sums = np.cumsum(xs, axis=1) + c0[:, None]
    maxs = np.maximum.accumulate(np.concatenate([c1[:, None], is_], axis=1), axis=1)[:, 1:]
    if reverse:
        sums, maxs = sums[:, ::-1], maxs[:, ::-1]
    for compiled in (False, True):
        out = evaluate_text(text, x, i, c0, c1, compiled=compiled)
        np.testing.assert_allclose(out[0], sums, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(out[1], maxs)
        np.testing.assert_allclose(out[2], sums[:, 0] if reverse else sums[:, -1], rtol=1e-5)
        np.testing.assert_array_equal(out[3], maxs[:, 0] if reverse else maxs[:, -1])


#: SCAN returning only its first output, so the parser's own checks of the function's results
#: leave the scan's declared result types to the scan's verifier
_SCAN1 = SCAN.replace(" REVERSE", "").replace(
    "-> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>) {\n  %0:4",
    "-> tensor<3x5xf32> {\n  %0:4").replace(
    "return %0#0, %0#1, %0#2, %0#3 : tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>",
    "return %0#0 : tensor<3x5xf32>")
_SCAN_TYPE = "-> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<3xi32>)\n  return"


@pytest.mark.parametrize("old,new,says", [
    (_SCAN_TYPE, _SCAN_TYPE.replace("tensor<3xf32>", "tensor<0xf32>"), "carry 0 is f32[0], but its init is f32[3]"),
    (_SCAN_TYPE, _SCAN_TYPE.replace("tensor<3x5xi32>", "tensor<3x4xi32>"), "one length along dimension 1"),
    (_SCAN_TYPE, _SCAN_TYPE.replace("tensor<3x5xi32>", "tensor<3x5x1xi32>"), "s32[3,1]"),
    ("stablehlo.return %s, %m, %s, %m : tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xi32>",
     "stablehlo.return %s, %m, %s, %s : tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>", "body"),
    ("dimension=1", "dimension=2", "dimension 2 must be a dimension of every input and output"),
])
def test_scan_result_types_are_checked_against_inits_inputs_and_body(old, new, says):
    """A scan whose declared results disagree with its inits, inputs or body is a located parse
    error, never a wrong-sized array (hypothesis found a carry typed tensor<0xf32>)."""
    assert _SCAN1.count(old) == 1
    with pytest.raises(HloParseError, match=re.escape(says)) as e:
        evaluate_text(_SCAN1.replace(old, new), np.zeros((3, 5), np.float32), np.zeros((3, 5), np.int32),
                      np.zeros(3, np.float32), np.zeros(3, np.int32))
    assert e.value.line == 3, str(e.value)


def test_scan_returning_its_first_output_only_runs():
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = evaluate_text(_SCAN1, x, np.zeros((3, 5), np.int32), np.ones(3, np.float32), np.zeros(3, np.int32))
    np.testing.assert_allclose(out[0], np.cumsum(x, axis=1) + 1)
