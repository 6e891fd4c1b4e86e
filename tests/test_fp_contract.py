"""16-bit floats round after every op, so no fused multiply-add may skip a product's rounding.

gcc narrows ``(half)((float)a * (float)b)`` to a half-precision multiply (exact), and with
``-ffp-contract=fast`` (GNU C's default) fuses it with the rounded sum into an AVX512-FP16 FMA,
which rounds once. This machine may lack AVX512-FP16, so the C is compiled for
``-march=sapphirerapids`` to assembly and inspected. float32 kernels keep their FMAs."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from _checks import check_schedule, matmul
from hlotune.runtime.codegen.c import render_c
from hlotune.runtime.codegen.cuda import render_cuda
from hlotune.runtime.codegen.opencl import render_opencl
from hlotune.runtime.cpu import DEFAULT_FLAGS
from hlotune.schedules.lower import lower

import hlotune
from hlotune import dsl

CC = "gcc"
ARCH = "-march=sapphirerapids"
FMA = re.compile(r"\bv?f(n?m(add|sub)|madd|msub)\w*\b")
CONTRACT_OFF = '__attribute__((optimize("fp-contract=off")))'


def _arch_ok() -> bool:
    if shutil.which(CC) is None:
        return False
    r = subprocess.run([CC, ARCH, "-mavx512fp16", "-x", "c", "-S", "-o", "-", "-"], input="_Float16 h;",
                       capture_output=True, text=True, check=False)
    return r.returncode == 0


needs_arch = pytest.mark.skipif(not _arch_ok(), reason=f"{CC} cannot target {ARCH} with AVX512-FP16")


def _asm(src: str, tmp_path) -> dict[str, list[str]]:
    """Instructions per function (OpenMP-outlined parts separate) of ``src`` compiled for ARCH."""
    c = tmp_path / "k.c"
    c.write_text(src)
    flags = [f for f in DEFAULT_FLAGS if f not in ("-march=native", "-shared")]
    r = subprocess.run([CC, *flags, ARCH, "-S", str(c), "-o", "-"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    funcs, cur = {}, None
    for ln in r.stdout.splitlines():
        m = re.match(r"^([A-Za-z_][\w.]*):", ln)
        if m:
            cur = m.group(1)
            funcs.setdefault(cur, [])
        elif cur and ln.startswith("\t") and not ln.startswith("\t."):
            funcs[cur].append(ln.split()[0])
    return funcs


def _kernel_fmas(src: str, tmp_path) -> list[str]:
    funcs = _asm(src, tmp_path)
    body = [i for f, ins in funcs.items() if f.startswith("kernel") for i in ins]
    assert any(i.startswith("v") for i in body), "no kernel code found in the assembly"
    return [i for i in body if FMA.fullmatch(i)]


def _matmul_schedule(dtype):
    C = matmul(17, 13, 11, dtype=dtype)
    s = hlotune.Schedule(C)
    io, ii = s.split(C.axis[0], 4)
    s.reorder(io, C.op.reduce_axis[0], ii, C.axis[1])
    s.vectorize(C.axis[1])
    return s


def _axpy_schedule(dtype):
    """D = A * B + C (three rounded ops), a parallel outer and a vector inner loop."""
    A, B, C = (dsl.placeholder((64, 48), dtype, name=n) for n in "ABC")
    D = dsl.compute((64, 48), lambda i, j: A[i, j] * B[i, j] + C[i, j], name="D")
    s = hlotune.Schedule(D)
    s.parallel(D.axis[0])
    s.vectorize(D.axis[1])
    return s


SCHEDULES = {"matmul": _matmul_schedule, "axpy": _axpy_schedule}


@needs_arch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_16bit_products_are_not_fused(kind, dtype, tmp_path):
    src = render_c(lower(SCHEDULES[kind](dtype)))
    assert CONTRACT_OFF in src
    assert _kernel_fmas(src, tmp_path) == []
    if dtype == "float16":   # the hazard is real: without the attribute gcc emits half-precision FMAs
        fused = _kernel_fmas(src.replace(CONTRACT_OFF, ""), tmp_path)
        assert any(i.endswith(("ph", "sh")) for i in fused), fused


@needs_arch
@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_float32_kernels_keep_their_fmas(kind, tmp_path):
    src = render_c(lower(SCHEDULES[kind]("float32")))
    assert "HL_NO_CONTRACT int" not in src and "int kernel(" in src
    assert any(i.startswith("vfmadd") for i in _kernel_fmas(src, tmp_path))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_kernels_round_every_product_on_this_cpu(dtype):
    """The uncontracted kernels match round-after-every-op on the CPU here."""
    check_schedule(_matmul_schedule(dtype))
    A = dsl.placeholder((8,), dtype, name="A")
    B = dsl.compute((8,), lambda i: A[i] * A[i] + A[i], name="B")
    f = hlotune.build(hlotune.Schedule(B), target="cpu")
    x = (np.arange(8, dtype=np.float32) * 0.3 + 1.1).astype(f.inputs[0].dtype.np)
    x32 = x.astype(np.float32)
    want = ((x32 * x32).astype(x.dtype).astype(np.float32) + x32).astype(x.dtype)
    np.testing.assert_array_equal(f(x), want)


def test_opencl_turns_contraction_off_only_for_16bit_products():
    for dtype, off in [("float16", True), ("bfloat16", True), ("float32", False)]:
        prog = render_opencl(lower(_matmul_schedule(dtype)), fp16=True)
        assert ("#pragma OPENCL FP_CONTRACT OFF" in prog.source) is off, dtype
        if off:   # file scope, before the first kernel
            assert prog.source.index("FP_CONTRACT OFF") < prog.source.index("__kernel")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_16bit_products_are_never_fused(dtype):
    from hlotune.runtime.codegen.cuda import compile_cuda
    src = render_cuda(lower(_matmul_schedule(dtype))).source
    assert "__fmul_rn(" in src and "FP_CONTRACT" not in src
    ptx = compile_cuda(src).read_text()
    kernel = ptx[ptx.index(".entry"):]
    assert "mul.rn.f32" in kernel and "fma.rn.f32" not in kernel
