"""Tests of schedule primitives: each one built for the CPU and compared with the reference
evaluator, the loop nests they lower to, JSON replay and the ScheduleError rules."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from _checks import (
    MATMUL_F32,
    argmax_reducer,
    as_tuple,
    check_schedule,
    conv1d_chain,
    exp_chain,
    matmul,
    random_inputs,
    row_reduce,
)
from hlotune.dsl.reference import evaluate

import hlotune
from hlotune import ScheduleError, dsl

_LOOP = re.compile(r"^(\s*)for (\S+) in range\((.*)\):(?:  # (\S+))?$")
_ALLOC = re.compile(r"^\s*(\S+) = alloc\((\w+)\[(.*)\], (\w+)\)$")


def loops(s) -> list[tuple[int, str, str, str]]:
    """(depth, var, extent text, kind) of every loop of the lowered nest, in text order."""
    out = []
    for line in str(s.lower()).splitlines():
        m = _LOOP.match(line)
        if m:
            out.append((len(m.group(1)) // 2, m.group(2), m.group(3), m.group(4) or "serial"))
    return out


def allocs(s) -> dict[str, tuple[str, list[int], str]]:
    out = {}
    for line in str(s.lower()).splitlines():
        m = _ALLOC.match(line)
        if m:
            shape = [int(x) for x in m.group(3).split(",") if x.strip()]
            out[m.group(1)] = (m.group(2), shape, m.group(4))
    return out


def loop_names(s) -> list[str]:
    return [v for _, v, _, _ in loops(s)]


def elementwise(n=64):
    A = dsl.placeholder((n,), "float32", name="A")
    B = dsl.placeholder((n,), "float32", name="B")
    return dsl.compute((n,), lambda i: A[i] * B[i] + 1.0, name="C")


def elementwise2d(m=20, n=30):
    A = dsl.placeholder((m, n), "float32", name="A")
    return dsl.compute((m, n), lambda i, j: A[i, j] * 2.0 - 1.0, name="C")


# ----------------------------------------------------------------------------- acceptance

def test_acceptance_matmul_256x128x64():
    """The README's (product brief's) acceptance example, verbatim, then more checks."""
    np.random.seed(0)
    # --- verbatim
    A = dsl.placeholder((256, 128), "float32", name="A"); B = dsl.placeholder((128, 64), "float32", name="B")
    k = dsl.reduce_axis(128, name="k")
    C = dsl.compute((256, 64), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = hlotune.Schedule(C)
    io, ii = s.split(C.axis[0], 32); jo, ji = s.split(C.axis[1], 16)
    s.reorder(io, jo, k, ii, ji); s.vectorize(ji); s.parallel(io)
    print(s.lower())                      # the loop nest as pseudo-code
    f = hlotune.build(s, target="cpu")    # f.source is the generated C; f.time(a, b) measures it
    a = np.random.rand(256, 128).astype("float32"); b = np.random.rand(128, 64).astype("float32")
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5, atol=1e-5)
    # --- end of the verbatim example

    c = f(a, b)
    assert c.shape == (256, 64) and c.dtype == np.float32
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, evaluate(C, [a, b])[0], rtol=1e-5, atol=1e-5)
    rng = np.random.default_rng(0)     # signed inputs: cancellation, the stated matmul tolerance
    a2 = rng.standard_normal((256, 128)).astype(np.float32)
    b2 = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(f(a2, b2), a2.astype(np.float64) @ b2, rtol=1e-4, atol=1e-4)

    nest = [(v, e, kind) for _, v, e, kind in loops(s)]
    # init nest (io, jo, ii, ji) then the update nest (k, ii, ji) inside jo
    assert nest[0] == ("i.outer", "8", "parallel") and nest[1] == ("j.outer", "4", "serial")
    assert ("k", "128", "serial") in nest
    assert nest[-1] == ("j.inner", "16", "vectorize")
    assert [v for v, _, _ in nest[-3:]] == ["k", "i.inner", "j.inner"]
    assert "#pragma omp parallel for" in f.source and "#pragma omp simd" in f.source
    t = f.time(a, b)
    assert len(t.times) >= 10 and t.median > 0


# ----------------------------------------------------------------------------- split

@pytest.mark.parametrize("factor", [1, 2, 7, 16, 63, 64, 65, 100])
def test_split_elementwise(factor):
    C = elementwise(64)
    s = hlotune.Schedule(C)
    o, i = s.split(C.axis[0], factor)
    assert (o.name, i.name) == ("i.outer", "i.inner")
    f = min(factor, 64)
    assert (o.extent, i.extent) == (-(-64 // f), f)
    nest = loops(s)
    assert next((v, e) for _, v, e, _ in nest) == ("i.outer", str(-(-64 // f)))
    if 64 % f:
        # a guarded tail: the inner loop is bounded by what is left
        assert "min(" in nest[1][2]
    else:
        assert nest[1][2] == str(f)
    check_schedule(s)


@pytest.mark.parametrize("factor", [7, 100])
def test_split_reduce_axis_non_divisor(factor):
    R = row_reduce("sum", 24, 64)
    s = hlotune.Schedule(R)
    ko, ki = s.split(R.op.reduce_axis[0], factor)
    assert ko.kind == ki.kind == "reduce"
    check_schedule(s)


def test_split_of_split_parts():
    C = elementwise(64)
    s = hlotune.Schedule(C)
    o, i = s.split(C.axis[0], 7)
    oo, oi = s.split(o, 3)
    io_, ii = s.split(i, 3)
    assert loop_names(s) == ["i.outer.outer", "i.outer.inner", "i.inner.outer", "i.inner.inner"]
    s.reorder(ii, oi, io_, oo)
    assert loop_names(s) == ["i.inner.inner", "i.outer.inner", "i.inner.outer", "i.outer.outer"]
    s.unroll(oo)
    check_schedule(s)


# ----------------------------------------------------------------------------- tile / reorder / fuse

def test_tile_non_divisors():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    xo, _yo, _xi, yi = s.tile(C.axis[0], C.axis[1], 7, 8)
    assert loop_names(s) == ["i.outer", "j.outer", "i.inner", "j.inner"]
    assert [e for _, _, e, _ in loops(s)][:2] == ["3", "4"]
    s.vectorize(yi)
    s.parallel(xo)
    check_schedule(s)


def test_reorder_elementwise():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    i, j = C.axis
    s.reorder(j, i)
    assert loop_names(s) == ["j", "i"]
    check_schedule(s)


def test_reorder_subset_keeps_other_positions():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    io, _ii = s.split(C.axis[0], 4)
    _jo, ji = s.split(C.axis[1], 6)
    s.reorder(ji, io)      # the positions of io and ji swap; ii and jo stay
    assert loop_names(s) == ["j.inner", "i.inner", "j.outer", "i.outer"]
    check_schedule(s)


def test_fuse_then_split_vectorize_parallel():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    fused = s.fuse(*C.axis)
    assert fused.extent == 600 and fused.name == "i.j.fused"
    o, i = s.split(fused, 16)
    s.vectorize(i)
    s.parallel(o)
    assert loops(s)[0][1:] == ("i.j.fused.outer", "38", "parallel")
    check_schedule(s)


def test_fuse_tiled_outer_loops():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    xo, yo, _xi, _yi = s.tile(C.axis[0], C.axis[1], 7, 8)
    f = s.fuse(xo, yo)
    s.parallel(f)
    assert loop_names(s) == ["i.outer.j.outer.fused", "i.inner", "j.inner"]
    check_schedule(s)


def test_fuse_inner_split_part_then_reorder():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    xo, xi = s.split(C.axis[0], 7)
    f = s.fuse(xi, C.axis[1])
    s.reorder(f, xo)
    check_schedule(s)


# ----------------------------------------------------------------------------- annotations

def test_annotations_reach_nest_and_source():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    io, ii = s.split(C.axis[0], 4)
    s.parallel(io)
    s.unroll(ii)
    s.vectorize(C.axis[1])
    kinds = {v: kind for _, v, _, kind in loops(s)}
    assert kinds == {"i.outer": "parallel", "i.inner": "unroll", "j": "vectorize"}
    f = check_schedule(s)
    assert "#pragma omp parallel for schedule(static) num_threads(hl_team)" in f.source
    assert "#pragma GCC unroll 4" in f.source
    assert "#pragma omp simd" in f.source


# ----------------------------------------------------------------------------- reductions

def _reduce_schedules():
    def default(s, R):
        pass

    def split_both(s, R):
        (k,) = R.op.reduce_axis
        ko, ki = s.split(k, 7)
        io, ii = s.split(R.axis[0], 8)
        s.reorder(io, ko, ii, ki)
        s.parallel(io)
        s.unroll(ki)

    def k_outside_vectorized_rows(s, R):
        (k,) = R.op.reduce_axis
        ko, ki = s.split(k, 5)
        io, ii = s.split(R.axis[0], 8)
        s.reorder(io, ko, ki, ii)
        s.vectorize(ii)

    def parallel_inside_reduction(s, R):
        (k,) = R.op.reduce_axis
        s.reorder(k, R.axis[0])
        s.parallel(R.axis[0])

    def cache_write(s, R):
        RL = s.cache_write(R, "local")
        io, _ii = s.split(R.axis[0], 8)
        s.compute_at(RL, io)
        ko, ki = s.split(RL.op.reduce_axis[0], 4)
        s.reorder(ko, ki, RL.op.axis[0])
        s.vectorize(RL.op.axis[0])
        s.parallel(io)

    return {f.__name__: f for f in (default, split_both, k_outside_vectorized_rows,
                                    parallel_inside_reduction, cache_write)}


_RS = _reduce_schedules()


@pytest.mark.parametrize("sched", list(_RS))
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_row_reduction_schedules(kind, sched):
    # 30 rows (not a multiple of 8): guarded tails in every split schedule
    R = row_reduce(kind, 30, 8 if kind == "prod" else 50)
    s = hlotune.Schedule(R)
    _RS[sched](s, R)
    check_schedule(s, rtol=1e-5 if kind != "sum" else 1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int64", "float16"])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_vectorized_reduce_axis_is_rejected_or_correct(kind, dtype):
    """Vectorizing the innermost reduction loop (a SIMD reduction, any combine order) either raises
    ScheduleError or gives the reference's answer (NaN still propagates through max/min)."""
    R = row_reduce(kind, 6, 8 if kind == "prod" else 37, dtype)
    s = hlotune.Schedule(R)
    _ko, ki = s.split(R.op.reduce_axis[0], 8)
    s.parallel(R.axis[0])
    try:
        s.vectorize(ki)
        hlotune.build(s)
    except ScheduleError as e:
        assert "'k.inner'" in str(e)
        return
    inputs = random_inputs(R, seed=3)
    if dtype.startswith("float"):
        inputs[0][2, 5] = np.nan
    check_schedule(s, inputs=inputs, rtol=1e-4 if dtype == "float32" else None)


def test_vectorized_bool_sum_is_rejected_or_correct():
    R = row_reduce("sum", 5, 37, "bool")
    s = hlotune.Schedule(R)
    _ko, ki = s.split(R.op.reduce_axis[0], 8)
    try:
        s.vectorize(ki)
        hlotune.build(s)
    except ScheduleError:
        return
    a = np.zeros((5, 37), bool)
    a[0, 3] = True
    a[1, :] = True
    a[2, 8:10] = True
    check_schedule(s, inputs=[a])


def test_reduction_init_goes_before_first_reduce_loop():
    R = row_reduce("max", 24, 37)
    s = hlotune.Schedule(R)
    (k,) = R.op.reduce_axis
    io, ii = s.split(R.axis[0], 8)
    s.reorder(io, k, ii)
    text = str(s.lower())
    assert text.index("= -inf") < text.index("for k in range(37)")
    nest = loops(s)
    # ii runs twice: once for the init, once inside k for the update
    assert [v for _, v, _, _ in nest] == ["i.outer", "i.inner", "k", "i.inner"]
    check_schedule(s)


def test_max_reduction_propagates_nan():
    R = row_reduce("max", 4, 9)
    s = hlotune.Schedule(R)
    s.split(R.op.reduce_axis[0], 4)
    a = np.random.default_rng(0).standard_normal((4, 9)).astype(np.float32)
    a[1, 5] = np.nan
    f = check_schedule(s, inputs=[a])
    r = f(a)
    assert np.isnan(r[1]) and not np.isnan(r[[0, 2, 3]]).any()


def test_argmax_tuple_reduction_schedule():
    argmax = argmax_reducer()
    A = dsl.placeholder((37, 50), "float32", name="A")
    k = dsl.reduce_axis(50, name="k")
    idx, val = dsl.compute((37,), lambda i: argmax((k, A[i, k]), axis=k), name="am")
    s = hlotune.Schedule([idx, val])
    ko, ki = s.split(k, 7)
    io, ii = s.split(idx.op.axis[0], 8)
    s.reorder(io, ko, ki, ii)
    s.vectorize(ii)
    s.parallel(io)
    a = np.random.default_rng(5).standard_normal((37, 50)).astype(np.float32)
    a[3, 10] = a[3, 40] = 10.0
    f = check_schedule(s, inputs=[a])
    gi, gv = f(a)
    np.testing.assert_array_equal(gi, np.argmax(a, axis=1))
    np.testing.assert_array_equal(gv, a.max(axis=1))


# ----------------------------------------------------------------------------- matmul

def _mm_schedules():
    def default(s, C):
        pass

    def tile_reorder_vec_par(s, C):
        i, j = C.axis
        (k,) = C.op.reduce_axis
        io, jo, ii, ji = s.tile(i, j, 7, 16)
        ko, ki = s.split(k, 5)
        s.reorder(io, jo, ko, ii, ki, ji)
        s.vectorize(ji)
        s.parallel(io)

    def fused_outer_parallel(s, C):
        i, j = C.axis
        (k,) = C.op.reduce_axis
        io, jo, ii, ji = s.tile(i, j, 16, 8)
        f = s.fuse(io, jo)
        s.reorder(f, k, ii, ji)
        s.parallel(f)
        s.vectorize(ji)
        s.unroll(ii)

    def k_outermost(s, C):
        i, j = C.axis
        (k,) = C.op.reduce_axis
        s.reorder(k, i, j)
        s.vectorize(j)

    def _register_tiles(s, C, rows, staged):
        """C's tiles accumulated in a cache_write buffer, k split by 5; ``staged``: the A rows
        and B panel each k-slice reads packed by cache_read (CPU semantics)."""
        CC = s.cache_write(C, "local")
        caches = [s.cache_read(t, "shared", [CC]) for t in ("A", "B")] if staged else []
        io, jo, _ii, _ji = s.tile(*C.op.axis, rows, 16)
        s.compute_at(CC, jo)
        ci, cj = CC.op.axis
        ko, ki = s.split(CC.op.reduce_axis[0], 5)
        s.reorder(ko, *((ki, ci) if staged else (ci, ki)), cj)
        s.vectorize(cj)
        for t in caches:
            s.compute_at(t, ko)
        if caches:
            s.vectorize(caches[1].op.axis[1])
        s.parallel(io)

    def cache_write_tiles(s, C):
        _register_tiles(s, C, 7, staged=False)

    def cache_read_panels(s, C):
        _register_tiles(s, C, 8, staged=True)

    return {f.__name__: f for f in (default, tile_reorder_vec_par, fused_outer_parallel, k_outermost,
                                    cache_write_tiles, cache_read_panels)}


_MM = _mm_schedules()


@pytest.mark.parametrize("sched", list(_MM))
def test_matmul_schedules(sched):
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    _MM[sched](s, C)
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_cache_write_stage_and_buffer():
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    CC = s.cache_write(C, "local")
    assert CC.name == "C.local" and CC.shape == C.shape
    assert list(s.stages) == ["C.local", "C"]
    assert [v.name for v in CC.op.axis] == ["i", "j"] and CC.op.reduce_axis[0].name == "k"
    _io, jo, _ii, _ji = s.tile(*C.op.axis, 8, 8)
    s.compute_at(CC, jo)
    assert allocs(s)["C.local"] == ("float32", [8, 8], "local")
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_cache_read_stage_buffer_and_region():
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    AS = s.cache_read("A", "shared")
    assert AS.name == "A.shared" and AS.shape == (48, 24) and list(s.stages) == ["A.shared", "C"]
    io, _jo, _ii, _ji = s.tile(*C.op.axis, 8, 8)
    s.compute_at(AS, io)
    # the 8 rows of A that one io iteration reads, all of k; filled before use
    assert allocs(s)["A.shared"] == ("float32", [8, 24], "shared")
    text = str(s.lower())
    assert "barrier()" in text and text.index("A.shared[") < text.index("barrier()")
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_cache_read_of_an_inlined_stage_and_a_tensor_argument():
    B, C, _rk = conv1d_chain(40, 5)
    s = hlotune.Schedule(C)
    s.compute_inline(B)
    BS = s.cache_read(B, "local", [C])          # the copy computes B's definition (inlined)
    o, _i = s.split(C.axis[0], 8)
    s.compute_at(BS, o)
    assert allocs(s)["B.local"] == ("float32", [12], "shared")    # 8 outputs + a 5-tap window
    check_schedule(s)


def test_cache_write_of_elementwise_stage():
    C = elementwise2d(20, 30)
    s = hlotune.Schedule(C)
    CL = s.cache_write(C, "local")
    io, _ii = s.split(C.op.axis[0], 6)
    s.compute_at(CL, io)
    s.vectorize(CL.op.axis[1])
    assert allocs(s)["C.local"][1] == [6, 30]
    check_schedule(s)


# ----------------------------------------------------------------------------- producer / consumer

def microkernels(s, hw=None) -> int:
    """How many register micro-kernels the C renderer emits for ``s`` (on an AVX-512 class
    machine by default)."""
    from hlotune.runtime.codegen.c import CRenderer
    from hlotune.schedules.hardware import Hardware
    hw = hw or Hardware(vector_bytes=64, vector_regs=32, threads=2)
    return CRenderer(hw).function(s.lower()).count("hl_acc0 = hl_vld")


def _hw(bytes_=64, regs=32):
    from hlotune.schedules.hardware import Hardware
    return Hardware(vector_bytes=bytes_, vector_regs=regs, threads=2)


def test_default_packs_a_transposed_view_read_by_a_dot():
    """A dot reading K transposed (an inlined view): the default packs K^T in panels of nr
    columns, contiguous along k, so the register tile's vector loads read rows."""
    from hlotune.schedules.fusion import default_schedule
    A = dsl.placeholder((64, 32), "float32", name="A")
    K = dsl.placeholder((48, 32), "float32", name="K")
    KT = dsl.compute((32, 48), lambda r, j: K[j, r], name="KT")
    k = dsl.reduce_axis(32, name="k")
    C = dsl.compute((64, 48), lambda i, j: dsl.sum(A[i, k] * KT[k, j], axis=k), name="C")
    for hw in (_hw(64, 32), _hw(32, 16)):
        s = default_schedule(C, threads=hw)
        _, kk, nr = allocs(s)["KT.shared"][1]
        assert s.stage("KT").is_inline and kk == 32 and nr % (hw.vector_bytes // 4) == 0
        assert microkernels(s, hw) == 1
        check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_default_dot_reads_strided_operands_through_panels():
    """out[d, s] = sum_k V[k, d] * P[s, k] (attention's second dot): P is strided along s, so
    the default packs it as panels P'[s // nr, k, s % nr]: the tile vectorizes s with
    contiguous loads and broadcasts V, which it reads as it lies (40 columns are at most two
    column tiles: a transposing pack of V would cost more than it saves)."""
    from hlotune.schedules.fusion import default_schedule
    V = dsl.placeholder((48, 32), "float32", name="V")
    P = dsl.placeholder((40, 48), "float32", name="P")
    k = dsl.reduce_axis(48, name="k")
    O = dsl.compute((32, 40), lambda d, t: dsl.sum(V[k, d] * P[t, k], axis=k), name="O")
    s = default_schedule(O, threads=_hw())
    assert allocs(s)["P.shared"][1][1] == 48 and "V.shared" not in allocs(s)
    assert microkernels(s) == 1
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def _default_config(out, hw):
    from hlotune.schedules.fusion import fuse
    from hlotune.schedules.schedule import Schedule
    from hlotune.schedules.templates.families import TEMPLATES
    s = Schedule(out)
    fuse(s, hw)
    return TEMPLATES["dot"].default_config(s.stage_of_op(out.op), hw)


def _matmul(m: int, k: int, n: int, b_rows: bool = False):
    """C[i, j] = sum_r A[i, r] * B[r, j] (``b_rows``: B[j, r], B strided along j)."""
    A = dsl.placeholder((m, k), "float32", name="A")
    B = dsl.placeholder((n, k) if b_rows else (k, n), "float32", name="B")
    r = dsl.reduce_axis(k, name="k")
    return dsl.compute((m, n), lambda i, j: dsl.sum(A[i, r] * (B[j, r] if b_rows else B[r, j]), axis=r), name="C")


@pytest.mark.parametrize("bytes_,regs", [(64, 32), (32, 16)])
def test_default_weight_gradient_packs_its_computed_a_in_whole_vector_rows(bytes_, regs):
    """dW[j, i] = sum_b (dY[b, j] * (H[b, j] > 0)) * X[b, i]: A is computed (the ReLU mask) and
    read along its contiguous j; the default packs it in rows of whole vectors (mr = lanes), so
    that the pack's inner loop is a vector loop, and the answer is right."""
    from hlotune.schedules.fusion import default_schedule
    hw = _hw(bytes_, regs)
    dY = dsl.placeholder((64, 96), "float32", name="dY")
    H = dsl.placeholder((64, 96), "float32", name="H")
    X = dsl.placeholder((64, 40), "float32", name="X")
    G = dsl.compute((64, 96), lambda b, j: dsl.select(H[b, j] > 0.0, dY[b, j], 0.0), name="G")
    k = dsl.reduce_axis(64, name="k")
    W = dsl.compute((96, 40), lambda j, i: dsl.sum(G[k, j] * X[k, i], axis=k), name="W")
    c = _default_config(W, hw)
    assert c["mr"] == bytes_ // 4 and c["pack_a"] == 1 and c["nr"] == bytes_ // 4
    s = default_schedule(W, threads=hw)
    assert "G.shared" in allocs(s) and microkernels(s, hw) >= 1
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_default_narrow_output_takes_whole_vectors_and_streams_a():
    """out[256, 10] = A[256, 512] B[512, 10] (a classifier head): one tile of 10 columns would
    hold 8 + 2 lanes per row; the default takes columns of 8 (the pack pads the second tile),
    reads A as it lies (two column tiles read it: a transposing pack costs more than it saves)
    in rows that divide 256, and keeps the tile in registers."""
    hw = _hw()
    C = _matmul(256, 512, 10)
    c = _default_config(C, hw)
    assert c["nr"] == 8 and c["pack_a"] == 0 and 256 % c["mr"] == 0 and c["pack_b"] == 1
    from hlotune.schedules.fusion import default_schedule
    s = default_schedule(C, threads=hw)
    assert "A.shared" not in allocs(s) and microkernels(s, hw) >= 1
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_default_packs_a_b_it_cannot_load_as_it_lies_even_for_one_tile():
    """out[16, 16] = sum_k A[i, k] * B[j, k] with one 16x16 tile: B is strided along j, so the
    default packs it although no other row tile would reuse the pack."""
    hw = _hw()
    c = _default_config(_matmul(16, 64, 16, b_rows=True), hw)
    assert (c["mr"], c["nr"], c["pack_b"]) == (16, 16, 1)


def test_default_does_not_pack_a_strided_b_that_each_row_reads_alone():
    """sc[h, l] = sum_d q[h, d] * kc[l, h, d] (a decode step's scores over a KV cache): kc is
    strided along l, but each head reads its own part of it once, so packing it would copy it
    for nothing; the default reads it as it lies. A kernel every row reads is still packed."""
    hw = _hw()
    q = dsl.placeholder((4, 32), "float32", name="q")
    kc = dsl.placeholder((256, 4, 32), "float32", name="kc")
    d = dsl.reduce_axis(32, name="d")
    sc = dsl.compute((4, 256), lambda h, l: dsl.sum(q[h, d] * kc[l, h, d], axis=d), name="sc")
    assert _default_config(sc, hw)["pack_b"] == 0
    w = dsl.placeholder((256, 32), "float32", name="w")
    e = dsl.reduce_axis(32, name="e")
    y = dsl.compute((4, 256), lambda h, l: dsl.sum(q[h, e] * w[l, e], axis=e), name="y")
    assert _default_config(y, hw)["pack_b"] == 1


def test_configs_recorded_before_a_knob_existed_still_apply():
    """Tuning logs from an older hlotune lack knobs added since: they take their old meaning.
    A CPU dot config of the template the gemm template replaced is refused by name."""
    from hlotune.dsl.errors import ConfigError
    from hlotune.schedules.templates.families import TEMPLATES
    from hlotune.schedules.templates.gpu import gpu_templates
    C = matmul(48, 40, 24)
    old = {"tile_x": 4, "tile_y": 8, "split_k": 1, "order": "kxy", "cache_write": 1, "unroll_x": 1, "parallel": 0}
    with pytest.raises(ConfigError, match="tile_x"):
        TEMPLATES["dot"].apply(hlotune.Schedule(C), hlotune.Schedule(C).stage(C), old)
    cl_old = {"local_x": 4, "local_y": 8, "tile_x": 2, "tile_y": 2, "split_k": 4, "cache_write": 1, "unroll": 0}
    t = gpu_templates(256)["dot"]
    assert t.complete(cl_old) == {**cl_old, "local_mem": 0, "layout": "block", "vector": 0}
    s = hlotune.Schedule(C)
    t.apply(s, s.stage(C), cl_old)
    assert any(getattr(x, "thread", "") == "local.x" for x in s.steps)


def test_default_materializes_a_16bit_rounding_that_a_dot_rereads():
    """Rounding to bf16 costs a dozen integer ops: a dot re-reading each element 40 times gets
    the rounded operand once, in memory, instead of re-rounding it inside its loops."""
    from hlotune.schedules.fusion import default_schedule
    X = dsl.placeholder((64, 32), "float32", name="X")
    W = dsl.placeholder((32, 40), "bfloat16", name="W")
    Xb = dsl.compute((64, 32), lambda i, r: dsl.cast(X[i, r], "bfloat16"), name="Xb")
    k = dsl.reduce_axis(32, name="k")
    C = dsl.compute((64, 40), lambda i, j: dsl.sum(dsl.cast(Xb[i, k], "float32") * dsl.cast(W[k, j], "float32"),
                                                   axis=k), name="C")
    s = default_schedule(C, threads=2)
    assert s.stage("Xb").is_root
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_cache_read_with_a_layout_stores_the_copy_transposed():
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    BT = s.cache_read("B", "shared", layout=(1, 0))
    assert BT.shape == (40, 24) and allocs(s)["B.shared"] == ("float32", [40, 24], "local")
    assert "B.shared[j, k]" in str(s.lower())
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])
    s2 = hlotune.Schedule.from_json(matmul(48, 40, 24), s.to_json())
    assert str(s2.lower()) == str(s.lower())
    old = [{"step": "CacheRead", "stage": "A", "scope": "shared", "readers": ["C"]}]   # logged before layout
    assert "A.shared" in hlotune.Schedule.from_json(matmul(48, 40, 24), json.dumps(old)).stages
    with pytest.raises(ScheduleError, match="not a permutation"):
        hlotune.Schedule(C).cache_read("A", "shared", layout=(0, 0))


def test_default_packs_an_operand_transposed_so_the_vector_loop_reads_rows():
    """S[h, i, j] = sum_d Q[i, h, d] * K[j, h, d] (attention's first dot, heads in the middle):
    along j, K is strided; it is packed per head as panels K'[j // nr, h, d, j % nr] and the
    register tile reads rows of them."""
    from hlotune.schedules.fusion import default_schedule
    Q = dsl.placeholder((32, 4, 16), "float32", name="Q")
    K = dsl.placeholder((40, 4, 16), "float32", name="K")
    d = dsl.reduce_axis(16, name="d")
    S = dsl.compute((4, 32, 40), lambda h, i, j: dsl.sum(Q[i, h, d] * K[j, h, d], axis=d), name="S")
    s = default_schedule(S, threads=_hw())
    assert allocs(s)["K.shared"][1][1:3] == [1, 16]
    assert microkernels(s) == 1
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_chain_default_materializes_producer():
    _B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    assert "B" in allocs(s)
    check_schedule(s)


def test_chain_compute_inline():
    B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    s.compute_inline(B)
    text = str(s.lower())
    assert "alloc" not in text and "exp(A[i])" in text
    assert len(loops(s)) == 1
    check_schedule(s)


@pytest.mark.parametrize("factor", [7, 8])
def test_chain_compute_at_outer(factor):
    B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    o, _i = s.split(C.axis[0], factor)
    s.compute_at(B, o)
    assert allocs(s)["B"] == ("float32", [factor], "local")
    nest = loops(s)
    # B's loop sits inside C's outer loop, before C's inner loop
    assert nest[0][1] == "i.outer" and nest[2][1] == "i.inner"
    assert nest[1][0] == nest[2][0] == nest[0][0] + 1
    check_schedule(s)


def test_chain_compute_at_inner_point():
    B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    _o, i = s.split(C.axis[0], 7)
    s.compute_at(B, i)
    assert allocs(s)["B"][1] == [1]
    check_schedule(s)


def test_chain_compute_at_with_producer_schedule():
    B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    o, _i = s.split(C.axis[0], 16)
    s.compute_at(B, o)
    _bo, bi = s.split(B.axis[0], 4)
    s.vectorize(bi)
    s.parallel(o)
    check_schedule(s)


@pytest.mark.parametrize("n,factor,region", [(40, 8, 12), (41, 8, 12), (40, 7, 11)])
def test_conv_compute_at_region_is_window(n, factor, region):
    B, C, _rk = conv1d_chain(n, 5)
    s = hlotune.Schedule(C)
    o, _i = s.split(C.axis[0], factor)
    s.compute_at(B, o)
    # factor outputs read factor + r - 1 inputs
    assert allocs(s)["B"][1] == [region]
    check_schedule(s)


def test_conv_compute_at_data_axis_and_reduce_axis():
    B, C, rk = conv1d_chain(40, 5)
    s = hlotune.Schedule(C)
    s.compute_at(B, C.axis[0])
    assert allocs(s)["B"][1] == [5]
    check_schedule(s)

    B, C, rk = conv1d_chain(40, 5)
    s = hlotune.Schedule(C)
    s.compute_at(B, rk)
    assert allocs(s)["B"][1] == [1]
    check_schedule(s)


def test_conv_compute_inline():
    B, C, _rk = conv1d_chain(40, 5)
    s = hlotune.Schedule(C)
    s.compute_inline(B)
    o, _i = s.split(C.axis[0], 8)
    s.parallel(o)
    check_schedule(s)


def test_conv2d_tile_compute_at():
    n, r = 20, 3
    A = dsl.placeholder((n + r - 1, n + r - 1), name="A")
    B = dsl.compute(A.shape, lambda i, j: dsl.tanh(A[i, j]), name="B")
    ry, rx = dsl.reduce_axis(r, name="ry"), dsl.reduce_axis(r, name="rx")
    C = dsl.compute((n, n), lambda i, j: dsl.sum(B[i + ry, j + rx], axis=[ry, rx]), name="C")
    s = hlotune.Schedule(C)
    io, jo, _ii, _ji = s.tile(C.axis[0], C.axis[1], 6, 8)
    s.compute_at(B, jo)
    s.parallel(io)
    assert allocs(s)["B"][1] == [8, 10]
    check_schedule(s)


@pytest.mark.parametrize("pattern", ["stride2", "upsample", "reverse", "transpose"])
def test_compute_at_other_access_patterns(pattern):
    if pattern == "transpose":
        A = dsl.placeholder((12, 10), name="A")
        B = dsl.compute((12, 10), lambda i, j: A[i, j] + 1.0, name="B")
        C = dsl.compute((10, 12), lambda i, j: B[j, i] * 2.0, name="C")
        s = hlotune.Schedule(C)
        _io, jo, _ii, _ji = s.tile(C.axis[0], C.axis[1], 4, 5)
        s.compute_at(B, jo)
        assert allocs(s)["B"][1] == [5, 4]
    else:
        nb, fn = {"stride2": (82, lambda B, i: B[2 * i] + B[2 * i + 1]),
                  "upsample": (21, lambda B, i: B[i // 2]),
                  "reverse": (41, lambda B, i: B[40 - i])}[pattern]
        A = dsl.placeholder((nb,), name="A")
        B = dsl.compute((nb,), lambda i: A[i] * 2.0 + 1.0, name="B")
        C = dsl.compute((41,), lambda i: fn(B, i), name="C")
        s = hlotune.Schedule(C)
        o, _i = s.split(C.axis[0], 7)
        s.compute_at(B, o)
    check_schedule(s)


def test_three_stage_nested_compute_at_and_inline():
    A = dsl.placeholder((32,), name="A")
    B = dsl.compute((32,), lambda i: A[i] * 2.0, name="B")
    Cc = dsl.compute((32,), lambda i: B[i] + 1.0, name="Cc")
    D = dsl.compute((32,), lambda i: Cc[i] * 3.0, name="D")
    s = hlotune.Schedule(D)
    o, _ = s.split(D.axis[0], 5)
    s.compute_at(Cc, o)
    s.compute_at(B, Cc.axis[0])
    check_schedule(s)

    s = hlotune.Schedule(D)
    s.compute_inline(Cc)
    o, _i = s.split(D.axis[0], 5)
    s.compute_at(B, o)
    check_schedule(s)


def test_multi_output_graph():
    B, C = exp_chain(30)
    s = hlotune.Schedule([B, C])
    o, _i = s.split(C.axis[0], 8)
    s.parallel(o)
    f = check_schedule(s)
    a = random_inputs([B, C])[0]
    rb, rc = f(a)
    np.testing.assert_allclose(rc, rb + 1.0, rtol=1e-6)


def test_duplicate_tensor_names_get_unique_stage_and_buffer_names():
    A1, A2 = dsl.placeholder((8,), name="A"), dsl.placeholder((8,), name="A")
    C1 = dsl.compute((8,), lambda i: A1[i] * 2.0, name="C")
    C2 = dsl.compute((8,), lambda i: C1[i] + A2[i], name="C")
    s = hlotune.Schedule(C2)
    assert list(s.stages) == ["C", "C_1"]
    o, _i = s.split(C2.axis[0], 3)
    s.compute_at(C1, o)
    f = check_schedule(s)
    assert [b.name for b in f.inputs] == ["A", "A_1"] and [b.name for b in f.outputs] == ["C_1"]
    replay = hlotune.Schedule.from_json(C2, s.to_json())
    assert str(replay.lower()) == str(s.lower())


def test_output_that_is_an_input():
    A = dsl.placeholder((8,), name="A")
    with pytest.raises(ScheduleError, match="'A' is an input"):
        hlotune.Schedule(A).lower()


# ----------------------------------------------------------------------------- JSON replay

def _replay_cases():
    def acceptance():
        C = matmul(64, 32, 48)
        s = hlotune.Schedule(C)
        io, ii = s.split(C.axis[0], 32)
        jo, ji = s.split(C.axis[1], 16)
        s.reorder(io, jo, C.op.reduce_axis[0], ii, ji)
        s.vectorize(ji)
        s.parallel(io)
        return C, s

    def cache_write():
        C = matmul()
        s = hlotune.Schedule(C)
        _MM["cache_write_tiles"](s, C)
        return C, s

    def chain_compute_at():
        B, C = exp_chain(64)
        s = hlotune.Schedule(C)
        o, i = s.split(C.axis[0], 7)
        s.compute_at(B, o)
        s.unroll(i)
        return C, s

    def fuse_inline():
        B, C, _rk = conv1d_chain(40, 5)
        s = hlotune.Schedule(C)
        s.compute_inline(B)
        o, i = s.split(C.axis[0], 8)
        f = s.fuse(o, i)
        s.parallel(f)
        return C, s

    def cache_read():
        C = matmul()
        s = hlotune.Schedule(C)
        _MM["cache_read_panels"](s, C)
        return C, s

    return {f.__name__: f for f in (acceptance, cache_write, chain_compute_at, fuse_inline, cache_read)}


_REPLAY = _replay_cases()


@pytest.mark.parametrize("case", list(_REPLAY))
def test_json_round_trip(case):
    C, s = _REPLAY[case]()
    text = s.to_json()
    assert isinstance(json.loads(text), list) and len(json.loads(text)) == len(s.steps)
    # replay on the same graph and on a freshly built, identical graph
    C2, _ = _REPLAY[case]()
    for out in (C, C2):
        s2 = hlotune.Schedule.from_json(out, text)
        assert str(s2.lower()) == str(s.lower())
        assert s2.to_json() == text
    f1 = hlotune.build(s)
    f2 = hlotune.build(hlotune.Schedule.from_json(C2, text))
    assert f1.source == f2.source
    ins = random_inputs(C)
    for g1, g2 in zip(as_tuple(f1(*ins)), as_tuple(f2(*ins))):
        np.testing.assert_array_equal(g1, g2)


def test_json_records_bind():
    C = elementwise(64)
    s = hlotune.Schedule(C)
    o, i = s.split(C.axis[0], 16)
    s.bind(o, "blockIdx.x")
    s.bind(i, "threadIdx.x")
    steps = json.loads(s.to_json())
    assert steps[1] == {"step": "Bind", "stage": "C", "axis": "i.outer", "thread": "blockIdx.x"}
    s2 = hlotune.Schedule.from_json(elementwise(64), s.to_json())
    assert str(s2.lower()) == str(s.lower())
    with pytest.raises(ScheduleError, match="blockIdx.x"):
        hlotune.build(s, target="cpu")


@pytest.mark.parametrize("steps,words", [
    ([{"step": "Nope"}], "unknown schedule step"),
    ([{"step": "Split", "stage": "C", "axis": "i"}], "factor"),
    ([{"step": "Split", "stage": "C", "axis": "i", "factor": 2, "x": 1}], "unexpected"),
    ([{"step": "Split", "stage": "X", "axis": "i", "factor": 2}], "'X'"),
    ([{"step": "Split", "stage": "C", "axis": "zz", "factor": 2}], "'zz'"),
    ([{"step": "Split", "stage": "C", "axis": "i", "factor": 2.5}], "positive int"),
    ([{"step": "Annotate", "stage": "C", "axis": "i", "kind": "swizzle"}], "swizzle"),
])
def test_from_json_rejects_bad_steps(steps, words):
    with pytest.raises(ScheduleError, match=words):
        hlotune.Schedule.from_json(elementwise(8), json.dumps(steps))


# ----------------------------------------------------------------------------- rule violations

def _error_cases():
    """name -> (graph builder, schedule function, words the message must contain). The
    ScheduleError may come from the step or from lowering (build)."""
    def mm():
        C = matmul(16, 16, 8)
        return C, C.axis[0], C.axis[1], C.op.reduce_axis[0]

    cases = {}

    def case(name, words):
        def deco(fn):
            cases[name] = (fn, words)
            return fn
        return deco

    @case("parallel reduce axis", ["'k'", "reduction"])
    def _(s, C, i, j, k):
        s.parallel(k)

    @case("vectorize non-innermost reduce axis", ["'k'", "innermost"])
    def _(s, C, i, j, k):
        s.reorder(k, i, j)
        s.vectorize(k)

    @case("vectorize non-innermost", ["'i'", "innermost"])
    def _(s, C, i, j, k):
        s.vectorize(i)

    @case("vectorize with reduce loop inside", ["'j'", "innermost"])
    def _(s, C, i, j, k):
        s.vectorize(j)

    @case("nested parallel", ["'j'", "'i'", "parallel"])
    def _(s, C, i, j, k):
        s.parallel(i)
        s.parallel(j)

    @case("fuse non-adjacent", ["'i'", "'k'", "adjacent"])
    def _(s, C, i, j, k):
        s.fuse(i, k)

    @case("fuse wrong order", ["'j'", "'i'", "adjacent"])
    def _(s, C, i, j, k):
        s.fuse(j, i)

    @case("fuse data with reduce", ["'j'", "'k'"])
    def _(s, C, i, j, k):
        s.fuse(j, k)

    @case("split already split", ["'i'", "already split"])
    def _(s, C, i, j, k):
        s.split(i, 4)
        s.split(i, 4)

    @case("split zero", ["'i'", "positive"])
    def _(s, C, i, j, k):
        s.split(i, 0)

    @case("split after annotation", ["'j'", "annotated"])
    def _(s, C, i, j, k):
        s.unroll(j)
        s.split(j, 2)

    @case("annotate twice", ["'i'", "already"])
    def _(s, C, i, j, k):
        s.unroll(i)
        s.parallel(i)

    @case("reorder twice the same axis", ["'i'"])
    def _(s, C, i, j, k):
        s.reorder(i, i)

    @case("compute_inline of a reduction", ["'C'", "reduction"])
    def _(s, C, i, j, k):
        s.compute_inline(C)

    @case("compute_at of an output in itself", ["'C'"])
    def _(s, C, i, j, k):
        s.compute_at(C, i)

    @case("cache_write after split", ["'C'", "cache_write"])
    def _(s, C, i, j, k):
        s.split(i, 2)
        s.cache_write(C)

    @case("cache_write twice", ["'C'"])
    def _(s, C, i, j, k):
        s.cache_write(C)
        s.cache_write(C)

    @case("cache_write unknown scope", ["texture"])
    def _(s, C, i, j, k):
        s.cache_write(C, "texture")

    @case("cache_read unknown scope", ["texture"])
    def _(s, C, i, j, k):
        s.cache_read("A", "texture")

    @case("cache_read for a stage that does not read it", ["'A.shared'", "'B'"])
    def _(s, C, i, j, k):
        AS = s.cache_read("A", "shared")
        s.cache_read("B", "shared", [AS])

    @case("cache_read of an unknown tensor", ["'Q'", "inputs: A, B"])
    def _(s, C, i, j, k):
        s.cache_read("Q", "shared")

    @case("axis of another graph", ["'i'"])
    def _(s, C, i, j, k):
        s.split(matmul(4, 4, 4).axis[0], 2)

    @case("schedule a placeholder", ["'A'", "placeholder"])
    def _(s, C, i, j, k):
        A = C.op.body[0].src[0].src[0].arg
        s.compute_inline(A)

    @case("bind on cpu", ["'i'", "blockIdx.x"])
    def _(s, C, i, j, k):
        s.bind(i, "blockIdx.x")

    return mm, cases


_MK, _ERR = _error_cases()


@pytest.mark.parametrize("case", list(_ERR))
def test_schedule_errors_name_the_axis(case):
    fn, words = _ERR[case]
    C, i, j, k = _MK()
    s = hlotune.Schedule(C)
    with pytest.raises(ScheduleError) as info:
        fn(s, C, i, j, k)
        hlotune.build(s, target="cpu")
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_compute_at_and_inline_of_an_output():
    B, C = exp_chain(16)
    s = hlotune.Schedule([B, C])
    with pytest.raises(ScheduleError, match="'B' is an output"):
        s.compute_at(B, C.axis[0])
    with pytest.raises(ScheduleError, match="'B' is an output"):
        s.compute_inline(B)


def test_compute_at_with_two_readers():
    A = dsl.placeholder((16,), name="A")
    B = dsl.compute((16,), lambda i: A[i] * 2.0, name="B")
    C1 = dsl.compute((16,), lambda i: B[i] + 1.0, name="C1")
    C2 = dsl.compute((16,), lambda i: B[i] + C1[i], name="C2")
    s = hlotune.Schedule(C2)
    s.compute_at(B, C1.axis[0])
    with pytest.raises(ScheduleError, match="'B' is read by"):
        hlotune.build(s)


def test_compute_at_a_loop_of_an_inlined_stage():
    A = dsl.placeholder((32,), name="A")
    B = dsl.compute((32,), lambda i: A[i] * 2.0, name="B")
    Cc = dsl.compute((32,), lambda i: B[i] + 1.0, name="Cc")
    D = dsl.compute((32,), lambda i: Cc[i] * 3.0, name="D")
    s = hlotune.Schedule(D)
    s.compute_inline(Cc)
    s.compute_at(B, Cc.axis[0])
    with pytest.raises(ScheduleError, match="inlined"):
        hlotune.build(s)


def test_nested_parallel_through_compute_at():
    B, C = exp_chain(64)
    s = hlotune.Schedule(C)
    o, _i = s.split(C.axis[0], 8)
    s.parallel(o)
    s.compute_at(B, o)
    s.parallel(B.axis[0])
    with pytest.raises(ScheduleError, match="parallel"):
        hlotune.build(s)


def test_failed_step_is_not_recorded():
    C = matmul(16, 16, 8)
    s = hlotune.Schedule(C)
    with pytest.raises(ScheduleError):
        s.parallel(C.op.reduce_axis[0])
    assert s.steps == []
    check_schedule(s, rtol=MATMUL_F32[0], atol=MATMUL_F32[1])


def test_duplicate_axis_names_can_be_scheduled():
    A = dsl.placeholder((4, 5, 6), name="A")
    k1, k2 = dsl.reduce_axis(5), dsl.reduce_axis(6)
    S = dsl.compute((4,), lambda i: dsl.sum(A[i, k1, k2], axis=[k1, k2]), name="S")
    check_schedule(hlotune.Schedule(S), rtol=1e-4)


def test_split_rejects_non_integral_factor():
    C = elementwise(64)
    s = hlotune.Schedule(C)
    with pytest.raises(ScheduleError, match="positive int"):
        s.split(C.axis[0], 2.5)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
def test_narrow_type_reductions_round_after_every_step_by_default(dtype):
    """Floats under 32 bits reduce in order, rounding after every step as the reference does:
    the default schedule never makes them a SIMD reduction."""
    from hlotune.schedules.fusion import default_schedule
    X = dsl.placeholder((6, 300), dtype, name="X")
    k = dsl.reduce_axis(300, name="k")
    S = dsl.compute((6,), lambda i: dsl.sum(X[i, k], axis=k), name="S")
    s = default_schedule(S, threads=2)
    assert not any(kind == "vectorize" and v == "k" for _, v, _, kind in loops(s))
    f = check_schedule(s, rtol=0, atol=0)
    assert "simd reduction(" not in f.source
