"""Shared helpers of the DSL / schedule / CPU backend tests: stated tolerances, random inputs and
"build, run, compare with the reference evaluator" in one call."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
from hlotune.dsl.reference import evaluate
from hlotune.dsl.tolerance import check, tolerance

import hlotune
from hlotune import dsl

BF16 = np.dtype(ml_dtypes.bfloat16)

#: float32 matmul / long reductions (K <= 256): summation order differs (FMA, vector lanes).
MATMUL_F32 = (1e-4, 1e-4)


def tol(dtype) -> tuple[float, float]:
    """The tolerance policy's (rtol, atol) for outputs of ``dtype`` of magnitude <= 1."""
    return tolerance(dsl.dtype(dtype).np)


def assert_close(got, ref, rtol=None, atol=None, err_msg=""):
    """Compare one kernel output with its reference: same dtype and shape; values within the
    one tolerance policy (hlotune.dsl.tolerance, as the tuner and ``run --check``; NaN equal to
    NaN), integers and bool exactly. ``rtol``/``atol`` override the policy."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype, f"{err_msg}: dtype {got.dtype} != reference {ref.dtype}"
    assert got.shape == ref.shape, f"{err_msg}: shape {got.shape} != reference {ref.shape}"
    c = check(got, ref, rtol, atol)
    assert c.ok, f"{err_msg}: {c.describe()}"


def random_array(shape, dtype, rng: np.random.Generator):
    d = dsl.dtype(dtype)
    if d.is_bool:
        return rng.random(shape) < 0.5
    if d.is_int:
        info = np.iinfo(d.np)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi + 1, size=shape).astype(d.np)
    return rng.standard_normal(shape).astype(d.np)


def random_inputs(outputs, seed=0):
    g = dsl.Graph(outputs)
    rng = np.random.default_rng(seed)
    return [random_array(t.shape, t.dtype, rng) for t in g.inputs]


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def check_schedule(s: hlotune.Schedule, inputs=None, rtol=None, atol=None, seed=0, target="cpu"):
    """Build ``s`` for ``target`` (the CPU by default), run it on ``inputs`` (random when None) and
    compare every output with the reference evaluator. Returns the kernel."""
    outs = list(s.graph.outputs)
    if inputs is None:
        inputs = random_inputs(outs, seed)
    f = hlotune.build(s, target=target)
    got = as_tuple(f(*inputs))
    ref = evaluate(outs, inputs)
    assert len(got) == len(ref)
    for t, g, r in zip(outs, got, ref):
        assert_close(g, r, rtol, atol, err_msg=f"output {t.name}")
    return f


# ----------------------------------------------------------------------------- workloads

def matmul(M=48, N=40, K=24, dtype="float32", names=("A", "B", "C", "k")):
    A = dsl.placeholder((M, K), dtype, name=names[0])
    B = dsl.placeholder((K, N), dtype, name=names[1])
    k = dsl.reduce_axis(K, name=names[3])
    return dsl.compute((M, N), lambda i, j: dsl.sum(A[i, k] * B[k, j], axis=k), name=names[2])


def row_reduce(kind="sum", M=30, K=50, dtype="float32"):
    A = dsl.placeholder((M, K), dtype, name="A")
    k = dsl.reduce_axis(K, name="k")
    return dsl.compute((M,), lambda i: getattr(dsl, kind)(A[i, k], axis=k), name="R")


def exp_chain(n=64):
    """B = exp(A); C = B + 1 (two elementwise stages)."""
    A = dsl.placeholder((n,), name="A")
    B = dsl.compute((n,), lambda i: dsl.exp(A[i]), name="B")
    C = dsl.compute((n,), lambda i: B[i] + 1.0, name="C")
    return B, C


def conv1d_chain(n=40, r=5):
    """B = 2*A + 1; C[i] = sum_r B[i + r]: the consumer reads a window of B."""
    A = dsl.placeholder((n + r - 1,), name="A")
    B = dsl.compute((n + r - 1,), lambda i: A[i] * 2.0 + 1.0, name="B")
    rk = dsl.reduce_axis(r, name="r")
    C = dsl.compute((n,), lambda i: dsl.sum(B[i + rk], axis=rk), name="C")
    return B, C, rk


def argmax_reducer():
    """(index, value) argmax; ties pick the smallest index (as numpy.argmax)."""
    def combine(x, y):
        take = dsl.greater(y[1], x[1]) | (dsl.equal(y[1], x[1]) & dsl.less(y[0], x[0]))
        return dsl.select(take, y[0], x[0]), dsl.select(take, y[1], x[1])

    def identity(dts):
        return dsl.const(-1, dts[0]), dsl.const(float("-inf"), dts[1])

    return dsl.comm_reducer(combine, identity, "argmax")


def run_module_file(hlo_path, npz_path, target="cpu"):
    """Compile an HLO file for ``target``, run it on the npz's ``arg*`` arrays and compare with
    its ``out*`` arrays (tolerances of ``hlotune.api.tolerance``); returns the check rows."""
    from hlotune.cli import check_outputs
    m = hlotune.load_hlo(hlo_path)
    z = np.load(npz_path)
    outs = hlotune.compile(m, target=target)(*[z[f"arg{k}"] for k in range(len(m.params))])
    outs = as_tuple(outs)
    assert len(outs) == len([f for f in z.files if f.startswith("out")])
    return check_outputs(outs, npz_path)


def typed_dot(batch, m, n, k, ta, tb, out_dtype="float32", kind=("bfloat16", "bfloat16", "float32")):
    """``C[b.., i, j] = sum_r acc(A[b.., i, r]) * acc(B[b.., r, j])`` of ``kind``'s operands (A
    or B stored transposed); a bf16 result rounds the f32 sum, as the HLO front-end lowers it."""
    bs = (batch,) if batch else ()
    A = dsl.placeholder(bs + ((k, m) if ta else (m, k)), kind[0], name="A")
    B = dsl.placeholder(bs + ((n, k) if tb else (k, n)), kind[1], name="B")
    r = dsl.reduce_axis(k, name="r")

    def f(*ix):
        b, i, j = ix[:-2], ix[-2], ix[-1]
        a = A[(*b, r, i)] if ta else A[(*b, i, r)]
        bb = B[(*b, j, r)] if tb else B[(*b, r, j)]
        return dsl.sum(dsl.cast(a, kind[2]) * dsl.cast(bb, kind[2]), axis=r)
    c = dsl.compute(bs + (m, n), f, name="C")
    if out_dtype == kind[2]:
        return c
    return dsl.compute(c.shape, lambda *ix: dsl.cast(c[ix], out_dtype), name="D")


def root_template(out):
    """``(schedule, root stage, template)`` of ``out`` after default fusion."""
    from hlotune.schedules.fusion import fuse_default
    from hlotune.schedules.templates.families import TEMPLATES, classify
    s = hlotune.Schedule(out)
    fuse_default(s)
    st_ = next(x for x in s.stages.values() if x.is_root)
    return s, st_, TEMPLATES[classify(st_)]


def draw_config(data, space) -> dict:
    """A config of ``space`` drawn by hypothesis ``data``, each knob labelled by its name."""
    from hypothesis import strategies as st
    return {k.name: data.draw(st.sampled_from(k.values), label=k.name) for k in space.knobs}


def mutate_token(text: str, data, token_re: str, replacements: list[str], kinds=("number", "delete", "duplicate",
                                                                               "replace")) -> str:
    """``text`` with one token (``token_re``) changed by hypothesis ``data``: a number put in, the
    token deleted or duplicated, one of ``replacements`` put in its place, or (``truncate``) the
    text cut short there."""
    from hypothesis import strategies as st
    tokens = list(re.finditer(token_re, text))
    tok = tokens[data.draw(st.integers(0, len(tokens) - 1))]
    kind = data.draw(st.sampled_from(list(kinds)))
    a, b = tok.span()
    if kind == "number":
        new = str(data.draw(st.integers(0, 70)))
    elif kind == "delete":
        new = ""
    elif kind == "duplicate":
        new = tok.group() + " " + tok.group()
    elif kind == "replace":
        new = data.draw(st.sampled_from(replacements))
    else:
        b, new = len(text), ""
    return text[:a] + new + text[b:]
