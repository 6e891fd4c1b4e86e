"""complex64/complex128: XLA's formulas (dsl/complexmath.py) against numpy on ordinary values and
against XLA's own special-value rules; the generated C (and OpenCL where there is a device) against
the reference on a grid of special values; HLO ops on complex (complex/real/imag, convert, compare,
dot, reduce) against numpy."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hlotune.dsl import dtypes as dt
from hlotune.dsl.ops import Op
from hlotune.dsl.reference import eval_op, evaluate
from hlotune.runtime.module import CompiledGraph
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

CTYPES = (dt.complex64, dt.complex128)
RTOL = {dt.complex64: 2e-5, dt.complex128: 1e-12}
UNARY = (Op.NEG, Op.ABS, Op.SIGN, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT, Op.RSQRT, Op.CBRT,
         Op.SIN, Op.COS, Op.TAN, Op.TANH)
BINARY = (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.ATAN2, Op.MAX, Op.MIN, Op.EQ, Op.NE)


def _numpy_unary(op, z):
    return {Op.NEG: np.negative, Op.ABS: np.abs, Op.SIGN: lambda x: x / np.abs(x), Op.EXP: np.exp,
            Op.EXPM1: np.expm1, Op.LOG: np.log, Op.LOG1P: np.log1p, Op.SQRT: np.sqrt,
            Op.RSQRT: lambda x: 1 / np.sqrt(x), Op.CBRT: lambda x: np.abs(x) ** (1 / 3) * np.exp(1j * np.angle(x) / 3),
            Op.SIN: np.sin, Op.COS: np.cos, Op.TAN: np.tan, Op.TANH: np.tanh}[op](z)


def _numpy_binary(op, a, b):
    if op is Op.ATAN2:      # -i log((x + iy) / sqrt(x^2 + y^2)) with y = a, x = b
        return -1j * np.log((b + 1j * a) / np.sqrt(b * b + a * a))
    if op in (Op.MAX, Op.MIN):
        first = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
        return np.where(first if op is Op.MAX else ~first & ~((a.real == b.real) & (a.imag == b.imag)), a, b)
    return {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide,
            Op.POW: np.power, Op.EQ: np.equal, Op.NE: np.not_equal}[op](a, b)


def _random(d, n, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * scale + 1j * rng.standard_normal(n) * scale).astype(d.np)


def _close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if np.iscomplexobj(want) else ((got, want),):
        mag = np.abs(want[np.isfinite(want)])
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol + rtol * float(mag.max(initial=0.0)), equal_nan=True)


@pytest.mark.parametrize("d", CTYPES, ids=str)
@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.name)
def test_unary_formulas_match_numpy(d, op):
    z = _random(d, 200, 1, 1.5)
    out = d.component if op is Op.ABS else d
    want = _numpy_unary(op, z.astype(np.complex128))
    _close(eval_op(op, out, [z]), want, RTOL[d] * 20)


@pytest.mark.parametrize("d", CTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.name)
def test_binary_formulas_match_numpy(d, op):
    a, b = _random(d, 200, 2), _random(d, 200, 3)
    if op in (Op.EQ, Op.NE):
        b[::3] = a[::3]
    out = dt.bool_ if op in (Op.EQ, Op.NE) else d
    want = _numpy_binary(op, a.astype(np.complex128), b.astype(np.complex128))
    got = eval_op(op, out, [a, b])
    if out.is_bool:
        np.testing.assert_array_equal(got, want)
    else:
        _close(got, want, RTOL[d] * 50)


INF, NAN = float("inf"), float("nan")
#: XLA's results where C99's Annex G or numpy differ, from the emitter's formulas
SPECIAL = [
    (Op.MUL, (INF + 0j, 1 + 0j), complex(INF, NAN)),        # no Annex G recovery
    (Op.DIV, (1 + 1j, 0j), complex(INF, INF)),             # zero denominator: inf * sign(br) * a
    (Op.DIV, (complex(INF, 0), 1 + 1j), complex(INF, -INF)),
    (Op.DIV, (1 + 1j, complex(INF, 0)), 0j),
    (Op.SQRT, (complex(-INF, 0),), complex(0, INF)),
    (Op.SQRT, (0j,), 0j),
    (Op.RSQRT, (0j,), complex(INF, NAN)),
    (Op.TANH, (complex(INF, 1),), 1 + 0j),
    (Op.TANH, (complex(1, INF),), complex(NAN, NAN)),
    (Op.TANH, (complex(NAN, 0),), complex(NAN, 0)),
    (Op.ABS, (complex(INF, NAN),), NAN),                     # C99 says inf; XLA's max/min give NaN
    (Op.ABS, (complex(3, -4),), 5.0),
    (Op.EXP, (complex(-INF, 0),), 0j),
    (Op.LOG, (0j,), complex(-INF, 0)),
    (Op.POW, (0j, 0j), 1 + 0j),
    (Op.POW, (complex(INF, 0), 2 + 0j), complex(INF, 0)),
    (Op.POW, (complex(INF, 0), -2 + 0j), 0j),
    (Op.SIGN, (0j,), 0j),
    (Op.SIGN, (complex(NAN, 0),), complex(NAN, NAN)),
    (Op.EQ, (complex(NAN, 0), complex(NAN, 0)), False),
    (Op.NE, (complex(NAN, 0), complex(NAN, 0)), True),
    (Op.MAX, (complex(1, 5), complex(1, 7)), complex(1, 7)),  # StableHLO: lexicographic
]


@pytest.mark.parametrize("d", CTYPES, ids=str)
@pytest.mark.parametrize("op,args,want", SPECIAL, ids=lambda x: getattr(x, "name", None) or str(x))
def test_xla_special_values(d, op, args, want):
    arrays = [np.array([a], d.np) for a in args]
    out = dt.bool_ if isinstance(want, bool) else d.component if isinstance(want, float) else d
    got = eval_op(op, out, arrays)[0]
    assert _same(got, want), f"{op.name}{args}: {got} != {want}"
    cgot = _grid_kernel(d, op)(*[np.resize(a, 8) for a in arrays])[0] if op in UNARY + BINARY else got
    assert _same(cgot, want), f"C {op.name}{args}: {cgot} != {want}"


def _same(a, b) -> bool:
    parts = [(complex(a).real, complex(b).real), (complex(a).imag, complex(b).imag)] \
        if isinstance(b, complex) else [(a, b)]
    return all((np.isnan(x) and np.isnan(y)) or x == y for x, y in parts)


VALUES = (0.0, -0.0, 1.0, -1.5, 0.5, 3.0, 1e30, -1e30, INF, -INF, NAN)
GRID = np.array([complex(r, i) for r in VALUES for i in VALUES])


def _grid_kernel(d, op, target="cpu"):
    return _kernel(d, (op,), 8, target)


@functools.cache
def _kernel(d, ops, n, target="cpu"):
    """One compiled graph computing each op of ``ops`` on n-element inputs."""
    a = dsl.placeholder((n,), d, "a")
    b = dsl.placeholder((n,), d, "b")
    binary = [op for op in ops if op in BINARY]

    def out(op):
        if op in BINARY:
            return dsl.compute((n,), lambda i: dsl.binary(op, a[i], b[i]), name=op.name.lower())
        return dsl.compute((n,), lambda i: dsl.unary(op, a[i]), name=op.name.lower())
    outs = [out(op) for op in ops]
    return CompiledGraph(outs, [a, b] if binary else [a], target)


def _check_grid(d, target):
    n = GRID.size
    z = GRID.astype(d.np)
    zz = np.repeat(z, n)
    ww = np.tile(z, n)
    ref_u = [eval_op(op, d.component if op is Op.ABS else d, [z]) for op in UNARY]
    got_u = _kernel(d, UNARY, n, target)(z)
    ref_b = [eval_op(op, dt.bool_ if op in (Op.EQ, Op.NE) else d, [zz, ww]) for op in BINARY]
    got_b = _kernel(d, BINARY, n * n, target)(zz, ww)
    # trigonometry of 1e30-sized f32 arguments differs between libm and numpy's own SIMD code
    sane_u = (np.abs(z.real) < 1e6) & (np.abs(z.imag) < 1e6)
    sane_b = (np.abs(zz.real) < 1e6) & (np.abs(ww.real) < 1e6) & (np.abs(zz.imag) < 1e6) & (np.abs(ww.imag) < 1e6)
    for op, g, r in list(zip(UNARY, got_u, ref_u)) + list(zip(BINARY, got_b, ref_b)):
        for gp, rp in ((g.real, r.real), (g.imag, r.imag)) if np.iscomplexobj(r) else ((g, r),):
            gp, rp = gp.astype(np.float64), rp.astype(np.float64)
            same_kind = (np.isnan(gp) == np.isnan(rp)) & (np.isinf(gp) == np.isinf(rp))
            assert same_kind.all(), f"{target} {d} {op.name}: NaN/inf differ at {np.argwhere(~same_kind)[:4].ravel()}"
            if op is Op.ATAN2:  # its log sits on a branch cut here: one ulp flips pi to -pi
                continue
            fin = np.isfinite(rp) & (sane_u if op in UNARY else sane_b)
            np.testing.assert_allclose(gp[fin], rp[fin], rtol=RTOL[d] * 10, atol=1e-30, err_msg=f"{op.name}")
            inf = np.isinf(rp) & (sane_u if op in UNARY else sane_b)
            np.testing.assert_array_equal(gp[inf], rp[inf], err_msg=f"{op.name}")


@pytest.mark.parametrize("d", CTYPES, ids=str)
def test_c_matches_the_reference_on_special_values(d):
    """Every unary op on a grid of 121 complex values with zeros, infinities and NaNs in either
    part, every binary op on each pair: same NaN/inf positions, finite parts within rtol."""
    _check_grid(d, "cpu")


def _opencl():
    from hlotune.dsl.errors import HlotuneError
    from hlotune.runtime.targets import get_target
    try:
        return get_target("opencl")
    except HlotuneError:     # no pyopencl (MissingDependencyError), no device (TargetError)
        return None


def test_opencl_matches_the_reference_on_special_values():
    t = _opencl()
    if t is None:
        pytest.skip("no OpenCL device")
    _check_grid(dt.complex64, t)


def test_cuda_refuses_complex_by_name():
    from hlotune.dsl.errors import TargetError
    from hlotune.runtime.codegen.cuda import render_cuda
    from hlotune.schedules.lower import lower
    from hlotune.schedules.schedule import Schedule
    a = dsl.placeholder((4,), "complex64", "a")
    out = dsl.compute((4,), lambda i: a[i] * a[i], name="sq")
    with pytest.raises(TargetError, match="complex64"):
        render_cuda(lower(Schedule([out]), "k"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.complex_numbers(allow_nan=True, allow_infinity=True), min_size=8, max_size=8),
       st.lists(st.complex_numbers(allow_nan=True, allow_infinity=True), min_size=8, max_size=8))
def test_c_mul_div_match_the_reference(xs, ys):
    a, b = np.array(xs, np.complex128), np.array(ys, np.complex128)
    got = _kernel(dt.complex128, (Op.MUL, Op.DIV), 8)(a, b)
    for op, g in zip((Op.MUL, Op.DIV), got):
        r = eval_op(op, dt.complex128, [a, b])
        for gp, rp in ((g.real, r.real), (g.imag, r.imag)):
            assert ((np.isnan(gp) & np.isnan(rp)) | np.isclose(gp, rp, rtol=1e-12, atol=0)).all(), (op, a, b, g, r)


# ----------------------------------------------------------------------------- HLO ops

def _run(text, *args):
    m = hlotune.load_hlo(text)
    got = hlotune.compile(m)(*args)
    ref = evaluate(list(m.outputs), list(args), list(m.params))
    return (got if isinstance(got, tuple) else (got,)), ref


def test_hlo_complex_parts_convert_compare_select():
    text = """HloModule m
ENTRY e {
  re = f32[6] parameter(0)
  im = f32[6] parameter(1)
  z = c64[6] complex(re, im)
  r = f32[6] real(z)
  i = f32[6] imag(z)
  w = c128[6] convert(z)
  f = f32[6] convert(z)
  zr = c64[6] convert(re)
  eq = pred[6] compare(z, zr), direction=EQ
  ne = pred[6] compare(z, zr), direction=NE
  s = c64[6] select(eq, z, zr)
  ir = f32[6] imag(re)
  ROOT t = (c64[6], f32[6], f32[6], c128[6], f32[6], pred[6], pred[6], c64[6], f32[6]) tuple(z, r, i, w, f, eq, ne, s, ir)
}"""
    re = np.array([1, -2, 0, 3.5, np.inf, np.nan], np.float32)
    im = np.array([0, 1, -0.0, 2, 0, 0], np.float32)
    got, ref = _run(text, re, im)
    z = re + 1j * im.astype(np.complex64)
    z.real, z.imag = re, im
    real = (im == 0) & ~np.isnan(re)
    want = [z, re, im, z.astype(np.complex128), re, real, ~real,
            np.where(im == 0, z, re.astype(np.complex64)), np.zeros(6, np.float32)]
    for g, r, w in zip(got, ref, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(r, w)


def test_hlo_complex_dot_and_reduce_match_numpy():
    text = """HloModule m
add {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT s = c64[] add(a, b)
}
ENTRY e {
  x = c64[5,7] parameter(0)
  y = c64[7,3] parameter(1)
  d = c64[5,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = c64[] constant((0, 0))
  r = c64[5] reduce(x, zero), dimensions={1}, to_apply=add
  ROOT t = (c64[5,3], c64[5]) tuple(d, r)
}"""
    x = _random(dt.complex64, 35, 5).reshape(5, 7)
    y = _random(dt.complex64, 21, 6).reshape(7, 3)
    (d, r), (dr, rr) = _run(text, x, y)
    for g in (d, dr):
        _close(g, x.astype(np.complex128) @ y.astype(np.complex128), 1e-5)
    for g in (r, rr):
        _close(g, x.astype(np.complex128).sum(axis=1), 1e-5)


def test_stablehlo_complex_ops_and_literals():
    text = """func.func @main(%x: tensor<3xcomplex<f32>>) -> (tensor<3xcomplex<f32>>, tensor<3xf32>) {
  %c = stablehlo.constant dense<[(1.0, 2.0), (0x7F800000, 0.0), (-0.5, 0x80000000)]> : tensor<3xcomplex<f32>>
  %m = stablehlo.multiply %x, %c : tensor<3xcomplex<f32>>
  %e = stablehlo.exponential %m : tensor<3xcomplex<f32>>
  %a = stablehlo.abs %e : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
  func.return %e, %a : tensor<3xcomplex<f32>>, tensor<3xf32>
}"""
    x = np.array([0.5 + 0.5j, 1 + 0j, 2 - 1j], np.complex64)
    (e, a), (er, ar) = _run(text, x)
    c = np.array([1 + 2j, complex(np.inf, 0), complex(-0.5, -0.0)], np.complex128)
    with np.errstate(all="ignore"):
        m = eval_op(Op.MUL, dt.complex128, [x.astype(np.complex128), c])
    _close(e, er, 1e-5)
    _close(a, ar, 1e-5)
    assert np.isnan(e[1].imag) and np.isnan(m[1].imag)    # (1 + 0i)(inf + 0i): 0 * inf in the imaginary part
