"""float16 in vectorized loops on CPUs without AVX512-FP16 (runtime/codegen/c.py): gcc keeps
every _Float16 load, store and conversion scalar there, so vectorized loops move float16 as
bits and convert in integer arithmetic. Those conversions must equal the hardware's (and
numpy's): every float16 bit pattern widened, float32 values of every class narrowed with
round-to-nearest-even, and 16-bit arithmetic rounding after each op. Also: a tail guard of
outer loops leaves the vectorized loop (schedules/lower.py), and 16-bit dots accumulating in
f32 keep fused updates in kernels compiled uncontracted (codegen/microkernel.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl


def _build(fn, n, src_dtype):
    A = dsl.placeholder((n,), src_dtype, name="A")
    B = dsl.compute((n,), lambda i: fn(A[i]), name="B")
    s = hlotune.Schedule(B)
    s.vectorize(B.axis[0])
    return hlotune.build(s, target="cpu")


def _vector_path(src: str) -> bool:
    """Whether the kernel's body converts float16 with the vectorizable helpers (they are the
    compiler's own conversions where it targets AVX512-FP16)."""
    body = src[src.index(" kernel("):]
    return any(h in body for h in ("HL_VLD_F16(", "HL_VST_F16(", "hl_vround_f16("))


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    bits = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))


def test_every_float16_widens_exactly():
    f = _build(lambda a: dsl.cast(a, "float32"), 1 << 16, "float16")
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    _same(f(x), x.astype(np.float32))
    assert _vector_path(f.source)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-05,
                  6.1035e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-10, 1.0, 1.0004883, 1.0014648,
                  2049.0, 2051.0, 3.4028235e38, 1.4e-45], np.float32)


def test_float32_narrows_to_nearest_even():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([EDGES, -EDGES, bits.view(np.float32),
                        rng.uniform(-7e4, 7e4, 4096).astype(np.float32),
                        (rng.uniform(-1, 1, 4096) * 2.0 ** -14).astype(np.float32)])
    f = _build(lambda a: dsl.cast(a, "float16"), x.size, "float32")
    assert _vector_path(f.source)
    with np.errstate(over="ignore"):
        _same(f(x), x.astype(np.float16))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(width=16), min_size=1, max_size=70))
def test_16bit_arithmetic_rounds_after_each_op(vals):
    """a * a + a in float16, vectorized: each op rounded to float16 as numpy does."""
    x = np.array(vals, np.float16)
    f = _build(lambda a: a * a + a, x.size, "float16")
    assert _vector_path(f.source)
    x32 = x.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = ((x32 * x32).astype(np.float16).astype(np.float32) + x32).astype(np.float16)
    _same(f(x), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_dots_accumulate_in_f32_with_fused_updates(dtype):
    """A dot of 16-bit operands accumulated in float32 (JAX's preferred_element_type): the
    register tile's updates are fused multiply-adds (the f32 products of 16-bit values are
    exact) although the kernel rounds 16-bit products elsewhere and is compiled uncontracted."""
    m, k, n = 64, 96, 64
    A = dsl.placeholder((m, k), dtype, name="A")
    W = dsl.placeholder((k, n), dtype, name="W")
    r = dsl.reduce_axis(k, name="r")
    C = dsl.compute((m, n), lambda i, j: dsl.sum(dsl.cast(A[i, r], "float32") * dsl.cast(W[r, j], "float32"),
                                                 axis=r), name="C")
    D = dsl.compute((m, n), lambda i, j: dsl.cast(C[i, j], dtype) * dsl.cast(C[i, j], dtype), name="D")  # 16-bit
    from hlotune.schedules.fusion import default_schedule
    f = hlotune.build(default_schedule([D]), target="cpu")
    if "hl_acc0 = hl_vld" not in f.source:
        pytest.skip("no register tile on this machine's vector width")
    assert "HL_NO_CONTRACT int" in f.source and "= hl_vfma_" in f.source
    rng = np.random.default_rng(1)
    a, w = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
    a, w = (v.astype(f.inputs[0].dtype.np) for v in (a, w))
    c = (a.astype(np.float64) @ w.astype(np.float64)).astype(np.float32).astype(a.dtype).astype(np.float32)
    want = (c * c).astype(a.dtype).astype(np.float32)
    got = np.asarray(f(a, w)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-2 * np.abs(want).max())


def test_tail_guards_of_outer_loops_leave_the_vector_loop():
    """Rows in blocks of 6, the blocks split again (2 x 11 x 6 = 132 > 130 rows), and columns
    in between: the row guard, which does not depend on the vectorized loop, is tested before
    that loop, not in each of its iterations (gcc vectorizes no loop with a branch around a call
    such as tanh), and rows past the end are still never touched."""
    A = dsl.placeholder((130, 64), "float32", name="A")
    B = dsl.compute((130, 64), lambda i, j: dsl.tanh(A[i, j]) * 2.0, name="B")
    s = hlotune.Schedule(B)
    io, ii = s.split(B.axis[0], 6)
    ioo, ioi = s.split(io, 11)
    jo, ji = s.split(B.axis[1], 16)
    s.reorder(ioo, jo, ioi, ii, ji)
    s.vectorize(ji)
    f = hlotune.build(s, target="cpu")
    body = f.source[f.source.index(" kernel("):]
    simd = body[body.index("#pragma omp simd"):]
    loop = simd[:simd.index("}")]
    assert "if (" not in loop and "if (" in body[:body.index("#pragma omp simd")]
    x = np.random.default_rng(0).standard_normal((130, 64)).astype(np.float32)
    np.testing.assert_allclose(f(x), np.tanh(x) * 2, rtol=1e-6, atol=1e-6)
