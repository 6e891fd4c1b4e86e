"""Control flow whose branches or loop body hold extern ops (a sort, a top_k, a LAPACK solve, an
inner loop), compiled whole (runtime/nested.py): one C call for the module, the same answers as
JAX, and the out-of-range index, read-after-write and export cases."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hlotune.dsl.errors import ExportError
from hlotune.runtime.nested import NestedKernel
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune


def _compile(fn, *args):
    return hlotune.compile(hlotune.load_hlo(jax.jit(fn).lower(*args).as_text()), target="cpu")


def _check(fn, *args, exact=True):
    """``fn`` compiled as one program with a nested kernel, its answers against JAX's: with
    ``exact``, integers (indices) equal and floats within a few ulps (XLA may contract a multiply
    and an add into one FMA where hlotune rounds twice, and a carry takes that ulp along)."""
    c = _compile(fn, *args)
    assert c.graph.program is not None, "a step runs on the host"
    assert any(isinstance(getattr(s, "kernel", None), NestedKernel) for s in c.graph.steps)
    want = jax.jit(fn)(*args)
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = c(*args)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(jax.tree_util.tree_leaves(want), got):
        w = np.asarray(w)
        if exact and w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w)
        elif exact:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6 * float(np.max(np.abs(w), initial=0.0) or 1))
        else:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * float(np.max(np.abs(w)) or 1))
    return c


def test_solve_inside_fori_loop():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8, 8)).astype(np.float32) + 8 * np.eye(8, dtype=np.float32)
    b = rng.standard_normal((4, 8)).astype(np.float32)

    def f(a, b):
        return jax.lax.fori_loop(0, 5, lambda i, x: jnp.linalg.solve(a, (x + 1.0)[..., None])[..., 0], b)
    _check(f, a, b, exact=False)


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(1, 6), n=st.integers(2, 80), k=st.integers(1, 5), seed=st.integers(0, 99))
def test_sort_and_top_k_inside_scan(steps, n, k, seed):
    """The body sorts its row, keeps a running carry read after the stacked output is updated in
    place, and takes a top_k."""
    x = np.random.default_rng(seed).standard_normal((steps, n)).astype(np.float32)
    k = min(k, n)

    def f(x):
        def body(c, r):
            s = jnp.sort(r + c)
            t, i = jax.lax.top_k(r * c + r, k)
            return c + s[0] - t[0], (s, i)
        return jax.lax.scan(body, jnp.float32(0.5), x)
    _check(f, x)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_with_a_sort_branch_takes_the_last_branch_out_of_range(index):
    x = np.random.default_rng(1).standard_normal(50).astype(np.float32)

    def f(i, x):
        return jax.lax.switch(i, [lambda x: jnp.sort(x)[::-1], lambda x: x * 3, lambda x: jnp.argsort(x) * 1.0], x)
    _check(f, np.int32(index), x)


@pytest.mark.parametrize("p", [1.0, -1.0])
def test_large_cond_runs_one_branch_compiled(p):
    """Branches too large to compute both (a select) run as one compiled conditional."""
    x = np.random.default_rng(2).standard_normal((256, 256)).astype(np.float32)

    def f(p, x):
        return jax.lax.cond(p > 0, lambda x: jnp.tanh(x) @ x, lambda x: x @ x.T + 1.0, x)
    _check(f, np.float32(p), x, exact=False)


def test_while_with_data_dependent_exit_and_top_k_body():
    x = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)

    def f(x):
        def body(s):
            v, i = s
            t, _ = jax.lax.top_k(v, 4)
            return v - 0.1 * t[:, :1], i + 1
        return jax.lax.while_loop(lambda s: jnp.max(s[0]) > 0.5, body, (x, 0))
    _check(f, x)


def test_export_refuses_a_nested_kernel(tmp_path):
    x = np.zeros(10, np.float32)
    m = hlotune.load_hlo(jax.jit(lambda i, x: jax.lax.switch(i, [jnp.sort, lambda x: x + 1], x))
                         .lower(np.int32(0), x).as_text())
    with pytest.raises(ExportError, match="control flow calling graphs"):
        hlotune.export_library(m, tmp_path / "lib")
