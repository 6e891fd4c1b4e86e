"""One-pass row statistics (schedules/onepass.py): a norm's mean and variance from one shifted
sweep, a softmax's maximum and normalizer from one online sweep; offered as plan decisions,
exact against float64 numpy on awkward rows, vectorized, and naming the same stages as before."""

from __future__ import annotations

import numpy as np
from hlotune.dsl.ops import Op
from hlotune.dsl.tensor import Graph
from hlotune.runtime.build import build
from hlotune.schedules.fusion import Choice, default_schedule, positions
from hlotune.schedules.onepass import matches, online_softmax, sum2
from hlotune.schedules.rewrites import rewrite
from hlotune.schedules.schedule import Schedule
from hypothesis import given, settings
from hypothesis import strategies as st

from hlotune import dsl

ON = {f"onepass{k}": 1 for k in range(64)}


def layer_norm(rows: int, n: int, sq=lambda u: u * u):
    x = dsl.placeholder((rows, n), "float32", "x")
    r = dsl.reduce_axis(n, "r")
    s = dsl.compute((rows,), lambda i: dsl.sum(x[i, r], axis=r), "mean_sum")
    mean = dsl.compute((rows,), lambda i: s[i] / float(n), "mean")
    k = dsl.reduce_axis(n, "k")
    v = dsl.compute((rows,), lambda i: dsl.sum(sq(x[i, k] - mean[i]), axis=k), "var_sum")
    y = dsl.compute((rows, n), lambda i, j: (x[i, j] - mean[i]) / dsl.sqrt(v[i] / float(n) + 1e-5), "y")
    return Graph([y], [x])


def softmax(rows: int, n: int):
    x = dsl.placeholder((rows, n), "float32", "x")
    r = dsl.reduce_axis(n, "r")
    mx = dsl.compute((rows,), lambda i: dsl.max(x[i, r] * 0.5, axis=r), "mx")
    k = dsl.reduce_axis(n, "k")
    e = dsl.compute((rows, n), lambda i, j: dsl.exp(x[i, j] * 0.5 - mx[i]), "e")
    total = dsl.compute((rows,), lambda i: dsl.sum(e[i, k], axis=k), "total")
    y = dsl.compute((rows, n), lambda i, j: e[i, j] / total[i], "y")
    return Graph([y], [x])


def run(g: Graph, plan: dict, x: np.ndarray) -> np.ndarray:
    g2, _ = rewrite(g, plan, Choice)
    return build(default_schedule(g2, threads=2), "cpu")(x)


def ln_ref(x):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def softmax_ref(x):
    z = x.astype(np.float64) * 0.5
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_patterns_are_found_and_nothing_else():
    kinds = [(m.kind, m.first.name, m.second.name) for m in matches(layer_norm(4, 16))]
    assert kinds == [("var", "mean_sum", "var_sum")]
    assert [m.kind for m in matches(layer_norm(4, 16, sq=lambda u: dsl.abs(u) * dsl.abs(u)))] == ["var"]
    assert [(m.kind, m.first.name) for m in matches(softmax(4, 16))] == [("softmax", "mx")]
    # a sum of squares without a mean (RMS norm) is one pass already
    x = dsl.placeholder((4, 16), "float32", "x")
    r = dsl.reduce_axis(16, "r")
    ss = dsl.compute((4,), lambda i: dsl.sum(x[i, r] * x[i, r], axis=r), "ss")
    assert matches(Graph([ss], [x])) == []
    # the 'mean' of another expression than the summand's: not a variance of the same row
    s = dsl.compute((4,), lambda i: dsl.sum(x[i, r] * 2.0, axis=r), "s2")
    k = dsl.reduce_axis(16, "k")
    v = dsl.compute((4,), lambda i: dsl.sum((x[i, k] - s[i]) * (x[i, k] - s[i]), axis=k), "v")
    assert matches(Graph([v], [x])) == []


def test_one_pass_is_a_plan_decision_off_by_default():
    g = layer_norm(4, 16)
    g2, choices = rewrite(g, {}, Choice)
    assert g2 is g and [c.kind for c in choices] == ["onepass"] and choices[0].default == 0
    g3, _ = rewrite(g, {choices[0].knob: 1}, Choice)
    reductions = [op for op in g3.compute_ops if op.is_reduction]
    assert len(reductions) == 1 and reductions[0].num_outputs == 2    # one sweep, two accumulators


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 5), n=st.sampled_from([1, 2, 7, 16, 97, 300]),
       offset=st.sampled_from([0.0, 1.0, -300.0, 1e4]), scale=st.sampled_from([1e-2, 1.0, 30.0]),
       seed=st.integers(0, 99))
def test_one_pass_layer_norm_matches_float64(rows, n, offset, scale, seed):
    x = (np.random.default_rng(seed).standard_normal((rows, n)) * scale + offset).astype(np.float32)
    got = run(layer_norm(rows, n), ON, x)
    two = run(layer_norm(rows, n), {}, x)
    want = ln_ref(x)
    # shifted by the row's first element, a large mean does not cancel: as close as two passes
    err1, err2 = np.max(np.abs(got - want)), np.max(np.abs(two - want))
    assert err1 <= max(4 * err2, 2e-3 * np.max(np.abs(want)) + 1e-4), (err1, err2)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 4), n=st.sampled_from([1, 3, 16, 131]), scale=st.sampled_from([1.0, 50.0]),
       masked=st.booleans(), seed=st.integers(0, 99))
def test_online_softmax_matches_float64(rows, n, scale, masked, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, n)) * scale).astype(np.float32)
    if masked and n > 1:
        x[:, rng.integers(0, n, size=n // 2)] = -np.inf     # masked keys (not the whole row)
        x[:, 0] = 1.0
    got = run(softmax(rows, n), ON, x)
    np.testing.assert_allclose(got, softmax_ref(x), rtol=2e-5, atol=1e-6)


def test_the_norm_sweep_is_one_vectorized_loop_with_two_accumulators():
    g, _ = rewrite(layer_norm(8, 256), ON, Choice)
    src = build(default_schedule(g, threads=2), "cpu").source
    line = [ln for ln in src.splitlines() if "omp simd reduction" in ln]
    assert len(line) == 1 and line[0].count("reduction(+:") == 2


def test_reducer_parts():
    f32 = dsl.dtypes.dtype("float32")
    two = sum2((dsl.const(1.0, f32), dsl.const(2.0, f32)), axis=dsl.reduce_axis(3, "r"))
    parts = two[0].arg.reducer.parts()
    assert [p.ufunc for p in parts] == ["add", "add"]
    on = online_softmax((dsl.const(1.0, f32), dsl.const(1.0, f32)), axis=dsl.reduce_axis(3, "r"))
    assert on[0].arg.reducer.parts() is None


def test_other_decisions_keep_their_stage_positions_after_the_rewrite():
    g = layer_norm(8, 64)
    before = positions(Schedule(g))
    g2, _ = rewrite(g, ON, Choice)
    after = positions(Schedule(g2))
    assert {n: p for n, p in after.items() if n in before} == before
    assert len(set(after.values())) == len(after)       # the new sweep has a position of its own
    assert sum(op.op is Op.REDUCE for op in [b for o in g2.compute_ops for b in o.body]) == 2


def test_kernels_after_a_rewritten_norm_keep_their_tuned_workloads():
    """A dot reading a one-pass norm's output is the same kernel: a plan with the rewrite asks
    the database for the workload the default plan's dot has (its own key would cover the
    rewritten norm upstream and miss the dot's tuning)."""
    from hlotune.autotune.plans import plan_schedule
    from hlotune.autotune.task import stage_graph, workload_key
    from hlotune.runtime.targets import get_target
    from hlotune.schedules.fusion import fuse
    target = get_target("cpu")
    g = layer_norm(32, 64)
    w = dsl.placeholder((64, 48), "float32", "w")
    k = dsl.reduce_axis(64, "kk")
    y = g.outputs[0]
    z = dsl.compute((32, 48), lambda i, j: dsl.sum(y[i, k] * w[k, j], axis=k), "proj")
    g = Graph([z], [g.inputs[0], w])
    s0 = Schedule(g)
    fuse(s0, target.hardware)
    want = workload_key(stage_graph(s0, s0.stage("proj")))
    asked = []
    knob = next(c.knob for c in rewrite(g, {}, Choice, target.hardware)[1] if c.kind == "onepass")
    plan_schedule(g, target, {knob: 1}, lambda key: asked.append(key))
    assert want in asked
