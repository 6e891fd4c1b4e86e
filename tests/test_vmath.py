"""The vectorizable float32 exp/log/tanh of the C backend: <= 2 ulp, IEEE special values."""

import numpy as np
import pytest

import hlotune
from hlotune import dsl


def _inputs():
    x = np.concatenate([np.linspace(-120, 120, 40001),
                        [0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 88.7228, 88.72284, -87.4, -103, -104,
                         0.624, 0.626, 8.99, 9.01],
                        np.exp(np.linspace(-90, 88, 20001)), -np.exp(np.linspace(-90, 4, 1001))])
    return x.astype(np.float32)


@pytest.mark.parametrize("fn,ref", [(dsl.exp, np.exp), (dsl.log, np.log), (dsl.tanh, np.tanh)])
def test_vector_math_within_2_ulp(fn, ref):
    x = _inputs()
    X = dsl.placeholder(x.shape, "float32", "x")
    Y = dsl.compute(x.shape, lambda i: fn(X[i]))
    s = hlotune.Schedule(Y)
    s.vectorize(Y.axis[0])
    f = hlotune.build(s)
    assert "hl_" + fn.__name__ + "f(" in f.source
    with np.errstate(all="ignore"):
        y = f(x)
        r = ref(x.astype(np.float64)).astype(np.float32)
        fin = np.isfinite(r) & (r != 0)
        assert np.array_equal(y[~fin], r[~fin], equal_nan=True)
        ulp = np.abs(y[fin].astype(np.float64) - r[fin]) / np.spacing(np.abs(r[fin])).astype(np.float64)
    assert ulp.max() <= 2.0
