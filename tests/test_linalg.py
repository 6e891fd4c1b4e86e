"""Linear algebra (frontend/handlers/linalg.py, custom_call.py): ``cholesky`` and
``triangular-solve`` in every option combination, batched, reading only their triangle; JAX's
LAPACK custom calls (potrf, getrf, geqrf + orgqr, syevd, gesdd/gesvd, trsm) checked by the
identities they promise; the StableHLO forms (layout attributes ``tensor<2xindex>`` included);
``topk``; sharding annotations; refused targets."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hlotune.dsl.errors import UnsupportedOpError
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune

R = np.random.default_rng(5)


def run(text: str, *args, compiled: bool = False):
    """Outputs of an HLO or StableHLO module (the numpy reference, or compiled for the cpu)."""
    if compiled:
        out = hlotune.compile(hlotune.load_hlo(text), target="cpu")(*args)
        return out if isinstance(out, tuple) else (out,)
    mod = parse_stablehlo(text) if "func.func" in text else parse_hlo(text)
    low = lower_module(mod)
    return tuple(evaluate(low.outputs, list(args)))


def spd(batch, n, dtype=np.float64):
    a = R.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def shape_str(ty, shape):
    return f"{ty}[{','.join(map(str, shape))}]"


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("ty, dtype, tol", [("f32", np.float32, 1e-4), ("f64", np.float64, 1e-11)])
def test_cholesky_reads_one_triangle(lower, ty, dtype, tol):
    a = spd((2, 3), 5, dtype)
    noisy = a.copy()
    junk = np.triu(np.full((5, 5), 1e3), 1) if lower else np.tril(np.full((5, 5), 1e3), -1)
    noisy += junk.astype(dtype)        # the triangle cholesky must not read
    s = shape_str(ty, a.shape)
    text = (f"HloModule c\nENTRY e {{\n  a = {s} parameter(0)\n"
            f"  ROOT c = {s} cholesky(a), lower={'true' if lower else 'false'}\n}}\n")
    for compiled in (False, True):
        (c,) = run(text, noisy, compiled=compiled)
        assert c.dtype == dtype
        tri = np.tril(c) if lower else np.triu(c)
        np.testing.assert_array_equal(c, tri)
        rebuilt = tri @ np.swapaxes(tri, -1, -2) if lower else np.swapaxes(tri, -1, -2) @ tri
        np.testing.assert_allclose(rebuilt, a, rtol=tol, atol=tol)


def test_cholesky_of_an_indefinite_matrix_is_nan():
    a = np.stack([spd((), 3), np.diag([1.0, -1.0, 1.0])])
    text = "HloModule c\nENTRY e {\n  a = f64[2,3,3] parameter(0)\n  ROOT c = f64[2,3,3] cholesky(a), lower=true\n}\n"
    (c,) = run(text, a)
    assert np.isfinite(c[0]).all() and np.isnan(c[1]).all()


TRSM_CASES = list(itertools.product([True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"],
                                    [True, False]))


def _op_a(a, lower, unit, trans):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - np.einsum("...ii->...i", t)[..., None] * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    return np.swapaxes(t, -1, -2) if trans != "NO_TRANSPOSE" else t


def _trsm_module(left, lower, trans, unit, a_shape, b_shape, ty="f64"):
    flags = (f"left_side={str(left).lower()}, lower={str(lower).lower()}, "
             f"unit_diagonal={str(unit).lower()}, transpose_a={trans}")
    return (f"HloModule t\nENTRY e {{\n  a = {shape_str(ty, a_shape)} parameter(0)\n"
            f"  b = {shape_str(ty, b_shape)} parameter(1)\n"
            f"  ROOT x = {shape_str(ty, b_shape)} triangular-solve(a, b), {flags}\n}}\n")


@pytest.mark.parametrize("left, lower, trans, unit", TRSM_CASES)
def test_triangular_solve_every_option(left, lower, trans, unit):
    n, m = 4, 3
    a = R.standard_normal((2, n, n)) + 4 * np.eye(n)
    a = a + np.where(np.eye(n, dtype=bool), 50.0, 0) * unit      # a diagonal unit_diagonal ignores
    b = R.standard_normal((2, n, m) if left else (2, m, n))
    text = _trsm_module(left, lower, trans, unit, a.shape, b.shape)
    opa = _op_a(a, lower, unit, trans)
    for compiled in (False, True):
        (x,) = run(text, a, b, compiled=compiled)
        got = opa @ x if left else x @ opa
        np.testing.assert_allclose(got, b, rtol=1e-10, atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(TRSM_CASES), st.integers(1, 6), st.integers(1, 5), st.integers(0, 2))
def test_triangular_solve_shapes(case, n, m, nbatch):
    left, lower, trans, unit = case
    batch = (2,) * nbatch
    a = R.standard_normal(batch + (n, n)) + 3 * np.eye(n)
    b = R.standard_normal(batch + ((n, m) if left else (m, n)))
    (x,) = run(_trsm_module(left, lower, trans, unit, a.shape, b.shape), a, b)
    opa = _op_a(a, lower, unit, trans)
    np.testing.assert_allclose(opa @ x if left else x @ opa, b, rtol=1e-9, atol=1e-9)


def _lapack_module(target, operands, results, config):
    params = "\n".join(f"  p{k} = {s} parameter({k})" for k, s in enumerate(operands))
    ops = ", ".join(f"p{k}" for k in range(len(operands)))
    res = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    return (f"HloModule l\nENTRY e {{\n{params}\n  ROOT r = {res} custom-call({ops}), "
            f'custom_call_target="{target}", api_version=API_VERSION_TYPED_FFI, '
            f"backend_config={{{config}}}\n}}\n")


def test_lapack_potrf_getrf_and_qr():
    a = R.standard_normal((2, 4, 4)).astype(np.float32)
    s = spd((2,), 4, np.float32)
    (c, info) = run(_lapack_module("lapack_spotrf_ffi", ["f32[2,4,4]"], ["f32[2,4,4]", "s32[2]"],
                                   "uplo = 76 : ui8"), s)
    lo = np.tril(c)
    np.testing.assert_allclose(lo @ np.swapaxes(lo, -1, -2), s, rtol=1e-4, atol=1e-4)
    assert info.tolist() == [0, 0]
    np.testing.assert_array_equal(np.triu(c, 1), np.triu(s, 1))   # LAPACK leaves it as it was
    lu, piv, info = run(_lapack_module("lapack_sgetrf_ffi", ["f32[2,4,4]"],
                                       ["f32[2,4,4]", "s32[2,4]", "s32[2]"], ""), a)
    assert piv.min() >= 1 and piv.max() <= 4 and info.tolist() == [0, 0]   # 1-based pivots
    for k in range(2):
        p = np.eye(4)
        for i, j in enumerate(piv[k] - 1):
            p[[i, j]] = p[[j, i]]
        l_, u_ = np.tril(lu[k], -1) + np.eye(4), np.triu(lu[k])
        np.testing.assert_allclose(p @ a[k], l_ @ u_, rtol=1e-4, atol=1e-4)
    m = R.standard_normal((5, 3))
    qr, tau = run(_lapack_module("lapack_dgeqrf_ffi", ["f64[5,3]"], ["f64[5,3]", "f64[3]"], ""), m)
    (q,) = run(_lapack_module("lapack_dorgqr_ffi", ["f64[5,3]", "f64[3]"], ["f64[5,3]"], ""), qr, tau)
    np.testing.assert_allclose(q @ np.triu(qr[:3]), m, atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-12)


def test_lapack_eigh_and_svd():
    s = spd((3,), 4)
    v, w, info = run(_lapack_module("lapack_dsyevd_ffi", ["f64[3,4,4]"], ["f64[3,4,4]", "f64[3,4]", "s32[3]"],
                                    "mode = 86 : ui8, uplo = 76 : ui8"), s)
    np.testing.assert_allclose(s @ v, v * w[:, None, :], atol=1e-10)
    assert (np.diff(w, axis=-1) >= 0).all() and info.tolist() == [0, 0, 0]
    a = R.standard_normal((2, 5, 3))
    for target in ("lapack_dgesdd_ffi", "lapack_dgesvd_ffi"):
        full = run(_lapack_module(target, ["f64[2,5,3]"], ["f64[2,5,3]", "f64[2,3]", "f64[2,5,5]",
                                                           "f64[2,3,3]", "s32[2]"], "mode = 65 : ui8"), a)
        _, sv, u, vt, info = full
        np.testing.assert_allclose(u[..., :3] * sv[:, None, :] @ vt, a, atol=1e-12)
        thin = run(_lapack_module(target, ["f64[2,5,3]"], ["f64[2,5,3]", "f64[2,3]", "f64[2,5,3]",
                                                           "f64[2,3,3]", "s32[2]"], "mode = 83 : ui8"), a)
        np.testing.assert_allclose(thin[2] * thin[1][:, None, :] @ thin[3], a, atol=1e-12)
        np.testing.assert_allclose(thin[1], sv, atol=1e-12)


def test_lapack_trsm_matches_triangular_solve():
    a = R.standard_normal((3, 3)) + 3 * np.eye(3)
    b = R.standard_normal((2, 3))
    (x,) = run(_lapack_module("lapack_dtrsm_ffi", ["f64[3,3]", "f64[2,3]"], ["f64[2,3]"],
                              "diag = 78 : ui8, side = 82 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8"), a, b)
    np.testing.assert_allclose(x @ np.triu(a).T, b, atol=1e-12)


STABLEHLO_POTRF = """module @jit_cholesky attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>) {
    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
    return %0#0, %0#1 : tensor<3x3xf32>, tensor<i32>
  }
}
"""


def test_stablehlo_lapack_custom_call_with_index_layouts():
    s = spd((), 3, np.float32)
    for compiled in (False, True):
        c, info = run(STABLEHLO_POTRF, s, compiled=compiled)
        np.testing.assert_allclose(np.tril(c) @ np.tril(c).T, s, rtol=1e-4, atol=1e-4)
        assert int(info) == 0


def test_stablehlo_cholesky_and_triangular_solve_ops():
    text = """func.func @main(%a: tensor<3x3xf64>, %b: tensor<3x2xf64>) -> (tensor<3x3xf64>, tensor<3x2xf64>) {
      %c = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf64>) -> tensor<3x3xf64>
      %x = "stablehlo.triangular_solve"(%c, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
      return %c, %x : tensor<3x3xf64>, tensor<3x2xf64>
    }"""
    a, b = spd((), 3), R.standard_normal((3, 2))
    c, x = run(text, a, b)
    np.testing.assert_allclose(c @ c.T, a, atol=1e-12)
    np.testing.assert_allclose(c.T @ x, b, atol=1e-12)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_opcode(largest):
    x = np.array([[3.0, np.nan, 1.0, 3.0, -np.inf, 0.5], [0.0, -0.0, 2.0, 2.0, 7.0, np.inf]], np.float32)
    text = ("HloModule t\nENTRY e {\n  x = f32[2,6] parameter(0)\n"
            f"  ROOT t = (f32[2,3], s32[2,3]) topk(x), k=3, largest={str(largest).lower()}\n}}\n")
    # total order: NaN above inf, -0.0 below 0.0; ties by lower index
    want = [[1, 0, 3], [5, 4, 2]] if largest else [[4, 5, 2], [1, 0, 2]]
    for compiled in (False, True):
        v, i = run(text, x, compiled=compiled)
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(v, np.take_along_axis(x, i, axis=-1))


def test_sharding_annotations_are_the_identity_and_callbacks_refused():
    text = ("HloModule s\nENTRY e {\n  x = f32[4,3] parameter(0)\n"
            '  ROOT s = f32[4,3] custom-call(x), custom_call_target="Sharding", sharding={replicated}\n}\n')
    x = R.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(run(text, x, compiled=True)[0], x)
    cb = text.replace('"Sharding"', '"xla_ffi_python_cpu_callback"')
    with pytest.raises(UnsupportedOpError, match="calls back into the Python process") as e:
        lower_module(parse_hlo(cb))
    assert e.value.line == 4
    with pytest.raises(UnsupportedOpError, match="'my_kernel' is not a target"):
        lower_module(parse_hlo(text.replace('"Sharding"', '"my_kernel"')))


def test_shardy_sharding_constraint_in_stablehlo():
    text = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %2 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {}]> : tensor<4x3xf32>
    return %2 : tensor<4x3xf32>
  }
}"""
    x = R.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(run(text, x)[0], x)


@pytest.mark.parametrize("old,new,word", [("trans_x = 78", "trans_x = 11", "trans_x = 11"),
                                          ("diag = 78", "diag = 20", "diag = 20"),
                                          ("side = 76 : ui8", "side = 76 : m.1", "not a list")])
def test_lapack_options_outside_lapacks_are_refused(old, new, word):
    """A character option LAPACK does not define (XLA passes it through, and may crash on it), or
    a backend_config entry that is not 'name = integer', is refused at load naming it."""
    from hlotune.dsl.errors import UnsupportedOpError
    text = (Path(__file__).parent / "data" / "jax_programs" / "linalg_triangular.hlo").read_text()
    assert old in text
    with pytest.raises(UnsupportedOpError, match=word):
        hlotune.load_hlo(text.replace(old, new))
