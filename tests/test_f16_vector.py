"""float16 in vectorized loops on CPUs without AVX512-FP16 (runtime/codegen/c.py): gcc keeps
every _Float16 load, store and conversion scalar there, so vectorized loops move float16 as
bits and convert with F16C's instructions through OpenMP SIMD functions in loops without
branches, in integer arithmetic in loops with a select that must branch or a guard, and
everywhere without F16C (``-mno-f16c`` here). Both must equal the hardware's (and numpy's): every float16
bit pattern widened, float32 values of every class narrowed with round-to-nearest-even, and
16-bit arithmetic rounding after each op. Also: a tail guard of outer loops leaves the
vectorized loop (schedules/lower.py), and 16-bit dots accumulating in f32 keep fused updates
in kernels compiled uncontracted (codegen/microkernel.py)."""

from __future__ import annotations

import dataclasses
import platform

import numpy as np
import pytest
from hlotune.runtime.cpu import DEFAULT_FLAGS, CCompiler
from hlotune.runtime.targets import get_target
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

CPU = get_target("cpu")
X86 = platform.machine() in ("x86_64", "AMD64")
#: the compilers the exactness tests run with: the default (F16C's conversions where the host
#: has them) and, on x86, one without F16C (every conversion in integer arithmetic)
TARGETS = [CPU] + ([dataclasses.replace(CPU, compiler=CCompiler(flags=(*DEFAULT_FLAGS, "-mno-f16c")))] if X86 else [])
#: the vectorizable helpers: unconditional conversions (CV), and those in select arms
UNCONDITIONAL = ("HL_CVLD_F16(", "HL_CVST_F16(", "hl_cvround_f16(")
ARMED = ("HL_VLD_F16(", "HL_VST_F16(", "hl_vround_f16(")


def _build(fn, n, src_dtype, target=CPU):
    A = dsl.placeholder((n,), src_dtype, name="A")
    B = dsl.compute((n,), lambda i: fn(A[i]), name="B")
    s = hlotune.Schedule(B)
    s.vectorize(B.axis[0])
    return hlotune.build(s, target=target)


def _body(src: str) -> str:
    return src[src.index(" kernel("):]


def _vector_path(src: str, helpers=UNCONDITIONAL) -> bool:
    """Whether the kernel's body converts float16 with the vectorizable ``helpers`` (they are the
    compiler's own conversions where it targets AVX512-FP16)."""
    return any(h in _body(src) for h in helpers)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    bits = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))


@pytest.mark.parametrize("target", TARGETS, ids=["default", "no-f16c"][:len(TARGETS)])
def test_every_float16_widens_exactly(target):
    f = _build(lambda a: dsl.cast(a, "float32"), 1 << 16, "float16", target)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    _same(f(x), x.astype(np.float32))
    assert _vector_path(f.source)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-05,
                  6.1035e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-10, 1.0, 1.0004883, 1.0014648,
                  2049.0, 2051.0, 3.4028235e38, 1.4e-45], np.float32)


def _narrowed_inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([EDGES, -EDGES, bits.view(np.float32), rng.uniform(-7e4, 7e4, 4096).astype(np.float32),
                           (rng.uniform(-1, 1, 4096) * 2.0 ** -14).astype(np.float32)])


@pytest.mark.parametrize("target", TARGETS, ids=["default", "no-f16c"][:len(TARGETS)])
def test_float32_narrows_to_nearest_even(target):
    x = _narrowed_inputs()
    f = _build(lambda a: dsl.cast(a, "float16"), x.size, "float32", target)
    assert _vector_path(f.source)
    with np.errstate(over="ignore"):
        _same(f(x), x.astype(np.float16))


@pytest.mark.parametrize("target", TARGETS, ids=["default", "no-f16c"][:len(TARGETS)])
def test_conversions_in_select_arms(target):
    """Widening and narrowing inside a select's arms that guard an out-of-range index (padding):
    the select must branch, so the loop converts in integer arithmetic, exact too."""
    x = _narrowed_inputs()[: 1 << 16]
    n, pad = x.size, 5
    h = np.arange(n, dtype=np.uint32).astype(np.uint16).view(np.float16)
    A = dsl.placeholder((n,), "float32", name="A")
    H = dsl.placeholder((n,), "float16", name="H")
    B = dsl.compute((n + pad,), lambda i: dsl.select(i >= pad, dsl.cast(A[i - pad], "float16"), dsl.const(0.5, "float16")),
                    name="B")
    C = dsl.compute((n,), lambda i: dsl.select(i < n - pad, -H[i + pad], dsl.const(2.0, "float16")) * 2.0, name="C")
    fs = []
    for T in (B, C):
        s = hlotune.Schedule(T)
        s.vectorize(T.axis[0])
        fs.append(hlotune.build(s, target=target))
        assert _vector_path(fs[-1].source, ARMED)
    with np.errstate(over="ignore", invalid="ignore"):
        _same(fs[0](x), np.concatenate([np.full(pad, 0.5, np.float16), x.astype(np.float16)]))
        want = np.concatenate([-h[pad:], np.full(pad, 2.0, np.float16)]).astype(np.float32) * 2
        _same(fs[1](h), want.astype(np.float16))


def test_selects_run_branch_free_when_their_arms_are_in_bounds():
    """A causal mask around a float16 round, as attention writes it: the arm's load is in range
    over the loops, so the select is bit masks and the round an unconditional (SIMD) call."""
    n = 64
    A = dsl.placeholder((n, n), "float32", name="A")
    B = dsl.compute((n, n), lambda i, j: dsl.select(i >= j, dsl.cast(A[i, j], "float16") * 0.125,
                                                    dsl.cast(-1e4, "float16")), name="B")
    s = hlotune.Schedule(B)
    s.vectorize(B.axis[1])
    f = hlotune.build(s, target="cpu")
    assert not _vector_path(f.source, ARMED) and _vector_path(f.source) and "hl_sel_f32(" in _body(f.source)
    x = np.random.default_rng(3).standard_normal((n, n)).astype(np.float32) * 100
    i, j = np.indices((n, n))
    want = np.where(i >= j, x.astype(np.float16) * np.float16(0.125), np.float16(-1e4))
    _same(f(x), want)


@pytest.mark.parametrize("target", TARGETS, ids=["default", "no-f16c"][:len(TARGETS)])
@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(width=16), min_size=1, max_size=70))
def test_16bit_arithmetic_rounds_after_each_op(target, vals):
    """a * a + a in float16, vectorized: each op rounded to float16 as numpy does."""
    x = np.array(vals, np.float16)
    f = _build(lambda a: a * a + a, x.size, "float16", target)
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


def _xla_maximum(x, y):
    """XLA's maximum: NaN-propagating, and +0 above -0 (numpy's returns its first zero)."""
    return np.where((x == 0) & (y == 0), x + y, np.maximum(x, y))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["add", "subtract", "multiply", "divide", "maximum", "negate", "select", "pad",
                                 "mask", "convert"]), min_size=1, max_size=7),
       st.integers(0, 2 ** 31 - 1))
def test_float16_programs_match_numpy_bit_for_bit(ops, seed):
    """Random float16 elementwise programs, fused into one vectorized loop nest: selects on
    values, causal masks (branch-free, so SIMD conversions) and shifts by padding (guarded
    loads, so integer conversions), every op rounded to float16 as numpy rounds it (and
    signed zeros as XLA orders them)."""
    shape, hlo_shape = (6, 40), "[6,40]"
    lines = ["  a = f16[6,40] parameter(0)", "  b = f16[6,40] parameter(1)", "  zc = f16[] constant(0)",
             "  z = f16[6,40] broadcast(zc), dimensions={}",
             "  io = s32[6,40] iota(), iota_dimension=0", "  jo = s32[6,40] iota(), iota_dimension=1"]
    rng = np.random.default_rng(seed)
    special = np.array([65504, -65504, 6e-8, -6e-5, 0.0, -0.0, 1e-3, 2049], np.float16)
    xa, xb = ((rng.normal(0, 4, shape) * rng.choice([1, 1, 1, 1e-4, 300], shape)).astype(np.float16)
              for _ in range(2))
    xa.flat[rng.integers(0, xa.size, 8)] = special
    env, vals = {"a": xa, "b": xb}, ["a", "b"]
    i, j = np.indices(shape)
    for k, op in enumerate(ops):
        p, q, nm = vals[-1], vals[-2], f"v{k}"
        x, y = env[p], env[q]
        if op in ("add", "subtract", "multiply", "divide", "maximum"):
            lines.append(f"  {nm} = f16{hlo_shape} {op}({p}, {q})")
            env[nm] = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                       "maximum": _xla_maximum}[op](x, y)
        elif op == "negate":
            lines.append(f"  {nm} = f16{hlo_shape} negate({p})")
            env[nm] = -x
        elif op == "select":
            lines.append(f"  g{k} = pred{hlo_shape} compare({p}, {q}), direction=LT\n"
                         f"  {nm} = f16{hlo_shape} select(g{k}, {q}, {p})")
            env[nm] = np.where(x < y, y, x)
        elif op == "mask":
            lines.append(f"  g{k} = pred{hlo_shape} compare(io, jo), direction=GE\n"
                         f"  {nm} = f16{hlo_shape} select(g{k}, {p}, {q})")
            env[nm] = np.where(i >= j, x, y)
        elif op == "pad":
            lines.append(f"  w{k} = f16[6,42] pad({p}, zc), padding=0_0x2_0\n"
                         f"  {nm} = f16{hlo_shape} slice(w{k}), slice={{[0:6], [0:40]}}")
            env[nm] = np.concatenate([np.zeros((6, 2), np.float16), x[:, :38]], axis=1)
        else:                               # through float32 and back: exact, then a round
            lines.append(f"  c{k} = f32{hlo_shape} convert({p})\n  d{k} = f32{hlo_shape} multiply(c{k}, c{k})\n"
                         f"  {nm} = f16{hlo_shape} convert(d{k})")
            env[nm] = (x.astype(np.float32) * x.astype(np.float32)).astype(np.float16)
        vals.append(nm)
    lines.append(f"  ROOT r = f16{hlo_shape} add({vals[-1]}, {vals[-2]})")
    with np.errstate(all="ignore"):
        want = env[vals[-1]] + env[vals[-2]]
        m = hlotune.compile(hlotune.load_hlo("HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"), target="cpu")
        _same(m(xa, xb), want)
