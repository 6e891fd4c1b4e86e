"""From JAX to hlotune (issue 16, part 1): ``hlotune.jit`` per signature (pytrees, Python
scalars, keyword arguments, static arguments, numpy and JAX arrays without copies), and
``load_hlo`` / ``tune`` taking a JAX function or a ``Lowered``; answers compared with JAX's."""

from __future__ import annotations

import collections
import sys

import numpy as np
import pytest
from hlotune.dsl.errors import ConfigError, KernelArgumentError, MissingDependencyError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune

jax = pytest.importorskip("jax")
jnp = jax.numpy

RTOL, ATOL = 1e-5, 1e-5


def _close(got, want):
    """Equal pytrees (same structure and dict key order) with close leaves."""
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert isinstance(g, np.ndarray)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, np.asarray(w), rtol=RTOL, atol=ATOL)


def _keys(tree) -> list:
    return [list(t) for t in _dicts(tree)]


def _dicts(t):
    if isinstance(t, dict):
        yield t
        for v in t.values():
            yield from _dicts(v)
    elif isinstance(t, (list, tuple)):
        for v in t:
            yield from _dicts(v)


def block(x, params, *, scale=1.0, shift=0):
    """Pytrees in and out: a dict of weights in, a dict out whose keys are not sorted."""
    h = jnp.tanh(x @ params["w"] + params["b"]) * scale
    return {"out": h + shift, "aux": (h.sum(axis=-1), [x.mean()]), "a_norm": jnp.sqrt((h * h).sum())}


def _params(rng, d, k):
    return {"w": rng.standard_normal((d, k)).astype(np.float32), "b": rng.standard_normal(k).astype(np.float32)}


def test_pytrees_scalars_kwargs_and_key_order_match_jax():
    rng = np.random.default_rng(0)
    x, p = rng.standard_normal((4, 8)).astype(np.float32), _params(rng, 8, 3)
    f = hlotune.jit(block)
    got = f(x, p, scale=2.5, shift=3)
    want = block(x, p, scale=2.5, shift=3)
    _close(got, want)
    assert _keys(got) == [["out", "aux", "a_norm"]]      # f's order, not JAX's sorted one


def test_one_compile_per_signature_and_scalar_values_are_not_part_of_it():
    rng = np.random.default_rng(1)
    f = hlotune.jit(block)
    x, p = rng.standard_normal((4, 8)).astype(np.float32), _params(rng, 8, 3)
    for scale in (1.0, -2.0, 0.5):                 # weakly typed f32 parameter: one signature
        _close(f(x, p, scale=scale), block(x, p, scale=scale))
    assert len(f.signatures) == 1
    _close(f(jnp.asarray(x), p, scale=3.0), block(x, p, scale=3.0))     # a JAX array: same signature
    assert len(f.signatures) == 1
    x2, p2 = rng.standard_normal((6, 5)).astype(np.float32), _params(rng, 5, 2)
    _close(f(x2, p2, scale=1.5), block(x2, p2, scale=1.5))
    _close(f(x, p, scale=2), block(x, p, scale=2))           # int scalar: another weak type
    _close(f(x, p), block(x, p))                             # kwargs left out: another tree
    assert len(f.signatures) == 4
    _close(f(x, p, scale=1.0), block(x, p, scale=1.0))
    assert len(f.signatures) == 4


def test_weak_scalars_follow_jax_promotion_and_float64_inputs_are_canonicalized():
    def g(x, s):
        return x * s, x.astype(jnp.float32) + 1

    f = hlotune.jit(g)
    x16 = np.arange(6, dtype=np.float16).reshape(2, 3)
    got = f(x16, 0.5)
    assert got[0].dtype == np.float16                         # a Python float does not promote f16
    _close(got, g(x16, 0.5))
    x64 = np.linspace(0, 1, 6).reshape(2, 3)                  # float64: float32 as in JAX without x64
    _close(f(x64, 2.0), jax.jit(g)(x64, 2.0))


def test_numpy_and_jax_inputs_are_not_copied():
    from hlotune.jaxbridge import Call
    xj = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)
    xn = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    call = Call.of((xj, xn), {}, (), ())
    assert call.leaves[0].ctypes.data == xj.unsafe_buffer_pointer()
    assert call.leaves[1] is xn
    from hlotune.jaxbridge import host_inputs
    ins = host_inputs(call, (np.dtype(np.float32), np.dtype(np.float32)))
    assert ins[0].ctypes.data == xj.unsafe_buffer_pointer() and ins[1] is xn


def test_outputs_that_are_inputs_or_constants_are_fresh_arrays():
    def g(x):
        return x, jnp.arange(3.0), x + 1

    f = hlotune.jit(g)
    x = np.ones(3, np.float32)
    a, c, _ = f(x)
    assert not np.shares_memory(a, x)
    c[:] = -1                                       # the caller owns what it gets
    np.testing.assert_array_equal(f(x)[1], [0, 1, 2])


def test_static_arguments_and_namedtuples():
    Pair = collections.namedtuple("Pair", "lo hi")

    def g(x, n, *, mode):
        y = x ** n if mode == "pow" else x * n
        return Pair(y.min(), y.max())

    f = hlotune.jit(g, static_argnums=1, static_argnames="mode")
    x = np.linspace(-1, 2, 10).astype(np.float32)
    for n, mode in ((2, "pow"), (3, "pow"), (3, "mul")):
        got = f(x, n, mode=mode)
        assert isinstance(got, Pair)
        _close(tuple(got), tuple(g(x, n, mode=mode)))
    assert len(f.signatures) == 3


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(order=st.permutations(["b", "a", "c"]), rows=st.sampled_from([1, 3]), scale=st.floats(-4, 4, width=32),
       as_jax=st.booleans())
def test_any_key_order_shape_and_scalar(order, rows, scale, as_jax):
    def g(x, *, s):
        parts = {"a": x * s, "b": x.sum(axis=0), "c": jnp.exp(-x)}
        return {k: parts[k] for k in order}

    x = np.linspace(-1, 1, rows * 4, dtype=np.float32).reshape(rows, 4)
    got = hlotune.jit(g)(jnp.asarray(x) if as_jax else x, s=scale)
    assert list(got) == list(order)
    _close(got, g(x, s=scale))


def test_load_hlo_and_tune_take_jax_functions_and_lowered(tmp_path):
    def g(x, y):
        return jnp.maximum(x @ y, 0.0)

    x, y = np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)
    m = hlotune.load_hlo(g, x, y)
    assert [p.name for p in m.params] == ["x.1", "y.1"]
    lowered = jax.jit(g).lower(x, y)
    m2 = hlotune.load_hlo(lowered)
    assert [tuple(p.shape) for p in m2.params] == [(8, 16), (16, 4)]
    np.testing.assert_allclose(hlotune.compile(lowered)(x, y), g(x, y))
    db = str(tmp_path / "t.db")
    res = hlotune.tune(g, x, y, trials=2, db=db, tuner="random", progress=False)
    assert len(res) >= 1 and sum(r.trials for r in res) == 2
    res2 = hlotune.tune(lowered, trials=2, db=db, tuner="random", progress=False)
    assert {r.task.key for r in res2} == {r.task.key for r in res}
    names = hlotune.report(db).tasks().task.tolist()
    assert all(n.startswith("jit_g/") for n in names), names
    np.testing.assert_allclose(hlotune.jit(g, db=db)(x, y), g(x, y))


def test_bad_jax_inputs_are_typed_errors():
    f = hlotune.jit(lambda x, s: x * 2)
    with pytest.raises(KernelArgumentError, match="static"):
        f(np.ones(3, np.float32), "a string")
    with pytest.raises(KernelArgumentError, match="ndarray of <U1"):
        f(np.ones(3, np.float32), np.array(["a"]))
    with pytest.raises(KernelArgumentError, match="static"):
        jax.jit(lambda x: hlotune.jax_op(lambda x, s: x)(x, object()))(np.ones(2))
    with pytest.raises(ConfigError, match="Lowered"):
        hlotune.load_hlo(jax.jit(lambda x: x).lower(np.ones(2)), np.ones(2))
    with pytest.raises(ConfigError, match="example arguments"):
        hlotune.load_hlo("tests/data/hlo/softmax.hlo", np.ones(2))
    with pytest.raises(KernelArgumentError, match="int32"):
        hlotune.jit(lambda x, n: x * n)(np.ones(2, np.float32), 2**40)
    with pytest.raises(ConfigError, match="function"):
        hlotune.jit(3)


def test_without_jax_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(MissingDependencyError, match=r"hlotune\[jax\]"):
        hlotune.jit(lambda x: x)(np.ones(2))
    with pytest.raises(MissingDependencyError, match=r"hlotune\[jax\]"):
        hlotune.load_hlo(lambda x: x, np.ones(2))


def test_compiled_modules_take_keywords_and_python_scalars():
    def g(x, s, n):
        return x * s + n

    x = np.arange(4, dtype=np.float32)
    cm = hlotune.compile(jax.jit(g).lower(x, 2.0, 3))
    assert cm.module.param_keys() == [["arg0", "x.1", "x"], ["arg1", "s.1", "s"], ["arg2", "n.1", "n"]]
    want = np.asarray(g(x, 2.5, 3))
    np.testing.assert_array_equal(cm(x, 2.5, 3), want)
    np.testing.assert_array_equal(cm(x, n=3, s=2.5), want)
    np.testing.assert_array_equal(cm(arg0=x, **{"s.1": 2.5}, n=3), want)
    for args, kw, msg in (((x, 2.5), {"s": 1.0, "n": 3}, "given twice"), ((x,), {"s": 1.0}, "no value for parameter 2"),
                          ((x, 2.5), {"m": 3}, "no parameter 'm'"), ((x, 2.5, 3.5), {}, "not a int32"),
                          ((1.0, 2.5, 3), {}, "not a scalar")):
        with pytest.raises(KernelArgumentError, match=msg):
            cm(*args, **kw)


def test_a_function_closing_over_arrays_keeps_their_values():
    """Arrays a function closes over become constants of its HLO, printed in full: XLA's
    default printer elides those of more than a few elements as ``{...}``."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((64, 48)).astype(np.float32)
    bias = np.arange(48, dtype=np.int32)

    def f(x):
        return jnp.tanh(x @ table) + bias.astype(jnp.float32)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    _close(hlotune.jit(f)(x), jax.jit(f)(x))
    m = hlotune.load_hlo(f, x)
    assert len(m.params) == 1
    _close(hlotune.compile(m)(x), jax.jit(f)(x))
