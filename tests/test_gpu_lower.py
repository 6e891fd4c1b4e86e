"""The device-neutral GPU lowering pass (schedules/gpu_lower.py) without a device: bound loops
become ThreadIndex nodes, bad bindings raise ScheduleError naming the limit, and the kernels it
makes give the serial loop nest's answer in the numpy interpreter (work-items interleaved at
barriers), so a wrong GPU kernel is placed in lowering or in rendering."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import matmul
from hlotune.schedules.gpu_lower import UNLIMITED, GpuLimits, lower_gpu
from hlotune.schedules.interp import interpret, interpret_gpu
from hlotune.schedules.loops import For, If, LoopKind, Thread, ThreadIndex, walk_stmts
from test_opencl import _local_memory_matmul, _tree_reduce

import hlotune
from hlotune import ScheduleError, dsl


def _bound_elementwise(n=100, lx=32):
    A = dsl.placeholder((n,), name="A")
    B = dsl.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = hlotune.Schedule(B)
    g, t = s.split(B.op.axis[0], lx)
    s.bind(g, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    return B, s


def _arrays(fn, seed=0):
    rng = np.random.default_rng(seed)
    ins = [rng.standard_normal(b.shape).astype(b.dtype.np) for b in fn.args[:fn.num_inputs]]
    return ins, [np.zeros(b.shape, b.dtype.np) for b in fn.args[fn.num_inputs:]]


def _check_vs_serial(s, tensor, rtol=1e-5, limits=UNLIMITED):
    """interpret_gpu of ``s`` against the interpreter on the unscheduled nest."""
    fn, ref = s.lower(), hlotune.Schedule(tensor).lower()
    ins, outs = _arrays(fn)
    _, want = _arrays(ref)
    interpret_gpu(fn, *ins, *outs, limits=limits)
    interpret(ref, *ins, *want)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, w, rtol=rtol, atol=1e-5)
    return lower_gpu(fn, limits)


def test_thread_names_parse_to_one_record():
    assert Thread.parse("blockIdx.y") == Thread.parse("group.y") == Thread("group", 1)
    assert Thread.parse("threadIdx.z") == Thread("local", 2) and str(Thread.parse("local.x")) == "local.x"
    with pytest.raises(ScheduleError, match="unknown thread index 'warp.x'"):
        Thread.parse("warp.x")
    C = matmul(8, 8, 8)
    with pytest.raises(ScheduleError, match="unknown thread index 'lane.q'"):
        hlotune.Schedule(C).bind(C.op.axis[0], "lane.q")


def test_bound_loops_become_thread_index_nodes_with_a_guarded_tail():
    B, s = _bound_elementwise(100, 32)
    fn = s.lower()
    assert {(f.kind, f.thread) for f in walk_stmts(fn.body) if isinstance(f, For)} == \
        {(LoopKind.BIND, Thread("group", 0)), (LoopKind.BIND, Thread("local", 0))}
    gp = _check_vs_serial(s, B)
    (k,) = gp.kernels
    assert k.launch.global_size == (4 * 32,) and k.launch.local_size == (32,)
    nodes = [x for x in walk_stmts(k.body) if isinstance(x, ThreadIndex)]
    assert {(x.axis, x.dim) for x in nodes} == {("group", 0), ("local", 0)}
    assert not any(isinstance(x, For) for x in walk_stmts(k.body))     # both loops are thread indices
    assert any(isinstance(x, If) for x in walk_stmts(k.body))          # 4 x 32 items for 100 elements


def test_unbound_nest_flattens_onto_one_global_index():
    C = matmul(12, 10, 6)
    gp = _check_vs_serial(hlotune.Schedule(C), C)
    (k,) = gp.kernels
    assert k.launch.global_size == (120,) and k.launch.local_size is None
    assert isinstance(k.body, ThreadIndex) and (k.body.axis, k.body.dim) == ("global", 0)


def test_barrier_kernels_run_interleaved_in_the_interpreter():
    s = _tree_reduce("sum", 6, 40, 8)
    gp = _check_vs_serial(s, s.graph.outputs[0], rtol=1e-4)
    assert gp.kernels[0].shared and gp.kernels[0].launch.local_size == (8,)
    s = _local_memory_matmul(16, 32, 16)
    gp = _check_vs_serial(s, s.graph.outputs[0], rtol=1e-4)
    assert len(gp.kernels[0].shared) == 2


def test_bad_bindings_raise_naming_the_limit():
    _, s = _bound_elementwise(256, 128)
    with pytest.raises(ScheduleError, match="'dev''s maximum work-group size 64"):
        lower_gpu(s.lower(), GpuLimits("'dev'", max_work_group_size=64))
    with pytest.raises(ScheduleError, match="local.x extent 128 exceeds 'dev''s maximum work-item size 100"):
        lower_gpu(s.lower(), GpuLimits("'dev'", max_work_item_sizes=(100, 100, 100)))
    s = _local_memory_matmul(16, 32, 16)
    with pytest.raises(ScheduleError, match="local memory size 64"):
        lower_gpu(s.lower(), GpuLimits("'dev'", local_mem_size=64))
    with pytest.raises(ScheduleError, match="need a work-group"):
        lower_gpu(_local_memory_matmul(16, 32, 16, bind=False).lower())
