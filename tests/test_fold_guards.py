"""schedules.bounds.fold_guards: comparisons decided by the loop ranges become constants, and the
selects, and/or and min/max they decide are replaced by their outcome, without changing any value
the expression takes inside the ranges (hypothesis); and what it buys: a bf16 pack whose region
lies inside the tensor is a plain copy of stored values (no guard, clamp or f32 round trip)."""

from __future__ import annotations

import numpy as np
from hlotune.dsl import dtypes as dt
from hlotune.dsl.expr import Expr, IterVar, as_expr, binary, select, walk
from hlotune.dsl.ops import Op
from hlotune.schedules.bounds import fold_guards
from hypothesis import given, settings
from hypothesis import strategies as st

_INT = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
        Op.MIN: min, Op.MAX: max}
_CMP = {Op.LT: lambda a, b: a < b, Op.LE: lambda a, b: a <= b, Op.GT: lambda a, b: a > b,
        Op.GE: lambda a, b: a >= b}


def value(e: Expr, env: dict):
    """The value of ``e`` with variables from ``env`` (an evaluator of its own, for the test)."""
    if e.op is Op.CONST:
        return e.arg
    if e.op is Op.VAR:
        return env[e.arg]
    v = [value(s, env) for s in e.src]
    if e.op in _INT:
        return _INT[e.op](*v)
    if e.op in _CMP:
        return _CMP[e.op](*v)
    if e.op is Op.AND:
        return bool(v[0]) and bool(v[1])
    if e.op is Op.OR:
        return bool(v[0]) or bool(v[1])
    if e.op is Op.SELECT:
        return v[1] if v[0] else v[2]
    raise AssertionError(e.op)


def _ints(vs):
    leaf = st.one_of(st.sampled_from([v.var for v in vs]), st.integers(-20, 40).map(lambda c: as_expr(c, dt.index)))
    return st.recursive(leaf, lambda inner: st.tuples(st.sampled_from(list(_INT)), inner, inner)
                        .map(lambda t: binary(t[0], t[1], t[2])), max_leaves=6)


def _bools(vs):
    cmp = st.tuples(st.sampled_from(list(_CMP)), _ints(vs), _ints(vs)).map(lambda t: binary(t[0], t[1], t[2]))
    return st.recursive(cmp, lambda inner: st.tuples(st.sampled_from([Op.AND, Op.OR]), inner, inner)
                        .map(lambda t: binary(t[0], t[1], t[2])), max_leaves=3)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), extents=st.lists(st.integers(1, 9), min_size=1, max_size=3))
def test_folding_keeps_every_value_inside_the_ranges(data, extents):
    vs = [IterVar(f"v{k}", n) for k, n in enumerate(extents)]
    ranges = {v: (0, v.extent - 1) for v in vs}
    e = data.draw(st.one_of(
        st.tuples(_bools(vs), _ints(vs), _ints(vs)).map(lambda t: select(*t)), _ints(vs), _bools(vs)))
    f = fold_guards(e, ranges)
    for point in np.ndindex(*extents):
        env = dict(zip(vs, (int(p) for p in point)))
        assert value(f, env) == value(e, env)


def test_decided_guards_and_clamps_go():
    i, j = IterVar("i", 16), IterVar("j", 4)
    row = binary(Op.ADD, binary(Op.MUL, i.var, 4), j.var)              # 0 .. 63
    inside = binary(Op.LT, row, 64)
    clamp = binary(Op.MIN, row, 63)
    e = select(binary(Op.AND, inside, binary(Op.GE, row, 0)), clamp, as_expr(-1, dt.index))
    f = fold_guards(e, {i: (0, 15), j: (0, 3)})
    assert f is row or not any(x.op in (Op.SELECT, Op.MIN, Op.LT) for x in walk([f]))
    g = fold_guards(select(binary(Op.LT, row, 60), clamp, as_expr(-1, dt.index)), {i: (0, 15), j: (0, 3)})
    assert any(x.op is Op.SELECT for x in walk([g]))                    # 60..63 fail: kept


def test_a_bf16_pack_inside_the_tensor_is_a_plain_copy():
    import ml_dtypes

    import hlotune
    text = """HloModule m
ENTRY e {
  a = bf16[200,256] parameter(0)
  b = bf16[256,512] parameter(1)
  ROOT d = f32[200,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    f = hlotune.compile(text)
    (k,) = f.kernels
    body = k.source[k.source.index("int kernel("):]
    packs = [ln for ln in body.splitlines() if "_shared[" in ln and "] = " in ln]
    assert packs and all("hl_f32_to_bf16" not in ln for ln in packs)
    assert any("?" not in ln.split("] = ", 1)[1] for ln in packs)     # B's panels: no guard, no clamp
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-4, atol=1e-4)
