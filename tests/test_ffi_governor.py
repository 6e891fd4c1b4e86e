"""The thread governor of XLA FFI calls (runtime/governor_cc.py): the C++ policy makes the same
decisions as runtime/threads.py's Governor on the same timings (random quiet, busy and noisy
spells), and a ``jax_op`` plan runs under it."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hlotune.runtime import threads as T
from hlotune.runtime.ffi import Plan
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(scope="module")
def shim():
    from hlotune.jaxop import ffi_shim
    lib = ffi_shim()
    lib.hlotune_gov_new.restype = ctypes.c_void_p
    lib.hlotune_gov_new.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.hlotune_gov_begin.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    lib.hlotune_gov_end.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_double]
    lib.hlotune_gov_current.argtypes = [ctypes.c_void_p]
    lib.hlotune_gov_free.argtypes = [ctypes.c_void_p]
    return lib


def _drive_both(shim, most: int, seconds, calls: int):
    """Run ``calls`` calls through a Python and a C++ governor of ``most`` threads, each call of
    ``n`` threads taking ``seconds(i, n)`` on a synthetic clock; both sides' (count, timed) per
    call and their final counts."""
    py, cc = T.Governor(most), shim.hlotune_gov_new(most, 1)
    timed = ctypes.c_int()
    sides = []
    try:
        for begin, end, current in ((py.begin, py.end, lambda: py.current),
                                    (lambda: (shim.hlotune_gov_begin(cc, ctypes.byref(timed)), bool(timed.value)),
                                     lambda n, a, b: shim.hlotune_gov_end(cc, n, a, b),
                                     lambda: shim.hlotune_gov_current(cc))):
            clock, used = 100.0, []
            for i in range(calls):
                n, t = begin()
                took = seconds(i, n)
                if t:
                    end(n, clock, clock + took)
                clock += took
                used.append((n, t))
            sides.append((used, current()))
    finally:
        shim.hlotune_gov_free(cc)
    return sides


#: the thread counts governors of 2, 4, 6 and 8 threads try
COUNTS = (8, 6, 4, 3, 2, 1)


@settings(max_examples=60, deadline=None)
@given(most=st.sampled_from([2, 4, 8, 6]), scale=st.sampled_from([1e-5, 1e-3, 5e-2]),
       spells=st.lists(st.tuples(st.lists(st.floats(0.5, 3.0), min_size=6, max_size=6), st.integers(1, 400)),
                       min_size=1, max_size=6),
       noise=st.floats(0.0, 0.5), seed=st.integers(0, 2**16))
def test_the_cpp_governor_decides_as_the_python_one(shim, most, scale, spells, noise, seed):
    """Spells of calls whose time per thread count is drawn (some counts faster, some slower,
    ratios near every threshold), with jitter on every call."""
    rng = np.random.default_rng(seed)
    ends = np.cumsum([n for _, n in spells])
    jitter = 1.0 + noise * rng.random(int(ends[-1]) + 1)

    def seconds(i, n):
        times = spells[min(int(np.searchsorted(ends, i, side="right")), len(spells) - 1)][0]
        return scale * times[COUNTS.index(n)] * float(jitter[i])
    (py_used, py_now), (cc_used, cc_now) = _drive_both(shim, most, seconds, int(ends[-1]))
    assert cc_used == py_used
    assert cc_now == py_now


def test_a_busy_spell_moves_both_to_fewer_threads(shim):
    """Not only equal, but doing the job: busy calls of 2 threads lose to 1, quiet ones win."""
    def seconds(i, n):
        return {2: 1.0, 1: 1.9}[n] if i < 300 or i >= 700 else {2: 2.6, 1: 2.0}[n]
    (used, now), (cc_used, cc_now) = _drive_both(shim, 2, lambda i, n: 1e-3 * seconds(i, n), 700)
    assert used == cc_used and now == cc_now == 1
    assert [n for n, _ in used[-50:]].count(1) >= 40


def test_jax_op_plans_are_governed(monkeypatch):
    if T._omp() is None:
        pytest.skip("no OpenMP runtime to set a thread limit with")
    import hlotune

    def f(a, b):
        return jnp.tanh(a @ b)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 96), np.float32), rng.standard_normal((96, 80), np.float32)
    op = hlotune.jax_op(f)
    run = jax.jit(lambda a, b: op(a, b) * 2.0)
    want = np.tanh(a.astype(np.float64) @ b) * 2.0
    for _ in range(50):
        np.testing.assert_allclose(np.asarray(run(a, b)), want, rtol=2e-4, atol=2e-4)
    (entry,) = op._cache.values()
    plan = Plan.of(entry.compiled.graph)
    assert plan.threads == entry.compiled.graph.governor.counts[0]
    assert plan.governed == (plan.threads > 1)
    monkeypatch.setenv("HLOTUNE_ADAPTIVE_THREADS", "0")
    assert not Plan.of(hlotune.compile(hlotune.load_hlo(entry.lowering.text)).graph).governed
