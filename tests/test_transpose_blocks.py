"""Elementwise stages that read a tensor across their rows (a transpose, possibly through inlined
elementwise producers) may run in ``tile`` x ``tile`` blocks: the knob is offered only to them,
every block size gives numpy's answer on any shape (tails included), and the default takes blocks."""

from __future__ import annotations

import numpy as np
from hlotune.schedules.fusion import default_schedule, fuse
from hlotune.schedules.fusion_rules import reads_across
from hlotune.schedules.hardware import Hardware
from hlotune.schedules.schedule import Schedule
from hlotune.schedules.templates.families import TEMPLATES
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

HW = Hardware(vector_bytes=64, vector_regs=32, threads=2)


def _transposed(m: int, n: int):
    """out[i, j] = (2 * X[j, i]) - Z[i, j]: X (n x m) read across the output's rows through an
    inlined transpose and an inlined product."""
    X = dsl.placeholder((n, m), "float32", name="X")
    Z = dsl.placeholder((m, n), "float32", name="Z")
    T = dsl.compute((m, n), lambda i, j: X[j, i], name="T")
    D = dsl.compute((m, n), lambda i, j: T[i, j] * 2.0, name="D")
    return dsl.compute((m, n), lambda i, j: D[i, j] - Z[i, j], name="out"), X, Z


def _schedule(out, config):
    s = Schedule(out)
    fuse(s, HW)
    st_ = s.stage_of_op(out.op)
    TEMPLATES["elementwise"].apply(s, st_, config, HW)
    return s


def test_reads_across_sees_transposes_through_inlined_producers_only():
    out, X, Z = _transposed(32, 48)
    assert reads_across(out.op)
    b = dsl.placeholder((32,), "float32", name="b")
    rows = dsl.compute((32, 48), lambda i, j: Z[i, j] + b[i], name="rows")   # a column broadcast
    assert not reads_across(rows.op)
    v = dsl.compute((48,), lambda j: X[j, 0], name="v")                       # one axis
    assert not reads_across(v.op)
    space = TEMPLATES["elementwise"].space(Schedule(rows).stages["rows"], HW)
    assert "tile" not in space.names
    space = TEMPLATES["elementwise"].space(Schedule(out).stages["out"], HW)
    assert space.knob("tile").values == (0, 8, 16)       # blocks at most half of the 32 rows


@settings(max_examples=25, deadline=None)
@given(m=st.integers(16, 70), n=st.integers(16, 70), tile=st.sampled_from([0, 8, 16, 32]),
       vector=st.sampled_from([0, 1, 4, 16]), parallel=st.sampled_from([0, 1]), seed=st.integers(0, 3))
def test_every_block_size_gives_numpys_answer(m, n, tile, vector, parallel, seed):
    out, _, _ = _transposed(m, n)
    space = TEMPLATES["elementwise"].space(Schedule(out).stages["out"], HW)
    tile = tile if tile in space.knob("tile").values else 0
    vector = vector if vector in space.knob("vector").values else 1
    f = hlotune.build(_schedule(out, {"vector": vector, "parallel": parallel, "tile": tile}), target="cpu")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m)).astype(np.float32)
    z = rng.standard_normal((m, n)).astype(np.float32)
    np.testing.assert_array_equal(f(x, z), np.float32(2.0) * x.T - z)


def test_the_default_runs_a_transpose_in_blocks_and_others_in_rows():
    out, _, Z = _transposed(256, 512)
    s = default_schedule(out, hw=HW)
    leaf = [v.name for v in s.stage_of_op(out.op).leaf]
    assert len(leaf) == 4, leaf                     # i.o, j.o, i.i, j.i: 16 x 16 blocks
    assert TEMPLATES["elementwise"].default_config(s.stage_of_op(out.op), HW)["tile"] == 16
    f = hlotune.build(s, target="cpu")
    x = np.arange(512 * 256, dtype=np.float32).reshape(512, 256)
    z = np.ones((256, 512), np.float32)
    np.testing.assert_array_equal(f(x, z), 2 * x.T - z)
    b = dsl.placeholder((256,), "float32", name="b")
    rows = dsl.compute((256, 512), lambda i, j: Z[i, j] + b[i], name="rows")
    s = default_schedule(rows, hw=HW)
    assert len(s.stage_of_op(rows.op).leaf) == 2
