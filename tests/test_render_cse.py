"""Generated code computes a statement's shared subexpressions once (runtime/codegen/cse.py):
exact GELU's erfc holds its argument 30 times and a select whose arms share an exp; rendered as a
tree, gcc computed that exp twice and divided four times per element. Temporaries are declared
only for float values that are safe to compute unconditionally: a load that only a select's arm
reads (the arm may guard an out-of-bounds index) stays inside its arm. Answers against jax/numpy."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from scipy import special
from _checks import assert_close
from hlotune.dsl import dtypes as dt
from hlotune.dsl.expr import Expr, binary, const, select
from hlotune.dsl.ops import Op
from hlotune.runtime.codegen.cse import shared
from hlotune.schedules.loops import Buffer
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune


def _kernel_text(compiled) -> str:
    """The generated kernel functions' bodies (helper definitions left out)."""
    out = []
    for k in compiled.graph.kernels:
        src = k.source
        out.append(src[src.index(f"int {k.lowered.name}("):])
    return "\n".join(out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_gelu_computes_its_exp_once(dtype):
    x = np.random.default_rng(0).normal(0, 3, (16, 96))
    text = jax.jit(lambda v: jax.nn.gelu(v, approximate=False)).lower(x.astype(np.float32)).as_text()
    if dtype is np.float64:
        text = text.replace("f32", "f64")
    m = hlotune.compile(hlotune.load_hlo(text), target="cpu")
    body = _kernel_text(m)
    assert body.count("hl_expf(" if dtype is np.float32 else "exp(") == 1, body
    assert len(re.findall(r"[\w)] / ", body)) <= 4, body
    assert re.search(r"const (float|double) hl_t\d+ = ", body)
    want = x * 0.5 * special.erfc(-x * float(np.float32(np.sqrt(0.5))))   # the text's f32 constant
    assert_close(m(x.astype(dtype)), want.astype(dtype))


def _load(buf: Buffer, k: int) -> Expr:
    return Expr(Op.LOAD, buf.dtype, (const(k, dt.index),), buf)


def test_a_load_only_a_select_arm_reads_is_not_hoisted():
    x = Buffer("x", dt.float32, (8,))
    guarded = _load(x, 3)
    twice = binary(Op.MUL, guarded, guarded)
    zero = const(0.0, dt.float32)
    arm_only = select(binary(Op.GT, _load(x, 0), zero), binary(Op.ADD, twice, twice), zero)
    assert shared(arm_only) == []
    read_anyway = select(binary(Op.GT, guarded, zero), binary(Op.ADD, twice, twice), zero)
    assert [r.op for r, _ in shared(read_anyway)] == [Op.LOAD, Op.MUL]


def test_structurally_equal_copies_are_one_temporary():
    x, y = Buffer("x", dt.float32, (4,)), Buffer("y", dt.float32, (4,))
    a = binary(Op.MUL, _load(x, 1), _load(x, 1))      # two copies of x[1]
    b = binary(Op.MUL, _load(x, 1), _load(x, 1))      # a copy of a
    c = binary(Op.MUL, _load(y, 1), _load(y, 1))      # another buffer: another value
    d = binary(Op.MUL, _load(x, 2), _load(x, 2))      # another index: another value
    got = shared(binary(Op.ADD, binary(Op.ADD, binary(Op.ADD, a, b), c), d))
    reps = [(r.op, r.arg.name if r.op is Op.LOAD else None, len(ids)) for r, ids in got]
    assert reps == [(Op.LOAD, "x", 4), (Op.MUL, None, 2), (Op.LOAD, "y", 2), (Op.LOAD, "x", 2)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["tanh", "exponential", "negate", "sine", "add", "multiply", "select",
                                 "maximum"]), min_size=2, max_size=8),
       st.integers(0, 2 ** 31 - 1))
def test_dags_with_shared_values_and_selects_match_numpy(ops, seed):
    """Random elementwise DAGs in which every value feeds two later ones (so rendered as trees
    they repeat), with selects between them: answers as numpy's."""
    lines = ["  a = f32[5,7] parameter(0)", "  b = f32[5,7] parameter(1)", "  zc = f32[] constant(0)",
             "  z = f32[5,7] broadcast(zc), dimensions={}", "  tc = f32[] constant(30)",
             "  t = f32[5,7] broadcast(tc), dimensions={}", "  uc = f32[] constant(-30)",
             "  u = f32[5,7] broadcast(uc), dimensions={}"]
    vals, ref = ["a", "b"], {}
    rng = np.random.default_rng(seed)
    xa, xb = rng.normal(0, 2, (5, 7)).astype(np.float32), rng.normal(0, 2, (5, 7)).astype(np.float32)
    env = {"a": xa, "b": xb}
    for k, op in enumerate(ops):
        p, q = vals[-1], vals[-2]
        nm = f"v{k}"
        if op in ("tanh", "exponential", "negate", "sine"):
            lines.append(f"  {nm} = f32[5,7] {op}({p})")
            f = {"tanh": np.tanh, "exponential": np.exp, "negate": np.negative, "sine": np.sin}[op]
            env[nm] = f(np.minimum(env[p], 30)) if op == "exponential" else f(env[p])
            if op == "sine":                # sin of a large, rounded argument is ill-conditioned
                lines[-1] = f"  s{k} = f32[5,7] clamp(u, {p}, t)\n  {nm} = f32[5,7] sine(s{k})"
                env[nm] = np.sin(np.clip(env[p], -30, 30))
            if op == "exponential":
                lines[-1] = f"  m{k} = f32[5,7] minimum({p}, t)\n  {nm} = f32[5,7] exponential(m{k})"
        elif op == "select":
            lines.append(f"  g{k} = pred[5,7] compare({p}, z), direction=GT\n"
                         f"  {nm} = f32[5,7] select(g{k}, {q}, {p})")
            env[nm] = np.where(env[p] > 0, env[q], env[p])
        else:
            lines.append(f"  {nm} = f32[5,7] {op}({p}, {q})")
            env[nm] = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum}[op](env[p], env[q])
        vals.append(nm)
    lines.append(f"  ROOT r = f32[5,7] add({vals[-1]}, {vals[-2]})")
    want = env[vals[-1]] + env[vals[-2]]
    text = "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"
    m = hlotune.compile(hlotune.load_hlo(text), target="cpu")
    with np.errstate(all="ignore"):
        got = m(xa, xb)
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)
