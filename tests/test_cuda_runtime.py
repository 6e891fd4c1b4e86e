"""The CUDA backend on a real GPU (pycuda): targets and their provenance, kernels of every family
and the gpu_gemm modes against the reference evaluator, every corpus module against XLA's
outputs, CUDA-event timing, buffer and module reuse, a faulting kernel (one runtime_error, the
context rebuilt, the next candidate fine), and tuning into the database.

Skipped with the reason when there is no CUDA device (no pycuda, no driver, no GPU, no nvcc);
the generated code is still compiled (tests/test_cuda_codegen.py) and run on the CPU
(tests/test_cuda_emu.py) there.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _checks import assert_close, check_schedule, matmul, random_inputs, row_reduce, run_module_file
from hlotune.dsl.errors import DeviceError, HlotuneError, MissingDependencyError, TargetError
from hlotune.dsl.reference import evaluate
from hlotune.runtime import cuda as hcuda
from hlotune.schedules.fusion import default_schedule

import hlotune
from hlotune import dsl

WHY = hcuda.available()
needs_gpu = pytest.mark.skipif(WHY is not None, reason=f"no CUDA device here: {WHY}")
DATA = Path(__file__).parent / "data" / "hlo"
CASES = [m["name"] + f for m in json.loads((DATA / "manifest.json").read_text()) for f in (".hlo", ".opt.hlo")]


def test_cuda_target_without_a_device_says_why():
    if WHY is None:
        pytest.skip("there is a CUDA device here")
    with pytest.raises((TargetError, MissingDependencyError), match="pycuda|CUDA|nvcc"):
        hlotune.get_target("cuda")


def test_bad_cuda_specs_are_refused():
    with pytest.raises(TargetError, match="cuda:N"):
        hcuda._index("cuda:x")


@needs_gpu
def test_target_provenance_and_listing(capsys):
    from hlotune.cli import main
    t = hlotune.get_target("cuda")
    assert str(t) == "cuda:0" and t.arch.startswith("sm_") and t.multiprocessors > 0
    p = t.provenance
    for k in ("device", "compute_capability", "driver_version", "cuda_version"):
        assert p[k], k
    assert hlotune.get_target("cuda:0").key == t.key
    with pytest.raises(TargetError, match="no CUDA device"):
        hlotune.get_target(f"cuda:{hcuda.device_count()}")
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "cuda:0" in out and "compute capability" in out and "shared memory" in out


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_elementwise_and_reductions_match(dtype):
    A = dsl.placeholder((300, 257), dtype, name="A")
    k = dsl.reduce_axis(257, name="k")
    E = dsl.compute((300, 257), lambda i, j: A[i, j] * A[i, j] + A[i, j], name="E")
    R = dsl.compute((300,), lambda i: dsl.sum(A[i, k], axis=k), name="R")
    for out in (E, R):
        check_schedule(default_schedule([out], hw=hlotune.get_target("cuda").hardware), target="cuda")


@needs_gpu
@pytest.mark.parametrize("params", [
    {"mma": 0, "bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "stages": 2},
    {"mma": 0, "bm": 32, "bn": 32, "bk": 32, "tm": 4, "tn": 4, "stages": 1},
    {"mma": 1, "bm": 128, "bn": 128, "bk": 32, "wm": 64, "wn": 32, "stages": 3},
    {"mma": 1, "bm": 256, "bn": 128, "bk": 64, "wm": 64, "wn": 64, "stages": 4},
    {"mma": 1, "bm": 64, "bn": 64, "bk": 16, "wm": 32, "wn": 32, "stages": 2},
])
def test_gemm_modes_match_numpy_on_the_gpu(params):
    dtype = "bfloat16" if params["mma"] else "float32"
    M, N, K = 333, 200, 168
    A = dsl.placeholder((M, K), dtype, name="A")
    B = dsl.placeholder((K, N), dtype, name="B")
    r = dsl.reduce_axis(K, name="k")
    C = dsl.compute((M, N), lambda i, j: dsl.sum(dsl.cast(A[i, r], "float32") * dsl.cast(B[r, j], "float32"),
                                                  axis=r), name="C")
    s = hlotune.Schedule(C)
    s.tensorize(C, "gpu_gemm", params)
    f = hlotune.build(s, "cuda")
    assert f.ptxas["spill_stores"] == 0, f.ptxas
    rng = np.random.default_rng(0)
    np_dt = ml_dtypes.bfloat16 if params["mma"] else np.float32
    a, b = rng.standard_normal((M, K)).astype(np_dt), rng.standard_normal((K, N)).astype(np_dt)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(f(a, b).astype(np.float64), want, 1e-4, 1e-4 * np.abs(want).max())


@needs_gpu
def test_matmul_and_reduction_defaults_match():
    for s in (hlotune.Schedule(matmul(96, 80, 64)), hlotune.Schedule(row_reduce("max"))):
        check_schedule(default_schedule(list(s.graph.outputs), hw=hlotune.get_target("cuda").hardware), target="cuda")


@needs_gpu
@pytest.mark.parametrize("case", CASES)
def test_corpus_module_matches_xla_on_cuda(case):
    name = case.split(".")[0]
    rows = run_module_file(DATA / case, DATA / f"{name}.npz", target="cuda")
    assert all(r["ok"] for r in rows), [r for r in rows if not r["ok"]]


@needs_gpu
def test_timing_keeps_every_repeat_and_reuses_buffers():
    s = hlotune.Schedule(matmul(256, 256, 256))
    f = hlotune.build(s, "cuda")
    ins = random_inputs(list(s.graph.outputs))
    f(*ins)
    bufs = list(f._dev.bufs)
    r = f.time(*ins, repeat=7, min_repeat_ms=5)
    assert len(r.times) == 7 and all(t > 0 for t in r.times) and r.number >= 1
    assert [int(b) for b in f._dev.bufs] == [int(b) for b in bufs]
    cubin, _ = hcuda.compile_cubin(f.source, f.target.arch, f.target.driver_version)
    assert str(cubin) in hcuda.device_context(0).modules


BAD = r"""extern "C" __global__ void hl_bad(float* p) { p[(long long)threadIdx.x * 4000000000LL + (1LL << 40)] = 1.f; }"""
GOOD = r"""extern "C" __global__ void hl_good(float* p) { p[threadIdx.x] = 2.f * threadIdx.x; }"""


def _spec(src: str, name: str) -> dict:
    t = hlotune.get_target("cuda")
    cubin, _ = hcuda.compile_cubin(src, t.arch, t.driver_version)
    return {"cubin": str(cubin), "index": 0, "target_key": t.key, "device": t.device, "num_inputs": 0,
            "num_args": 1, "nbytes": [4 * 32], "name": name,
            "launches": [{"name": name, "args": [0], "grid": [1, 1, 1], "block": [32, 1, 1], "shared": 0}]}


@needs_gpu
def test_a_faulting_kernel_is_a_device_error_and_the_context_is_rebuilt():
    ctx = hcuda.device_context(0)
    gen = ctx.generation
    bad = hcuda.SpecRunner(_spec(BAD, "hl_bad"))
    with pytest.raises(DeviceError, match="rebuilt"):
        bad.run([], [np.zeros(32, np.float32)])
    assert ctx.generation == gen + 1
    out = np.zeros(32, np.float32)
    hcuda.SpecRunner(_spec(GOOD, "hl_good")).run([], [out])
    np.testing.assert_array_equal(out, 2 * np.arange(32, dtype=np.float32))


@needs_gpu
def test_worker_reports_the_fault_and_runs_the_next_candidate(tmp_path):
    """Through the measurement worker's protocol, in a separate process: the faulting candidate
    is one runtime_error; the next one in the same worker is built, checked and timed."""
    from hlotune.autotune.measure import Worker
    want = tmp_path / "want.npy"
    np.save(want, 2 * np.arange(32, dtype=np.float32))
    w = Worker()
    try:
        common = {"backend": "cuda", "inputs": [], "expected": [str(want)], "out": [[[32], "float32"]],
                  "rtol": [0.0], "atol": [0.0], "repeat": 3, "min_repeat_ms": 1.0}
        assert w.request({"backend": "cuda", "op": "build", "program": _spec(BAD, "hl_bad")}, 60)["ok"]
        rep = w.request({**common, "op": "run"}, 60)
        assert not rep["ok"] and rep["failure"] == "runtime_error", rep
        assert w.request({"backend": "cuda", "op": "build", "program": _spec(GOOD, "hl_good")}, 60)["ok"]
        rep = w.request({**common, "op": "run"}, 60)
        assert rep["ok"] and len(rep["times"]) == 3, rep
    finally:
        w.close()


@needs_gpu
def test_tuning_on_cuda_records_the_gpu(tmp_path):
    hlo = (DATA / "matmul_1024.hlo").read_text()
    db = tmp_path / "t.db"
    res = hlotune.tune(hlo, target="cuda", trials=8, db=str(db), progress=False)
    assert sum(r.trials for r in res) >= 8
    assert not {k for r in res for k in r.failures} - {"invalid", "compile_error", "runtime_error", "wrong_answer",
                                                         "timeout"}
    from hlotune.autotune.database import Database
    prov = json.dumps([t for t in Database(str(db)).targets() if t["kind"] == "cuda"])
    for word in ("compute_capability", "driver_version", "cuda_version", hlotune.get_target("cuda").device):
        assert word in prov, word
    tuned = hlotune.compile(hlo, target="cuda", db=str(db))
    z = np.load(DATA / "matmul_1024.npz")
    assert_close(tuned(z["arg0"], z["arg1"]), z["out0"], 1e-4, 1e-4 * np.abs(z["out0"]).max())


@needs_gpu
def test_evaluate_and_gpu_agree_on_a_convolution():
    x = dsl.placeholder((2, 9, 9, 8), "float32", name="x")
    w = dsl.placeholder((3, 3, 8, 16), "float32", name="w")
    kh, kw, ci = dsl.reduce_axis(3, "kh"), dsl.reduce_axis(3, "kw"), dsl.reduce_axis(8, "ci")
    y = dsl.compute((2, 7, 7, 16), lambda n, h, v, o: dsl.sum(x[n, h + kh, v + kw, ci] * w[kh, kw, ci, o],
                                                              axis=[kh, kw, ci]), name="y")
    s = default_schedule([y], hw=hlotune.get_target("cuda").hardware)
    f = hlotune.build(s, "cuda")
    assert "gpu_gemm" in f.source
    ins = random_inputs([y])
    assert_close(f(*ins), evaluate([y], ins)[0], 1e-4, 1e-4)


def test_errors_are_typed():
    assert issubclass(DeviceError, HlotuneError)
