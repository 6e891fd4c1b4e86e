"""float64 ``power`` on the GPU backends (``hl_pow_f64``): with an integer exponent the result is
the correctly rounded one, computed exactly with Python's fractions, where the device's own
``pow`` may be ulps off (OpenCL allows 16; StableHLO's interpreter test asks 10000^10 == 1e40);
special cases and other exponents as the device's ``pow``. Runs on an OpenCL device with
cl_khr_fp64 and on the CUDA emulator (runtime/cuda_emu.py: the generated CUDA on the CPU)."""

from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pytest
from hlotune.dsl.tensor import Graph
from hlotune.runtime.backends import backend
from hlotune.runtime.codegen.cuda import CUDARenderer
from hlotune.runtime.cuda_emu import run_emulated
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.lower import lower
from hypothesis import given, settings
from hypothesis import strategies as st
from test_opencl import TARGET, WHY

import hlotune

N = 64
MODULE = f"""HloModule m
ENTRY e {{
  a = f64[{N}] parameter(0)
  b = f64[{N}] parameter(1)
  ROOT r = f64[{N}] power(a, b)
}}
"""


def _exact(a: float, n: int) -> float | None:
    """a^n correctly rounded to float64; None where it is not a finite normal number."""
    try:
        v = float(Fraction(a) ** n)
    except OverflowError:
        return None
    return v if v != 0 and abs(v) >= 1e-290 and math.isfinite(v) else None


def _opencl(a, b):
    if TARGET is None:
        pytest.skip(WHY)
    if not TARGET.fp64:
        pytest.skip(f"{TARGET} has no cl_khr_fp64")
    return np.asarray(hlotune.compile(hlotune.load_hlo(MODULE), target=TARGET)(a, b))


def _cuda_emulated(a, b):
    if shutil.which("g++") is None:
        pytest.skip("g++ (C++20) runs the emulated CUDA kernels")
    m = hlotune.load_hlo(MODULE)
    g = Graph(m.outputs, m.params)
    fn = lower(default_schedule(g, hw=backend("cuda").hardware()), "pow64")
    return np.asarray(run_emulated(fn, CUDARenderer().program(fn), a, b)[0])


RUNNERS = {"opencl": _opencl, "cuda_emulated": _cuda_emulated}

#: StableHLO's interpreter test (power.mlir, power_op_test_f64) and special cases
CASES = [(-2.0, 2.0, 4.0), (-0.0, 2.0, 0.0), (5.0, 2.0, 25.0), (3.0, -1.0, 0.33333333333333331),
         (10000.0, 10.0, 1e40), (10.0, -5.0, 1e-5), (0.1, 3.0, float(Fraction(0.1) ** 3)), (-3.0, 3.0, -27.0),
         (2.0, 0.5, math.sqrt(2.0)), (7.0, 0.0, 1.0), (np.nan, 0.0, 1.0), (1.0, np.nan, 1.0),
         (np.inf, -1.0, 0.0), (-np.inf, 3.0, -np.inf), (10.0, 400.0, np.inf), (10.0, -400.0, 0.0),
         (2.0, -1074.0, 5e-324), (1e-20, -15.0, float(Fraction(1e-20) ** -15)), (1e-20, -16.0, np.inf),
         (-0.0, -3.0, -np.inf), (0.0, -2.0, np.inf),
         # the power itself below the normal range, its reciprocal normal (found by CI's hypothesis)
         (1.430511474609375e-06, -50.0, float(Fraction(1.430511474609375e-06) ** -50)),
         (3e-150, -2.0, float(Fraction(3e-150) ** -2)), (-7e-100, -3.0, float(Fraction(-7e-100) ** -3)),
         (1.000001, 2.0 ** 31, np.inf), (0.999999, 2.0 ** 31, 0.0),
         # reciprocals just above a tie between two doubles
         (1.9999999999999998, -1.0, 0.5000000000000001),
         (1.9999999999999998, -3.0, float(Fraction(1.9999999999999998) ** -3))]


@pytest.mark.parametrize("run", list(RUNNERS))
def test_cases_match_correctly_rounded_results(run):
    a = np.ones(N)
    b = np.ones(N)
    a[:len(CASES)] = [c[0] for c in CASES]
    b[:len(CASES)] = [c[1] for c in CASES]
    got = RUNNERS[run](a, b)
    want = np.array([c[2] for c in CASES])
    np.testing.assert_array_equal(got[:len(CASES)], want)
    assert got[len(CASES):].tolist() == [1.0] * (N - len(CASES))


@pytest.mark.parametrize("run", list(RUNNERS))
@settings(max_examples=50, deadline=None)
@given(mant=st.lists(st.floats(0.5, 2.0, allow_nan=False), min_size=N, max_size=N),
       scale=st.lists(st.integers(-30, 30), min_size=N, max_size=N),
       signs=st.lists(st.booleans(), min_size=N, max_size=N),
       ns=st.lists(st.integers(-60, 60), min_size=N, max_size=N))
def test_integer_exponents_are_correctly_rounded(run, mant, scale, signs, ns):
    a = np.array([(-m if s else m) * 2.0 ** e for m, e, s in zip(mant, scale, signs)])
    b = np.array(ns, dtype=np.float64)
    got = RUNNERS[run](a, b)
    for x, n, g in zip(a.tolist(), ns, got.tolist()):
        want = _exact(x, n)
        if want is not None:
            assert g == want, f"{x!r} ** {n}: got {g!r}, correctly rounded {want!r}"
