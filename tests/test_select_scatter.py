"""select-and-scatter (frontend/handlers/select_scatter.py): the two-compute lowering of
pooling gradients equals XLA's sequential definition (windows and taps in row-major order, the
first of equal candidates kept) for any shape, window, stride and padding, with ties (hypothesis);
other select/scatter computations run as the sequential definition itself; compiled CPU code
and StableHLO's form agree."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.frontend.handlers.select_scatter import select_and_scatter_numpy
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune

_CMP = {"GE": np.greater_equal, "GT": np.greater, "LE": np.less_equal, "LT": np.less}


def module(xs, ss, size, stride, pad, direction="GE", scatter="add", ty="f32") -> str:
    def dims(s):
        return ",".join(map(str, s))
    win = (f"size={'x'.join(map(str, size))} stride={'x'.join(map(str, stride))} "
           f"pad={'x'.join(f'{lo}_{hi}' for lo, hi in pad)}")
    return f"""HloModule sas
select {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = pred[] compare(a, b), direction={direction}
}}
scatter {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = {ty}[] {scatter}(a, b)
}}
ENTRY e {{
  x = {ty}[{dims(xs)}] parameter(0)
  s = {ty}[{dims(ss)}] parameter(1)
  i = {ty}[] parameter(2)
  ROOT r = {ty}[{dims(xs)}] select-and-scatter(x, s, i), window={{{win}}}, select=select, scatter=scatter
}}
"""


def grid(xs, size, stride, pad):
    return tuple((n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in zip(xs, size, stride, pad))


def reference(text, *args):
    low = lower_module(parse_hlo(text))
    return evaluate(low.outputs, list(args))[0]


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    size = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    pad = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(rank))
    xs = tuple(draw(st.integers(max(1, k - lo - hi), 6)) for k, (lo, hi) in zip(size, pad))
    return xs, size, stride, pad


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(sorted(_CMP)), st.sampled_from(["add", "maximum"]), st.integers(0, 2**31))
def test_pooling_gradient_equals_the_sequential_definition(case, direction, scatter, seed):
    xs, size, stride, pad = case
    ss = grid(xs, size, stride, pad)
    r = np.random.default_rng(seed)
    x = r.integers(-2, 3, xs).astype(np.float32)        # small integers: many ties
    s = r.standard_normal(ss).astype(np.float32)
    init = np.float32(r.integers(-1, 2))
    text = module(xs, ss, size, stride, pad, direction, scatter)
    got = reference(text, x, s, init)
    comb = np.add if scatter == "add" else np.maximum
    want = select_and_scatter_numpy(x, s, init, size, stride, pad, _CMP[direction], comb)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_compiled_cpu_and_stablehlo_forms_agree():
    xs, size, stride, pad = (2, 7, 6, 3), (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (0, 1), (0, 0))
    ss = grid(xs, size, stride, pad)
    r = np.random.default_rng(1)
    x, s = r.standard_normal(xs).astype(np.float32), r.standard_normal(ss).astype(np.float32)
    text = module(xs, ss, size, stride, pad)
    want = select_and_scatter_numpy(x, s, np.float32(0), size, stride, pad, np.greater_equal, np.add)
    got = hlotune.compile(hlotune.load_hlo(text), target="cpu")(x, s, np.float32(0))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    mlir = f"""func.func @main(%x: tensor<2x7x6x3xf32>, %s: tensor<{'x'.join(map(str, ss))}xf32>) -> tensor<2x7x6x3xf32> {{
      %c = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = "stablehlo.select_and_scatter"(%x, %s, %c) <{{padding = dense<[[0, 0], [1, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}}> ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %1 = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %1 : tensor<i1>
      }}, {{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %1 = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %1 : tensor<f32>
      }}) : (tensor<2x7x6x3xf32>, tensor<{'x'.join(map(str, ss))}xf32>, tensor<f32>) -> tensor<2x7x6x3xf32>
      return %0 : tensor<2x7x6x3xf32>
    }}"""
    low = lower_module(parse_stablehlo(mlir))
    np.testing.assert_allclose(evaluate(low.outputs, [x, s])[0], want, rtol=1e-6, atol=1e-6)


def test_other_computations_run_the_sequential_definition():
    """A select that is no ordering of its parameters (keep the current while its square is
    smaller) and a multiplying scatter go through the extern op."""
    xs, size, stride, pad = (5, 4), (2, 2), (1, 2), ((1, 0), (0, 0))
    ss = grid(xs, size, stride, pad)
    text = module(xs, ss, size, stride, pad, scatter="multiply").replace(
        "ROOT c = pred[] compare(a, b), direction=GE",
        "aa = f32[] multiply(a, a)\n  bb = f32[] multiply(b, b)\n  ROOT c = pred[] compare(aa, bb), direction=LT")
    r = np.random.default_rng(2)
    x, s = r.standard_normal(xs).astype(np.float32), r.standard_normal(ss).astype(np.float32)
    got = reference(text, x, s, np.float32(1.5))
    want = select_and_scatter_numpy(x, s, np.float32(1.5), size, stride, pad,
                                    lambda a, b: a * a < b * b, np.multiply)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_inconsistent_windows_are_refused():
    from hlotune.dsl.errors import UnsupportedOpError
    wrong_grid = module((6, 4), (2, 2), (2, 2), (2, 2), ((0, 0), (0, 0)))     # the grid is 3x2
    with pytest.raises(UnsupportedOpError, match="source \\[2, 2\\] must be the window grid"):
        lower_module(parse_hlo(wrong_grid, verify=False))
    dilated = module((4, 4), (2, 2), (2, 2), (2, 2), ((0, 0), (0, 0))).replace("pad=0_0x0_0", "lhs_dilate=2x1")
    with pytest.raises(UnsupportedOpError, match="no dilation"):
        lower_module(parse_hlo(dilated, verify=False))
