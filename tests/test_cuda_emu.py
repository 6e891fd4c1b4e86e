"""Generated CUDA run on the CPU (runtime/cuda_emu.py): the gpu_gemm kernels in every mode
(FMA and tensor-core tiles, copied and evaluated operands, cp.async pipelines and register-staged
double buffering, transposed operands, batches, ragged edges) and corpus modules with the CUDA
backend's default schedules, each against numpy in float64. The emulator models cp.async's
deferred completion and the mma/ldmatrix fragment layouts of the PTX ISA, so a missing wait or a
wrong fragment index shows here as a wrong answer; speed and the hardware itself need a GPU
(tests/test_cuda_runtime.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hlotune.dsl.errors import ScheduleError
from hlotune.dsl.reference import evaluate
from hlotune.dsl.tensor import Graph
from hlotune.dsl.tolerance import check, scale_of, tolerance
from hlotune.runtime.backends import backend
from hlotune.runtime.codegen.cuda import CUDARenderer
from hlotune.runtime.cuda_emu import run_emulated
from hlotune.runtime.module import plan_segments
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.gpu_gemm import GemmParams, check_params, gemm_form
from hlotune.schedules.lower import lower
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ (C++20) runs the emulated kernels")
DATA = Path(__file__).parent / "data" / "hlo"
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float64": np.float64}


def _matmul(dtype, m, n, k, ta=False, tb=False, batch=0, acc="float32"):
    """C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] (A, B stored transposed when ``ta``/``tb``)."""
    lead = (batch,) if batch else ()
    A = dsl.placeholder(lead + ((k, m) if ta else (m, k)), dtype, name="A")
    B = dsl.placeholder(lead + ((n, k) if tb else (k, n)), dtype, name="B")
    r = dsl.reduce_axis(k, name="k")

    def f(*ix):
        b, i, j = (ix[:1], ix[-2], ix[-1]) if batch else ((), ix[0], ix[1])
        a = A[(*b, r, i)] if ta else A[(*b, i, r)]
        c = B[(*b, j, r)] if tb else B[(*b, r, j)]
        return dsl.sum(dsl.cast(a, acc) * dsl.cast(c, acc), axis=r)
    return A, B, dsl.compute(lead + (m, n), f, name="C")


def _run_gemm(dtype, m, n, k, params, ta=False, tb=False, batch=0, cc=90):
    A, B, C = _matmul(dtype, m, n, k, ta, tb, batch)
    s = hlotune.Schedule(C)
    s.tensorize(C, "gpu_gemm", params)
    fn = lower(s, "mm")
    prog = CUDARenderer(compute_capability=cc, shared_optin=227 << 10).program(fn)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(A.shape).astype(NP[dtype])
    b = rng.standard_normal(B.shape).astype(NP[dtype])
    (c,) = run_emulated(fn, prog, a, b)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    if ta:
        af = np.swapaxes(af, -1, -2)
    if tb:
        bf = np.swapaxes(bf, -1, -2)
    want = af @ bf
    rt, at = tolerance("float32", scale_of(want))
    assert check(c, want, rt, at).ok, check(c, want, rt, at).describe()
    return prog


@pytest.mark.parametrize("params,shape,layout", [
    ({"mma": 0, "bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 4, "stages": 0}, (200, 136, 72), ""),
    ({"mma": 0, "bm": 64, "bn": 32, "bk": 8, "tm": 8, "tn": 4, "stages": 1}, (200, 136, 72), ""),
    ({"mma": 0, "bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4, "stages": 2}, (67, 45, 33), "ta"),
    ({"mma": 0, "bm": 64, "bn": 64, "bk": 8, "tm": 8, "tn": 8, "stages": 3}, (64, 64, 64), "ta"),
    ({"mma": 0, "bm": 32, "bn": 64, "bk": 16, "tm": 2, "tn": 8, "stages": 2}, (40, 72, 24), "tb"),
])
def test_fma_gemm_matches_numpy(params, shape, layout):
    prog = _run_gemm("float32", *shape, params, ta="ta" in layout, tb="tb" in layout)
    if params["stages"] == 3 and layout == "ta":    # A and B both contiguous along m, n: copied asynchronously
        assert "hl_cp_async(" in prog.source.split("gpu_gemm:")[1] and "cp.async 3 stages" in prog.source


@pytest.mark.parametrize("dtype,params,shape,layout", [
    ("bfloat16", {"mma": 1, "bm": 64, "bn": 64, "bk": 32, "wm": 32, "wn": 32, "stages": 0}, (200, 136, 72), ""),
    ("bfloat16", {"mma": 1, "bm": 64, "bn": 64, "bk": 16, "wm": 32, "wn": 16, "stages": 4}, (130, 72, 40), ""),
    ("float16", {"mma": 1, "bm": 64, "bn": 32, "bk": 32, "wm": 16, "wn": 32, "stages": 2}, (96, 80, 64), "ta tb"),
    ("bfloat16", {"mma": 1, "bm": 32, "bn": 64, "bk": 32, "wm": 32, "wn": 32, "stages": 3}, (96, 80, 64), "tb"),
    ("bfloat16", {"mma": 1, "bm": 64, "bn": 64, "bk": 32, "wm": 32, "wn": 32, "stages": 3}, (50, 30, 70), ""),
    ("float16", {"mma": 1, "bm": 64, "bn": 64, "bk": 16, "wm": 64, "wn": 32, "stages": 1}, (64, 64, 48), "ta"),
])
def test_tensor_core_gemm_matches_numpy(dtype, params, shape, layout):
    """Every ldmatrix layout (A and B each stored k-contiguous or not) feeds the mma fragments."""
    prog = _run_gemm(dtype, *shape, params, ta="ta" in layout, tb="tb" in layout)
    assert "hl_mma_16816_" in prog.source and "hl_ldsm_x4" in prog.source


def test_batched_gemm_and_register_staged_copies_before_sm80():
    _run_gemm("float32", 48, 40, 24, {"mma": 0, "bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4, "stages": 3},
              ta=True, batch=3)
    prog = _run_gemm("float32", 64, 64, 64, {"mma": 0, "bm": 64, "bn": 64, "bk": 8, "tm": 8, "tn": 8, "stages": 3},
                     ta=True, cc=75)
    assert "register-staged 2" in prog.source and "hl_cp_async(hl_" not in prog.source


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(16, 90), n=st.integers(16, 90), k=st.integers(1, 70), mma=st.sampled_from([0, 1]),
       bm=st.sampled_from([32, 64]), bn=st.sampled_from([32, 64]), stages=st.sampled_from([0, 1, 2, 3]),
       ta=st.booleans(), tb=st.booleans())
def test_random_shapes_and_configs_match(m, n, k, mma, bm, bn, stages, ta, tb):
    """Ragged edges in every direction (M, N, K not multiples of the tiles or the vectors)."""
    params = {"mma": mma, "bm": bm, "bn": bn, "bk": 16 if mma else 8, "wm": 32, "wn": 32 if bn >= 32 else 16,
              "tm": 4, "tn": 4, "stages": stages}
    _run_gemm("bfloat16" if mma else "float32", m, n, k, params, ta, tb)


def test_evaluated_operands_and_epilogue_cast():
    """An operand computed on the fly (a product of two inputs, inlined) and a bf16 result."""
    X = dsl.placeholder((70, 40), "float32", name="X")
    S = dsl.placeholder((70, 40), "float32", name="S")
    W = dsl.placeholder((40, 50), "float32", name="W")
    k = dsl.reduce_axis(40, name="k")
    P = dsl.compute((70, 40), lambda i, j: X[i, j] * S[i, j], name="P")
    C = dsl.compute((70, 50), lambda i, j: dsl.sum(P[i, k] * W[k, j], axis=k), name="C")
    s = hlotune.Schedule(C)
    s.compute_inline(P)
    s.tensorize(C, "gpu_gemm", {"mma": 0, "bm": 32, "bn": 32, "bk": 16, "tm": 4, "tn": 4, "stages": 2})
    fn = lower(s, "ev")
    prog = CUDARenderer().program(fn)
    assert "A evaluated" in prog.source
    rng = np.random.default_rng(1)
    x, sc, w = (rng.standard_normal(t.shape).astype(np.float32) for t in (X, S, W))
    (c,) = run_emulated(fn, prog, x, sc, w)
    want = (x.astype(np.float64) * sc) @ w
    assert check(c, want, *tolerance("float32", scale_of(want))).ok


def test_emulator_catches_a_missing_async_wait():
    """Waiting for one group too few leaves a stage unfilled: the emulated answer is wrong."""
    A, B, C = _matmul("bfloat16", 64, 64, 64)
    s = hlotune.Schedule(C)
    s.tensorize(C, "gpu_gemm", {"mma": 1, "bm": 64, "bn": 64, "bk": 16, "wm": 32, "wn": 32, "stages": 3})
    fn = lower(s, "mm")
    prog = CUDARenderer().program(fn)
    assert "hl_cp_wait<1>();" in prog.source
    broken = type(prog)(prog.source.replace("hl_cp_wait<1>();", "hl_cp_wait<2>();"), prog.launches, prog.scratch)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16) for _ in range(2))
    want = a.astype(np.float64) @ b.astype(np.float64)
    (good,) = run_emulated(fn, prog, a, b)
    (bad,) = run_emulated(fn, broken, a, b)
    assert check(good, want, *tolerance("float32", scale_of(want))).ok
    assert not check(bad, want, *tolerance("float32", scale_of(want))).ok


def test_bad_parameters_name_the_limit():
    _, _, C = _matmul("float32", 64, 64, 64)
    form = gemm_form(C.op.axis, C.op.reduce_axis, C.op.body[0].src[0])
    for params, word in [({"mma": 1, "bm": 64, "bn": 64, "bk": 16}, "16-bit"),
                         ({"mma": 0, "bm": 256, "bn": 256, "bk": 32, "tm": 4, "tn": 4}, "4096 threads"),
                         ({"mma": 0, "bm": 48, "bn": 64, "bk": 16}, "power of two"),
                         ({"mma": 0, "bm": 128, "bn": 128, "bk": 64, "tm": 8, "tn": 8, "stages": 4}, "shared memory")]:
        with pytest.raises(ScheduleError, match=word):
            check_params(GemmParams(**params), form, backend("cuda").hardware())


def _segments(name):
    m = hlotune.load_hlo(DATA / f"{name}.hlo")
    for item in plan_segments(Graph(m.outputs, m.params)):
        if isinstance(item, tuple):
            yield Graph(*item)


NAMES = [m["name"] for m in json.loads((DATA / "manifest.json").read_text())]


@pytest.mark.parametrize("name", ["mlp_block", "conv2d_nhwc_3x3", "conv2d_stride2_bias_relu", "convert_bf16",
                                  "attention_single_head", "batched_matmul", "layernorm", "softmax"])
def test_corpus_segments_on_the_cuda_defaults(name):
    """Each compute segment with the CUDA backend's default schedules (gpu_gemm on its dots and
    convolutions) against the reference evaluator."""
    hw = backend("cuda").hardware()
    for k, g in enumerate(_segments(name)):
        rng = np.random.default_rng(k)
        ins = [(rng.standard_normal(t.shape) if t.dtype.is_float else rng.integers(0, 5, t.shape)).astype(t.dtype.np)
               for t in g.inputs]
        ref = evaluate(g, ins)
        fn = lower(default_schedule(g, hw=hw), f"{name}_{k}")
        prog = CUDARenderer().program(fn)
        outs = run_emulated(fn, prog, *ins)
        for o, r in zip(outs, ref):
            r = np.asarray(r)
            c = check(o, r, *tolerance(r.dtype, scale_of(r)))
            assert c.ok, f"{name} segment {k}: {c.describe()}"


def test_interpreter_runs_a_tensorized_stage():
    """The loop-IR interpreter gives a MatmulKernel its meaning (for tests without a compiler)."""
    from hlotune.schedules.interp import interpret
    A, B, C = _matmul("float32", 9, 7, 5, ta=True)
    s = hlotune.Schedule(C)
    s.tensorize(C, "gpu_gemm", {"mma": 0, "bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4})
    fn = lower(s, "mm")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(A.shape).astype(np.float32), rng.standard_normal(B.shape).astype(np.float32)
    c = np.zeros((9, 7), np.float32)
    interpret(fn, a, b, c)
    np.testing.assert_allclose(c, a.T.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ScheduleError, match="tensorized"):
        s.split(C.op.axis[0], 2)
