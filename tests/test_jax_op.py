"""hlotune's kernels inside the user's own ``jax.jit`` (issue 16, part 2): ``hlotune.jax_op``
runs the compiled module as an XLA FFI custom call (runtime/ffi.py). Its answers equal
hlotune's own runtime (``hlotune.jit``, the same kernels) and JAX's, for a transformer block and
an MLP at several signatures, default and tuned; plans with several kernels, constants and
outputs that are inputs; the host-callback fallback; JAX's gradients and vmap; the shim's
checks of what XLA hands it."""

from __future__ import annotations

import numpy as np
import pytest

import hlotune

jax = pytest.importorskip("jax")
jnp = jax.numpy

RTOL, ATOL = 2e-4, 2e-4


def transformer_block(x, p):
    """Pre-norm single-head attention with a causal mask, then a GELU MLP (batch, seq, d)."""
    def norm(h, g, b):
        mu = h.mean(-1, keepdims=True)
        return (h - mu) * jax.lax.rsqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    h = norm(x, p["g1"], p["b1"])
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    n = x.shape[1]
    s = jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -1e9)
    x = x + jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v) @ p["wo"]
    return x + jax.nn.gelu(norm(x, p["g2"], p["b2"]) @ p["w1"]) @ p["w2"]


def mlp(x, w1, b1, w2, b2):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def _block_params(rng, d):
    shapes = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, 2 * d), "w2": (2 * d, d),
              "g1": (d,), "b1": (d,), "g2": (d,), "b2": (d,)}
    return {k: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for k, s in shapes.items()}


def _mlp_args(rng, b, d, h):
    return [rng.standard_normal(s).astype(np.float32) for s in ((b, d), (d, h), (h,), (h, d), (d,))]


def _three_ways(f, args, db=None):
    """(FFI op inside jax.jit, hlotune.jit, jax.jit) outputs of ``f`` on ``args``."""
    op = hlotune.jax_op(f, db=db)
    assert op.uses_ffi(*args)
    inside = jax.jit(lambda *a: op(*a) * 1.0)(*args)          # with XLA ops around the custom call
    return np.asarray(inside), hlotune.jit(f, db=db)(*args), np.asarray(jax.jit(f)(*args))


@pytest.mark.parametrize("batch,seq,d", [(1, 8, 16), (2, 16, 32), (3, 5, 24)])
def test_transformer_block_matches_runtime_and_jax(batch, seq, d):
    rng = np.random.default_rng(seq)
    x, p = rng.standard_normal((batch, seq, d)).astype(np.float32), _block_params(rng, d)
    ffi, own, ref = _three_ways(transformer_block, (x, p))
    np.testing.assert_array_equal(ffi, own)            # the same kernels on the same inputs
    np.testing.assert_allclose(ffi, ref, rtol=RTOL, atol=ATOL)


def test_mlp_several_signatures_in_one_op():
    rng = np.random.default_rng(3)
    op = hlotune.jax_op(mlp)
    f = jax.jit(lambda *a: op(*a).sum(axis=-1))
    for b, d, h in ((1, 16, 32), (7, 16, 32), (4, 24, 40)):
        args = _mlp_args(rng, b, d, h)
        np.testing.assert_allclose(f(*args), np.asarray(mlp(*args)).sum(axis=-1), rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(np.asarray(jax.jit(op)(*args)), hlotune.jit(mlp)(*args))
    assert len(op.signatures) == 3


def test_tuned_kernels_through_the_op(tmp_path):
    rng = np.random.default_rng(4)
    args = _mlp_args(rng, 8, 32, 64)
    db = str(tmp_path / "mlp.db")
    hlotune.tune(mlp, *args, trials=6, db=db, tuner="random", progress=False)
    ffi, own, ref = _three_ways(mlp, args, db=db)
    np.testing.assert_array_equal(ffi, own)
    np.testing.assert_allclose(ffi, ref, rtol=RTOL, atol=ATOL)


def test_plans_with_several_kernels_constants_and_copied_outputs():
    def g(x, w):
        y = jax.lax.fori_loop(0, 4, lambda i, c: jnp.tanh(c @ w) + i, x)     # a while loop compiled whole
        return y * 2, x, jnp.arange(3.0), y, y

    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 8)).astype(np.float32), 0.3 * rng.standard_normal((8, 8)).astype(np.float32)
    from hlotune.runtime.ffi import Plan

    from hlotune.jaxbridge import Call
    op = hlotune.jax_op(g)
    plan = Plan.of(op._entry(Call.of((x, w), {}, (), (), host=False)).compiled.graph)
    assert len(plan.steps) >= 2 and plan.copies and plan.temp_bytes
    got = jax.jit(op)(x, w)
    for a, b in zip(got, g(x, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=ATOL)


def test_host_steps_fall_back_to_a_callback(caplog):
    def g(x):
        return jnp.abs(jnp.fft.rfft(x, axis=-1)) * 2      # the fft runs on the host

    op = hlotune.jax_op(g)
    x = np.random.default_rng(6).standard_normal((3, 7)).astype(np.float32)
    with caplog.at_level("WARNING"):
        got = jax.jit(op)(x)
    assert not op.uses_ffi(x) and "host callback" in caplog.text
    np.testing.assert_allclose(np.asarray(got), np.asarray(g(x)), rtol=1e-6)


def test_gradients_are_jax_derivatives_and_vmap_runs_per_element():
    rng = np.random.default_rng(7)
    args = _mlp_args(rng, 4, 8, 16)
    op = hlotune.jax_op(mlp)

    def loss(f):
        return lambda x, w1: (f(x, w1, *args[2:]) ** 2).sum()

    for i in (0, 1):
        np.testing.assert_allclose(jax.jit(jax.grad(loss(op), i))(*args[:2]), jax.grad(loss(mlp), i)(*args[:2]),
                                   rtol=RTOL, atol=ATOL)
    xs = rng.standard_normal((3, 4, 8)).astype(np.float32)
    got = jax.jit(jax.vmap(lambda x: op(x, *args[1:])))(xs)
    np.testing.assert_allclose(got, jax.vmap(lambda x: mlp(x, *args[1:]))(xs), rtol=RTOL, atol=ATOL)


def test_python_scalars_kwargs_and_dict_outputs_inside_jit():
    def g(x, *, scale):
        return {"y": x * scale, "s": x.sum()}

    op = hlotune.jax_op(g)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = jax.jit(lambda x: op(x, scale=2.5))(x)
    np.testing.assert_allclose(got["y"], x * 2.5)
    np.testing.assert_allclose(got["s"], 15.0)
    assert list(op(x, scale=1.0)) == ["y", "s"]          # called eagerly: f's own key order


def test_the_shim_refuses_what_the_plan_does_not_take():
    from hlotune.runtime.ffi import HANDLER

    from hlotune.jaxop import ffi_shim
    op = hlotune.jax_op(lambda x: x * 2)
    x = np.ones(4, np.float32)
    jax.jit(op)(x)
    plan = op._cache[next(iter(op._cache))].plan
    ffi_shim()
    wrong = jax.ffi.ffi_call(HANDLER, jax.ShapeDtypeStruct((4,), np.float32))
    with pytest.raises(Exception, match="operand 0 has 20 bytes, the kernel takes 16"):
        np.asarray(wrong(np.ones(5, np.float32), plan=np.int64(plan)))
    with pytest.raises(Exception, match="no kernel plan 999999"):
        np.asarray(wrong(x, plan=np.int64(999999)))
    with pytest.raises(Exception, match="takes 1 operands"):
        np.asarray(wrong(x, x, plan=np.int64(plan)))
