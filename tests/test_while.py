"""``while`` loops: compiled whole on the cpu (runtime/whileloop.py) or run on the host, with
XLA's answers either way."""

from __future__ import annotations

import numpy as np
import pytest

import hlotune
from hlotune.dsl.reference import evaluate
from hlotune.runtime.module import _ExternStep, _KernelStep

# state: (counter, vector, matrix passed through, a flag copied twice); body doubles the vector
# and adds the matrix's row sums, the flag is the "any > 100" of the vector
LOOP = """HloModule loop, entry_computation_layout={(s32[], f32[8]{0}, f32[8,8]{1,0})->(s32[], f32[8]{0}, pred[], pred[])}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

or {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT o = pred[] or(a, b)
}

cond {
  t = (s32[], f32[8]{0}, f32[8,8]{1,0}, pred[], pred[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(LIMIT)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  t = (s32[], f32[8]{0}, f32[8,8]{1,0}, pred[], pred[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[8]{0} get-tuple-element(t), index=1
  m = f32[8,8]{1,0} get-tuple-element(t), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  two = f32[] constant(2)
  two8 = f32[8]{0} broadcast(two), dimensions={}
  v2 = f32[8]{0} multiply(v, two8)
  zero = f32[] constant(0)
  rs = f32[8]{0} reduce(m, zero), dimensions={1}, to_apply=add
  v3 = f32[8]{0} add(v2, rs)
  hundred = f32[] constant(100)
  h8 = f32[8]{0} broadcast(hundred), dimensions={}
  gt = pred[8]{0} compare(v3, h8), direction=GT
  f = pred[] constant(false)
  any = pred[] reduce(gt, f), dimensions={0}, to_apply=or
  ROOT r = (s32[], f32[8]{0}, f32[8,8]{1,0}, pred[], pred[]) tuple(i1, v3, m, any, any)
}

ENTRY main {
  i0 = s32[] parameter(0)
  v0 = f32[8]{0} parameter(1)
  m0 = f32[8,8]{1,0} parameter(2)
  f0 = pred[] constant(false)
  init = (s32[], f32[8]{0}, f32[8,8]{1,0}, pred[], pred[]) tuple(i0, v0, m0, f0, f0)
  w = (s32[], f32[8]{0}, f32[8,8]{1,0}, pred[], pred[]) while(init), condition=cond, body=body
  a = s32[] get-tuple-element(w), index=0
  b = f32[8]{0} get-tuple-element(w), index=1
  c = pred[] get-tuple-element(w), index=3
  d = pred[] get-tuple-element(w), index=4
  ROOT out = (s32[], f32[8]{0}, pred[], pred[]) tuple(a, b, c, d)
}
"""


def _numpy_loop(i, v, m, limit):
    v = v.copy()
    flag = False
    while i < limit:
        i += 1
        v = (v * np.float32(2) + m.sum(axis=1, dtype=np.float32)).astype(np.float32)
        flag = bool((v > 100).any())
    return i, v, flag


@pytest.mark.parametrize("limit, start", [(6, 0), (0, 0), (3, 5)])
def test_while_compiled_whole_matches_numpy_and_reference(limit, start):
    m = hlotune.load_hlo(LOOP.replace("LIMIT", str(limit)))
    c = hlotune.compile(m, target="cpu")
    kinds = [type(s) for s in c.graph.steps]
    assert _ExternStep not in kinds and _KernelStep in kinds       # no trip through Python per iteration
    rng = np.random.default_rng(0)
    v = rng.standard_normal(8).astype(np.float32)
    mat = rng.standard_normal((8, 8)).astype(np.float32)
    got = c(np.int32(start), v, mat)
    i, want_v, flag = _numpy_loop(start, v, mat, limit)
    assert int(got[0]) == i and bool(got[2]) == flag == bool(got[3])
    np.testing.assert_allclose(got[1], want_v, rtol=1e-5, atol=1e-5)
    ref = evaluate(m.outputs, [np.int32(start), v, mat])
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(r, np.float64), rtol=1e-5, atol=1e-5)


def test_while_with_a_host_step_inside_runs_on_the_host():
    """A sort by a comparator that is no key order ('<=': compared pair by pair on the host) in
    the body: the loop stays an extern step and still gives the answer."""
    text = """HloModule s, entry_computation_layout={(f32[6]{0})->f32[6]{0}}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LE
}

cond {
  t = (s32[], f32[6]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(2)
  ROOT p = pred[] compare(i, n), direction=LT
}

body {
  t = (s32[], f32[6]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[6]{0} get-tuple-element(t), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  n = f32[6]{0} negate(v)
  s = f32[6]{0} sort(n), dimensions={0}, to_apply=lt
  ROOT r = (s32[], f32[6]{0}) tuple(i1, s)
}

ENTRY main {
  x = f32[6]{0} parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[6]{0}) tuple(z, x)
  w = (s32[], f32[6]{0}) while(init), condition=cond, body=body
  ROOT v = f32[6]{0} get-tuple-element(w), index=1
}
"""
    m = hlotune.load_hlo(text)
    c = hlotune.compile(m, target="cpu")
    assert any(isinstance(s, _ExternStep) for s in c.graph.steps)
    x = np.array([3, -1, 4, 1, -5, 9], np.float32)
    np.testing.assert_array_equal(c(x), np.sort(-np.sort(-x)))
