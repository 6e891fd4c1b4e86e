"""Slice fusion (schedules/rowfusion.py): attention's score dot and softmax computed per batch
slice inside the second dot. On random attention shapes (one or two batch axes, primes,
masks, scores that are an epilogue of the first dot) both plans match the reference; the
chain stages really sit inside the second dot's loop (one slice of buffers each, never the
whole score tensor); chains read from outside, or whose slices would need whole tensors, are
not offered; a shared stage read by two chain stages is computed once per slice (the
several-reader ``compute_at``)."""

from __future__ import annotations

from _checks import MATMUL_F32, as_tuple, assert_close, random_inputs
from hlotune.dsl.reference import evaluate
from hlotune.dsl.tensor import Graph
from hlotune.runtime.targets import get_target
from hlotune.schedules.fusion import fuse, stage_default
from hlotune.schedules.lower import _Lowerer
from hlotune.schedules.schedule import Schedule
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

HW = get_target("cpu").hardware
SIZES = st.sampled_from([1, 2, 3, 5, 8, 13, 16, 31])


def attention(batch, q, k, d, mask=False, scores_out=False, transposed_out=False):
    """``O[b.., i, e] = sum_j softmax_j(Q[b.., i, :] . K[b.., j, :] / sqrt(d)) V[b.., j, e]``."""
    Q = dsl.placeholder(batch + (q, d), "float32", name="Q")
    K = dsl.placeholder(batch + (k, d), "float32", name="K")
    V = dsl.placeholder(batch + (k, d), "float32", name="V")
    r = dsl.reduce_axis(d, name="r")
    S = dsl.compute(batch + (q, k), lambda *ix: dsl.sum(Q[(*ix[:-2], ix[-2], r)] * K[(*ix[:-2], ix[-1], r)], axis=r),
                    name="S")
    if mask:
        S = dsl.compute(batch + (q, k), lambda *ix: dsl.select(ix[-1] <= ix[-2], S[ix] * 0.125, -1e9), name="Sm")
    j = dsl.reduce_axis(k, name="j")
    M = dsl.compute(batch + (q,), lambda *ix: dsl.max(S[(*ix, j)], axis=j), name="M")
    E = dsl.compute(batch + (q, k), lambda *ix: dsl.exp(S[ix] - M[ix[:-1]]), name="E")
    j2 = dsl.reduce_axis(k, name="j2")
    L = dsl.compute(batch + (q,), lambda *ix: dsl.sum(E[(*ix, j2)], axis=j2), name="L")
    j3 = dsl.reduce_axis(k, name="j3")
    if transposed_out:      # as JAX writes it: O^T[b, e, i] = sum_j V[b, j, e] P[b, i, j]
        O = dsl.compute(batch + (d, q), lambda *ix: dsl.sum(
            V[(*ix[:-2], j3, ix[-2])] * (E[(*ix[:-2], ix[-1], j3)] / L[(*ix[:-2], ix[-1])]), axis=j3), name="O")
    else:
        O = dsl.compute(batch + (q, d), lambda *ix: dsl.sum(
            (E[(*ix[:-2], ix[-2], j3)] / L[ix[:-1]]) * V[(*ix[:-2], j3, ix[-1])], axis=j3), name="O")
    return ([O, S] if scores_out else [O]), [Q, K, V]


def _schedule(outs, ins, plan_value=None):
    g = Graph(outs, ins)
    s = Schedule(g)
    choices = fuse(s, HW)
    slices = [c for c in choices if c.kind == "slice"]
    if plan_value is not None:
        s = Schedule(g)
        fuse(s, HW, {c.knob: plan_value for c in slices})
    for x in list(s.stages.values()):
        if x.is_root:
            stage_default(s, x, HW)
    return s, slices


def _attached_to(s, name):
    """The names of the graph's stages computed at a loop of stage ``name``."""
    d = s.stage(name)
    return [x.name for x in s.stages.values() if x.is_at and x.attach.stage is d and x.name in "SMEL"]


def _check(s, outs, ins):
    f = hlotune.build(s)
    arrays = random_inputs(outs, seed=5)
    for got, ref in zip(as_tuple(f(*arrays)), evaluate(outs, arrays)):
        assert_close(got, ref, *MATMUL_F32)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.sampled_from([(3,), (2, 3), (1,)]), q=SIZES, k=SIZES, d=st.sampled_from([4, 8, 16, 7]),
       mask=st.booleans(), transposed=st.booleans())
def test_both_plans_match_the_reference(batch, q, k, d, mask, transposed):
    outs, ins = attention(batch, q, k, d, mask=mask, transposed_out=transposed)
    fused, slices = _schedule(outs, ins, 1)
    _check(fused, outs, ins)
    if slices:
        _check(_schedule(outs, ins, 0)[0], outs, ins)


def test_attention_runs_per_head_in_the_second_dot():
    outs, ins = attention((12,), 128, 128, 64)
    s, slices = _schedule(outs, ins)
    assert [c.default for c in slices] == [1]
    o = s.stage("O")
    for name in ("S", "M", "E", "L"):
        x = s.stage(name)
        assert x.is_at and x.attach.stage is o, name
    lw = _Lowerer(s)
    lw.lower("f")
    assert [iv.ext for iv in lw.planned["S"]] == [1, 128, 128]      # one head's scores, not 12
    assert [iv.ext for iv in lw.planned["L"]] == [1, 128]
    _check(s, outs, ins)
    off, _ = _schedule(outs, ins, 0)
    assert all(off.stage(n).is_root for n in ("S", "L"))    # (M may join E per row)


def _parallel_extents(s):
    return {st.name: v.extent for st in s.stages.values() for v, k in st.annotations.items() if getattr(k, "value", k) == "parallel"}


def test_the_parallel_loop_does_not_fuse_blocks_into_a_chain_s_batch_loop():
    """With attention's chain computed per head in the second dot, ``parallel`` 2 fuses the
    batch loops alone: fusing the cache-block loops in too would compute the scores and softmax
    again for every block (measured 20x slower on 4 heads of 128 keys). A batched dot without a
    chain still fuses its blocks. Both answers match the reference."""
    from hlotune.autotune.task import extract_tasks
    cpu = get_target("cpu")
    outs, ins = attention((2, 4), 64, 128, 32)
    task = next(t for t in extract_tasks(outs, ins, cpu) if t.family == "dot")
    cfg = {**task.space.default(), "parallel": 2, "mb": 4, "nb": 1, "mr": 4, "nr": 32, "pack_b": 1}
    s = task.schedule(cfg)
    assert all(s.stage(n).is_at for n in "SMEL")
    assert _parallel_extents(s) == {"O": 8}
    _check(s, outs, ins)
    A = dsl.placeholder((2, 4, 64, 128), "float32", name="A")
    B = dsl.placeholder((2, 4, 128, 32), "float32", name="B")
    r = dsl.reduce_axis(128, name="r")
    C = dsl.compute((2, 4, 64, 32), lambda b, h, i, j: dsl.sum(A[b, h, i, r] * B[b, h, r, j], axis=r), name="C")
    plain = next(t for t in extract_tasks([C], [A, B], cpu) if t.family == "dot")
    ps = plain.schedule({**plain.space.default(), "parallel": 2, "mb": 4, "nb": 1, "mr": 4, "nr": 32, "pack_b": 1})
    assert list(_parallel_extents(ps).values()) == [8 * 4]


def test_chains_read_outside_are_not_offered():
    outs, ins = attention((4,), 16, 16, 8, scores_out=True)     # the scores are an output too
    s, _ = _schedule(outs, ins)
    assert s.stage("S").is_root and _attached_to(s, "O") == []
    _check(s, outs, ins)


def test_unbatched_dots_are_not_offered():
    outs, ins = attention((), 32, 32, 8)
    s, _ = _schedule(outs, ins, 1)
    assert _attached_to(s, "O") == []
    _check(s, outs, ins)


def test_a_chain_across_batches_is_not_offered():
    """The second dot reads two slices of the first one's output per slice (its own and the
    first head's): a slice would need the whole tensor, so fusing would recompute it per slice."""
    H, n = 4, 16
    A = dsl.placeholder((H, n, n), "float32", name="A")
    B = dsl.placeholder((H, n, n), "float32", name="B")
    r = dsl.reduce_axis(n, name="r")
    S = dsl.compute((H, n, n), lambda h, i, j: dsl.sum(A[h, i, r] * B[h, r, j], axis=r), name="S")
    T = dsl.compute((H, n, n), lambda h, i, j: S[h, i, j] + S[0, i, j], name="T")
    r2 = dsl.reduce_axis(n, name="r2")
    O = dsl.compute((H, n, n), lambda h, i, j: dsl.sum(T[h, i, r2] * B[h, r2, j], axis=r2), name="O")
    s, _ = _schedule([O], [A, B], 1)
    assert s.stage("S").is_root
    _check(s, [O], [A, B])


def test_scores_shared_by_two_readers_computed_once_per_slice():
    outs, ins = attention((2,), 8, 8, 4)
    s, _ = _schedule(outs, ins, 1)
    assert s.stage("E").is_at        # E is read by L and by O: one buffer per slice
    lw = _Lowerer(s)
    lw.lower("f")
    assert [iv.ext for iv in lw.planned["E"]] == [1, 8, 8]
    _check(s, outs, ins)


def layer_norm(rows, cols, rms=False):
    """``Y[i, j] = (X[i, j] - mean_i) / sqrt(var_i + 1e-5) * G[j] + B[j]`` (RMS: no mean)."""
    X = dsl.placeholder((rows, cols), "float32", name="X")
    G = dsl.placeholder((cols,), "float32", name="G")
    B = dsl.placeholder((cols,), "float32", name="B")
    j = dsl.reduce_axis(cols, name="j")
    if rms:
        mean = None
        C = X
    else:
        S = dsl.compute((rows,), lambda i: dsl.sum(X[i, j], axis=j), name="S")
        mean = dsl.compute((rows,), lambda i: S[i] / float(cols), name="mean")
        C = dsl.compute((rows, cols), lambda i, c: X[i, c] - mean[i], name="C")
    j2 = dsl.reduce_axis(cols, name="j2")
    V = dsl.compute((rows,), lambda i: dsl.sum(C[i, j2] * C[i, j2], axis=j2), name="V")
    R = dsl.compute((rows,), lambda i: dsl.rsqrt(V[i] / float(cols) + 1e-5), name="R")
    Y = dsl.compute((rows, cols), lambda i, c: C[i, c] * R[i] * G[c] + B[c], name="Y")
    return [Y], [X, G, B]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=SIZES, cols=st.sampled_from([1, 3, 16, 100, 768]), rms=st.booleans())
def test_norms_as_one_kernel_match_the_reference(rows, cols, rms):
    outs, ins = layer_norm(rows, cols, rms)
    for value in (1, 0):
        s, _ = _schedule(outs, ins, value)
        _check(s, outs, ins)


def test_layer_norm_statistics_per_row_inside_the_output():
    outs, ins = layer_norm(128, 768)
    s, slices = _schedule(outs, ins)
    assert [c.default for c in slices] == [1]
    y = s.stage("Y")
    assert all(s.stage(n).is_at and s.stage(n).attach.stage is y for n in ("S", "V"))
    lw = _Lowerer(s)
    lw.lower("f")
    assert [iv.ext for iv in lw.planned["V"]] == [1]
    _check(s, outs, ins)
    # one row: no slices to share among threads, the statistics keep their own (parallel) kernels
    _, one = _schedule(*layer_norm(1, 768))
    assert [c.default for c in one] == ([0] if HW.threads > 1 else [1])
