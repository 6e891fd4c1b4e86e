"""Tiles at the edge of a tensor whose extent the tile does not divide (a 1000-word vocabulary cut
into 64-column tiles). The lowering stops such a tile's loops at the tensor's edge (a variable
trip count, which vectorizes) instead of guarding every iteration of its body, and
``static_range`` bounds a clamped dynamic index (an embedding row ``E[clamp(tok)]``), so a tile
reading one may run over a padded pack without guards. A matrix-vector product reads its B as it
lies: packing would copy each element to read it once. Measured (AMD EPYC, one thread): 32 steps of
``argmax(E[tok] @ W)`` with a 128 x 1000 W, 3.59 ms before, 0.28 ms after (XLA:CPU 0.30 ms)."""

from __future__ import annotations

import numpy as np
from _checks import MATMUL_F32, as_tuple, assert_close, random_inputs
from hlotune.dsl import dtypes as dt
from hlotune.dsl.expr import IterVar, as_expr, binary, cast, select, walk
from hlotune.dsl.ops import Op
from hlotune.dsl.reference import evaluate
from hlotune.runtime.targets import get_target
from hlotune.schedules.bounds import static_range
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.loops import For, If, LoopKind, Store, walk_stmts
from hlotune.schedules.lower import lower
from hlotune.schedules.templates.families import TEMPLATES
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

HW = get_target("cpu").hardware


def test_a_clamped_dynamic_index_has_the_clamps_range():
    idx = dsl.placeholder((1,), "int32", "idx")
    x = cast(idx[0], dt.index)
    wrapped = select(binary(Op.LT, x, as_expr(0, dt.index)), binary(Op.ADD, x, as_expr(1000, dt.index)), x)
    clamp = binary(Op.MIN, binary(Op.MAX, wrapped, as_expr(0, dt.index)), as_expr(999, dt.index))
    assert static_range(clamp, {}) == (0, 999)
    assert static_range(idx[0], {}) == (-(1 << 31), (1 << 31) - 1)       # a value read: its type's range
    v = IterVar("v", 300)
    assert static_range(cast(v.var, dt.int8), {v: (0, 299)}) == (-128, 127)   # a narrowing cast wraps
    assert static_range(cast(v.var, dt.int16), {v: (0, 299)}) == (0, 299)
    f = dsl.placeholder((1,), "float32", "f")
    assert static_range(f[0], {}) is None


def _wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


_INT = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b, Op.MIN: min, Op.MAX: max}


def _value(e, env):
    if e.op is Op.CONST:
        return e.arg
    if e.op is Op.VAR:
        return env[e.arg]
    return _wrap32(_INT[e.op](*(_value(s, env) for s in e.src)))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), extents=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=3))
def test_the_static_range_of_int32_arithmetic_holds_every_value_it_takes_with_wraparound(data, extents):
    vs = [IterVar(f"v{k}", n, dtype=dt.int32) for k, n in enumerate(extents)]
    leaf = st.one_of(st.sampled_from([v.var for v in vs]),
                     st.integers(-(1 << 31), (1 << 31) - 1).map(lambda c: as_expr(c, dt.int32)))
    e = data.draw(st.recursive(leaf, lambda inner: st.tuples(st.sampled_from(list(_INT)), inner, inner)
                               .map(lambda t: binary(t[0], t[1], t[2])), max_leaves=5))
    ranges = {v: (0, v.extent - 1) for v in vs}
    r = static_range(e, ranges)
    assert r is not None
    for _ in range(20):
        env = {v: data.draw(st.integers(0, v.extent - 1)) for v in vs}
        assert r[0] <= _value(e, env) <= r[1]


def _accumulating_vector_loops(fn) -> list:
    """The SIMD loops of ``fn`` that add into a buffer they read (a tile's accumulators)."""
    def accumulates(x):
        return isinstance(x, Store) and any(e.op is Op.LOAD and e.arg is x.buffer for e in walk([x.value]))
    return [f for f in walk_stmts(fn.body) if isinstance(f, For) and f.kind is LoopKind.VECTORIZE
            and any(accumulates(x) for x in walk_stmts(f.body))]


@settings(max_examples=12, deadline=None)
@given(n=st.sampled_from([24, 100, 1000, 1001, 130]), k=st.sampled_from([1, 17, 128]), seed=st.integers(0, 9))
def test_a_matrix_vector_product_reads_b_as_it_lies_and_stops_its_edge_tile_at_the_edge(n, k, seed):
    W = dsl.placeholder((k, n), "float32", "W")
    x = dsl.placeholder((k,), "float32", "x")
    r = dsl.reduce_axis(k, "r")
    y = dsl.compute((n,), lambda i: dsl.sum(x[r] * W[r, i], axis=r), "y")
    s = default_schedule([y], hw=HW)
    assert TEMPLATES["dot"].default_config(s.stage("y"), HW)["pack_b"] == 0
    loops = _accumulating_vector_loops(lower(s))
    assert loops and not any(isinstance(f.body, If) for f in loops)
    f = hlotune.build(s)
    ins = random_inputs([y], seed=seed)
    (got,), (ref,) = as_tuple(f(*ins)), evaluate([y], ins)
    assert_close(got, ref, *MATMUL_F32)


def test_gathered_rows_times_a_matrix_with_a_tail_match_and_their_tile_needs_no_guard():
    """Rows of an embedding picked by (wrapped, clamped) indices times W[128, 1000]: the tile over
    the padded pack of W reads A in bounds for every index, so its loops carry no guard."""
    V, K, N, M = 50, 128, 1000, 3
    E = dsl.placeholder((V, K), "float32", "E")
    tok = dsl.placeholder((M,), "int32", "tok")
    W = dsl.placeholder((K, N), "float32", "W")

    def row(m):
        t = cast(tok[m], dt.index)
        t = select(binary(Op.LT, t, as_expr(0, dt.index)), binary(Op.ADD, t, as_expr(V, dt.index)), t)
        return binary(Op.MIN, binary(Op.MAX, t, as_expr(0, dt.index)), as_expr(V - 1, dt.index))
    x = dsl.compute((M, K), lambda m, c: E[row(m), c], "x")
    r = dsl.reduce_axis(K, "r")
    y = dsl.compute((M, N), lambda m, i: dsl.sum(x[m, r] * W[r, i], axis=r), "y")
    s = default_schedule([y], hw=HW)
    f = hlotune.build(s)
    rng = np.random.default_rng(0)
    e, w = (rng.standard_normal(sh).astype(np.float32) for sh in ((V, K), (K, N)))
    t = np.array([-1, 7, 400], np.int32)       # wrapped, in range, clamped
    got = f(e, t, w)
    rows = np.clip(np.where(t < 0, t + V, t), 0, V - 1)
    assert_close(got, e[rows] @ w, *MATMUL_F32)
    assert "if (" not in f.source.split("hl_acc0 = hl_vld", 1)[-1].split("hl_vst", 1)[0]
