"""Generated code stays memory-safe whatever the module says: scratch that cannot be allocated is
a MemoryError in Python (never abort() in the kernel), a kernel needing more scratch than the
machine has is refused before it is compiled, StableHLO splat constants are never expanded, and
zero-sized arrays (which XLA allows) run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest
from _checks import assert_close
from hlotune.dsl.reference import evaluate
from hlotune.runtime.build import memory_bytes

import hlotune
from hlotune import dsl


def _in_subprocess(code: str) -> str:
    """Run ``code`` (after :data:`_LIMIT`'s helper) in a fresh interpreter; its stdout."""
    r = subprocess.run([sys.executable, "-c", _LIMIT + textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    return r.stdout


_LIMIT = """
import resource
def limit_memory(extra):
    for ln in open("/proc/self/status"):
        if ln.startswith("VmSize"):
            lim = int(ln.split()[1]) * 1024 + extra
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
"""


def test_scratch_that_cannot_be_allocated_is_a_memory_error():
    """A 1.2 GB intermediate under an address-space limit: the kernel returns its status and
    the call raises MemoryError; the interpreter lives on and calls again."""
    out = _in_subprocess("""
    import numpy as np, hlotune
    from hlotune import dsl
    N = 300_000_000
    A = dsl.placeholder((4,), "float32", name="A")
    B = dsl.compute((N,), lambda i: A[i % 4] * 2.0, name="B")
    k = dsl.reduce_axis(N, "k")
    C = dsl.compute((), lambda: dsl.sum(B[k], axis=k), name="C")
    f = hlotune.build(hlotune.Schedule(C))
    assert "hl_alloc(300000000ULL" in f.source and "abort" not in f.source.split("hl_alloc")[1]
    limit_memory(256 << 20)
    for _ in range(2):
        try:
            f(np.ones(4, np.float32))
            print("no error")
        except MemoryError as e:
            print("MemoryError", e)
    """)
    assert out.count("MemoryError kernel") == 2, out


def test_a_while_loop_whose_state_cannot_be_allocated_is_a_memory_error():
    """The compiled while driver checks its state buffers and its condition/body statuses."""
    out = _in_subprocess("""
    import numpy as np, hlotune
    text = '''HloModule m
    cond {
      s = f32[50000000] parameter(0)
      ROOT c = pred[] constant(false)
    }
    body {
      s = f32[50000000] parameter(0)
      ROOT n = f32[50000000] negate(s)
    }
    ENTRY e {
      p = f32[50000000] parameter(0)
      ROOT w = f32[50000000] while(p), condition=cond, body=body
    }'''
    c = hlotune.compile(hlotune.load_hlo(text))
    assert any("hl_while" in k.source for k in c.kernels)
    x = np.ones(50_000_000, np.float32)
    assert (c(x) == 1).all()
    limit_memory(300 << 20)      # the output (200 MB) fits; the two state copies do not
    try:
        c(x)
        print("no error")
    except MemoryError as e:
        print("MemoryError", e)
    """)
    assert "MemoryError kernel" in out, out


def test_scratch_beyond_physical_memory_is_refused_before_compiling():
    n = memory_bytes() // 4 + 1
    A = dsl.placeholder((4,), "float32", name="A")
    B = dsl.compute((n,), lambda i: A[i % 4] * 2.0, name="B")
    k = dsl.reduce_axis(n, "k")
    C = dsl.compute((), lambda: dsl.sum(B[k], axis=k), name="C")
    t0 = time.monotonic()
    with pytest.raises(MemoryError, match="GiB of scratch"):
        hlotune.build(hlotune.Schedule(C))
    assert time.monotonic() - t0 < 5


# ----------------------------------------------------------------------------- splat constants

_SPLAT = """func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {{
  %dead = stablehlo.constant dense<1.5> : tensor<268435456xf32>
  %c = stablehlo.constant {value} : tensor<4xf32>
  %0 = stablehlo.add %arg0, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}}
"""


@pytest.mark.parametrize("value,want", [("dense<2.0>", 2.0), ('dense<"0x00004040">', 3.0)])
def test_splat_constants_are_a_scalar_and_a_broadcast(value, want):
    """A dead 1 GiB splat costs nothing; a live splat is a broadcast scalar."""
    tracemalloc.start()
    m = hlotune.load_hlo(_SPLAT.format(value=value))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 << 20, peak
    ops = {i.opcode for i in m.hlo.entry_computation.instructions}
    assert "broadcast" in ops
    assert all(i.literal is None or i.literal.size == 1 for i in m.hlo.entry_computation.instructions)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(hlotune.compile(m)(x), x + want)


# ----------------------------------------------------------------------------- zero-sized arrays

def _module(body: str, params) -> str:
    ps = "\n".join(f"  p{k} = {s} parameter({k})" for k, s in enumerate(params))
    return (f"HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n"
            f"ENTRY e {{\n{ps}\n{body}\n}}\n")


ZERO = {
    "dot M=0": ("ROOT d = f32[0,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                ["f32[0,8]", "f32[8,4]"], lambda a, b: a @ b),
    "dot K=0": ("ROOT d = f32[3,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                ["f32[3,0]", "f32[0,4]"], lambda a, b: a @ b),
    "dot N=0, large K": ("ROOT d = f32[64,0] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                         ["f32[64,512]", "f32[512,0]"], lambda a, b: a @ b),
    "elementwise": ("ROOT a = f32[5,0,3] exponential(p0)", ["f32[5,0,3]"], np.exp),
    "reduce over empty": ("z = f32[] constant(0)\n  ROOT r = f32[5] reduce(p0, z), dimensions={1}, to_apply=add",
                          ["f32[5,0]"], lambda a: a.sum(1)),
    "convolution of padding only": (("ROOT c = f32[1,2,2] convolution(p0, p1), window={size=3 pad=2_2}, "
                                    "dim_labels=b0f_0io->b0f"), ["f32[1,0,2]", "f32[3,2,2]"],
                                    lambda a, w: np.zeros((1, 2, 2), np.float32)),
    "concatenate with empty": ("ROOT c = f32[4] concatenate(p0, p1), dimensions={0}", ["f32[4]", "f32[0]"],
                               lambda a, b: np.concatenate([a, b])),
    "pad of empty": ("z = f32[] constant(1)\n  ROOT p = f32[3] pad(p0, z), padding=1_2", ["f32[0]"],
                     lambda a: np.ones(3, np.float32)),
    "reshape to empty": ("ROOT t = f32[3,0,2] reshape(p0)", ["f32[0,3]"], lambda a: a.reshape(3, 0, 2)),
    "reduce-window of padding": (("z = f32[] constant(0)\n  ROOT r = f32[1] reduce-window(p0, z), "
                                 "window={size=2 pad=1_1}, to_apply=add"), ["f32[0]"],
                                 lambda a: np.zeros(1, np.float32)),
}


@pytest.mark.parametrize("case", sorted(ZERO))
def test_zero_sized_arrays_run(case):
    body, params, fn = ZERO[case]
    m = hlotune.load_hlo(_module("  " + body, params))
    ins = m.random_inputs(seed=3)
    got = hlotune.compile(m)(*ins)
    assert_close(got, fn(*ins).astype(np.float32), err_msg=case)
    assert_close(got, evaluate(list(m.outputs), ins, m.params)[0], err_msg=case)
