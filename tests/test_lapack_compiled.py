"""LAPACK calls made from compiled code (runtime/lapack.py) and whole programs in one C call
(runtime/program.py): triangular solves, LU and Cholesky compiled for the cpu, against scipy and
numpy (the oracle), batched, every option, with outputs taking over dead inputs; a module whose
steps are all compiled runs through one driver, with the same answers as step by step."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
from hlotune.dsl.errors import ExportError
from hlotune.runtime.lapack import LapackKernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune

TY = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: 2e-4, np.float64: 1e-11}


def shape(ty, dims) -> str:
    return f"{ty}[{','.join(map(str, dims))}]"


def routines(c) -> list[str]:
    """The LAPACK routines a compiled module's steps call from C, in order."""
    return [s.kernel.routine for s in c.graph.steps if isinstance(getattr(s, "kernel", None), LapackKernel)]


def well_conditioned(rng, batch, n, dtype):
    return (rng.standard_normal(batch + (n, n)) + 4 * n * np.eye(n)).astype(dtype)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.sampled_from([(), (2,), (2, 1)]), n=st.integers(1, 9), nrhs=st.integers(0, 4),
       left=st.booleans(), lower=st.booleans(), trans=st.sampled_from(["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]),
       unit=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_triangular_solve_compiled_matches_scipy(batch, n, nrhs, left, lower, trans, unit, dtype, seed):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, batch, n, dtype)
    b = rng.standard_normal(batch + ((n, nrhs) if left else (nrhs, n))).astype(dtype)
    ty = TY[dtype]
    text = (f"HloModule t\nENTRY e {{\n  a = {shape(ty, a.shape)} parameter(0)\n"
            f"  b = {shape(ty, b.shape)} parameter(1)\n  ROOT x = {shape(ty, b.shape)} triangular-solve(a, b), "
            f"left_side={str(left).lower()}, lower={str(lower).lower()}, "
            f"unit_diagonal={str(unit).lower()}, transpose_a={trans}\n}}\n")
    c = hlotune.compile(hlotune.load_hlo(text))
    assert routines(c) == [{np.float32: "s", np.float64: "d"}[dtype] + "trsm"]
    x = c(a, b)
    tr = {"NO_TRANSPOSE": 0, "TRANSPOSE": 1, "ADJOINT": 2}[trans]
    for idx in np.ndindex(*batch):
        if left:
            want = sla.solve_triangular(a[idx], b[idx], lower=lower, trans=tr, unit_diagonal=unit)
        else:     # x op(a) = b  <=>  op(a)^T x^T = b^T
            want = sla.solve_triangular(a[idx], b[idx].T, lower=lower, trans=1 - min(tr, 1),
                                        unit_diagonal=unit).T
        np.testing.assert_allclose(x[idx], want, rtol=TOL[dtype], atol=TOL[dtype])


def _custom_call(target, operands, results, config=""):
    params = "\n".join(f"  p{k} = {s} parameter({k})" for k, s in enumerate(operands))
    res = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    return (f"HloModule l\nENTRY e {{\n{params}\n  ROOT r = {res} custom-call(p0), custom_call_target=\"{target}\", "
            f"api_version=API_VERSION_TYPED_FFI, backend_config={{{config}}}\n}}\n")


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")   # the oracle on a singular matrix
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.sampled_from([(), (3,)]), m=st.integers(1, 8), n=st.integers(1, 8),
       dtype=st.sampled_from([np.float32, np.float64]), singular=st.booleans(), seed=st.integers(0, 2**16))
def test_getrf_compiled_matches_scipy(batch, m, n, dtype, singular, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n)).astype(dtype)
    if singular:
        a[..., :, 0] = 0        # a zero column: U[0, 0] is exactly 0, info = 1
    k, p = min(m, n), {np.float32: "s", np.float64: "d"}[dtype]
    ty = TY[dtype]
    text = _custom_call(f"lapack_{p}getrf_ffi", [shape(ty, a.shape)],
                        [shape(ty, a.shape), shape("s32", batch + (k,)), shape("s32", batch)])
    c = hlotune.compile(hlotune.load_hlo(text))
    assert routines(c) == [p + "getrf"]
    lu, piv, info = c(a)
    for idx in np.ndindex(*batch):
        want_lu, want_piv = sla.lu_factor(a[idx], check_finite=False) if m == n else (None, None)
        if want_lu is not None:
            np.testing.assert_allclose(lu[idx], want_lu, rtol=TOL[dtype], atol=TOL[dtype])
            np.testing.assert_array_equal(piv[idx], want_piv + 1)       # 1-based, as JAX's call gives
        perm = np.arange(m)
        for i, j in enumerate(piv[idx] - 1):
            perm[[i, j]] = perm[[j, i]]
        lo = np.tril(lu[idx], -1)[:, :k] + np.eye(m, k)
        np.testing.assert_allclose(a[idx][perm], lo @ np.triu(lu[idx])[:k], rtol=10 * TOL[dtype], atol=10 * TOL[dtype])
        assert int(info[idx]) == (1 if singular else 0)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_compiled_zeroes_the_other_triangle_and_gives_nans_when_not_definite(lower, dtype):
    rng = np.random.default_rng(3)
    g = rng.standard_normal((3, 6, 6))
    a = (g @ np.swapaxes(g, -1, -2) + 6 * np.eye(6)).astype(dtype)
    a[1] = -a[1]                  # not positive definite
    ty = TY[dtype]
    text = (f"HloModule c\nENTRY e {{\n  a = {shape(ty, a.shape)} parameter(0)\n"
            f"  ROOT c = {shape(ty, a.shape)} cholesky(a), lower={str(lower).lower()}\n}}\n")
    c = hlotune.compile(hlotune.load_hlo(text))
    assert routines(c) == [{np.float32: "s", np.float64: "d"}[dtype] + "potrf"]
    f = c(a)
    assert np.isnan(f[1]).all()
    for k in (0, 2):
        want = np.linalg.cholesky(a[k].astype(np.float64))
        np.testing.assert_allclose(f[k], want if lower else want.T, rtol=TOL[dtype], atol=TOL[dtype])


def _jax_module(fn, *args):
    import jax
    with jax.enable_x64(True):
        return hlotune.load_hlo(jax.jit(fn).lower(*args).as_text())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.sampled_from([(), (3,)]), n=st.integers(1, 12), upper=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_eigh_compiled_matches_numpy(batch, n, upper, dtype, seed):
    """syevd from C: ascending eigenvalues as numpy's, orthonormal eigenvectors that rebuild the
    matrix from the triangle JAX names (the other triangle is noise it must not read)."""
    import jax.numpy as jnp
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(batch + (n, n))
    sym = g + np.swapaxes(g, -1, -2)
    a = (sym + np.triu(rng.standard_normal((n, n)), 1) * (1 if not upper else 0)
         + np.tril(rng.standard_normal((n, n)), -1) * (1 if upper else 0)).astype(dtype)
    uplo = "U" if upper else "L"
    c = hlotune.compile(_jax_module(lambda x: jnp.linalg.eigh(x, UPLO=uplo, symmetrize_input=False), a))
    p = {np.float32: "s", np.float64: "d"}[dtype]
    assert routines(c) == [p + "syevd"]
    w, v = c(a)
    tri = np.triu(a) if upper else np.tril(a)
    full = tri + np.swapaxes(tri, -1, -2) - tri * np.eye(n)
    want = np.linalg.eigvalsh(full.astype(np.float64))
    tol = 50 * TOL[dtype] * max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(w, want, atol=tol)
    np.testing.assert_allclose(v @ (w[..., :, None] * np.swapaxes(v, -1, -2)), full, atol=tol)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), v.shape), atol=tol)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.sampled_from([(), (2,)]), m=st.integers(1, 9), n=st.integers(1, 9),
       mode=st.sampled_from(["full", "thin", "values"]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_svd_compiled_matches_numpy(batch, m, n, mode, dtype, seed):
    import jax.numpy as jnp
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dtype)
    if mode == "values":
        fn = lambda x: jnp.linalg.svd(x, compute_uv=False)
    else:
        fn = lambda x: jnp.linalg.svd(x, full_matrices=mode == "full")
    c = hlotune.compile(_jax_module(fn, a))
    assert routines(c) == [{np.float32: "s", np.float64: "d"}[dtype] + "gesdd"]
    got = c(a)
    want_s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    tol = 50 * TOL[dtype] * max(1.0, float(np.max(want_s)))
    if mode == "values":
        np.testing.assert_allclose(got, want_s, atol=tol)
        return
    u, s, vt = got
    k = min(m, n)
    np.testing.assert_allclose(s, want_s, atol=tol)
    assert u.shape == batch + (m, m if mode == "full" else k) and vt.shape == batch + (n if mode == "full" else k, n)
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, atol=tol)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] +
                               (u.shape[-1],) * 2), atol=tol)


def test_a_solve_whose_operands_are_dead_temporaries_takes_them_over():
    """x = inv(a + 1) @ ... : the triangular solves overwrite b in place when b is a value no
    later step reads (donated), and read it first when it is (not donated)."""
    text = """HloModule s
ENTRY e {
  a = f64[5,5] parameter(0)
  b = f64[5,3] parameter(1)
  one = f64[] constant(1)
  ones = f64[5,3] broadcast(one), dimensions={}
  bb = f64[5,3] add(b, ones)
  x = f64[5,3] triangular-solve(a, bb), left_side=true, lower=true, unit_diagonal=false, transpose_a=NO_TRANSPOSE
  y = f64[5,3] triangular-solve(a, x), left_side=true, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE
  ROOT r = (f64[5,3], f64[5,3]) tuple(y, bb)
}
"""
    rng = np.random.default_rng(0)
    a, b = well_conditioned(rng, (), 5, np.float64), rng.standard_normal((5, 3))
    c = hlotune.compile(hlotune.load_hlo(text))
    y, bb = c(a, b)
    np.testing.assert_allclose(bb, b + 1, rtol=0, atol=0)         # read later: kept
    x = sla.solve_triangular(a, b + 1, lower=True)
    np.testing.assert_allclose(y, sla.solve_triangular(a, x, lower=True, trans=1), rtol=1e-12)
    donated = [s.donate for s in c.graph.steps if isinstance(getattr(s, "kernel", None), LapackKernel)]
    assert donated == [{}, {0: 1}]       # the second solve takes x's array over


def test_lapack_calls_are_not_exported(tmp_path):
    text = _custom_call("lapack_sgetrf_ffi", ["f32[4,4]"], ["f32[4,4]", "s32[4]", "s32[]"])
    with pytest.raises(ExportError, match="sgetrf call"):
        hlotune.export_library(hlotune.load_hlo(text), tmp_path / "lib")


PROGRAM = """HloModule p
ENTRY e {
  x = f32[4,3] parameter(0)
  y = f32[4,3] parameter(1)
  k = f32[4,3] constant({{1,2,3},{4,5,6},{7,8,9},{10,11,12}})
  s = f32[4,3] add(x, y)
  e = f32[4,3] exponential(s)
  t = f32[4,3] sort(e), dimensions={1}, to_apply=lt
  z = f32[0,3] slice(x), slice={[0:0], [0:3]}
  ROOT r = (f32[4,3], f32[4,3], f32[4,3], f32[4,3], f32[4,3], f32[0,3]) tuple(s, x, k, s, e, z)
}
"""


def test_an_all_compiled_module_runs_in_one_c_call_with_the_same_answers():
    """Outputs that are inputs, constants, repeated values and empty arrays all come out right
    through the driver, and equal the step-by-step run."""
    text = PROGRAM.replace("  t = f32[4,3] sort(e), dimensions={1}, to_apply=lt\n", "")
    c = hlotune.compile(hlotune.load_hlo(text))
    assert c.graph.program is not None
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 4, 3)).astype(np.float32)
    got = c(x, y)
    prog, c.graph.program = c.graph.program, None
    step = c(x, y)
    c.graph.program = prog
    want = (x + y, x, np.arange(1, 13, dtype=np.float32).reshape(4, 3), x + y, np.exp(x + y),
            np.zeros((0, 3), np.float32))
    for g, s, w in zip(got, step, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        np.testing.assert_array_equal(g, s)
    assert got[0] is not got[3] and got[1] is not x      # fresh arrays, never the caller's own


def test_a_module_with_a_host_step_keeps_the_python_runtime():
    text = PROGRAM.replace("ENTRY e {", "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                           "  ROOT c = pred[] compare(a, b), direction=LE\n}\n\nENTRY e {")
    text = text.replace("tuple(s, x, k, s, e, z)", "tuple(s, x, k, t, e, z)")
    c = hlotune.compile(hlotune.load_hlo(text))
    assert c.graph.program is None        # the sort ('<=': pairwise) runs on the host, between compiled steps
    x = np.arange(12, dtype=np.float32).reshape(4, 3)[:, ::-1].copy()
    got = c(x, 0 * x)
    np.testing.assert_allclose(got[3], np.sort(np.exp(x), axis=1), rtol=1e-6)
    np.testing.assert_array_equal(got[1], x)


def test_graphs_of_one_structure_share_a_driver_but_not_its_kernels_or_constants():
    """Two modules that differ only in their ops or in a large constant's values have the same
    driver source (one library in the process): each call must still run its own kernels on
    its own constants, in any order of calls."""
    def text(op, base):
        vals = ", ".join(str(base + k) for k in range(32))
        return (f"HloModule d\nENTRY e {{\n  x = f32[32] parameter(0)\n  c = f32[32] constant({{{vals}}})\n"
                f"  ROOT r = f32[32] {op}(x, c)\n}}\n")
    x = np.linspace(1, 2, 32, dtype=np.float32)
    cases = [("add", 0), ("multiply", 0), ("add", 100), ("multiply", 7)]
    mods = [hlotune.compile(hlotune.load_hlo(text(op, base))) for op, base in cases]
    assert all(m.graph.program is not None for m in mods)
    for _ in range(2):
        for m, (op, base) in zip(mods, cases):
            c = np.arange(base, base + 32, dtype=np.float32)
            np.testing.assert_array_equal(m(x), x + c if op == "add" else x * c)
