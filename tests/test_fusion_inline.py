"""Default fusion of shared expensive stages (schedules/fusion.py): a stage with transcendental
math read by several stages is inlined when all its readers end up inlined into one
materialized stage, each read at that stage's own indices (every element is then computed once
per output element, as materializing it would), and then a dot's activation (an exact GELU's
erfc polynomial reads its intermediate twice) runs on the dot's register tile. Readers in
different stages, shifted reads and reductions keep it materialized. Numbers are checked
against the reference every time."""

from __future__ import annotations

import pytest
from _checks import MATMUL_F32, as_tuple, assert_close, random_inputs

import hlotune
from hlotune import dsl
from hlotune.dsl.reference import evaluate
from hlotune.schedules.fusion import INLINE_TREE_MAX, absorbed_tile, default_schedule, fuse_default


def _matches(outs, tol=MATMUL_F32):
    s = default_schedule(outs)
    f = hlotune.build(s)
    ins = random_inputs(outs, seed=3)
    for got, ref in zip(as_tuple(f(*ins)), evaluate(outs, ins)):
        assert_close(got, ref, *tol)
    return s


def _shared(n=64, shift=False, two_roots=False):
    X = dsl.placeholder((n, n), "float32", name="X")
    E = dsl.compute((n, n), lambda i, j: dsl.exp(X[i, j] * 0.5), name="E")
    P = dsl.compute((n, n), lambda i, j: E[i, j] + 1.0, name="P")
    if shift:
        Q = dsl.compute((n, n), lambda i, j: E[i, (j + 1) % n] * 2.0, name="Q")
    else:
        Q = dsl.compute((n, n), lambda i, j: E[i, j] * 2.0, name="Q")
    if two_roots:
        return [P, Q]
    return [dsl.compute((n, n), lambda i, j: dsl.select(X[i, j] > 0, P[i, j], Q[i, j]), name="Y")]


def test_shared_expensive_stage_read_in_one_stage_is_inlined():
    s = _matches(_shared())
    assert s.stage("E").is_inline


@pytest.mark.parametrize("kw", [{"shift": True}, {"two_roots": True}])
def test_shared_expensive_stage_stays_materialized(kw):
    s = _matches(_shared(**kw))
    assert not s.stage("E").is_inline


def test_plan_can_still_materialize_it():
    outs = _shared()
    s = hlotune.Schedule(outs)
    choices = fuse_default(s)
    (c,) = [c for c in choices if c.kind == "inline"]
    assert c.default == 1
    s2 = hlotune.Schedule(outs)
    fuse_default(s2, plan={c.knob: 0})
    assert not s2.stage("E").is_inline


def test_gelu_exact_runs_on_the_dot_tile():
    m, n, k = 24, 40, 16
    A = dsl.placeholder((m, k), "float32", name="A")
    B = dsl.placeholder((k, n), "float32", name="B")
    r = dsl.reduce_axis(k, name="r")
    D = dsl.compute((m, n), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="D")
    T = dsl.compute((m, n), lambda i, j: dsl.exp(-D[i, j] * D[i, j]), name="T")       # expensive, read twice
    U = dsl.compute((m, n), lambda i, j: dsl.select(D[i, j] > 0, T[i, j], 2.0 - T[i, j]), name="U")
    Y = dsl.compute((m, n), lambda i, j: D[i, j] * U[i, j], name="Y")
    s = _matches([Y])
    assert s.stage("T").is_inline
    assert absorbed_tile(s, s.stage("Y")) is s.stage("D")


def test_tree_size_bound_keeps_huge_bodies_materialized(monkeypatch):
    from hlotune.schedules import fusion
    assert INLINE_TREE_MAX >= 1000
    monkeypatch.setattr(fusion, "INLINE_TREE_MAX", 8)     # Y's printed body would count 16 nodes
    s = _matches(_shared())
    assert not s.stage("E").is_inline


def test_a_cheap_activation_between_two_dots_is_the_first_dots_epilogue():
    """``relu(A @ W1) @ W2``: inlined into the second dot's operand the ReLU would run at every
    reuse of that operand (in every pack of it); it stays materialized, computed on the first
    dot's register tile, and the answer matches."""
    A = dsl.placeholder((32, 24), "float32", name="A")
    W1 = dsl.placeholder((24, 40), "float32", name="W1")
    W2 = dsl.placeholder((40, 16), "float32", name="W2")
    k1, k2 = dsl.reduce_axis(24, name="k1"), dsl.reduce_axis(40, name="k2")
    H = dsl.compute((32, 40), lambda i, j: dsl.sum(A[i, k1] * W1[k1, j], axis=k1), name="H")
    R = dsl.compute((32, 40), lambda i, j: dsl.max(H[i, j], 0.0), name="R")
    Y = dsl.compute((32, 16), lambda i, j: dsl.sum(R[i, k2] * W2[k2, j], axis=k2), name="Y")
    s = _matches([Y])
    assert s.stage("R").is_root
    assert absorbed_tile(s, s.stage("R")) is s.stage("H")


def test_a_cheap_input_shared_only_by_an_activations_terms_is_inlined(monkeypatch):
    """Exact GELU between two dots (BERT's FFN): its cheap scaled input ``-x/sqrt(2)`` is read
    by every term of the erfc, not by the second dot. It is inlined (computed once per element
    by the activation on the first dot's tile), not materialized as a pass of its own, as the
    ReLU rule above would do to a stage read by a dot, even where the activation's printed
    body is too large for ``_inline_shared_once`` (the erfc's is, in XLA's expansion)."""
    from hlotune.schedules import fusion
    monkeypatch.setattr(fusion, "INLINE_TREE_MAX", 8)
    A = dsl.placeholder((32, 24), "float32", name="A")
    W1 = dsl.placeholder((24, 40), "float32", name="W1")
    W2 = dsl.placeholder((40, 16), "float32", name="W2")
    k1, k2 = dsl.reduce_axis(24, name="k1"), dsl.reduce_axis(40, name="k2")
    D = dsl.compute((32, 40), lambda i, j: dsl.sum(A[i, k1] * W1[k1, j], axis=k1), name="D")
    S = dsl.compute((32, 40), lambda i, j: -D[i, j] * 0.7071067690849304, name="S")
    T = dsl.compute((32, 40), lambda i, j: dsl.exp(-S[i, j] * S[i, j]), name="T")
    U = dsl.compute((32, 40), lambda i, j: dsl.select(S[i, j] < 0.0, 2.0 - T[i, j], T[i, j]), name="U")
    G = dsl.compute((32, 40), lambda i, j: D[i, j] * 0.5 * U[i, j], name="G")
    Y = dsl.compute((32, 16), lambda i, j: dsl.sum(G[i, k2] * W2[k2, j], axis=k2), name="Y")
    s = _matches([Y])
    assert s.stage("S").is_inline and s.stage("T").is_inline
    assert absorbed_tile(s, s.stage("G")) is s.stage("D")


def test_a_padded_input_read_through_a_convolution_window_is_materialized():
    """A pad (a bounds select) that a convolution reads through its window cannot be packed,
    so the default keeps it a stage of its own instead of masking every tap of the
    micro-kernel; the answer is numpy's."""
    import numpy as np

    from hlotune.dsl.tensor import Graph
    from hlotune.runtime.module import CompiledGraph
    from hlotune.runtime.targets import get_target
    from hlotune.schedules.fusion import default_schedule
    C, T, O, d = 16, 128, 32, 4
    x = dsl.placeholder((C, T), "float32", name="x")
    w = dsl.placeholder((O, C, 2), "float32", name="w")
    xp = dsl.compute((C, T + d), lambda c, t: dsl.select(t >= d, x[c, dsl.maximum(t - d, 0)], 0.0), name="xp")
    c_, k = dsl.reduce_axis(C, name="c"), dsl.reduce_axis(2, name="k")
    y = dsl.compute((O, T), lambda o, t: dsl.sum(w[o, c_, k] * xp[c_, t + k * d], axis=[c_, k]), name="y")
    s = default_schedule(Graph([y], [x, w]), hw=get_target("cpu").hardware)
    assert s.stages["xp"].is_root
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((C, T)).astype(np.float32), rng.standard_normal((O, C, 2)).astype(np.float32)
    pad = np.concatenate([np.zeros((C, d), np.float32), a], 1)
    want = np.einsum("ock,ckt->ot", b, np.stack([pad[:, :T], pad[:, d:d + T]], 1))
    np.testing.assert_allclose(CompiledGraph([y], [x, w], "cpu")(a, b), want, rtol=1e-4, atol=1e-4)
