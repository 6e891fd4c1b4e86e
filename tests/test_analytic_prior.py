"""The gemm template's analytic time model (``Space.estimate``), which the bayes tuner starts
from when the database has no cost model, and the template rule that keeps guarded K-block
tiles out of the space."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from _checks import MATMUL_F32, assert_close, random_inputs
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tuners import get_tuner
from hlotune.dsl.errors import ScheduleError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.targets import get_target
from hlotune.schedules.hardware import Hardware
from hlotune.schedules.templates.families import TEMPLATES
from hlotune.schedules.templates.gemm import GemmFeatures
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

BASE = {"mr": 4, "nr": 16, "mb": 4, "nb": 4, "order": "nm", "pack_a": 1, "pack_b": 1, "unroll_k": 1,
        "parallel": 1, "kc": 0, "kgroup": 1}


def dot(m, n, k):
    a = dsl.placeholder((m, k), "float32", name="A")
    b = dsl.placeholder((k, n), "float32", name="B")
    r = dsl.reduce_axis(k, "r")
    return dsl.compute((m, n), lambda i, j: dsl.sum(a[i, r] * b[r, j], axis=[r]), name="C")


def test_the_estimate_prices_latency_spills_threads_and_guarded_edges():
    """256 x 256 x 256 on 8 lanes and 16 registers, 2 threads. The base tile (4 x 2 vectors, 8
    accumulators) issues 6 loads per 8 multiply-adds (1 + 0.5 * 6 / 8 = 1.375). One accumulator
    waits on the FMA latency (8x) and issues 2 loads for it (2x); an 8 x 32 tile spills (3x),
    its B panel of 32 KiB is twice half of L1 (1.25x) and it issues 12 loads per 32 (1.1875); no parallel
    loop doubles the time; an overhanging row block costs 1.25x read from a padded pack and 1.9x
    from A as it lies. Packs cost 4 x 8 / 4 = 8 multiply-adds per element over its reuse: B's
    256 rows, A's column block of 64 (each unchanged here unless said)."""
    f = GemmFeatures(256, 256, (), lanes=8, regs=16, threads=2, k=256, item=4, l1=32 << 10)
    e0 = f.estimate(BASE)
    assert f.estimate({**BASE, "mr": 1, "nr": 8}) - e0 == pytest.approx(math.log(8 * 2 / 1.375))
    assert f.estimate({**BASE, "mr": 8, "nr": 32}) - e0 == pytest.approx(math.log(3 * 1.25 * 1.1875 / 1.375))
    assert f.estimate({**BASE, "parallel": 0}) - e0 == pytest.approx(math.log(2))
    g = GemmFeatures(250, 256, (), lanes=8, regs=16, threads=2, k=256, item=4, l1=32 << 10)
    packed, plain = g.estimate(BASE), g.estimate({**BASE, "pack_a": 0})
    packs_f, packs_g = 1 + 8 / 256 + 8 / 64, 1 + 8 / 250 + 8 / 64
    assert plain - packed == pytest.approx(math.log(1.9 / 1.25) - math.log(packs_g / (1 + 8 / 250)))
    assert packed - e0 == pytest.approx(math.log(1.25 * 252 / 250 * packs_g / packs_f))


def test_the_estimate_prices_packs_by_their_reuse():
    """A pack costs its copy over the multiply-adds each element feeds: B packed per column block
    serves every row (order nm) or a row block's (mn), A a column block's columns (nm) or all
    (mn). On 32 x 1024 rows x columns (one row block of 32 with mb 1; column blocks of 64), B's
    pack weighs 8 / 32 and A's 8 / 64 (nm) or 8 / 1024 (mn): the weight's pack of a dot of few
    rows costs more than A's."""
    f = GemmFeatures(32, 1024, (), lanes=8, regs=16, threads=1, k=256, item=4, l1=32 << 10)
    c = {**BASE, "mb": 1, "nb": 16, "parallel": 0}
    both = f.estimate(c)
    assert both - f.estimate({**c, "pack_b": 0}) == pytest.approx(math.log((1 + 8 / 32 + 8 / 64) / (1 + 8 / 64)))
    assert both - f.estimate({**c, "pack_a": 0}) == pytest.approx(math.log((1 + 8 / 32 + 8 / 64) / (1 + 8 / 32)))
    mn = {**c, "order": "mn"}
    assert f.estimate(mn) - both == pytest.approx(math.log((1 + 8 / 32 + 8 / 1024) / (1 + 8 / 32 + 8 / 64)))
    assert f.estimate({**c, "pack_b": 0}) < both


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300), seed=st.integers(0, 2**16))
def test_every_config_of_a_dot_space_has_a_finite_estimate(m, n, k, seed):
    (task,) = extract_tasks([dot(m, n, k)], None, get_target("cpu"))
    if task.space.estimate is None:
        assert task.family != "dot"
        return
    rng = np.random.default_rng(seed)
    for _ in range(20):
        c = {kn.name: kn.values[int(rng.integers(len(kn.values)))] for kn in task.space.knobs}
        v = task.space.estimate(c)
        # at best every thread runs every cycle: the model's floor is -log(threads)
        assert math.isfinite(v) and v >= -math.log(task.hardware.threads) - 1e-9, (c, v)


def test_k_blocks_over_overhanging_columns_need_packs_and_packed_ones_match():
    """70 x 96 x 128 with 4 x 32 tiles: 3 column tiles in blocks of 2 overhang the 96 columns,
    18 row tiles in blocks of 6 the 70 rows. With K blocks the accumulating vector loop would be
    guarded: the template asks for zero-padded packs, and the packed config matches numpy."""
    out = dot(70, 96, 128)
    t = TEMPLATES["dot"]
    hw = Hardware(vector_bytes=64, vector_regs=32, threads=2)
    cfg = {**BASE, "mr": 4, "nr": 32, "mb": 3, "nb": 2, "kc": 32}
    for bad, msg in (({"pack_b": 0}, "needs pack_b=1 and pack_a=1"), ({"pack_a": 0}, "needs pack_b=1 and pack_a=1")):
        s = hlotune.Schedule(out)
        with pytest.raises(ScheduleError, match=msg):
            t.apply(s, s.stage(out), {**cfg, **bad}, hw)
    s = hlotune.Schedule(out)
    t.apply(s, s.stage(out), cfg, hw)
    f = hlotune.build(s)
    ins = random_inputs([out], seed=3)
    assert_close(f(*ins), evaluate([out], ins)[0], *MATMUL_F32)
    # without K blocks the same edges are guarded only where the tile is stored: still allowed
    s = hlotune.Schedule(out)
    t.apply(s, s.stage(out), {**cfg, "kc": 0, "pack_a": 0, "pack_b": 0}, hw)


def _dot_task():
    (task,) = extract_tasks([dot(96, 128, 64)], None, get_target("cpu"))
    assert task.family == "dot" and task.space.estimate is not None
    return task


def test_without_a_database_model_bayes_starts_from_the_templates_best_estimates():
    """No cost model: the first proposals are the catalog's configs the analytic estimate ranks
    fastest, in that order; ``analytic=False`` keeps the space-filling start, and a database
    prior, when there is one, takes the estimate's place."""
    task = _dot_task()
    rng = np.random.default_rng(0)
    configs = list(task.space.all_configs())
    catalog = [configs[int(i)] for i in rng.choice(len(configs), 200, replace=False)]
    est = [task.space.estimate(c) for c in catalog]
    ranked = [catalog[int(i)] for i in np.argsort(est, kind="stable")]
    t = get_tuner("bayes", task.space, 3, allowed=catalog)
    assert t.ask(4) == ranked[:4]
    plain = get_tuner("bayes", task.space, 3, allowed=catalog, analytic=False)
    assert plain.mean is None and plain.ask(4) != ranked[:4]
    t.prior = lambda cs: -np.asarray([task.space.estimate(c) for c in cs])
    assert t.ask(1) == ranked[-1:]


def test_the_prior_is_trusted_as_far_as_the_told_costs_follow_it():
    """The slope of the told costs on the prior's predictions, clipped to [0, 1]: costs that
    follow it at half its scale give 0.5, costs against it 0, too few points 1."""
    from hlotune.autotune.tuners import BayesTuner
    p = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    assert BayesTuner._scale(p, 7.0 + 0.5 * p) == pytest.approx(0.5)
    assert BayesTuner._scale(p, 7.0 - p) == 0.0
    assert BayesTuner._scale(p, 7.0 + 3 * p) == 1.0
    assert BayesTuner._scale(p[:3], 7.0 - p[:3]) == 1.0


@pytest.mark.parametrize("march", ["x86-64-v3", "x86-64-v4"])
def test_a_wrong_estimate_does_not_stop_bayes_from_finding_the_best(march):
    """Replayed costs that run against the estimate (the slowest predicted is fastest), for an
    AVX2 and an AVX-512 target (the estimate depends on the machine, not the host's): the
    calibrated mean function stops trusting it, and after 48 trials on a catalog of 200 the
    median catalog is within 1.25x of the best and none is 2x off (trusting the estimate, every
    catalog ends 2-9x off). Measured over 8 catalogs: the wrong prior costs trials (to within
    5% of the best, median 48 on the AVX-512 target and 36 on AVX2 against 38 and 18 without a
    prior), and how many depends on the estimate's shape, so the bound is on the result."""
    from dataclasses import replace

    from hlotune.runtime.cpu import DEFAULT_FLAGS, CCompiler
    flags = tuple(f"-march={march}" if f.startswith("-march=") else f for f in DEFAULT_FLAGS)
    target = replace(get_target("cpu"), compiler=CCompiler(flags=flags))
    (task,) = extract_tasks([dot(96, 128, 64)], None, target)
    configs = list(task.space.all_configs())
    ratios = []
    for seed in range(1, 5):
        rng = np.random.default_rng(seed)
        catalog = [configs[int(i)] for i in rng.choice(len(configs), 200, replace=False)]
        cost = {json_key(c): -task.space.estimate(c) + 0.05 * float(rng.normal()) for c in catalog}
        t = get_tuner("bayes", task.space, 0, allowed=catalog)
        seen = []
        while len(seen) < 48:
            cs = t.ask(4)
            t.tell(cs, [cost[json_key(c)] for c in cs])
            seen += [cost[json_key(c)] for c in cs]
        ratios.append(math.exp(min(seen) - min(cost.values())))
    assert statistics.median(ratios) <= 1.25 and max(ratios) < 2.0, ratios


def json_key(c: dict) -> str:
    import json
    return json.dumps(c, sort_keys=True)
