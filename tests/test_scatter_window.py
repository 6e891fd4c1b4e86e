"""A scatter of one update window (``x.at[i].set(v)``, ``x.at[i, :].add(v)``) lowers to
computes (frontend/handlers/indexing.py ``_one_window``): checked against a numpy statement of
XLA's semantics (a window not wholly in bounds is skipped), and inside a loop it is an in-place
update, so the loop compiles whole."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.runtime.module import _ExternStep
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune

_AB = "a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  "
COMBINERS = {"set": "a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)", "add": _AB + "ROOT r = f32[] add(a, b)",
             "max": _AB + "ROOT r = f32[] maximum(a, b)"}


def scatter_text(shape, inserted, sdod, wsize, comb) -> str:
    upd = [w for k, w in enumerate(wsize) if k not in inserted]
    f = lambda s: f"f32[{','.join(map(str, s))}]"
    return f"""HloModule s

comb {{
  {COMBINERS[comb]}
}}

ENTRY e {{
  x = {f(shape)} parameter(0)
  i = s32[{len(sdod)}] parameter(1)
  u = {f(upd)} parameter(2)
  ROOT s = {f(shape)} scatter(x, i, u), update_window_dims={{{','.join(map(str, range(len(upd))))}}}, inserted_window_dims={{{','.join(map(str, inserted))}}}, scatter_dims_to_operand_dims={{{','.join(map(str, sdod))}}}, index_vector_dim=0, to_apply=comb
}}
"""


def numpy_scatter(x, idx, u, inserted, sdod, wsize, comb):
    start = [0] * x.ndim
    for c, k in enumerate(sdod):
        start[k] = int(idx[c])
    out = x.copy()
    if all(0 <= s <= n - w for s, n, w in zip(start, x.shape, wsize)):
        box = tuple(slice(s, s + w) for s, w in zip(start, wsize))
        v = u.reshape(wsize)
        out[box] = {"set": v, "add": out[box] + v, "max": np.maximum(out[box], v)}[comb]
    return out


@st.composite
def cases(draw):
    r = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 6), min_size=r, max_size=r))
    inserted = sorted(draw(st.sets(st.integers(0, r - 1), max_size=r)))
    sdod = draw(st.permutations(range(r)))[:draw(st.integers(1, r))]
    wsize = [1 if k in inserted else draw(st.integers(1, shape[k])) for k in range(r)]
    idx = [draw(st.integers(-2, shape[k] + 1)) for k in sdod]
    return shape, inserted, list(sdod), wsize, idx, draw(st.sampled_from(sorted(COMBINERS)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_one_window_scatter_matches_xla_semantics(case):
    shape, inserted, sdod, wsize, idx, comb = case
    m = hlotune.load_hlo(scatter_text(shape, inserted, sdod, wsize, comb))
    c = hlotune.compile(m, target="cpu")
    assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)       # computes, not numpy
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    u = rng.standard_normal([w for k, w in enumerate(wsize) if k not in inserted]).astype(np.float32)
    i = np.asarray(idx, np.int32)
    np.testing.assert_array_equal(c(x, i, u), numpy_scatter(x, i, u, inserted, sdod, wsize, comb))


def test_a_loop_writing_one_element_per_step_compiles_whole_and_in_place():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(v):
        def body(i, s):
            acc, out = s
            acc = acc * 0.5 + v[i]
            return acc, out.at[i].set(acc).at[i + 40].add(1.0)
        return jax.lax.fori_loop(0, 32, body, (jnp.float32(0), jnp.zeros(64, jnp.float32)))[1]

    v = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    c = hlotune.compile(hlotune.load_hlo(jax.jit(f).lower(v).compiler_ir("hlo").as_hlo_text()), target="cpu")
    assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)       # no host loop
    loop = [s for s in c.graph.steps if s.graph is None]
    assert loop and "memcpy(cur" in loop[0].kernel.source                   # a region written in place
    np.testing.assert_allclose(c(v), np.asarray(jax.jit(f)(v)), rtol=1e-6, atol=1e-6)


def multi_text(shape, nwin, wlen, comb) -> str:
    """Rows of ``u`` (nwin windows of wlen) combined into ``x`` at (row index, column start)
    pairs of ``i`` (nwin x 2): a 2-D scatter with one inserted dim."""
    return f"""HloModule m

comb {{
  {COMBINERS[comb]}
}}

ENTRY e {{
  x = f32[{shape[0]},{shape[1]}] parameter(0)
  i = s32[{nwin},2] parameter(1)
  u = f32[{nwin},{wlen}] parameter(2)
  ROOT s = f32[{shape[0]},{shape[1]}] scatter(x, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0,1}}, index_vector_dim=1, to_apply=comb
}}
"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(1, 8), st.integers(1, 12), st.integers(0, 10_000),
       st.sampled_from(["add", "max", "set"]))
def test_scatter_of_many_windows_compiles_and_matches_numpy(rows, cols, nwin, seed, comb):
    """Many windows, duplicates and out-of-bounds ones: a compiled kernel (no host step), equal
    to numpy applying the in-bounds windows in order."""
    rng = np.random.default_rng(seed)
    wlen = int(rng.integers(1, cols + 1))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    i = np.stack([rng.integers(-1, rows + 1, nwin), rng.integers(-1, cols - wlen + 2, nwin)], 1).astype(np.int32)
    u = rng.standard_normal((nwin, wlen)).astype(np.float32)
    c = hlotune.compile(hlotune.load_hlo(multi_text((rows, cols), nwin, wlen, comb)), target="cpu")
    assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)
    want = x.copy()
    for (r, s0), v in zip(i, u):
        if 0 <= r < rows and 0 <= s0 <= cols - wlen:
            box = want[r, s0:s0 + wlen]
            want[r, s0:s0 + wlen] = {"set": v, "add": box + v, "max": np.maximum(box, v)}[comb]
    np.testing.assert_allclose(c(x, i, u), want, rtol=1e-6, atol=1e-6)
