"""CUDA code generation, checked by compiling with nvcc (no CUDA device is needed): every corpus
module's kernels with the device default schedules, and the schedule primitives that map to
blocks, threads, shared memory and barriers. Running CUDA kernels needs a device; the CUDA
runtime is tests/test_cuda_runtime.py; tests/test_cuda_emu.py runs the generated code on the CPU.
ptxas's report and cuobjdump's SASS check the gpu_gemm kernels for every knob's extremes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _checks import argmax_reducer, matmul
from hlotune.dsl.errors import MissingDependencyError, TargetError
from hlotune.dsl.tensor import ExternOp, Graph
from hlotune.runtime.backends import backend
from hlotune.runtime.codegen.cuda import compile_cuda, cuda_helpers, render_cuda
from hlotune.runtime.cuda import compile_cubin, cuobjdump, sass_of
from hlotune.runtime.module import plan_segments
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.lower import lower
from test_opencl import _local_memory_matmul, _tree_reduce

import hlotune
from hlotune import dsl

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed")
DATA = Path(__file__).parent / "data" / "hlo"
NAMES = [m["name"] for m in json.loads((DATA / "manifest.json").read_text())]


def _kernels(fn) -> str:
    """The program's kernels without the helper preamble (so several share one source)."""
    src = render_cuda(fn).source
    assert src.startswith(cuda_helpers())
    return src[len(cuda_helpers()):]


def _segments(name: str):
    m = hlotune.load_hlo(DATA / f"{name}.hlo")
    for item in plan_segments(Graph(m.outputs, m.params)):
        if isinstance(item, tuple):
            yield Graph(*item)
        else:
            assert isinstance(item, (dict, ExternOp))


def test_every_corpus_module_compiles_with_nvcc():
    parts, n = [cuda_helpers()], 0
    for name in NAMES:
        for k, g in enumerate(_segments(name)):
            fn = lower(default_schedule(g, hw=backend("cuda").hardware()), f"{name}_{k}")
            parts.append(_kernels(fn))
            n += 1
    assert n >= len(NAMES)
    src = "\n".join(parts)
    assert src.count('extern "C" __global__') >= n and "__launch_bounds__" in src
    assert compile_cuda(src).read_text().count(".entry") >= n


def test_primitives_map_to_blocks_threads_shared_memory_and_barriers():
    A = dsl.placeholder((30, 50), "float32", name="A")
    k = dsl.reduce_axis(50, name="k")
    idx, _val = dsl.compute((30,), lambda i: argmax_reducer()((k, A[i, k]), axis=k), name="am")
    H = dsl.placeholder((64,), "float16", name="H")
    Bf = dsl.placeholder((64,), "bfloat16", name="Bf")
    mixed = dsl.compute((64,), lambda i: dsl.cast(H[i], "float32") * dsl.cast(Bf[i], "float32"), name="mixed")
    progs = {"local memory matmul": _local_memory_matmul(64, 64, 32), "tree reduction": _tree_reduce("max", 8, 1000, 64),
             "argmax": hlotune.Schedule(idx), "f16 x bf16": hlotune.Schedule(mixed),
             "plain matmul": hlotune.Schedule(matmul())}
    srcs = {name: _kernels(lower(s, f"k{i}")) for i, (name, s) in enumerate(progs.items())}
    lm = srcs["local memory matmul"]
    assert "__shared__ float v_A_local[64];" in lm and lm.count("__syncthreads();") == 2
    assert "(long long)threadIdx.x" in lm and "(long long)blockIdx.y" in lm and "__launch_bounds__(32)" in lm
    assert "__shared__ float v_R_red[64];" in srcs["tree reduction"]
    assert "if ((v_hl_gid < 1920)) {" in srcs["plain matmul"]       # whole blocks past the end
    assert "const __half* __restrict__ v_H" in srcs["f16 x bf16"]
    compile_cuda("\n".join([cuda_helpers(), *srcs.values()]))


def _gemm(dtype: str, params: dict, m=1000, n=768, k=512):
    A = dsl.placeholder((m, k), dtype, name="A")
    B = dsl.placeholder((k, n), dtype, name="B")
    r = dsl.reduce_axis(k, name="k")
    C = dsl.compute((m, n), lambda i, j: dsl.sum(dsl.cast(A[i, r], "float32") * dsl.cast(B[r, j], "float32"),
                                                  axis=r), name="C")
    s = hlotune.Schedule(C)
    s.tensorize(C, "gpu_gemm", params)
    return lower(s, "gemm")


#: every gemm knob at its extremes (tensor cores and FMAs), within one block's limits
EXTREMES = [("bfloat16", {"mma": 1, "bm": 256, "bn": 128, "bk": 64, "wm": 64, "wn": 64, "stages": 3, "group_m": 8}),
            ("bfloat16", {"mma": 1, "bm": 32, "bn": 32, "bk": 16, "wm": 32, "wn": 32, "stages": 1}),
            ("float16", {"mma": 1, "bm": 128, "bn": 256, "bk": 32, "wm": 32, "wn": 64, "stages": 3}),
            ("float32", {"mma": 0, "bm": 128, "bn": 128, "bk": 32, "tm": 8, "tn": 8, "stages": 2, "group_m": 8}),
            ("float32", {"mma": 0, "bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4, "stages": 1}),
            ("float32", {"mma": 0, "bm": 256, "bn": 64, "bk": 16, "tm": 8, "tn": 4, "stages": 0})]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_gemm_knob_extremes_compile_without_spills(arch):
    """ptxas's report (-v) for every extreme config: registers within the block's budget, no
    spills, no stack frame (register arrays indexed by constants only)."""
    parts = [cuda_helpers()]
    for k, (dtype, params) in enumerate(EXTREMES):
        fn = _gemm(dtype, params)
        parts.append(_kernels(fn).replace("hl_gemm(", f"hl_gemm{k}("))
    _, rep = compile_cubin("\n".join(parts), arch)
    assert rep["spill_stores"] == 0 and rep["spill_loads"] == 0 and rep["stack"] == 0, rep
    assert 0 < rep["registers"] <= 255, rep


def test_tensor_core_kernels_are_hmma_with_async_copies_in_sass():
    """cuobjdump's SASS of the bf16 kernel: HMMA (tensor cores), LDSM (ldmatrix) and LDGSTS
    (cp.async); the FMA kernel has FFMA and no HMMA."""
    exe = cuobjdump()
    if exe is None:
        pytest.skip("cuobjdump and nvdisasm are not installed (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    for dtype, params, want, unwanted in [
            ("bfloat16", EXTREMES[0][1], ("HMMA.16816.F32.BF16", "LDSM.16.M88.4", "LDGSTS"), ("FFMA ",)),
            ("float32", EXTREMES[3][1], ("FFMA",), ("HMMA",))]:
        for arch in ("sm_80", "sm_90"):
            cubin, _ = compile_cubin(render_cuda(_gemm(dtype, params)).source, arch)
            sass = sass_of(cubin)
            assert all(w in sass for w in want), (arch, dtype, [w for w in want if w not in sass])
            assert not any(u in sass for u in unwanted), (arch, dtype)


def test_cuda_target_says_what_is_missing():
    from hlotune.runtime.cuda import available
    if available() is None:
        pytest.skip("a CUDA device is here")
    with pytest.raises((TargetError, MissingDependencyError), match="pycuda|CUDA|nvcc"):
        hlotune.get_target("cuda")
