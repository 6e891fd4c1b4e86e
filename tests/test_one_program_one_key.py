"""One program, one set of workloads: JAX's HLO text and its StableHLO text of a training step
spell reshapes, broadcasts and constant operands differently; lowered, they give the same
workload keys (so one tuning database serves both), and the same answers."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.autotune.task import extract_tasks, workload_key
from hlotune.dsl.tensor import Graph

import hlotune

jax = pytest.importorskip("jax", reason="jax (the dev extra) is not installed")


def keys(text: str) -> set[str]:
    m = hlotune.load_hlo(text)
    return {t.key for t in extract_tasks(m.outputs, m.params, hlotune.get_target("cpu"))}


def test_an_adam_step_has_the_same_workloads_in_both_forms():
    import jax.numpy as jnp

    def step(w, b, x, y, m, v):
        def loss(p):
            h = jnp.maximum(x @ p[0] + p[1], 0.0)
            return jnp.mean((h - y) ** 2)
        gw, gb = jax.grad(loss)((w, b))
        m2 = 0.9 * m + 0.1 * gw
        v2 = 0.999 * v + 0.001 * gw * gw
        return w - 1e-3 * m2 / (jnp.sqrt(v2) + 1e-8), b - 1e-3 * gb, m2, v2

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((16, 8), (8,), (32, 16), (32, 8), (16, 8), (16, 8))]
    args[5] = np.abs(args[5])
    low = jax.jit(step).lower(*args)
    hlo, shlo = low.compiler_ir("hlo").as_hlo_text(), low.as_text()
    assert keys(hlo) == keys(shlo)
    want = jax.jit(step)(*args)
    for text in (hlo, shlo):
        got = hlotune.compile(hlotune.load_hlo(text))(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-6)


CHAIN = """HloModule c
ENTRY e {
  b = f32[8] parameter(0)
  x = f32[4,8] parameter(1)
  r1 = f32[1,8] reshape(b)
  same = f32[1,8] broadcast(r1), dimensions={0,1}
  r2 = f32[8] reshape(same)
  bb = f32[4,8] broadcast(r2), dimensions={1}
  two = f32[] constant(2)
  tt = f32[4,8] broadcast(two), dimensions={}
  s = f32[4,8] add(x, bb)
  ROOT m = f32[4,8] multiply(OPERANDS)
}
"""

DIRECT = """HloModule d
ENTRY e {
  b = f32[8] parameter(0)
  x = f32[4,8] parameter(1)
  bb = f32[4,8] broadcast(b), dimensions={1}
  two = f32[] constant(2)
  tt = f32[4,8] broadcast(two), dimensions={}
  s = f32[4,8] add(x, bb)
  ROOT m = f32[4,8] multiply(s, tt)
}
"""


@pytest.mark.parametrize("operands", ["s, tt", "tt, s"])
def test_view_chains_and_constant_operands_key_alike(operands):
    """reshape -> identity broadcast -> reshape -> broadcast reads the parameter directly, as
    one broadcast does; a constant operand keys alike on either side."""
    chain = hlotune.load_hlo(CHAIN.replace("OPERANDS", operands))
    direct = hlotune.load_hlo(DIRECT)
    kc, kd = (workload_key(Graph(list(m.outputs), list(m.params))) for m in (chain, direct))
    assert kc == kd
    b, x = np.arange(8, dtype=np.float32), np.ones((4, 8), np.float32)
    for m in (chain, direct):
        np.testing.assert_array_equal(hlotune.compile(m)(b, x), 2 * (x + b))
