"""``conditional`` as a select of its branches (frontend/handlers/control.py ``_as_select``):
inside a loop body always (so the loop compiles whole), outside one when the branches are
small; an index out of range takes the last branch. Checked against numpy statements."""

from __future__ import annotations

import numpy as np
from hlotune.runtime.module import _ExternStep
from hlotune.runtime.nested import NestedKernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune

BRANCHES = """b0 {
  p = (f32[N], f32[]) parameter(0)
  v = f32[N] get-tuple-element(p), index=0
  s = f32[] get-tuple-element(p), index=1
  h = f32[] constant(0.5)
  hh = f32[N] broadcast(h), dimensions={}
  r = f32[N] multiply(v, hh)
  ROOT t = (f32[N], f32[]) tuple(r, s)
}

b1 {
  p = (f32[N], f32[]) parameter(0)
  v = f32[N] get-tuple-element(p), index=0
  s = f32[] get-tuple-element(p), index=1
  sb = f32[N] broadcast(s), dimensions={}
  r = f32[N] add(v, sb)
  one = f32[] constant(1)
  s1 = f32[] add(s, one)
  ROOT t = (f32[N], f32[]) tuple(r, s1)
}

b2 {
  p = (f32[N], f32[]) parameter(0)
  v = f32[N] get-tuple-element(p), index=0
  s = f32[] get-tuple-element(p), index=1
  r = f32[N] negate(v)
  ROOT t = (f32[N], f32[]) tuple(r, s)
}
"""


def loop_text(n: int, steps: int, mod: int) -> str:
    """``steps`` iterations; step i takes branch ``(i % mod) - 1`` of three (so -1 and 3, out of
    range, take the last)."""
    return f"""HloModule c

{BRANCHES.replace("N", str(n))}
cond {{
  p = (s32[], f32[{n}], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant({steps})
  ROOT lt = pred[] compare(i, k), direction=LT
}}

body {{
  p = (s32[], f32[{n}], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[{n}] get-tuple-element(p), index=1
  s = f32[] get-tuple-element(p), index=2
  m = s32[] constant({mod})
  r = s32[] remainder(i, m)
  one = s32[] constant(1)
  b = s32[] subtract(r, one)
  a = (f32[{n}], f32[]) tuple(v, s)
  c = (f32[{n}], f32[]) conditional(b, a, a, a), branch_computations={{b0, b1, b2}}
  v1 = f32[{n}] get-tuple-element(c), index=0
  s1 = f32[] get-tuple-element(c), index=1
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[{n}], f32[]) tuple(i1, v1, s1)
}}

ENTRY e {{
  v0 = f32[{n}] parameter(0)
  z = s32[] constant(0)
  s0 = f32[] constant(0)
  t = (s32[], f32[{n}], f32[]) tuple(z, v0, s0)
  w = (s32[], f32[{n}], f32[]) while(t), condition=cond, body=body
  ROOT v = f32[{n}] get-tuple-element(w), index=1
}}
"""


def numpy_loop(v, steps, mod):
    v, s = v.copy(), np.float32(0)
    for i in range(steps):
        b = i % mod - 1
        if b == 0:
            v = v * np.float32(0.5)
        elif b == 1:
            v, s = v + s, s + np.float32(1)
        else:
            v = -v
    return v


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(0, 12), st.integers(1, 6))
def test_conditional_in_a_loop_is_a_select_and_the_loop_compiles_whole(n, steps, mod):
    c = hlotune.compile(hlotune.load_hlo(loop_text(n, steps, mod)), target="cpu")
    assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)
    v = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(c(v), numpy_loop(v, steps, mod), rtol=1e-6, atol=1e-6)


def top_text(n: int) -> str:
    return f"""HloModule t

{BRANCHES.replace("N", str(n))}
ENTRY e {{
  v = f32[{n}] parameter(0)
  s = f32[] parameter(1)
  b = s32[] parameter(2)
  a = (f32[{n}], f32[]) tuple(v, s)
  c = (f32[{n}], f32[]) conditional(b, a, a, a), branch_computations={{b0, b1, b2}}
  ROOT r = f32[{n}] get-tuple-element(c), index=0
}}
"""


def test_top_level_conditional_selects_when_small_and_runs_one_branch_when_large():
    """Small branches: a select of all of them; large ones: one branch run, compiled (a kernel
    calling the branch's graph, runtime/nested.py), never a host step."""
    for n, nested in ((64, False), ((1 << 20) // 2 + 1, True)):
        c = hlotune.compile(hlotune.load_hlo(top_text(n)), target="cpu")
        assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)
        assert any(isinstance(getattr(s, "kernel", None), NestedKernel) for s in c.graph.steps) is nested
        v = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        for b, want in ((0, v * np.float32(0.5)), (1, v + np.float32(2)), (2, -v), (-5, -v), (7, -v)):
            np.testing.assert_allclose(c(v, np.float32(2), np.int32(b)), want, rtol=1e-6)


def test_a_constant_index_inlines_its_branch_alone():
    """JAX's StableHLO passes some cases a constant index: only that branch is lowered, even a
    large one (no host step, no select over every branch); out of range takes the last."""
    n = (1 << 20) // 2 + 1
    v = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    for b, want in ((0, v * np.float32(0.5)), (1, v + np.float32(2)), (9, -v), (-1, -v)):
        text = top_text(n).replace("  b = s32[] parameter(2)", f"  b = s32[] constant({b})")
        c = hlotune.compile(hlotune.load_hlo(text), target="cpu")
        assert not any(isinstance(s, _ExternStep) for s in c.graph.steps)
        np.testing.assert_allclose(c(v, np.float32(2)), want, rtol=1e-6)
