"""A select between a float load and a constant (a ReLU mask's backward pass, a causal mask)
renders branch-free when its loads are in bounds: gcc 12 vectorized the conditional form with
masked loads and, for AVX2, miscompiled it in the loop nest that fills a pack (rows 8-15 of
every 16-row tile wrong in a weight gradient built for 16 lanes). Answers are checked against
numpy on this machine, whatever its vector width."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import MATMUL_F32, assert_close, random_inputs
from hlotune.dsl.reference import evaluate
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.hardware import Hardware
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune import dsl


def weight_gradient(b: int, j: int, i: int, dtype: str = "float32"):
    """dW[j, i] = sum_k (H[k, j] > 0 ? dY[k, j] : 0) * X[k, i]."""
    dY = dsl.placeholder((b, j), dtype, name="dY")
    H = dsl.placeholder((b, j), dtype, name="H")
    X = dsl.placeholder((b, i), dtype, name="X")
    G = dsl.compute((b, j), lambda k, jj: dsl.select(H[k, jj] > 0.0, dY[k, jj], 0.0), name="G")
    k = dsl.reduce_axis(b, name="k")
    return dsl.compute((j, i), lambda jj, ii: dsl.sum(G[k, jj] * X[k, ii], axis=k), name="W")


@pytest.mark.parametrize("vector_bytes,regs", [(64, 32), (32, 16), (16, 16)])
def test_a_masked_pack_built_for_any_vector_width_matches_numpy(vector_bytes, regs):
    """The schedule is made for a machine of ``vector_bytes`` (a database shared from another
    machine), the kernel compiled for this one: the answer must not depend on the pairing."""
    W = weight_gradient(64, 96, 40)
    s = default_schedule(W, threads=Hardware(vector_bytes=vector_bytes, vector_regs=regs, fma=True, threads=2))
    f = hlotune.build(s)
    assert f.source.count("hl_sel_f32(") >= 2        # its definition, and the mask's select
    ins = random_inputs([W], seed=0)
    assert_close(f(*ins), evaluate([W], ins)[0], *MATMUL_F32)


@settings(max_examples=12, deadline=None)
@given(b=st.integers(1, 40), j=st.integers(1, 70), i=st.integers(1, 40),
       vector_bytes=st.sampled_from([16, 32, 64]), dtype=st.sampled_from(["float32", "float64"]))
def test_masked_weight_gradients_of_any_shape_match_numpy(b, j, i, vector_bytes, dtype):
    W = weight_gradient(b, j, i, dtype)
    s = default_schedule(W, threads=Hardware(vector_bytes=vector_bytes, vector_regs=32 if vector_bytes == 64 else 16,
                                             fma=True, threads=2))
    f = hlotune.build(s)
    ins = random_inputs([W], seed=1)
    dY, H, X = (np.asarray(a, dtype=np.float64) for a in ins)
    want = (np.where(H > 0, dY, 0.0).T @ X).astype(dtype)
    assert_close(np.asarray(f(*ins)), want, *MATMUL_F32)
