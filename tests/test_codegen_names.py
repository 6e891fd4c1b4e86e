"""Identifiers in generated C, OpenCL and CUDA are namespaced: every name made from a user's
tensor, parameter or instruction name gets ``USER_PREFIX``, so no keyword, macro, type or library
name can collide with it (unprefixed, ``linux``/``unix`` are macros of gcc, ``HUGE_VAL`` of
math.h, ``float4`` an OpenCL type, ``threadIdx`` a CUDA builtin ...). Modules whose parameters and
instructions carry such names run on the cpu and compile for OpenCL and CUDA."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from _checks import assert_close
from hlotune.dsl.reference import evaluate
from hlotune.dsl.tensor import Graph
from hlotune.runtime.backends import backend
from hlotune.runtime.codegen.cstyle import USER_PREFIX
from hlotune.runtime.module import plan_segments
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.lower import lower

import hlotune

#: valid HLO names that are C/OpenCL/CUDA keywords, macros, types or library names
NAMES = ["linux", "unix", "i386", "asm", "main", "errno", "signal", "int", "float", "double", "char", "long", "unsigned", "void", "return", "if", "for", "while", "static", "const", "restrict", "inline", "bool", "true", "false", "NULL", "EOF", "INFINITY", "NAN", "M_PI", "M_E", "HUGE_VAL", "HUGE_VALF", "FLT_MAX", "DBL_MIN", "INT32_MAX", "INT_MIN", "UINT64_MAX", "CHAR_BIT", "RAND_MAX", "EXIT_FAILURE", "SIGSEGV", "EINTR", "CLOCK_MONOTONIC", "stdin", "stdout", "printf", "malloc", "free", "abort", "exit", "memcpy", "sqrt", "expf", "isnan", "fabs", "size_t", "int32_t", "uint8_t", "timespec", "assert", "offsetof", "va_list", "setjmp", "__LINE__", "__FILE__", "__STDC__", "_GNU_SOURCE", "__x86_64__", "float4", "half2", "uchar", "uint", "ulong", "kernel", "global", "local", "constant", "private", "read_only", "select", "clamp", "mix", "dot", "barrier", "get_global_id", "vload4", "threadIdx", "blockIdx", "warpSize", "__syncthreads", "__half", "class", "template", "new", "delete", "this", "namespace", "operator", "hl_alloc", "hl_status", "hl_entry", "hl_run", "args", "n", "t0", "cur0", "omp_get_thread_num", "v_x"]


def _module(names: list[str]) -> str:
    """A reducer computation and an entry computation whose parameters and instructions are
    named by ``names``; every entry value is an output."""
    a, b, *rest = names
    lines = [f"  {a} = f32[3,5] parameter(0)", f"  {b} = f32[3,5] parameter(1)"]
    ops = ["add", "multiply", "maximum", "subtract", "tanh", "exponential", "negate"]
    vals = [a, b]
    for k, nm in enumerate(rest):
        op = ops[k % len(ops)]
        args = vals[-1] if op in ("tanh", "exponential", "negate") else f"{vals[-1]}, {vals[-2]}"
        lines.append(f"  {nm} = f32[3,5] {op}({args})")
        vals.append(nm)
    lines += ["  zero = f32[] constant(0)",
              f"  out = f32[3] reduce({vals[-1]}, zero), dimensions={{1}}, to_apply={a}",
              (f"  ROOT result = ({', '.join(['f32[3,5]'] * len(rest) + ['f32[3]'])}) "
              f"tuple({', '.join(rest)}, out)")]
    reducer = (f"{a} {{\n  {b} = f32[] parameter(0)\n  {rest[0]} = f32[] parameter(1)\n"
               f"  ROOT {rest[1]} = f32[] add({b}, {rest[0]})\n}}\n")
    return "HloModule m\n" + reducer + "ENTRY e {\n" + "\n".join(lines) + "\n}\n"


CHUNKS = [NAMES[k:k + 24] for k in range(0, len(NAMES), 24)]


def test_user_names_get_the_prefix():
    """Every identifier made from the module's names is prefixed; none is left bare."""
    m = hlotune.load_hlo(_module(CHUNKS[0]))
    src = "\n".join(k.source for k in hlotune.compile(m).kernels)
    assert f"{USER_PREFIX}linux" in src and f"{USER_PREFIX}unix" in src
    assert not re.search(r"\b(linux|unix|i386|errno|signal)\b", src)


@pytest.mark.parametrize("chunk", range(len(CHUNKS)))
def test_hostile_names_run_on_the_cpu(chunk):
    m = hlotune.load_hlo(_module(CHUNKS[chunk]))
    ins = m.random_inputs(seed=chunk)
    got = hlotune.compile(m)(*ins)
    ref = evaluate(list(m.outputs), ins, m.params)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert_close(g, r, rtol=1e-5, atol=1e-5)


def test_an_output_named_huge_val_is_right():
    """Regression: an output named HUGE_VAL compiled (as the macro) and crashed."""
    text = ("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n  ROOT HUGE_VAL = f32[8] negate(p)\n}\n")
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(hlotune.compile(hlotune.load_hlo(text))(x), -x)


def _segments(text: str):
    m = hlotune.load_hlo(text)
    return [Graph(*item) for item in plan_segments(Graph(m.outputs, m.params)) if isinstance(item, tuple)]


def _opencl_target():
    from hlotune.dsl.errors import HlotuneError
    try:
        return hlotune.get_target("opencl")
    except HlotuneError as e:     # no pyopencl (MissingDependencyError), no device (TargetError)
        pytest.skip(f"no OpenCL device: {e}")


@pytest.mark.parametrize("chunk", range(len(CHUNKS)))
def test_hostile_names_compile_and_run_on_opencl(chunk):
    target = _opencl_target()
    m = hlotune.load_hlo(_module(CHUNKS[chunk]))
    ins = m.random_inputs(seed=chunk)
    got = hlotune.compile(m, target=target)(*ins)
    for g, r in zip(got, evaluate(list(m.outputs), ins, m.params)):
        assert_close(g, r, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_hostile_names_compile_with_nvcc():
    from hlotune.runtime.codegen.cuda import compile_cuda, cuda_helpers, render_cuda
    parts, n = [cuda_helpers()], 0
    for c, chunk in enumerate(CHUNKS):
        for k, g in enumerate(_segments(_module(chunk))):
            src = render_cuda(lower(default_schedule(g, hw=backend("cuda").hardware()), f"names{c}_{k}")).source
            parts.append(src[len(cuda_helpers()):])
            n += 1
    assert compile_cuda("\n".join(parts)).read_text().count(".entry") >= n
