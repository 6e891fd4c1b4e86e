"""Dots in K groups (the gemm template's ``kgroup``): bf16 pairs into f32 (AVX512-BF16's
``vdpbf16ps``) and int8 quads into int32 (AVX512-VNNI's ``vpdpbusd``; s8 x s8 with a
compensation). Random shapes and configs match the reference both with the instruction and with
the portable fallback the same C takes where the compiler does not target it; the knob is
offered only where it applies; the instruction really is what the tile compiles to."""

from __future__ import annotations

import dataclasses
import platform
import shutil
import subprocess

import numpy as np
import pytest
from _checks import MATMUL_F32, as_tuple, assert_close, draw_config, random_inputs
from _checks import root_template as _stage
from _checks import typed_dot as group_dot
from hlotune.dsl.errors import ScheduleError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.cpu import DEFAULT_FLAGS, CCompiler
from hlotune.runtime.targets import get_target
from hlotune.schedules.hardware import Hardware
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl

CPU = get_target("cpu")
HOST = CPU.hardware
X86 = platform.machine() in ("x86_64", "AMD64")
#: the host's machine, and smaller ones, as if they had the instructions (the C decides at compile time)
MACHINES = [dataclasses.replace(h, isa=(*h.isa, "avx512bf16", "avx512vnni")) for h in
            (HOST, Hardware(vector_bytes=32, vector_regs=16, threads=2), Hardware(vector_bytes=16, threads=1))]
#: the same kernels compiled without the instruction: the fallback, on any host
NO_ISA = dataclasses.replace(CPU, compiler=CCompiler(flags=(*DEFAULT_FLAGS, "-mno-avx512bf16", "-mno-avx512vnni"))) \
    if X86 else CPU
#: (A, B, accumulator) of each kind
KINDS = [("bfloat16", "bfloat16", "float32"), ("int8", "int8", "int32"), ("uint8", "int8", "int32"),
         ("int8", "uint8", "int32")]
SIZES = st.sampled_from([1, 2, 3, 5, 7, 13, 16, 17, 31, 40, 64])
EVEN = st.sampled_from([4, 8, 12, 16, 20, 32, 40, 64])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), batch=st.sampled_from([0, 0, 2]), m=SIZES, n=SIZES, k=EVEN, ta=st.booleans(),
       tb=st.booleans(), machine=st.sampled_from(range(len(MACHINES))), fallback=st.booleans(),
       kind=st.sampled_from(KINDS), narrow_out=st.sampled_from([False, False, True]))
def test_random_k_group_configs_match_with_and_without_the_instruction(data, batch, m, n, k, ta, tb, machine,
                                                                       fallback, kind, narrow_out):
    out_dtype = "bfloat16" if narrow_out and kind[2] == "float32" else kind[2]
    out = group_dot(batch, m, n, k, ta, tb, out_dtype, kind)
    s, stage, t = _stage(out)
    space = t.space(stage, MACHINES[machine])
    if t.family != "dot":       # a dot too small for a register tile
        reject()
    g = 2 if kind[2] == "float32" else 4
    assert space.knob("kgroup").values == (1, g)
    cfg = {**draw_config(data, space), "kgroup": g, "pack_a": 1, "pack_b": 1}
    try:
        t.apply(s, stage, cfg, MACHINES[machine])
        f = hlotune.build(s, NO_ISA if fallback else CPU)
    except ScheduleError as e:
        event(f"invalid: {str(e)[:40]}")
        reject()
    ins = random_inputs([out], seed=4)
    (got,) = as_tuple(f(*ins))
    (ref,) = evaluate([out], ins)
    if out_dtype == "int32":
        np.testing.assert_array_equal(got, ref, err_msg=str(cfg))
    elif out_dtype == "float32":
        assert_close(got, ref, *MATMUL_F32, err_msg=str(cfg))
    else:   # one bf16 rounding of nearly the same f32 sum: at most one bf16 step apart
        np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=2 ** -7, atol=1e-2)
    event("group micro-kernel" if "hl_vdot_" in f.source else "generic loops")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k[0]}x{k[1]}")
@pytest.mark.parametrize("shape", [(64, 64, 64), (37, 50, 32), (6, 5, 4), (1, 33, 20)])
def test_group_micro_kernel_is_emitted_and_matches(shape, kind):
    """Where the register tile fits, the group micro-kernel takes it (``hl_vdot_<kind>``), tails
    included (the packs are zero-padded); the answers match in both compilations, int32 ones
    exactly (s8 x s8 through the compensation too)."""
    m, n, k = shape
    out = group_dot(0, m, n, k, False, False, kind[2], kind)
    ins = random_inputs([out], seed=5)
    (ref,) = evaluate([out], ins)
    for target in (CPU, NO_ISA):
        s, stage, t = _stage(out)
        cfg = {**t.default_config(stage, MACHINES[0]), "kgroup": 2 if kind[2] == "float32" else 4,
               "pack_a": 1, "pack_b": 1}
        t.apply(s, stage, cfg, MACHINES[0])
        f = hlotune.build(s, target)
        assert "hl_vdot_" in f.source
        if kind[2] == "int32":
            np.testing.assert_array_equal(f(*ins), ref)
        else:
            assert_close(f(*ins), ref, *MATMUL_F32)


def test_knob_is_offered_only_where_it_applies():
    """kgroup needs the kind's instruction, its operand types, K a multiple of the group and
    both operands packable; u8 x u8 has no instruction."""
    plain = dataclasses.replace(HOST, isa=tuple(x for x in HOST.isa if x not in ("avx512bf16", "avx512vnni")))
    s8 = KINDS[1]
    for out, hw, want in [(group_dot(0, 8, 32, 16, False, False), MACHINES[0], (1, 2)),
                          (group_dot(0, 8, 32, 16, False, False), plain, (1,)),
                          (group_dot(0, 8, 32, 15, False, False), MACHINES[0], (1,)),
                          (group_dot(0, 8, 32, 16, False, False, "int32", s8), MACHINES[0], (1, 4)),
                          (group_dot(0, 8, 32, 16, False, False, "int32", s8), plain, (1,)),
                          (group_dot(0, 8, 32, 18, False, False, "int32", s8), MACHINES[0], (1,)),
                          (group_dot(0, 8, 32, 16, False, False, "int32", ("uint8", "uint8", "int32")),
                           MACHINES[0], (1,))]:
        _, stage, t = _stage(out)
        assert t.space(stage, hw).knob("kgroup").values == want
    A = dsl.placeholder((8, 16), "float32", name="A")
    B = dsl.placeholder((16, 32), "float32", name="B")
    r = dsl.reduce_axis(16, name="r")
    out = dsl.compute((8, 32), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="C")
    _, stage, t = _stage(out)
    assert t.space(stage, MACHINES[0]).knob("kgroup").values == (1,)


def test_k_groups_without_packing_are_refused_by_name():
    out = group_dot(0, 16, 32, 16, False, False)
    s, stage, t = _stage(out)
    cfg = {**t.default_config(stage, MACHINES[0]), "kgroup": 2, "pack_a": 0}
    with pytest.raises(ScheduleError, match="kgroup=2"):
        t.apply(s, stage, cfg, MACHINES[0])


@pytest.mark.skipif(not X86 or shutil.which("gcc") is None, reason="needs gcc targeting x86-64")
@pytest.mark.parametrize("kind, insn, flag", [(KINDS[0], "vdpbf16ps", "avx512bf16"), (KINDS[1], "vpdpbusd", "avx512vnni")])
def test_group_tile_compiles_to_its_instruction_exactly_where_the_compiler_targets_it(kind, insn, flag):
    """The generated C asks for the instruction by its macro: with it the tile's inner loop is
    ``vdpbf16ps``/``vpdpbusd``; without, multiply-adds (compiled only: any x86 host checks both)."""
    out = group_dot(0, 48, 64, 64, False, False, kind[2], kind)
    s, stage, t = _stage(out)
    t.apply(s, stage, {**t.default_config(stage, MACHINES[0]), "kgroup": 2 if kind[2] == "float32" else 4},
            MACHINES[0])
    src = hlotune.build(s).source
    asm = {}
    for name, flags in (("isa", ["-mavx512f", "-mavx512vl", f"-m{flag}", "-mfma"]),
                        ("plain", ["-mavx512f", "-mavx512vl", f"-mno-{flag}", "-mfma"])):
        p = subprocess.run(["gcc", "-O3", "-fopenmp", *flags, "-x", "c", "-S", "-o", "-", "-"], input=src,
                           capture_output=True, text=True, check=False)
        if p.returncode:
            pytest.skip(f"gcc cannot target {flag} here: {p.stderr[-200:]}")
        asm[name] = p.stdout
    assert asm["isa"].count(insn) >= 4
    assert insn not in asm["plain"] and ("vfmadd" in asm["plain"] or "vpmulld" in asm["plain"])


def test_jax_style_bf16_dot_takes_the_group_kernel_where_the_host_has_it():
    """``dot_general`` of bf16 operands with ``preferred_element_type=f32``, as JAX prints it:
    compiled by default (no tuning), it matches numpy's float64 product within the f32 policy,
    and runs in K pairs on a host with AVX512-BF16."""
    hlo = """HloModule m
ENTRY e {
  a = bf16[40,64]{1,0} parameter(0)
  b = bf16[64,48]{1,0} parameter(1)
  ROOT d = f32[40,48]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    c = hlotune.compile(hlotune.load_hlo(hlo))
    import ml_dtypes
    rng = np.random.default_rng(6)
    a = rng.standard_normal((40, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 48)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(c(a, b), want.astype(np.float32), *MATMUL_F32)
    if "avx512bf16" in HOST.isa:
        assert any("hl_vdot_bf16" in k.source for k in c.kernels)
