"""``sort`` and ``topk`` compiled into C (runtime/sort.py): the same answers as JAX bit for bit
(NaNs of both signs, -0.0, infinities and ties; every dtype and dim), as the comparator applied
pair by pair, and one C call for a module whose only extern op is a sort."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.runtime.module import CompiledGraph
from hlotune.runtime.targets import get_target
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sort import COMPARATORS, NANS, SPECIAL, _pairwise, draw_inputs, sort_module

import hlotune

DTYPES = ["float32", "float64", "bfloat16", "float16", "int8", "int32", "int64", "uint8", "uint32"]


def _data(rng, dtype: str, shape) -> np.ndarray:
    """Values with ties; floats with NaNs of both signs, signed zeros and infinities."""
    dt = jnp.dtype(dtype)
    if jnp.issubdtype(dt, jnp.floating):
        pool = np.array(SPECIAL + NANS + list(rng.standard_normal(6)), np.float64)
        return pool[rng.integers(0, len(pool), shape)].astype(dt)
    info = np.iinfo(dt)
    pool = np.array([info.min, info.max, 0, 1, 2, 3], np.int64)
    return pool[rng.integers(0, len(pool), shape)].astype(dt)


def _compiled(fn, *args):
    with jax.enable_x64(True):
        text = jax.jit(fn).lower(*args).as_text()
    m = hlotune.load_hlo(text)
    c = hlotune.compile(m, target="cpu")
    return c


def _same(want, got):
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        w, g = np.asarray(w), np.asarray(g)
        assert (w.dtype, w.shape) == (g.dtype, g.shape)
        np.testing.assert_array_equal(w.view(np.uint8), g.view(np.uint8))


def _all_compiled(c) -> bool:
    return c.graph.program is not None


PROGRAMS = {
    "sort": lambda dim: (lambda x: jnp.sort(x, axis=dim)),
    "sort_desc": lambda dim: (lambda x: jnp.sort(x, axis=dim, descending=True)),
    "argsort": lambda dim: (lambda x: jnp.argsort(x, axis=dim, stable=True)),
    "two_keys": lambda dim: (lambda x: jax.lax.sort((x // 2 if jnp.issubdtype(x.dtype, jnp.integer) else
                                                     jnp.floor(x), x, jnp.arange(x.size).reshape(x.shape)),
                                                    dimension=dim, num_keys=2)),
    "top_k": lambda dim: (lambda x: jax.lax.top_k(x, min(3, x.shape[-1]))),
}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(PROGRAMS)), dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), dim=st.integers(0, 2),
       seed=st.integers(0, 1000))
def test_compiled_sort_matches_jax(kind, dtype, shape, dim, seed):
    dim = dim % len(shape)
    x = _data(np.random.default_rng(seed), dtype, tuple(shape))
    fn = PROGRAMS[kind](dim)
    c = _compiled(fn, x)
    assert _all_compiled(c), f"{kind} {dtype}: the sort ran on the host"
    with jax.enable_x64(True):
        want = jax.jit(fn)(x)
    _same(want, c(x))


@pytest.mark.parametrize("n", [33, 257, 5000])
def test_long_rows_take_the_radix_path(n):
    """Rows over 32 elements sort by radix passes (skipped where a byte is constant)."""
    rng = np.random.default_rng(n)
    for dtype in ("float32", "bfloat16", "int64", "float64"):
        x = _data(rng, dtype, (3, n))
        for fn in (lambda x: jnp.argsort(x, axis=-1, stable=True), lambda x: jax.lax.top_k(x, 7)):
            c = _compiled(fn, x)
            assert _all_compiled(c)
            with jax.enable_x64(True):
                want = jax.jit(fn)(x)
            _same(want, c(x))


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(k for k in COMPARATORS if k != "mixed_key")), rows=st.integers(1, 3),
       cols=st.integers(1, 70), dim=st.integers(0, 1), data=st.data())
def test_compiled_comparators_match_the_pairwise_comparator(kind, rows, cols, dim, data):
    """Every key form the comparator recogniser reads (XLA's expanded total order, JAX's NaN and
    zero canonicalization, integer keys, several keys) sorts as the comparator applied pair by
    pair on the host."""
    x, k = draw_inputs(data, kind, rows, cols)
    text = sort_module(kind, (rows, cols), dim)
    low = lower_module(parse_hlo(text, file="t.hlo"))
    g = CompiledGraph(low.outputs, low.params, get_target("cpu"))
    assert g.program is not None
    got, ref = g(x, k), _pairwise(text, x, k)
    np.testing.assert_array_equal(got[2], ref[2], err_msg=f"{kind}: permutation")
    np.testing.assert_array_equal(got[0].view(np.uint32), ref[0].view(np.uint32))
    np.testing.assert_array_equal(got[1], ref[1])


def test_a_pairwise_comparator_stays_on_the_host():
    text = sort_module("mixed_key", (2, 9), 1)
    low = lower_module(parse_hlo(text, file="t.hlo"))
    assert CompiledGraph(low.outputs, low.params, get_target("cpu")).program is None


def test_top_p_sampling_is_one_c_call():
    """Sort, cumulative sum and a threshold over a 4 x 32000 vocabulary: one compiled program
    (the sort was a host step), the same tokens as JAX."""
    def top_p(logits, u):
        p = jax.nn.softmax(logits, axis=-1)
        order = jnp.argsort(-p, axis=-1)
        sp = jnp.take_along_axis(p, order, axis=-1)
        keep = jnp.cumsum(sp, axis=-1) - sp < 0.9
        sp = jnp.where(keep, sp, 0.0)
        pick = jnp.argmax(jnp.cumsum(sp, axis=-1) >= u[:, None] * jnp.sum(sp, axis=-1, keepdims=True), axis=-1)
        return jnp.take_along_axis(order, pick[:, None], axis=-1)[:, 0]
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((4, 32000)) * 3).astype(np.float32)
    u = rng.uniform(size=4).astype(np.float32)
    c = _compiled(top_p, logits, u)
    assert _all_compiled(c)
    np.testing.assert_array_equal(np.asarray(jax.jit(top_p)(logits, u)), c(logits, u))
