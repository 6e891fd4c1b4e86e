"""CUDA code generation, checked by compiling with nvcc (no CUDA device is needed): every corpus
module's kernels with the device default schedules, and the schedule primitives that map to
blocks, threads, shared memory and barriers. Running CUDA kernels needs a device; the CUDA
runtime is not built yet (``--target cuda`` says so)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _checks import argmax_reducer, matmul
from hlotune.dsl.errors import TargetError
from hlotune.dsl.tensor import ExternOp, Graph
from hlotune.runtime.backends import backend
from hlotune.runtime.codegen.cuda import compile_cuda, cuda_helpers, render_cuda
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


def test_cuda_target_says_what_is_missing():
    with pytest.raises(TargetError, match="cuda"):
        hlotune.get_target("cuda")
