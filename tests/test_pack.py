"""Packs that convert on the way and transposing pack copies (runtime/codegen/pack_c.py): the
gemm template packs f16/bf16 operands of an f32 dot as f32 (``cache_read(dtype=...)``), and the
C renderer copies A panels through ``hl_pack_t_*``; answers match numpy's float64 product, with
AVX-512 and without it (the helper's scalar path)."""

from __future__ import annotations

import dataclasses
import platform
import re

import ml_dtypes
import numpy as np
import pytest
from _checks import MATMUL_F32, assert_close, draw_config
from _checks import root_template as _schedule
from hlotune.dsl.errors import ScheduleError
from hlotune.runtime.cpu import DEFAULT_FLAGS, CCompiler
from hlotune.runtime.targets import get_target
from hlotune.schedules.steps import CacheRead, step_from_json, step_to_json
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

CPU = get_target("cpu")
X86 = platform.machine() in ("x86_64", "AMD64")
#: the same kernels without AVX-512: the pack helper's one-word-at-a-time path
NO_AVX512 = dataclasses.replace(CPU, compiler=CCompiler(flags=(*DEFAULT_FLAGS, "-mno-avx512f"))) if X86 else CPU
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "int8": np.int8}


def dot(m, n, k, a_type, b_type, acc, ta=False):
    """``C[i, j] = sum_r acc(A[i, r]) * acc(B[r, j])`` (A stored ``[k, m]`` when ``ta``)."""
    A = dsl.placeholder((k, m) if ta else (m, k), a_type, name="A")
    B = dsl.placeholder((k, n), b_type, name="B")
    r = dsl.reduce_axis(k, name="r")
    return dsl.compute((m, n), lambda i, j: dsl.sum(
        dsl.cast(A[r, i] if ta else A[i, r], acc) * dsl.cast(B[r, j], acc), axis=r), name="C")


def _inputs(m, n, k, a_type, b_type, ta, seed):
    rng = np.random.default_rng(seed)

    def arr(shape, t):
        if t == "int8":
            return rng.integers(-128, 128, shape).astype(np.int8)
        return rng.standard_normal(shape).astype(NP[t])
    return arr((k, m) if ta else (m, k), a_type), arr((k, n), b_type)


def _oracle(a, b, ta, acc):
    a64 = (a.T if ta else a).astype(np.float64 if acc == "float32" else np.int64)
    r = a64 @ b.astype(a64.dtype)
    return r.astype(np.float32 if acc == "float32" else np.int32)


CASES = [("float32", "float32", "float32"), ("float16", "float16", "float32"), ("bfloat16", "bfloat16", "float32"),
         ("int8", "int8", "int32"), ("float32", "float16", "float32")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), m=st.sampled_from([2, 3, 7, 13, 17, 40]), n=st.sampled_from([1, 5, 16, 33]),
       k=st.sampled_from([4, 8, 20, 32, 48]), case=st.sampled_from(CASES), ta=st.sampled_from([False, False, True]),
       no_avx512=st.booleans())
def test_random_packed_dots_match_numpy(data, m, n, k, case, ta, no_avx512):
    """Any config of the gemm template with A packed (kgroup, kc, tile and block sizes drawn):
    the product equals numpy's, integers exactly, in both compilations; where A is read row by
    row, its panels are copied by the transposing helper."""
    a_type, b_type, acc = case
    out = dot(m, n, k, a_type, b_type, acc, ta)
    s, stage, t = _schedule(out)
    if t.family != "dot":
        reject()
    space = t.space(stage, CPU.hardware)
    cfg = {**draw_config(data, space), "pack_a": max(space.knob("pack_a").values)}
    try:
        t.apply(s, stage, cfg, CPU.hardware)
        f = hlotune.build(s, NO_AVX512 if no_avx512 else CPU)
    except ScheduleError as e:
        event(f"invalid: {str(e)[:40]}")
        reject()
    a, b = _inputs(m, n, k, a_type, b_type, ta, seed=m * n + k)
    got, want = f(a, b), _oracle(a, b, ta, acc)
    if acc == "int32":
        np.testing.assert_array_equal(got, want, err_msg=str(cfg))
    else:
        assert_close(got, want, *MATMUL_F32, err_msg=str(cfg))
    copied = re.search(r"hl_pack_t_\w+\(\(hl_pack_u32\*\)", f.source) is not None
    event("transposing pack" if copied else "loops")
    if cfg["pack_a"] and not ta and cfg["mr"] >= 2:
        assert copied, f"A's panels were not copied by the helper: {cfg}"


def dot_bt(m, n, k, a_type, b_type, acc):
    """``C[i, j] = sum_r acc(A[i, r]) * acc(B[j, r])``: B stored ``[n, k]``, as a PyTorch
    ``Linear`` weight ``[out, in]`` or the ``W^T`` of a gradient."""
    A = dsl.placeholder((m, k), a_type, name="A")
    B = dsl.placeholder((n, k), b_type, name="B")
    r = dsl.reduce_axis(k, name="r")
    return dsl.compute((m, n), lambda i, j: dsl.sum(dsl.cast(A[i, r], acc) * dsl.cast(B[j, r], acc), axis=r),
                       name="C")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), m=st.sampled_from([2, 5, 16, 40]), n=st.sampled_from([7, 32, 50, 97, 130]),
       k=st.sampled_from([8, 20, 32, 56, 100]), case=st.sampled_from(CASES), no_avx512=st.booleans())
def test_b_stored_transposed_is_packed_by_the_wide_helper_and_matches(data, m, n, k, case, no_avx512):
    """B stored ``[n, k]`` packed in panels whose width is a multiple of 8 words (``nr`` 16-128
    fp32 columns, or bf16 pairs and int8 quads of the K-group kernels): the panel is copied by
    the wide transposing helper (16 x 16 blocks in registers with AVX-512, 8 x 8 with AVX2, rows
    past B's end as zeros, a K tail one word at a time) and the product equals numpy's, integers
    exactly, with AVX-512 and without it."""
    a_type, b_type, acc = case
    out = dot_bt(m, n, k, a_type, b_type, acc)
    s, stage, t = _schedule(out)
    if t.family != "dot":
        reject()
    hw = CPU.hardware
    space = t.space(stage, hw)
    wide = [v for v in space.knob("nr").values if v >= 16 and v % 8 == 0]
    if not wide or 1 not in space.knob("pack_b").values:
        reject()
    cfg = {**draw_config(data, space), "nr": data.draw(st.sampled_from(wide), label="nr"),
           "pack_b": max(space.knob("pack_b").values)}
    try:
        t.apply(s, stage, cfg, hw)
        f = hlotune.build(s, NO_AVX512 if no_avx512 else CPU)
    except ScheduleError as e:
        event(f"invalid: {str(e)[:40]}")
        reject()
    a, b = _inputs(m, n, k, a_type, b_type, False, seed=m * n + k)
    got, want = f(a, np.ascontiguousarray(b.T)), _oracle(a, b, False, acc)
    if acc == "int32":
        np.testing.assert_array_equal(got, want, err_msg=str(cfg))
    else:
        assert_close(got, want, *MATMUL_F32, err_msg=str(cfg))
    words = cfg["nr"]      # a K group's elements of one column make one word
    helpers = set(re.findall(r"hl_pack_t_\w+_(\d+)\(\(hl_pack_u32\*\)&v_B", f.source))
    event(f"B panels of {words} words by the helper" if helpers else "B panels by loops")
    if n >= cfg["nr"] and words % 8 == 0:     # (a panel wider than B is cut to it)
        assert helpers == {str(words)}, f"B's panels were not copied by the wide helper: {cfg}"


def test_a_weight_behind_a_layout_transpose_is_packed_by_the_wide_helper():
    """JAX lowers ``x @ W.T`` (W stored ``[out, in]``) to a ``transpose`` view of W feeding the
    dot: the template looks through the view, so B counts as strided (the pack is not reordered
    to walk W's columns) and its 64-column panels are copied by the wide transposing helper; the
    product matches numpy's."""
    m, n, k = 40, 128, 96
    X = dsl.placeholder((m, k), "float32", name="X")
    W = dsl.placeholder((n, k), "float32", name="W")
    Wt = dsl.compute((k, n), lambda r, j: W[j, r], name="Wt")
    r = dsl.reduce_axis(k, name="r")
    out = dsl.compute((m, n), lambda i, j: dsl.sum(X[i, r] * Wt[r, j], axis=r), name="C")
    s, stage, t = _schedule(out)
    space = t.space(stage, CPU.hardware)
    assert space.derived is not None
    cfg = {**t.default_config(stage, CPU.hardware), "nr": 64, "mr": 4, "mb": 1, "nb": 1, "pack_b": 1, "kc": 0}
    t.apply(s, stage, cfg, CPU.hardware)
    f = hlotune.build(s)
    assert re.search(r"hl_pack_t_w32_64\(\(hl_pack_u32\*\)&v_\w+_shared", f.source), "W's panels not by the helper"
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((n, k), dtype=np.float32)
    feeds = {"X": x, "W": w}
    assert_close(f(*[feeds[b.name] for b in f.inputs]), (x.astype(np.float64) @ w.T).astype(np.float32), *MATMUL_F32)


@pytest.mark.parametrize("a_type", ["float16", "bfloat16"])
def test_narrow_operands_of_an_f32_dot_are_packed_as_f32(a_type):
    """Without a K-group instruction (kgroup 1), f16/bf16 panels hold f32: the register tile
    loads f32 (no 16-bit load in the micro-kernel), and the answer matches numpy's."""
    m, n, k = 40, 48, 64
    out = dot(m, n, k, a_type, a_type, "float32")
    s, stage, t = _schedule(out)
    cfg = {**t.default_config(stage, CPU.hardware), "pack_a": 1, "pack_b": 1, "kgroup": 1}
    t.apply(s, stage, cfg, CPU.hardware)
    f = hlotune.build(s, CPU)
    assert re.search(rf"hl_pack_t_{'f16' if a_type == 'float16' else 'bf16'}f32_\d+\(\(", f.source)
    tile = f.source[f.source.index("hl_acc0 = "):]
    assert "hl_vld_float16" not in tile and "hl_vld_bfloat16" not in tile
    a, b = _inputs(m, n, k, a_type, a_type, False, seed=3)
    assert_close(f(a, b), _oracle(a, b, False, "float32"), *MATMUL_F32)


def test_a_converted_cache_needs_every_read_converted():
    """``cache_read(dtype=...)`` where the reader also reads the tensor as it is: refused, naming
    the stage and the type; an unknown type name is refused by name too."""
    A = dsl.placeholder((8, 8), "float16", name="A")
    C = dsl.compute((8, 8), lambda i, j: dsl.cast(A[i, j], "float32") + dsl.cast(A[j, i] * A[i, j], "float32"),
                    name="C")
    s = hlotune.Schedule(C)
    with pytest.raises(ScheduleError, match="reads 'A' other than converted to float32"):
        s.cache_read(A, "shared", [s.stage(C).name], dtype="float32")
    with pytest.raises(ScheduleError, match="'complex7' of 'A' is not a type name"):
        hlotune.Schedule(C).cache_read(A, "shared", ["C"], dtype="complex7")


def test_a_converted_cache_computes_the_same_and_its_record_round_trips():
    A = dsl.placeholder((8, 8), "float16", name="A")
    C = dsl.compute((8, 8), lambda i, j: dsl.cast(A[i, j], "float32") * 2.0, name="C")
    s = hlotune.Schedule(C)
    p = s.cache_read(A, "shared", ["C"], dtype="float32")
    assert p.dtype.name == "float32"
    a = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float16)
    np.testing.assert_array_equal(hlotune.build(s, CPU)(a), a.astype(np.float32) * 2)
    step = s.steps[-1]
    assert step_from_json(step_to_json(step)) == step and step.dtype == "float32"
    plain = CacheRead("A", "shared", ("C",))
    assert "dtype" not in step_to_json(plain)      # records from before the field read as they were
    assert step_from_json(step_to_json(plain)) == plain
