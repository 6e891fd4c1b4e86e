"""Column reductions (a one-axis output reduced over leading axes, its axis the contiguous one:
bias gradients, batch-norm statistics): the default schedule keeps the reductions outside and
the output's axis inside as SIMD lanes, split across threads in blocks. Checked against numpy."""

from __future__ import annotations

import numpy as np
from hlotune.dsl.expr import AxisKind
from hlotune.runtime.module import CompiledGraph
from hlotune.runtime.targets import get_target
from hlotune.schedules.fusion import default_schedule
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlotune import dsl


def column_sum(rows: int, mid: int, cols: int, kind: str):
    x = dsl.placeholder((rows, mid, cols), "float32", name="x")
    a, b = dsl.reduce_axis(rows, name="a"), dsl.reduce_axis(mid, name="b")
    red = dsl.sum if kind == "sum" else dsl.max
    y = dsl.compute((cols,), lambda j: red(x[a, b, j] * x[a, b, j] if kind == "sum" else x[a, b, j], axis=[a, b]),
                    name="y")
    return x, y


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 300), st.integers(1, 9), st.integers(1, 100), st.sampled_from(["sum", "max"]),
       st.integers(1, 2))
def test_column_reductions_match_numpy(rows, mid, cols, kind, threads):
    x, y = column_sum(rows, mid, cols, kind)
    c = CompiledGraph([y], [x], get_target("cpu", threads=threads))
    a = np.random.default_rng(rows * cols).standard_normal((rows, mid, cols)).astype(np.float32)
    want = (a.astype(np.float64) ** 2).sum((0, 1)) if kind == "sum" else a.max((0, 1))
    np.testing.assert_allclose(c(a), want, rtol=2e-5, atol=1e-4)


def test_default_puts_the_reductions_outside_and_the_columns_in_lanes():
    x, y = column_sum(784, 32, 32, "max")
    s = default_schedule(dsl.Graph([y], [x]), hw=get_target("cpu", threads=2).hardware)
    st_ = s.stages[y.op.name]
    kinds = [v.kind for v in st_.leaf]
    assert kinds[-1] is AxisKind.DATA and AxisKind.REDUCE in kinds[:-1]      # lanes innermost
    assert kinds[0] is AxisKind.DATA and st_.leaf[0].extent == 2             # one block per thread
