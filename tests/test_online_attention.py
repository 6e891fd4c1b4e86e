"""Online-softmax attention (schedules/attention.py): the second dot of an attention computed by
folding key blocks with a running maximum, as a plan decision. Exact against float64 numpy on
awkward shapes (masked keys, one-row queries, odd head sizes, transposed outputs); its block
chain is computed inside the fold's key-block loop, so no full score row exists."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.tensor import Graph
from hlotune.runtime.build import build
from hlotune.runtime.targets import get_target
from hlotune.schedules.attention import FOLD, T_MAX, match_attention
from hlotune.schedules.fusion import Choice, default_schedule
from hlotune.schedules.rewrites import rewrite
from hypothesis import given, settings
from hypothesis import strategies as st

from hlotune import dsl

HW = get_target("cpu").hardware


def attention(h: int, nq: int, nk: int, d: int, causal: bool = False, transposed: bool = False) -> Graph:
    """softmax(Q K^T / sqrt(d) [+ mask]) V per head; ``transposed``: the output as [h, d, q]."""
    q = dsl.placeholder((h, nq, d), "float32", "q")
    k = dsl.placeholder((h, nk, d), "float32", "k")
    v = dsl.placeholder((h, nk, d), "float32", "v")
    c = dsl.reduce_axis(d, "c")
    s = dsl.compute((h, nq, nk), lambda b, i, j: dsl.sum(q[b, i, c] * k[b, j, c], axis=c), "scores")
    scale = float(1 / np.sqrt(d))
    if causal:
        a = dsl.compute((h, nq, nk), lambda b, i, j: dsl.select(j <= i + (nk - nq), s[b, i, j] * scale,
                                                                 dsl.const(-1e9, "float32")), "masked")
    else:
        a = dsl.compute((h, nq, nk), lambda b, i, j: s[b, i, j] * scale, "scaled")
    r = dsl.reduce_axis(nk, "r")
    mx = dsl.compute((h, nq), lambda b, i: dsl.max(a[b, i, r], axis=r), "mx")
    e = dsl.compute((h, nq, nk), lambda b, i, j: dsl.exp(a[b, i, j] - mx[b, i]), "e")
    r2 = dsl.reduce_axis(nk, "r2")
    tot = dsl.compute((h, nq), lambda b, i: dsl.sum(e[b, i, r2], axis=r2), "tot")
    p = dsl.compute((h, nq, nk), lambda b, i, j: e[b, i, j] / tot[b, i], "p")
    j = dsl.reduce_axis(nk, "j")
    if transposed:
        o = dsl.compute((h, d, nq), lambda b, x, i: dsl.sum(v[b, j, x] * p[b, i, j], axis=j), "o")
    else:
        o = dsl.compute((h, nq, d), lambda b, i, x: dsl.sum(p[b, i, j] * v[b, j, x], axis=j), "o")
    return Graph([o], [q, k, v])


def reference(q, k, v, causal=False, transposed=False):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("hqc,hkc->hqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        nq, nk = s.shape[1:]
        s = np.where(np.arange(nk)[None, :] <= np.arange(nq)[:, None] + (nk - nq), s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    o = np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v)
    return o.transpose(0, 2, 1) if transposed else o


def online_plan(g: Graph) -> dict:
    return {c.knob: 1 for c in rewrite(g, {}, Choice, HW)[1] if c.kind == "online"}


def test_offered_only_where_the_keys_cut_into_blocks():
    assert match_attention(attention(2, 8, T_MAX, 16)) == []          # one block: the default
    assert len(match_attention(attention(2, 8, 2 * T_MAX, 16))) == 1
    assert match_attention(attention(2, 8, 257, 16)) == []            # no whole blocks: the default
    assert match_attention(attention(2, 200, 512, 16)) == []          # nor of query rows
    g = attention(2, 8, 512, 16)
    kinds = sorted(c.kind for c in rewrite(g, {}, Choice, HW)[1])
    assert kinds == ["onepass", "online"] and all(c.default == 0 for c in rewrite(g, {}, Choice, HW)[1])
    # devices with work-groups keep their own attention mapping
    assert [c.kind for c in rewrite(g, {}, Choice, _with_work_groups())[1]] == ["onepass"]


def _with_work_groups():
    from dataclasses import replace
    return replace(HW, work_groups=True)


def test_the_block_chain_lives_inside_the_fold():
    g = attention(2, 64, 1024, 32)
    g2, _ = rewrite(g, online_plan(g), Choice, HW)
    s = default_schedule(g2, hw=HW)
    fold = next(st for st in s.stages.values() if st.op.tag == FOLD)
    inside = {n for n, st in s.stages.items() if st.is_at and st.attach.stage is fold}
    assert {"scores", "o_bmax", "o_bexp", "o_bsum", "o_bdot"} <= inside
    src = build(s, "cpu").source
    assert "v_scores[" in src and f"[{64 * 1024}]" not in src      # never a whole head's scores


def test_the_fold_is_the_default_where_a_heads_scores_outgrow_the_cache():
    from dataclasses import replace
    g = attention(2, 64, 512, 16)                 # 128 KiB of scores a head, 256 KiB on 2 threads
    small, large = replace(HW, threads=2, l3=256 << 10), replace(HW, threads=2, l3=1 << 20)
    assert [c.default for c in rewrite(g, {}, Choice, small)[1] if c.kind == "online"] == [1]
    assert [c.default for c in rewrite(g, {}, Choice, large)[1] if c.kind == "online"] == [0]
    assert [c.default for c in rewrite(g, {}, Choice, replace(small, threads=1))[1] if c.kind == "online"] == [0]
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, n, 16)).astype(np.float32) * 2 for n in (64, 512, 512))
    for hw, folded in ((small, True), (large, False)):
        s = default_schedule(g, hw=hw)
        assert any(st.op.tag == FOLD for st in s.stages.values()) == folded
        np.testing.assert_allclose(build(s, "cpu")(q, k, v), reference(q, k, v), rtol=1e-4, atol=2e-5)


@settings(max_examples=12, deadline=None)
@given(h=st.integers(1, 3), nq=st.sampled_from([1, 5, 33, 128, 384]), nk=st.sampled_from([288, 384, 512, 768]),
       d=st.sampled_from([1, 7, 16, 64]), causal=st.booleans(), transposed=st.booleans(), seed=st.integers(0, 99))
def test_online_attention_matches_float64(h, nq, nk, d, causal, transposed, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((h, n, d)).astype(np.float32) * 2 for n in (nq, nk, nk))
    g = attention(h, nq, nk, d, causal, transposed)
    plan = online_plan(g)
    assert plan, "an attention with several key blocks offers the online fold"
    g2, _ = rewrite(g, plan, Choice, HW)
    assert any(op.tag == FOLD for op in g2.compute_ops)
    got = build(default_schedule(g2, hw=HW), "cpu")(q, k, v)
    np.testing.assert_allclose(got, reference(q, k, v, causal, transposed), rtol=1e-4, atol=2e-5)


def test_online_and_one_pass_softmax_together_keep_the_fold():
    g = attention(1, 16, 512, 8)
    plan = {c.knob: 1 for c in rewrite(g, {}, Choice, HW)[1]}
    g2, _ = rewrite(g, plan, Choice, HW)
    assert any(op.tag == FOLD for op in g2.compute_ops)
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, n, 8)).astype(np.float32) for n in (16, 512, 512))
    np.testing.assert_allclose(build(default_schedule(g2, hw=HW), "cpu")(q, k, v), reference(q, k, v),
                               rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("name", ["attention_single_head", "attention_multi_head"])
def test_corpus_attention_with_short_keys_keeps_the_default(name):
    from pathlib import Path

    import hlotune
    m = hlotune.load_hlo(Path(__file__).parent / "data" / "hlo" / f"{name}.hlo")
    g = Graph(m.outputs, m.params)
    # 128 keys are one block: the rows of a head fit in cache and the online fold is not offered
    assert match_attention(g) == []
