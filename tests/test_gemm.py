"""The CPU gemm template (packed panels around a register micro-kernel): random configs of its
space on random dot and convolution shapes (ones, primes, tails that do not divide the tiles,
strides, transposed operands, batch axes) always match the reference; the renderer's
micro-kernel appears where the template promises it; bench/matmul_cpu's packed schedule is a
point of the space."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import MATMUL_F32, as_tuple, assert_close, draw_config, random_inputs
from hlotune.dsl.errors import ScheduleError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.codegen.c import CRenderer
from hlotune.runtime.targets import get_target
from hlotune.schedules.fusion import fuse_default
from hlotune.schedules.hardware import Hardware
from hlotune.schedules.templates.families import TEMPLATES, classify
from hypothesis import HealthCheck, assume, event, given, reject, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HOST = get_target("cpu").hardware
MACHINES = [HOST, Hardware(vector_bytes=32, vector_regs=16, threads=2), Hardware(vector_bytes=16, threads=1)]
SIZES = st.sampled_from([1, 2, 3, 5, 7, 13, 16, 17, 31, 40, 64, 97])


def dot(batch, m, n, k, ta, tb):
    """``C[b.., i, j] = sum_r A[b.., i, r] * B[b.., r, j]`` with A or B stored transposed."""
    bs = (batch,) if batch else ()
    A = dsl.placeholder(bs + ((k, m) if ta else (m, k)), "float32", name="A")
    B = dsl.placeholder(bs + ((n, k) if tb else (k, n)), "float32", name="B")
    r = dsl.reduce_axis(k, name="r")

    def f(*ix):
        b, i, j = ix[:-2], ix[-2], ix[-1]
        a = A[(*b, r, i)] if ta else A[(*b, i, r)]
        bb = B[(*b, j, r)] if tb else B[(*b, r, j)]
        return dsl.sum(a * bb, axis=r)
    return dsl.compute(bs + (m, n), f, name="C")


def conv(layout, hw, c_in, c_out, ksz, stride, depthwise):
    """A valid-padding 2-D convolution (NHWC/HWIO or NCHW/OIHW), or a depthwise NHWC one."""
    o = (hw - ksz) // stride + 1
    kh, kw = dsl.reduce_axis(ksz, name="kh"), dsl.reduce_axis(ksz, name="kw")
    if depthwise:
        X = dsl.placeholder((1, hw, hw, c_in), "float32", name="X")
        W = dsl.placeholder((ksz, ksz, c_in), "float32", name="W")
        return dsl.compute((1, o, o, c_in), lambda n, h, w, c: dsl.sum(
            X[n, h * stride + kh, w * stride + kw, c] * W[kh, kw, c], axis=[kh, kw]), name="Y")
    ci = dsl.reduce_axis(c_in, name="ci")
    if layout == "NHWC":
        X = dsl.placeholder((1, hw, hw, c_in), "float32", name="X")
        W = dsl.placeholder((ksz, ksz, c_in, c_out), "float32", name="W")
        return dsl.compute((1, o, o, c_out), lambda n, h, w, co: dsl.sum(
            X[n, h * stride + kh, w * stride + kw, ci] * W[kh, kw, ci, co], axis=[kh, kw, ci]), name="Y")
    X = dsl.placeholder((1, c_in, hw, hw), "float32", name="X")
    W = dsl.placeholder((c_out, c_in, ksz, ksz), "float32", name="W")
    return dsl.compute((1, c_out, o, o), lambda n, co, h, w: dsl.sum(
        X[n, ci, h * stride + kh, w * stride + kw] * W[co, ci, kh, kw], axis=[ci, kh, kw]), name="Y")


def run_config(out, data, hw, k_blocks=False):
    """A random config of ``out``'s template (with ``k_blocks``, one with K blocks) matches."""
    s = hlotune.Schedule(out)
    fuse_default(s)
    stage = s.stage(out)
    t = TEMPLATES[classify(stage)]
    space = t.space(stage, hw)
    cfg = draw_config(data, space)
    if k_blocks:
        cfg["kc"] = data.draw(st.sampled_from([v for v in space.knob("kc").values if v]), label="kc")
    feats = space.derived(cfg)      # what the tuner's cost model sees beside the knobs
    assert len(feats) == 7 and all(0.0 <= v <= 1.0 for v in feats), (cfg, feats)
    try:
        t.apply(s, stage, cfg, hw)
        f = hlotune.build(s)
    except ScheduleError as e:
        event(f"invalid: {str(e)[:40]}")
        reject()
    ins = random_inputs([out], seed=1)
    (got,) = as_tuple(f(*ins))
    (ref,) = evaluate([out], ins)
    assert_close(got, ref, *MATMUL_F32, err_msg=str(cfg))
    event("micro-kernel" if "hl_acc0" in f.source else "generic loops")


@SETTINGS
@given(data=st.data(), batch=st.sampled_from([0, 0, 3]), m=SIZES, n=SIZES, k=SIZES,
       ta=st.booleans(), tb=st.booleans(), machine=st.sampled_from(range(len(MACHINES))))
def test_random_gemm_configs_on_random_dots_match(data, batch, m, n, k, ta, tb, machine):
    out = dot(batch, m, n, k, ta, tb)
    s = hlotune.Schedule(out)
    assume(classify(s.stage(out)) == "dot")
    run_config(out, data, MACHINES[machine])


@SETTINGS
@given(data=st.data(), layout=st.sampled_from(["NHWC", "NCHW"]), hw=st.sampled_from([5, 8, 11]),
       c_in=st.sampled_from([1, 3, 8, 17]), c_out=st.sampled_from([1, 4, 16, 33]), ksz=st.sampled_from([1, 3]),
       stride=st.sampled_from([1, 2]), depthwise=st.booleans())
def test_random_gemm_configs_on_random_convolutions_match(data, layout, hw, c_in, c_out, ksz, stride, depthwise):
    out = conv(layout, hw, c_in, c_out, ksz, stride, depthwise)
    s = hlotune.Schedule(out)
    assume(classify(s.stage(out)) in ("dot", "conv"))
    run_config(out, data, HOST)


def micro_kernels(source: str) -> int:
    return source.count("hl_acc0 = hl_vld_")


@pytest.mark.parametrize("shape", [(64, 64, 64), (37, 50, 29), (1, 100, 33), (97, 17, 5)])
def test_default_dot_runs_a_register_micro_kernel_and_matches(shape):
    """The untuned default packs what needs packing so the tile runs in vector registers, also
    with tails that do not divide the tile (the packs are zero-padded; only the copy-out is
    guarded). One row (a matrix-vector product) reads B once, as it lies: no pack, and its edge
    tile stops at the edge (AMD EPYC: 768 x 3072 in 92 us against 169 packed)."""
    m, n, k = shape
    out = dot(0, m, n, k, False, False)
    f = hlotune.build(hlotune.schedules.fusion.default_schedule([out], hw=HOST))
    if n >= 4 and HOST.vector_bytes >= 16:
        assert micro_kernels(f.source) == (m > 1 or n % (HOST.vector_bytes // 4) == 0)
    ins = random_inputs([out], seed=2)
    assert_close(f(*ins), evaluate([out], ins)[0], *MATMUL_F32)


def test_micro_kernel_is_emitted_for_each_isa_width():
    """The same register tile renders with 16-, 8- or 4-lane vectors for AVX-512, AVX2 and
    SSE/NEON machines (the width comes from the target's Hardware, never hard-coded)."""
    out = dot(0, 24, 32, 16, False, False)
    s = hlotune.Schedule(out)
    t = TEMPLATES["dot"]
    cfg = {**t.space(s.stage(out), 2).default(), "mr": 2, "nr": 32, "pack_b": 1}
    t.apply(s, s.stage(out), cfg, 2)
    fn = s.lower()
    for vb, lanes in ((64, 16), (32, 8), (16, 4)):
        src = CRenderer(Hardware(arch="x86_64", vector_bytes=vb, vector_regs=32)).render(fn)
        assert f"hl_f32x{lanes} hl_acc0" in src
        assert src.count("hl_acc") and f"hl_acc{2 * 32 // lanes - 1} " in src
        # gcc's own vectorizer uses the same width as the micro-kernel (it prefers 256 bits on Xeons)
        assert ('prefer-vector-width=512' in src) == (vb == 64)
    assert "prefer-vector-width" not in CRenderer(Hardware(arch="aarch64", vector_bytes=64)).render(fn)


def test_bench_packed_schedule_is_a_point_of_the_dot_space():
    """bench/matmul_cpu.py's hand-written packed schedule (panels of A and B at the cache block
    loops, a 6 x 64 register tile) is what the dot template makes of one config."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.matmul_cpu import PACKED, packed
    m, n, k = 2 * PACKED["mc"], 2 * PACKED["nc"], 32
    s_hand, (A, B, C) = packed(m, n, k, **PACKED)
    s = hlotune.Schedule(C)
    hw = Hardware(vector_bytes=64, vector_regs=32, threads=2)
    t = TEMPLATES["dot"]
    t.apply(s, s.stage(C), {"mr": PACKED["mr"], "nr": PACKED["nr"], "mb": 2, "nb": 2, "order": "nm", "pack_a": 1, "pack_b": 1, "unroll_k": 1,
                            "parallel": 1}, hw)
    assert str(s.lower()) == str(s_hand.lower())
    a = np.random.default_rng(0).standard_normal((m, k)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(hlotune.build(s_hand)(a, b), a @ b, *MATMUL_F32)


EPILOGUES = {
    "bias_relu": lambda c, b, r, i, j: dsl.maximum(c + b[j], 0.0),
    "gelu_tanh": lambda c, b, r, i, j: 0.5 * c * (1.0 + dsl.tanh(0.7978846 * (c + 0.044715 * c * c * c))),
    "scale_sigmoid": lambda c, b, r, i, j: 1.0 / (1.0 + dsl.exp(-(c * 0.125))),
    "residual": lambda c, b, r, i, j: c + b[j] + r[i, j],
    "cast_f64": lambda c, b, r, i, j: dsl.cast(c, "float64"),
}


def dot_epilogue(m, n, k, kind):
    A = dsl.placeholder((m, k), "float32", name="A")
    B = dsl.placeholder((k, n), "float32", name="B")
    bias = dsl.placeholder((n,), "float32", name="bias")
    res = dsl.placeholder((m, n), "float32", name="res")
    r = dsl.reduce_axis(k, name="r")
    C = dsl.compute((m, n), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="C")
    return dsl.compute((m, n), lambda i, j: EPILOGUES[kind](C[i, j], bias, res, i, j), name="E"), C


@SETTINGS
@given(data=st.data(), m=SIZES, n=st.sampled_from([4, 5, 16, 17, 40, 97]), k=SIZES,
       kind=st.sampled_from(sorted(EPILOGUES)))
def test_epilogues_run_on_the_dot_tile_and_match(data, m, n, k, kind):
    """Bias, activations, scaling, residual adds and casts after a dot are computed on its
    register tile (the dot gets no buffer of its own), by default and for random configs."""
    from hlotune.autotune.task import extract_tasks
    E, C = dot_epilogue(m, n, k, kind)
    (task,) = [t for t in extract_tasks([E], None, get_target("cpu")) if t.root_op is E.op]
    assert task.family == "dot" and len(task.graph.compute_ops) >= 2
    cfg = draw_config(data, task.space) if data.draw(st.booleans(), label="tuned?") else None
    try:
        s = task.schedule(cfg)
        f = hlotune.build(s)
    except ScheduleError as e:
        event(f"invalid: {str(e)[:40]}")
        reject()
    assert s.stage(C).is_at          # computed inside the epilogue's loops
    assert "C = alloc" not in str(s.lower()).split("for ")[0]
    ins = random_inputs([E], seed=3)
    assert_close(as_tuple(f(*ins))[0], evaluate([E], ins)[0], *MATMUL_F32)


def test_micro_kernel_operands_through_clips_selects_and_nans():
    """A depthwise convolution of a clipped (ReLU6) input with zero-padded taps: the clip
    (NaN-propagating max/min), the padding select and the scalar/vector mix all run inside the
    register tile and match the reference with NaN and inf in the input."""
    X = dsl.placeholder((1, 9, 9, 40), "float32", name="X")
    W = dsl.placeholder((3, 3, 40), "float32", name="W")
    Xc = dsl.compute((1, 9, 9, 40), lambda n, h, w, c: dsl.minimum(dsl.maximum(X[n, h, w, c], 0.0), 6.0), name="Xc")
    kh, kw = dsl.reduce_axis(3, name="kh"), dsl.reduce_axis(3, name="kw")

    def tap(n, h, w, c):
        hh, ww = h + kh - 1, w + kw - 1
        inside = (hh >= 0) & (hh < 9) & (ww >= 0) & (ww < 9)
        val = Xc[n, dsl.minimum(dsl.maximum(hh, 0), 8), dsl.minimum(dsl.maximum(ww, 0), 8), c]
        return dsl.select(inside, val, 0.0) * W[kh, kw, c]
    Y = dsl.compute((1, 9, 9, 40), lambda n, h, w, c: dsl.sum(tap(n, h, w, c), axis=[kh, kw]), name="Y")
    f = hlotune.build(hlotune.schedules.fusion.default_schedule([Y], hw=HOST))
    assert micro_kernels(f.source) == 1
    x, w = random_inputs([Y], seed=4)
    x[0, 2, 3, :5] = [np.nan, np.inf, -np.inf, 7.0, -1.0]
    assert_close(f(x, w), evaluate([Y], [x, w])[0], *MATMUL_F32)


def test_dots_sharing_an_input_each_pack_it():
    """Q, K and V projections read the same activations: each dot packs its own copy (cache
    stages X.shared, X.shared1, ...) and gets the register micro-kernel; a name clash used to
    leave all but the first on plain loops."""
    from hlotune.schedules.fusion import default_schedule
    m, k, n = 24, 32, 64
    X = dsl.placeholder((m, k), "float32", name="X")

    def proj(w):
        W = dsl.placeholder((k, n), "float32", name=f"W{w}")
        r = dsl.reduce_axis(k, name="r")
        return dsl.compute((m, n), lambda i, j: dsl.sum(X[i, r] * W[r, j], axis=r), name=w)

    outs = [proj(w) for w in "QKV"]
    s = default_schedule(outs, hw=MACHINES[1])
    assert {"X.shared", "X.shared1", "X.shared2"} <= set(s.stages)
    f = hlotune.build(s)
    assert f.source.count("hl_acc0 = hl_vld") == 3
    ins = random_inputs(outs, seed=2)
    for got, ref in zip(as_tuple(f(*ins)), evaluate(outs, ins)):
        assert_close(got, ref, *MATMUL_F32)


@pytest.mark.parametrize("transposed", [True, False])
def test_matrix_vector_products_reduce_along_the_contiguous_axis(transposed):
    """y = tanh(W x + b): with W[i, k] (rows contiguous along k) there are no rows to reuse W
    over, so the default schedule reduces along k with SIMD instead of gathering W with a
    stride into a register tile (6.5 ms against 0.09 ms for 512 x 512); with W[k, i] the
    register tile reads W contiguously and stays."""
    from hlotune.schedules.fusion import default_schedule
    from hlotune.schedules.templates.gemm import streams_across
    n, k = 96, 80
    W = dsl.placeholder((n, k) if transposed else (k, n), "float32", name="W")
    x = dsl.placeholder((k,), "float32", name="x")
    b = dsl.placeholder((n,), "float32", name="b")
    r = dsl.reduce_axis(k, name="r")
    D = dsl.compute((n,), lambda i: dsl.sum((W[i, r] if transposed else W[r, i]) * x[r], axis=r), name="D")
    Y = dsl.compute((n,), lambda i: dsl.tanh(D[i] + b[i]), name="Y")
    assert streams_across(D.op) == transposed
    s = default_schedule([Y], hw=MACHINES[1])
    f = hlotune.build(s)
    assert ("hl_acc0 =" in f.source) != transposed
    ins = random_inputs([Y], seed=4)
    (got,), (ref,) = as_tuple(f(*ins)), evaluate([Y], ins)
    assert_close(got, ref, *MATMUL_F32)


@SETTINGS
@given(data=st.data(), batch=st.sampled_from([0, 0, 2]), m=st.sampled_from([2, 5, 13, 17, 31, 40, 64, 97]), n=SIZES,
       k=st.sampled_from([64, 96, 192]),
       ta=st.booleans(), tb=st.booleans(), epilogue=st.booleans())
def test_k_blocks_match_on_awkward_shapes(data, batch, m, n, k, ta, tb, epilogue):
    """With K blocks (``kc``) the tile accumulates a whole cache block one K block at a time;
    random configs with ``kc`` set match the reference on tails, transposes, batch axes and an
    epilogue (applied after the last K block)."""
    from hlotune.autotune.task import extract_tasks
    out = dot(batch, m, n, k, ta, tb)
    if epilogue:
        out = dsl.compute(out.shape, lambda *ix: dsl.maximum(out[ix] * 0.5, 0.0), name="E")
    (task,) = [t for t in extract_tasks([out], None, get_target("cpu")) if t.root_op is out.op]
    assume(task.family == "dot")
    space = task.space
    kcs = [v for v in space.knob("kc").values if v]
    assume(kcs)
    for _ in range(8):      # a few draws per example: most random configs break a template rule
        cfg = {**draw_config(data, space), "kc": data.draw(st.sampled_from(kcs), label="kc")}
        if data.draw(st.booleans(), label="packed"):
            # K blocks over overhanging blocks need zero-padded packs: half the draws have them
            cfg.update(pack_a=max(space.knob("pack_a").values), pack_b=max(space.knob("pack_b").values))
        try:
            f = hlotune.build(task.schedule(cfg))
            break
        except ScheduleError as e:
            event(f"invalid: {str(e)[:40]}")
    else:
        reject()
    ins = random_inputs([out], seed=5)
    assert_close(as_tuple(f(*ins))[0], evaluate([out], ins)[0], *MATMUL_F32, err_msg=str(cfg))
    event("micro-kernel" if "hl_acc0" in f.source else "generic loops")


@pytest.mark.parametrize("kc", [32, 64])
def test_k_blocks_keep_the_micro_kernel_and_change_only_the_k_loop(kc):
    """kc=32 on a 70 x 96 x 128 dot: the register tile still renders as the micro-kernel, now
    inside a loop over the K blocks, reading the packed panels one K block at a time; the
    answer matches, also with a tail block of rows. The tile is two of the machine's vectors
    wide (the kernel is built for this machine: AVX2 or AVX-512)."""
    out = dot(0, 70, 96, 128, False, False)
    s = hlotune.Schedule(out)
    t = TEMPLATES["dot"]
    hw = get_target("cpu").hardware
    cfg = {"mr": 4, "nr": 2 * hw.lanes(4), "mb": 3, "nb": 1, "order": "nm", "pack_a": 1, "pack_b": 1,
           "unroll_k": 2, "parallel": 1, "kc": kc}
    t.apply(s, s.stage(out), cfg, hw)
    f = hlotune.build(s)
    assert micro_kernels(f.source) == 1
    ko = next(line for line in f.source.splitlines() if "_outer < " in line and "v_r" in line)
    assert f"< {128 // kc};" in ko
    ins = random_inputs([out], seed=6)
    assert_close(f(*ins), evaluate([out], ins)[0], *MATMUL_F32)


def test_k_blocks_refuse_a_single_block_with_a_tail_and_old_configs_mean_none():
    """A single cache block is the whole axis: with kc its tiles must divide it (else the tile
    would leave the registers); a config recorded before kc existed means kc=0."""
    out = dot(0, 70, 96, 128, False, False)
    t = TEMPLATES["dot"]
    hw = Hardware(vector_bytes=64, vector_regs=32, threads=2)
    cfg = {"mr": 4, "nr": 32, "mb": 1, "nb": 1, "order": "nm", "pack_a": 1, "pack_b": 1, "unroll_k": 1, "parallel": 1}
    s = hlotune.Schedule(out)
    with pytest.raises(ScheduleError, match="kc=32 with one cache block of 70"):
        t.apply(s, s.stage(out), {**cfg, "kc": 32}, hw)
    old, new = hlotune.Schedule(out), hlotune.Schedule(out)
    t.apply(old, old.stage(out), cfg, hw)
    t.apply(new, new.stage(out), {**cfg, "kc": 0}, hw)
    assert str(old.lower()) == str(new.lower())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), layout=st.sampled_from(["NHWC", "NCHW"]), hw=st.sampled_from([6, 9]),
       c_in=st.sampled_from([64, 96]), c_out=st.sampled_from([16, 33]), ksz=st.sampled_from([1, 3]),
       stride=st.sampled_from([1, 2]))
def test_k_blocks_on_convolutions_match(data, layout, hw, c_in, c_out, ksz, stride):
    """Convolutions block their longest reduction (the input channels) the same way."""
    out = conv(layout, hw, c_in, c_out, ksz, stride, False)
    if classify(hlotune.Schedule(out).stage(out)) in ("dot", "conv"):
        run_config(out, data, HOST, k_blocks=True)


def test_k_block_knob_domain_refuses_sizes_no_workload_has():
    """An imported log is checked against the knob's domain before its workload is known: kc is
    0 or one of the K block sizes, never a size like 100 or a flag."""
    from hlotune.dsl.errors import ConfigError
    t = TEMPLATES["dot"]
    t.check_domain({"kc": 0})
    t.check_domain({"kc": 128})
    for bad in (100, -32, True, 128.0, "128"):
        with pytest.raises(ConfigError, match="kc"):
            t.check_domain({"kc": bad})


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (37, 50, 29)])
def test_16_bit_operands_run_in_the_register_micro_kernel(dtype, shape):
    """A bf16 or f16 dot accumulating in f32 (as JAX's ``preferred_element_type``): its operands
    are loaded as 16-bit vectors and widened to f32 in the micro-kernel (exact), so the register
    tile runs as it does for f32 operands (before, the converts kept the tile out of registers)."""
    m, n, k = shape
    A = dsl.placeholder((m, k), dtype, name="A")
    B = dsl.placeholder((k, n), dtype, name="B")
    r = dsl.reduce_axis(k, name="r")
    out = dsl.compute((m, n), lambda i, j: dsl.sum(dsl.cast(A[i, r], "float32") * dsl.cast(B[r, j], "float32"), axis=r),
                      name="C")
    f = hlotune.build(hlotune.schedules.fusion.default_schedule([out], hw=HOST))
    if HOST.vector_bytes >= 16:
        # bf16 with an even K on a machine with AVX512-BF16 takes K pairs instead (tests/test_bf16_pairs.py)
        pairs = dtype == "bfloat16" and "avx512bf16" in HOST.isa and k % 2 == 0
        assert micro_kernels(f.source) == 1
        assert ("hl_vdot_bf16_f32x" if pairs else f"hl_vld_{dtype}_f32x") in f.source
    ins = random_inputs([out], seed=3)
    assert_close(f(*ins), evaluate([out], ins)[0], *MATMUL_F32)


def test_epilogue_on_a_tail_block_of_rows_matches():
    """A residual add on a 7x40 dot in 1x32 tiles, rows in blocks of 4 (the second block has 3)
    and columns in blocks of 32 (the second has 8): gcc 12.2 at -O3 with -fwrapv got rows 4-6
    wrong until induction-variable optimization was turned off (runtime/cpu.py)."""
    from hlotune.autotune.task import extract_tasks
    E, _ = dot_epilogue(7, 40, 3, "residual")
    (task,) = [t for t in extract_tasks([E], None, get_target("cpu")) if t.root_op is E.op]
    cfg = {"mr": 1, "nr": 32, "mb": 2, "nb": 2, "order": "nm", "pack_a": 0, "pack_b": 0, "unroll_k": 1,
           "parallel": 1, "kc": 0}
    f = hlotune.build(task.schedule({k.name: cfg.get(k.name, k.values[0]) for k in task.space.knobs}))
    ins = random_inputs([E], seed=3)
    assert_close(as_tuple(f(*ins))[0], evaluate([E], ins)[0], *MATMUL_F32)
