"""The OpenCL backend: schedule primitives, dtypes and bound thread indices against the reference
evaluator, every corpus module on the device against XLA's outputs, targets and their errors.

Runs on ``$HLOTUNE_OPENCL_DEVICE`` (default ``opencl``: the first GPU, else the first device that
builds a kernel); skipped when pyopencl or such a device is missing. Corpus modules run in a
worker process, since an OpenCL compiler (PoCL's LLVM) may abort the process on a kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _checks import argmax_reducer, check_schedule, conv1d_chain, matmul, row_reduce
from hlotune.dsl.errors import (
    HlotuneError,
    KernelArgumentError,
    MissingDependencyError,
    ScheduleError,
    TargetError,
)
from test_cpu_backend import _FLOAT_OPS, _INT_OPS, NAN, npdtype

import hlotune
from hlotune import dsl

DEVICE = os.environ.get("HLOTUNE_OPENCL_DEVICE", "opencl")
DATA = Path(__file__).parent / "data" / "hlo"
CASES = [m["name"] + f for m in json.loads((DATA / "manifest.json").read_text()) for f in (".hlo", ".opt.hlo")]


def _device():
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return None, "pyopencl is not installed (pip install 'hlotune[opencl]')"
    from hlotune.runtime.opencl import _probe
    try:
        t = hlotune.get_target(DEVICE)
    except HlotuneError as e:
        return None, f"no usable OpenCL device for '{DEVICE}': {e}"
    err = _probe(t.platform_index, t.device_index)
    return (None, f"OpenCL device {t} ({t.device}) cannot build a kernel: {err}") if err else (t, "")


TARGET, WHY = _device()
needs_pyopencl = pytest.mark.skipif(WHY.startswith("pyopencl"), reason=WHY)
needs_device = pytest.mark.skipif(TARGET is None, reason=WHY)


def build(s):
    return hlotune.build(s, TARGET)


def check(s, **kw):
    return check_schedule(s, target=TARGET, **kw)


# ----------------------------------------------------------------------------- targets

@needs_device
def test_target_provenance_key_and_specs():
    t = TARGET
    assert t.kind == "opencl" and str(t) == f"opencl:{t.platform_index}:{t.device_index}"
    p = t.provenance
    for k in ("device", "driver_version", "opencl_version", "compute_units", "max_work_group_size",
              "local_mem_size"):
        assert p[k], k
    assert t.key.startswith("opencl-") and t.key != hlotune.get_target("cpu").key
    same = hlotune.get_target(f"opencl:{t.platform_index}:{t.device_index}")
    assert same.key == t.key and same.device == t.device
    by_name = hlotune.get_target("opencl:" + t.device.split()[-1].lower())
    assert by_name.kind == "opencl"


@needs_pyopencl
@pytest.mark.parametrize("spec, word, listed", [("opencl:99:0", "99:0", True), ("opencl:0:99", "0:99", True),
                                                ("opencl:no-such-device-xyz", "no-such-device-xyz", True),
                                                ("opencl:a:b:c", "opencl:P:D", False),
                                                ("openclx", "unknown target", False)])
def test_bad_device_specs_raise_target_error(spec, word, listed):
    with pytest.raises(TargetError) as e:
        hlotune.get_target(spec)
    assert word in str(e.value)
    if listed and TARGET is not None:    # the message lists the devices there are
        assert "available: opencl:" in str(e.value)


def test_missing_pyopencl_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)
    with pytest.raises(MissingDependencyError, match=r"hlotune\[opencl\]"):
        hlotune.get_target("opencl")


def test_float16_needs_cl_khr_fp16():
    from hlotune.runtime.codegen.opencl import render_opencl
    A = dsl.placeholder((8,), "float16", name="A")
    B = dsl.compute((8,), lambda i: A[i] * 2.0, name="B")
    fn = hlotune.Schedule(B).lower()
    with pytest.raises(TargetError, match="cl_khr_fp16"):
        render_opencl(fn, fp16=False, device="'test device'")
    assert "cl_khr_fp16 : enable" in render_opencl(fn, fp16=True).source


def test_rendering_kernels_scratch_and_names():
    """Two root nests -> two kernels; the intermediate is a host-allocated scratch argument;
    OpenCL keywords are not used as names; bool is stored as uchar."""
    from hlotune.runtime.codegen.opencl import Scratch, render_opencl
    A = dsl.placeholder((16, 8), "float32", name="constant")
    k = dsl.reduce_axis(8, name="k")
    R = dsl.compute((16,), lambda i: dsl.sum(A[i, k], axis=k), name="uint")
    M = dsl.compute((16, 8), lambda i, j: A[i, j] > R[i], name="M")
    prog = render_opencl(hlotune.Schedule(M).lower())
    assert prog.source.count("__kernel void") == 2 and len(prog.launches) == 2
    assert [sc.buffer.name for sc in prog.scratch] == ["uint"]
    assert isinstance(prog.launches[0].args[-1], Scratch) and prog.launches[0].args[-1] is prog.launches[1].args[-1]
    assert "v_constant" in prog.source and "v_uint" in prog.source and "__global uchar* restrict v_M" in prog.source


# ----------------------------------------------------------------------------- schedules

@needs_device
def test_elementwise_split_fuse_reorder_annotations():
    A = dsl.placeholder((37, 50), "float32", name="A")
    B = dsl.compute((37, 50), lambda i, j: dsl.exp(A[i, j]) * 2.0 + 1.0, name="B")
    s = hlotune.Schedule(B)
    i, j = B.op.axis
    jo, ji = s.split(j, 8)
    io, ii = s.split(i, 5)
    s.reorder(io, jo, ii, ji)
    f = s.fuse(io, jo)
    s.parallel(f)
    s.unroll(ii)
    s.vectorize(ji)
    k = check(s)
    assert k.launches[0].global_size == (8 * 7,) and "get_global_id(0)" in k.source


def _tree_reduce(kind="sum", M=30, K=50, L=16, dtype="float32", per_item=1):
    """``row_reduce`` with each row's reduction shared by ``L`` work-items (a tree in local memory)."""
    R = row_reduce(kind, M, K, dtype)
    s = hlotune.Schedule(R)
    ko, kl = s.split(R.op.reduce_axis[0], L)
    s.reorder(kl, ko)
    s.bind(kl, "local.x")
    if M:
        g, _i = s.split(R.op.axis[0], per_item)
        s.bind(g, "group.x")
    return s


@needs_device
@pytest.mark.parametrize("kind, M, K, L, dtype, per_item", [
    ("sum", 30, 50, 16, "float32", 1), ("max", 8, 1000, 64, "float32", 1), ("min", 12, 300, 32, "float64", 4),
    ("sum", 5, 4096, 256, "float32", 2), ("prod", 6, 40, 8, "float32", 1), ("sum", 9, 77, 32, "int32", 3)])
def test_reduction_shared_across_work_items(kind, M, K, L, dtype, per_item):
    f = check(_tree_reduce(kind, M, K, L, dtype, per_item), rtol=1e-4, atol=1e-4)
    assert f.launches[0].local_size == (L,) and f.launches[0].global_size == (-(-M // per_item) * L,)
    # log2(L) tree steps between barriers, after the partials and after the result
    assert f.source.count("barrier(CLK_LOCAL_MEM_FENCE);") == L.bit_length() + 1


@needs_device
def test_reduction_across_work_items_errors():
    s = _tree_reduce(L=12)
    with pytest.raises(ScheduleError, match="power-of-two extent"):
        build(s)
    R = row_reduce("sum", 30, 50)
    s = hlotune.Schedule(R)
    with pytest.raises(ScheduleError, match="only work-item indices"):
        s.bind(R.op.reduce_axis[0], "group.x")
    ko, kl = s.split(R.op.reduce_axis[0], 16)
    s.bind(kl, "local.x")        # kl inside ko: the partials would not cover the row
    with pytest.raises(ScheduleError, match="must be the outermost reduction loop"):
        build(s)
    A = dsl.placeholder((30, 50), "float32", name="A")
    k = dsl.reduce_axis(50, name="k")
    idx, _val = dsl.compute((30,), lambda i: argmax_reducer()((k, A[i, k]), axis=k), name="am")
    s = hlotune.Schedule(idx)
    ko, kl = s.split(k, 16)
    s.reorder(kl, ko)
    s.bind(kl, "local.x")
    with pytest.raises(ScheduleError, match="2-value reducer"):
        build(s)


@needs_device
def test_vector_types_for_contiguous_float_loops():
    A = dsl.placeholder((16, 64), "float32", name="A")
    B = dsl.placeholder((64,), "float32", name="B")
    C = dsl.compute((16, 64), lambda i, j: dsl.exp(A[i, j]) * B[j] + A[i, 0], name="C")
    s = hlotune.Schedule(C)
    _jo, ji = s.split(C.op.axis[1], 8)
    s.vectorize(ji)
    src = check(s).source
    assert "vload8(0, v_A + " in src and "vload8(0, v_B + " in src and "vstore8(" in src
    # a transposed read (stride 16 along the vector loop) and int32 values stay scalar loops
    T = dsl.compute((64, 16), lambda i, j: A[j, i], name="T")
    N = dsl.placeholder((64,), "int32", name="N")
    Q = dsl.compute((64,), lambda i: N[i] * 3, name="Q")
    for out in (T, Q):
        s = hlotune.Schedule(out)
        _o, v = s.split(out.op.axis[-1], 4)
        s.vectorize(v)
        assert "vload" not in check(s).source


@needs_device
def test_reduction_split_vectorized_and_argmax():
    A = dsl.placeholder((30, 50), "float32", name="A")
    k = dsl.reduce_axis(50, name="k")
    R = dsl.compute((30,), lambda i: dsl.max(A[i, k], axis=k), name="R")
    s = hlotune.Schedule(R)
    _, ki = s.split(k, 16)
    s.vectorize(ki)
    s.parallel(R.op.axis[0])
    a = np.random.default_rng(0).standard_normal((30, 50)).astype(np.float32)
    a[4, 7] = NAN
    check(s, inputs=[a])
    am = argmax_reducer()
    k2 = dsl.reduce_axis(50, name="k")
    idx, val = dsl.compute((30,), lambda i: am((k2, A[i, k2]), axis=k2), name="am")
    s = hlotune.Schedule([idx, val])
    io, ii = s.split(idx.op.axis[0], 8)
    s.reorder(io, k2, ii)
    s.parallel(io)
    _, gv = check(s, inputs=[a])(a)
    np.testing.assert_array_equal(gv[[0, 1, 2, 3, 5]], a[[0, 1, 2, 3, 5]].max(axis=1))


@needs_device
def test_matmul_tile_cache_write_compute_at():
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    CL = s.cache_write(C, "local")
    i, j = C.op.axis
    io, jo, _, _ = s.tile(i, j, 8, 8)
    f = s.fuse(io, jo)
    s.parallel(f)
    s.compute_at(CL, f)
    a, b = CL.op.axis
    kk, = CL.op.reduce_axis
    s.reorder(kk, a, b)
    s.vectorize(b)
    check(s, rtol=1e-4, atol=1e-4)


@needs_device
def test_multi_stage_kernels_rank0_and_per_item_scratch():
    A = dsl.placeholder((30, 50), "float32", name="A")
    k, k2 = dsl.reduce_axis(50, name="k"), dsl.reduce_axis(30, name="k2")
    R = dsl.compute((30,), lambda i: dsl.sum(A[i, k], axis=k), name="R")
    T = dsl.compute((), lambda: dsl.max(R[k2], axis=k2), name="T")
    f = check(hlotune.Schedule([T]), rtol=1e-5, atol=1e-5)
    assert len(f.launches) == 2 and f.launches[1].global_size == (1,)
    # a compute_at region over the private limit lives in per-work-item global scratch
    B, C, _ = conv1d_chain(n=12000, r=5)
    s = hlotune.Schedule(C)
    io, _ = s.split(C.op.axis[0], 5000)
    s.compute_at(B, io)
    f = check(s)
    assert [sc.count for sc in f.program.scratch] == [3]


# ----------------------------------------------------------------------------- bind

@needs_device
@pytest.mark.parametrize("names", [("group", "local"), ("blockIdx", "threadIdx")])
@pytest.mark.parametrize("shape", [(64, 48, 40), (50, 45, 20)])
def test_bind_matmul_group_and_local_ids(names, shape):
    g, t = names
    C = matmul(*shape)
    s = hlotune.Schedule(C)
    i, j = C.op.axis
    io, ii = s.split(i, 8)
    jo, ji = s.split(j, 16)
    s.reorder(io, jo, ii, ji)
    for ax, th in ((io, f"{g}.y"), (jo, f"{g}.x"), (ii, f"{t}.y"), (ji, f"{t}.x")):
        s.bind(ax, th)
    f = check(s, rtol=1e-4, atol=1e-4)
    ln = f.launches[0]
    assert ln.local_size == (16, 8) and ln.global_size == (-(-shape[1] // 16) * 16, -(-shape[0] // 8) * 8)
    assert "get_group_id(1)" in f.source and "get_local_id(0)" in f.source


@needs_device
def test_bind_with_cache_write_register_tile():
    C = matmul(64, 64, 32)
    s = hlotune.Schedule(C)
    CL = s.cache_write(C, "local")
    i, j = C.op.axis
    io, jo, ii, ji = s.tile(i, j, 16, 16)
    iio, iii = s.split(ii, 4)
    jio, jii = s.split(ji, 4)
    s.reorder(iio, jio, iii, jii)
    for ax, th in ((io, "group.y"), (jo, "group.x"), (iio, "local.y"), (jio, "local.x")):
        s.bind(ax, th)
    s.compute_at(CL, jio)
    a, b = CL.op.axis
    s.reorder(CL.op.reduce_axis[0], a, b)
    s.unroll(b)
    f = check(s, rtol=1e-4, atol=1e-4)
    assert f.launches[0].local_size == (4, 4) and "v_C_local[16]" in f.source


def _local_memory_matmul(M, N, K, lx=4, ly=8, tx=2, ty=2, kt=8, bind=True):
    """C = A @ B with per-work-item register tiles and the A/B slices of each k-step staged in
    local memory, filled cooperatively by the work-group."""
    C = matmul(M, N, K)
    s = hlotune.Schedule(C)
    CL = s.cache_write(C, "local")
    caches = [s.cache_read(t, "local", [CL]) for t in ("A", "B")]
    i, j = C.op.axis
    io, ii = s.split(i, lx * tx)
    il, it = s.split(ii, tx)
    jo, ji = s.split(j, ly * ty)
    jl, jt = s.split(ji, ty)
    s.reorder(io, jo, il, jl, it, jt)
    if bind:
        for ax, th in ((io, "group.y"), (jo, "group.x"), (il, "local.y"), (jl, "local.x")):
            s.bind(ax, th)
    s.compute_at(CL, jl)
    ko, ki = s.split(CL.op.reduce_axis[0], kt)
    s.reorder(ko, ki, *CL.op.axis)
    for X in caches:
        s.compute_at(X, ko)
        f = s.fuse(*X.op.axis)
        f, x = s.split(f, ly)
        f, y = s.split(f, lx)
        if bind:
            s.bind(y, "local.y")
            s.bind(x, "local.x")
    return s


@needs_device
@pytest.mark.parametrize("shape", [(64, 64, 32), (50, 45, 20)])
def test_cache_read_local_memory_cooperative_matmul(shape):
    f = check(_local_memory_matmul(*shape), rtol=1e-4, atol=1e-4)
    src = f.source
    assert "__local float v_A_local[64];" in src and "__local float v_B_local[128];" in src
    assert src.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2     # after the fills, after their use
    assert "reqd_work_group_size(8, 4, 1)" in src and f.launches[0].local_size == (8, 4)


@needs_device
def test_readme_device_example():
    """The README's local-memory example, verbatim (after its CPU example's definitions)."""
    A = dsl.placeholder((256, 128), "float32", name="A"); B = dsl.placeholder((128, 64), "float32", name="B")
    k = dsl.reduce_axis(128, name="k")
    C = dsl.compute((256, 64), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name="C")
    a = np.random.rand(256, 128).astype("float32"); b = np.random.rand(128, 64).astype("float32")
    # --- verbatim
    s = hlotune.Schedule(C)
    i, j = C.op.axis
    io, ii = s.split(i, 8); jo, ji = s.split(j, 16); ko, ki = s.split(k, 16)
    s.reorder(io, jo, ii, ji, ko, ki)
    for ax, th in ((io, "group.y"), (jo, "group.x"), (ii, "local.y"), (ji, "local.x")):
        s.bind(ax, th)
    AS = s.cache_read("A", "local"); s.compute_at(AS, ko)      # 8 rows x 16 of A per k-step
    y, x = s.split(s.fuse(*AS.op.axis), 16); s.bind(x, "local.x"); _, y = s.split(y, 8); s.bind(y, "local.y")
    f = hlotune.build(s, target="opencl")   # needs the [opencl] extra; f.source shows __local and barriers
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5, atol=1e-5)
    # --- end of the verbatim example
    assert "__local float v_A_local[128];" in f.source and f.launches[0].local_size == (16, 8)


@needs_device
def test_local_memory_errors_name_the_rule():
    from hlotune.runtime.codegen.opencl import render_opencl
    fn = _local_memory_matmul(64, 64, 32).lower()
    with pytest.raises(ScheduleError, match="768 bytes of local memory, more than 'dev'.s local memory size 512"):
        render_opencl(fn, local_mem_size=512, device="'dev'")
    with pytest.raises(ScheduleError, match="takes 3 buffer arguments .24 bytes., more than 'dev'.s maximum "
                                            "parameter size 16"):
        render_opencl(fn, max_parameter_size=16, device="'dev'")
    with pytest.raises(ScheduleError, match="need a work-group"):
        render_opencl(_local_memory_matmul(64, 64, 32, bind=False).lower())
    # a k-slice staged inside bound loops that have guarded tails: not every work-item reaches the barrier
    C = matmul(50, 45, 20)
    s = hlotune.Schedule(C)
    AS = s.cache_read("A", "local")
    io, ii = s.split(C.op.axis[0], 8)
    jo, ji = s.split(C.op.axis[1], 16)
    ko, ki = s.split(C.op.reduce_axis[0], 4)
    s.reorder(io, jo, ii, ji, ko, ki)
    for ax, th in ((io, "group.y"), (jo, "group.x"), (ii, "local.y"), (ji, "local.x")):
        s.bind(ax, th)
    s.compute_at(AS, ko)
    with pytest.raises(ScheduleError, match="only some work-items run"):
        render_opencl(s.lower())


@needs_device
def test_bind_errors():
    def sched(n=32):
        C = matmul(n, n, 8)
        return C, hlotune.Schedule(C)
    C, s = sched()
    with pytest.raises(ScheduleError, match="unknown thread index 'warp.x'"):
        s.bind(C.op.axis[0], "warp.x")
    C, s = sched(9000)
    s.bind(C.op.axis[1], "local.x")
    with pytest.raises(ScheduleError, match="maximum work-group size|maximum work-item size"):
        build(s)
    # a producer's bound loop inside the consumer's unbound loop: every work-item would store C
    B, C, _ = conv1d_chain(n=40, r=3)
    s = hlotune.Schedule(C)
    s.compute_at(B, C.op.axis[0])
    s.bind(B.op.axis[0], "local.x")
    with pytest.raises(ScheduleError, match="stored outside the loops bound to local.x"):
        build(s)


# ----------------------------------------------------------------------------- dtypes

def _run_ops(dtypes, ops, arrays):
    """One kernel computing every ``ops[name](*reads)`` as output ``o_name``, checked."""
    Ps = [dsl.placeholder(arrays[0].shape, d, name=f"P{k}") for k, d in enumerate(dtypes)]

    def body(fn):
        return lambda i: fn(*[P[i] for P in Ps])

    outs = [dsl.compute(arrays[0].shape, body(fn), name=f"o_{n}") for n, fn in ops.items()]
    return check(hlotune.Schedule(outs), inputs=arrays)


def _to(t):
    return lambda v: v.astype(t)


@needs_device
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_elementwise_vs_reference(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(200).astype(npdtype(dtype))
    b = rng.standard_normal(200).astype(npdtype(dtype))
    a[:4], b[:4] = [1.0, 1.0, 0.0, NAN], [0.0, -0.0, 0.0, 1.0]
    if (dtype == "float16" and not TARGET.fp16) or (dtype == "float64" and not TARGET.fp64):
        with pytest.raises(TargetError, match="cl_khr_fp"):
            _run_ops([dtype, dtype], _FLOAT_OPS, [a, b])
        return
    _run_ops([dtype, dtype], _FLOAT_OPS, [a, b])


@needs_device
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_int_elementwise_vs_reference(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    a = rng.integers(info.min, info.max, 256, endpoint=True, dtype=dtype)
    b = rng.integers(info.min, info.max, 256, endpoint=True, dtype=dtype)
    b[::7] = rng.integers(-5 if info.min else 0, 6, b[::7].shape).astype(dtype)
    lo = info.min + 1 if dtype == "int64" else info.min
    a[:6], b[:6] = [lo, lo, info.max, 0, 1, info.max], [info.max if not info.min else -1, 0, 0, 0, 0, 1]
    ops = dict(_INT_OPS, shl=lambda x, y: x << (y & 7), shra=lambda x, y: x >> y,
               floordiv=lambda x, y: x // y, to_f32=lambda x, y: x.astype("float32"))
    _run_ops([dtype, dtype], ops, [a, b])


@needs_device
def test_casts_bool_and_bitcasts():
    x = np.array([NAN, np.inf, -np.inf, 0.0, -0.5, 3.7, 127.5, -129.0, 2.0**31, -2.0**31 - 4096, 1e30], np.float32)
    ops = {t: _to(t) for t in ["int8", "uint8", "int32", "uint32", "int64", "bool", "bfloat16"]}
    ops["bits"] = lambda v: dsl.bitcast(v, "int32")
    _run_ops(["float32"], ops, [x])
    a = np.array([True, False, True, False] * 4)
    _run_ops(["bool", "bool"], {"and": lambda p, q: p & q, "not": lambda p, q: ~p, "add": lambda p, q: p + q,
                                "to_i8": lambda p, q: p.astype("int8")}, [a, a[::-1].copy()])


# ----------------------------------------------------------------------------- kernel interface

@needs_device
def test_kernel_call_outputs_time_and_argument_checks():
    A = dsl.placeholder((6,), "float32", name="A")
    B = dsl.compute((6,), lambda i: A[i] * 2.0, name="B")
    C = dsl.compute((6,), lambda i: A[i] > 0.0, name="C")
    f = build(hlotune.Schedule([B, C]))
    a = np.linspace(-1, 1, 6).astype(np.float32)
    ob, oc = np.empty(6, np.float32), np.empty(6, bool)
    res = f(a, ob, oc)
    assert res[0] is ob and res[1] is oc
    np.testing.assert_array_equal(ob, a * 2)
    np.testing.assert_array_equal(oc, a > 0)
    r = f.time(a, repeat=4, number=3)
    assert len(r.times) == 4 and r.number == 3 and all(t > 0 for t in r.times)
    with pytest.raises(KernelArgumentError, match="dtype float64"):
        f(a.astype(np.float64))
    with pytest.raises(KernelArgumentError, match="shape"):
        f(np.zeros(5, np.float32))
    assert "__kernel void" in f.source and repr(f).startswith("OpenCLKernel(")


# ----------------------------------------------------------------------------- corpus

def _corpus_worker(out: str, cases: list[str]) -> None:
    """Run ``cases`` on DEVICE, appending one JSON line per case to ``out``."""
    from hlotune.cli import check_outputs
    for case in cases:
        name = case.split(".")[0]
        try:
            m = hlotune.load_hlo(DATA / case)
            z = np.load(DATA / f"{name}.npz")
            outs = hlotune.compile(m, target=DEVICE)(*[z[f"arg{k}"] for k in range(len(m.params))])
            rows = check_outputs(outs if isinstance(outs, tuple) else (outs,), DATA / f"{name}.npz")
            res = {"case": case, "ok": all(r["ok"] for r in rows), "rows": rows}
        except Exception as e:  # noqa: BLE001 - reported to the test
            res = {"case": case, "ok": False, "error": f"{type(e).__name__}: {e}"[:3000]}
        with open(out, "a") as f:
            f.write(json.dumps(res) + "\n")


@pytest.fixture(scope="module")
def corpus_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("opencl_corpus") / "results.jsonl"
    todo, results = list(CASES), {}
    while todo:
        r = subprocess.run([sys.executable, __file__, str(out), *todo], capture_output=True, text=True,
                           timeout=900, cwd=Path(__file__).parent, check=False)
        if out.exists():
            results = {x["case"]: x for x in map(json.loads, out.read_text().splitlines())}
        todo = [c for c in todo if c not in results]
        if todo:   # the worker catches exceptions: it died on todo[0]
            results[todo.pop(0)] = {"ok": False, "error": f"worker died (exit {r.returncode}): {r.stderr[-2000:]}"}
    return results


@needs_device
@pytest.mark.parametrize("case", CASES)
def test_corpus_module_matches_xla_on_opencl(case, corpus_results):
    res = corpus_results[case]
    assert res["ok"], res.get("error") or [r for r in res["rows"] if not r["ok"]]


@needs_device
def test_cli_run_check_on_opencl(capsys):
    from hlotune.cli import main
    f, npz = str(DATA / "softmax.opt.hlo"), str(DATA / "softmax.npz")
    assert main(["run", f, "--target", DEVICE, "--inputs", npz, "--check", npz]) == 0
    out = capsys.readouterr().out
    assert "check passed" in out and "target opencl:" in out


if __name__ == "__main__":
    _corpus_worker(sys.argv[1], sys.argv[2:])
