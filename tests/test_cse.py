"""Common subexpressions across a module (frontend/cse.py), as XLA's CSE after inlining: equal
instructions on the same values are lowered once, across inlined calls and whatever the
metadata, names or called computations' names; non-deterministic and effectful ops, different
constants and different attributes are not merged; a merged value that a while loop updates in
place is still intact for its other readers. Answers against numpy and scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
from hlotune.dsl.tensor import ExternOp
from hlotune.runtime.lapack import LapackKernel
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune


def externs(m) -> list:
    """The extern ops of a loaded module's lowered graph, each once."""
    seen, out, stack = set(), [], list(m.outputs)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t.op, ExternOp):
            out.append(t.op)
        stack.extend(getattr(t.op, "inputs", ()))
    return out


LU_CALLS = """HloModule lu3
{comps}
ENTRY e {{
  a = f32[16,16] parameter(0)
{calls}
  ROOT t = ({results}) tuple({names})
}}
"""
LU_COMP = """lu_part{k} {{
  p{k} = f32[16,16] parameter(0)
  one{k} = f32[] constant(1)
  b{k} = f32[16,16] broadcast(one{k}), dimensions={{}}
  q{k} = f32[16,16] add(p{k}, b{k})
  lu{k} = (f32[16,16]{{0,1}}, s32[16]{{0}}, s32[]) custom-call(q{k}), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={{}}, metadata={{op_name="site{k}" source_line={k}}}
  ROOT g{k} = f32[16,16]{{0,1}} get-tuple-element(lu{k}), index=0
}}
"""


def _lu_module(n: int) -> str:
    return LU_CALLS.format(comps="\n".join(LU_COMP.format(k=k) for k in range(n)),
                           calls="\n".join(f"  c{k} = f32[16,16]{{0,1}} call(a), to_apply=lu_part{k}" for k in range(n)),
                           results=", ".join(["f32[16,16]{0,1}"] * n), names=", ".join(f"c{k}" for k in range(n)))


def test_equal_lapack_calls_in_different_computations_run_once():
    """JAX writes one getrf per slogdet, inv and solve of the same matrix, each in a computation
    of its own with its own names and metadata: one LU runs, and all three results are it."""
    m = hlotune.load_hlo(_lu_module(3))
    assert len(externs(m)) == 1
    c = hlotune.compile(m)
    assert [s.kernel.routine for s in c.graph.steps if isinstance(getattr(s, "kernel", None), LapackKernel)] == ["sgetrf"]
    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32) + 8 * np.eye(16, dtype=np.float32)
    lu, _ = sla.lu_factor(a.astype(np.float64) + 1.0)
    for r in c(a):
        np.testing.assert_allclose(r, lu, rtol=1e-4, atol=1e-4)


CONSTS = """
  k1 = f32[] constant(1)
  c1 = f32[8] broadcast(k1), dimensions={}
  k1b = f32[] constant(1)
  c1b = f32[8] broadcast(k1b), dimensions={}
  k2 = f32[] constant(2)
  c2 = f32[8] broadcast(k2), dimensions={}
  lo = f32[] constant(0)
  hi = f32[] constant(1)"""


def _two(op_a: str, op_b: str) -> str:
    return f"""HloModule two
ENTRY e {{
  x = f32[8] parameter(0)
  y = f32[8] parameter(1){CONSTS}
  a = f32[8] {op_a}
  b = f32[8] {op_b}
  ROOT t = (f32[8], f32[8]) tuple(a, b)
}}
"""


X, Y = np.arange(8, dtype=np.float32), np.full(8, 0.5, np.float32)


@pytest.mark.parametrize("op_a, op_b, merged, want", [
    ('add(x, y), metadata={op_name="p"}', 'add(x, y), metadata={op_name="q" source_line=7}', True, (X + Y, X + Y)),
    ("add(x, y)", "add(y, x)", False, (X + Y, Y + X)),    # operands in another order: another instruction
    ("add(x, c1)", "add(x, c2)", False, (X + 1, X + 2)),  # different constants
    ("add(x, c1)", "add(x, c1b)", True, (X + 1, X + 1)),  # equal constants
    ("clamp(c1, x, c2)", "clamp(c1, x, c1b)", False, (np.clip(X, 1, 2), np.clip(X, 1, 1))),
    ("rng(lo, hi), distribution=rng_uniform", "rng(lo, hi), distribution=rng_uniform", False, None),
])
def test_what_is_merged(op_a, op_b, merged, want):
    m = hlotune.load_hlo(_two(op_a, op_b))
    a, b = m.outputs
    assert (a is b) == merged
    if want is not None:
        ra, rb = hlotune.compile(m)(X, Y)
        np.testing.assert_array_equal(ra, want[0])
        np.testing.assert_array_equal(rb, want[1])


def test_side_effecting_custom_calls_stay_apart():
    text = """HloModule se
ENTRY e {
  x = f32[4] parameter(0)
  a = f32[4] custom-call(x), custom_call_target="my_effect", custom_call_has_side_effect=true
  b = f32[4] custom-call(x), custom_call_target="my_effect", custom_call_has_side_effect=true
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
"""
    from hlotune.frontend.cse import Fingerprints, cse_key
    from hlotune.frontend.parser import parse_hlo
    mod = parse_hlo(text)
    comp = mod.entry_computation
    a, b = comp.by_name["a"], comp.by_name["b"]
    fp = Fingerprints(mod)
    assert cse_key(a, [object()], False, (0, 0), fp) is None
    assert cse_key(b, [object()], False, (0, 0), fp) is None


WHILE_ALIAS = """HloModule alias
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  upd = f32[1] constant({100})
  w = f32[8] dynamic-update-slice(v, upd, i)
  ROOT r = (s32[], f32[8]) tuple(j, w)
}
ENTRY e {
  a = f32[8] parameter(0)
  x1 = f32[8] exponential(a)
  x2 = f32[8] exponential(a), metadata={op_name="again"}
  z = s32[] constant(0)
  init = (s32[], f32[8]) tuple(z, x1)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body
  out = f32[8] get-tuple-element(loop), index=1
  ROOT t = (f32[8], f32[8]) tuple(out, x2)
}
"""


def test_a_merged_value_updated_in_place_by_a_loop_is_intact_for_its_other_reader():
    m = hlotune.load_hlo(WHILE_ALIAS)
    a = np.linspace(-1, 1, 8).astype(np.float32)
    out, x2 = hlotune.compile(m)(a)
    e = np.exp(a.astype(np.float64))
    np.testing.assert_allclose(x2, e, rtol=1e-6)
    np.testing.assert_allclose(out, np.concatenate([[100, 100, 100], e[3:]]), rtol=1e-6)


@settings(max_examples=15, deadline=None)
@given(copies=st.integers(1, 4), k=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_repeated_calls_of_a_dot_are_one_dot_with_the_same_answer(copies, k, seed):
    """``copies`` computations computing the same ``tanh(x @ w) * k`` under different names,
    each called on the same arguments: one dot task, every result equal to numpy's."""
    from hlotune.autotune.task import extract_tasks
    from hlotune.runtime.targets import get_target
    comps = "\n".join(f"""f{c} {{
  x{c} = f32[6,5] parameter(0)
  w{c} = f32[5,7] parameter(1)
  d{c} = f32[6,7] dot(x{c}, w{c}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  t{c} = f32[6,7] tanh(d{c})
  k{c} = f32[] constant({k})
  b{c} = f32[6,7] broadcast(k{c}), dimensions={{}}
  ROOT r{c} = f32[6,7] multiply(t{c}, b{c})
}}""" for c in range(copies))
    calls = "\n".join(f"  c{c} = f32[6,7] call(x, w), to_apply=f{c}" for c in range(copies))
    text = (f"HloModule dots\n{comps}\nENTRY e {{\n  x = f32[6,5] parameter(0)\n  w = f32[5,7] parameter(1)\n"
            f"{calls}\n  ROOT t = ({', '.join(['f32[6,7]'] * copies)}) tuple({', '.join(f'c{c}' for c in range(copies))})\n}}\n")
    m = hlotune.load_hlo(text)
    assert len({id(o) for o in m.outputs}) == 1
    assert len(extract_tasks(list(m.outputs), list(m.params), get_target("cpu"))) == 1
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
    res = hlotune.compile(m)(x, w)
    res = res if isinstance(res, tuple) else (res,)
    want = np.tanh(x.astype(np.float64) @ w) * k
    for r in res:
        np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)
