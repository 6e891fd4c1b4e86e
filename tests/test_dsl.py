"""Tests of the tensor-expression DSL: expression building, dtype promotion, constant folding,
structural keys, the numpy reference evaluator and DSLError cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _checks import BF16, argmax_reducer, assert_close, matmul
from hlotune.dsl import dtypes as dt
from hlotune.dsl.ops import Op
from hlotune.dsl.reference import evaluate

from hlotune import DSLError, dsl

I32_MIN = np.iinfo(np.int32).min


def scalar(dtype, name="x"):
    """A 0-d read of a fresh placeholder of ``dtype`` (an Expr of that dtype)."""
    return dsl.placeholder((1,), dtype, name=name)[0]


def folded(e):
    assert e.op is Op.CONST, f"expected a folded constant, got {e!r}"
    return e.arg


# ----------------------------------------------------------------------------- building

def test_compute_axes_named_after_lambda_parameters():
    A = dsl.placeholder((4, 5), "float32", name="A")
    C = dsl.compute((4, 5), lambda row, col: A[row, col] * 2.0, name="C")
    assert [v.name for v in C.axis] == ["row", "col"]
    assert [v.extent for v in C.axis] == [4, 5]
    assert C.shape == (4, 5) and C.dtype is dt.float32 and C.name == "C"
    assert C.op.reduce_axis == () and not C.op.is_reduction


def test_reduction_compute_records_reduce_axes():
    C = matmul(8, 6, 5)
    (k,) = C.op.reduce_axis
    assert k.kind == "reduce" and k.extent == 5 and k.name == "k"
    assert C.op.is_reduction
    body = C.op.body[0]
    assert body.op is Op.REDUCE and body.arg.reducer.name == "sum" and body.arg.axes == (k,)


def test_loads_and_index_arithmetic():
    A = dsl.placeholder((10,), "float32", name="A")
    i = dsl.compute((5,), lambda i: A[2 * i + 1], name="C").axis[0]
    e = A[i * 2]
    assert e.op is Op.LOAD and e.dtype is dt.float32 and e.arg.name == "A"
    assert e.src[0].dtype is dt.index


def test_tuple_compute_gives_tuple_of_tensors():
    A = dsl.placeholder((6,), "float32", name="A")
    lo, hi = dsl.compute((6,), lambda i: (dsl.min(A[i], 0.0), dsl.max(A[i], 0.0)), name="split")
    assert lo.op is hi.op and (lo.value_index, hi.value_index) == (0, 1)
    a = np.array([-2, -1, 0, 1, 2, 3], np.float32)
    r_lo, r_hi = evaluate([lo, hi], [a])
    np.testing.assert_array_equal(r_lo, np.minimum(a, 0))
    np.testing.assert_array_equal(r_hi, np.maximum(a, 0))


def test_expr_has_no_truth_value():
    with pytest.raises(DSLError, match="select"):
        bool(scalar("float32") > 1.0)


# ----------------------------------------------------------------------------- promotion

@pytest.mark.parametrize("a,b", list(itertools.product(dt.STANDARD, dt.STANDARD)),
                         ids=lambda d: d.name)
def test_binary_promotion_matches_numpy(a, b):
    got = (scalar(a, "a") + scalar(b, "b")).dtype
    assert got is dsl.dtype(np.result_type(a.np, b.np))


@pytest.mark.parametrize("d", [x for x in dt.STANDARD if not x.is_bool], ids=lambda d: d.name)
@pytest.mark.parametrize("py", [1, 1.5], ids=["int", "float"])
def test_python_scalars_are_weak_like_numpy2(d, py):
    got = (scalar(d) + py).dtype
    want = (np.zeros(1, d.np) + py).dtype
    assert got is dsl.dtype(want)
    # the scalar on the left gives the same type
    assert (py + scalar(d)).dtype is got


def test_compare_gives_bool_and_arith_keeps_operand_type():
    x = scalar("int16")
    assert (x < 3).dtype is dt.bool_
    assert dsl.equal(x, x).dtype is dt.bool_
    assert (x * 3).dtype is dt.int16
    assert dsl.isfinite(scalar("float16")).dtype is dt.bool_


def test_bfloat16_with_float16_promotes_to_float32():
    assert (scalar("bfloat16") + scalar("float16")).dtype is dt.float32
    assert dt.dtype(BF16) is dt.bfloat16
    assert dt.dtype("bf16") is dt.bfloat16 and dt.dtype(np.float32) is dt.float32


def test_bool_plus_python_float_matches_numpy():
    """Regression: bool + Python float gave float32 (numpy: float64)."""
    assert (scalar("bool") + 1.5).dtype is dt.float64


def test_numpy_scalar_is_not_truncated_into_int_operand():
    """Regression: numpy scalars were typed weakly, so I32 * np.float32(0.5) became I32 * 0."""
    A = dsl.placeholder((3,), "int32", name="A")
    assert (A[0] * np.float32(0.5)).dtype is dsl.dtype(np.result_type(np.int32, np.float32))
    C = dsl.compute((3,), lambda i: A[i] * np.float32(0.5), name="C")
    (r,) = evaluate(C, [np.array([2, 4, 7], np.int32)])
    assert r.dtype.kind == "f"
    np.testing.assert_allclose(r, [1.0, 2.0, 3.5])


def test_out_of_range_int_constant_is_a_dsl_error():
    """Regression: out-of-range int constants were accepted (raw OverflowError later)."""
    with pytest.raises(DSLError):
        scalar("uint8") + 300
    with pytest.raises(DSLError):
        scalar("uint8") + (-1)


def test_bool_subtract_rejected_at_build_time():
    """Regression: bool - bool was accepted; the reference then raised TypeError."""
    with pytest.raises(DSLError):
        scalar("bool", "a") - scalar("bool", "b")


# ----------------------------------------------------------------------------- folding

def test_integer_constant_folding_follows_c_semantics():
    c = dsl.const
    assert folded(c(2) + c(3)) == 5
    assert folded(c(7) / c(-2)) == -3          # truncates
    assert folded(c(-7) % c(2)) == -1          # sign of the dividend
    assert folded(c(-7) // c(2)) == -4         # floors
    assert folded(dsl.floormod(c(-7), c(2))) == 1
    assert folded(c(7) / c(0)) == -1           # x / 0 == -1
    assert folded(c(7) % c(0)) == 7            # x % 0 == x
    imin = c(np.int32(I32_MIN))
    assert imin.dtype is dt.int32
    assert folded(imin / -1) == I32_MIN
    assert folded(imin % -1) == 0
    assert folded(c(1) << c(64)) == 0
    assert folded(c(-8) >> c(70)) == -1
    assert folded(dsl.shift_right_logical(c(-8), c(70))) == 0


def test_float_constant_folding():
    c = dsl.const
    assert folded(dsl.exp(c(0.0))) == 1.0
    assert folded(dsl.cast(c(3.7), "int32")) == 3
    assert folded(dsl.cast(c(-3.7), "int32")) == -3
    assert folded(dsl.cast(c(float("nan")), "int32")) == 0
    assert folded(dsl.cast(c(1e20), "int8")) == 127
    assert folded(dsl.cast(c(-1e20), "uint8")) == 0
    assert [folded(dsl.round(c(v))) for v in (0.5, 1.5, 2.5, -2.5, 3.5)] == [0.0, 2.0, 2.0, -2.0, 4.0]
    assert math.isnan(folded(dsl.max(c(float("nan")), c(1.0))))
    assert math.isnan(folded(dsl.min(c(1.0), c(float("nan")))))
    assert folded(dsl.select(c(True), c(1.0), c(2.0))) == 1.0


def test_constants_fold_inside_compute_bodies():
    A = dsl.placeholder((4,), "float32", name="A")
    C = dsl.compute((4,), lambda i: A[i] * (dsl.const(2.0) + 3.0), name="C")
    body = C.op.body[0]
    assert body.op is Op.MUL and folded(body.src[1]) == 5.0


def test_index_identities_simplify():
    i = scalar("int64")
    assert (i + 0) is i and (0 + i) is i and (i - 0) is i
    assert (i * 1) is i and (1 * i) is i and (i // 1) is i
    assert folded(i * 0) == 0 and folded(i % 1) == 0
    neg = -i
    assert -neg is i
    f = scalar("float32")
    assert (f * 0).op is Op.MUL    # not folded: NaN * 0 is NaN
    # a select on a constant condition picks its branch
    assert dsl.select(dsl.const(False), f, f * 2.0).op is Op.MUL


# ----------------------------------------------------------------------------- structural key

def _mm(M, N, K, names):
    return matmul(M, N, K, names=names)


def test_key_ignores_names():
    a = dsl.Graph(_mm(16, 8, 12, ("A", "B", "C", "k"))).key
    b = dsl.Graph(_mm(16, 8, 12, ("X", "Y", "Z", "r"))).key
    assert a == b and hash(a) == hash(b)


def test_key_ignores_axis_names_of_elementwise():
    A = dsl.placeholder((4,), name="A")
    B = dsl.placeholder((4,), name="B")
    c1 = dsl.compute((4,), lambda i: A[i] + B[i], name="c1")
    c2 = dsl.compute((4,), lambda x: A[x] + B[x], name="other")
    assert dsl.Graph(c1).key == dsl.Graph(c2).key


def test_key_of_two_stage_chain_ignores_names():
    def chain(a, b, c):
        A = dsl.placeholder((8,), name=a)
        B = dsl.compute((8,), lambda i: dsl.exp(A[i]), name=b)
        return dsl.compute((8,), lambda i: B[i] + 1.0, name=c)
    assert dsl.Graph(chain("a", "b", "c")).key == dsl.Graph(chain("x", "y", "z")).key


@pytest.mark.parametrize("other", [(32, 8, 12), (16, 16, 12), (16, 8, 24)], ids=["M", "N", "K"])
def test_key_depends_on_shapes(other):
    assert dsl.Graph(_mm(16, 8, 12, "ABCk")).key != dsl.Graph(_mm(*other, "ABCk")).key


def test_key_distinguishes_structure():
    A = dsl.placeholder((4,), name="A")
    B = dsl.placeholder((4,), name="B")
    M = dsl.placeholder((4, 4), name="M")
    D = dsl.placeholder((4,), "float64", name="D")

    def key(f, shape=(4,)):
        return dsl.Graph(dsl.compute(shape, f, name="C")).key

    keys = {
        "A+B": key(lambda i: A[i] + B[i]),
        "A+A": key(lambda i: A[i] + A[i]),
        "A*B": key(lambda i: A[i] * B[i]),
        "A+1": key(lambda i: A[i] + 1.0),
        "A+2": key(lambda i: A[i] + 2.0),
        "D+D": key(lambda i: D[i] + D[i]),
        "M": key(lambda i, j: M[i, j], (4, 4)),
        "M.T": key(lambda i, j: M[j, i], (4, 4)),
    }
    assert len(set(keys.values())) == len(keys), "two different computations share a key"


def test_key_distinguishes_reducers():
    A = dsl.placeholder((3, 4), name="A")
    keys = set()
    def reduce_rows(red):
        k = dsl.reduce_axis(4, name="k")
        return dsl.compute((3,), lambda i: getattr(dsl, red)(A[i, k], axis=k))

    for red in ("sum", "max", "min", "prod"):
        keys.add(dsl.Graph(reduce_rows(red)).key)
    assert len(keys) == 4


# ----------------------------------------------------------------------------- reference

def test_reference_elementwise():
    A = dsl.placeholder((3, 4), "float32", name="A")
    B = dsl.placeholder((4,), "float32", name="B")
    C = dsl.compute((3, 4), lambda i, j: dsl.exp(A[i, j]) * B[j] - dsl.tanh(A[i, j]), name="C")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    (r,) = evaluate(C, [a, b])
    assert_close(r, (np.exp(a) * b - np.tanh(a)).astype(np.float32))
    # inputs by name and by tensor give the same
    np.testing.assert_array_equal(evaluate(C, {"A": a, "B": b})[0], r)
    np.testing.assert_array_equal(evaluate(C, {A: a, B: b})[0], r)


@pytest.mark.parametrize("kind,npf", [("sum", np.sum), ("max", np.max), ("min", np.min),
                                      ("prod", np.prod)])
def test_reference_reductions(kind, npf):
    A = dsl.placeholder((5, 7), "float64", name="A")
    k = dsl.reduce_axis(7, name="k")
    R = dsl.compute((5,), lambda i: getattr(dsl, kind)(A[i, k], axis=k), name="R")
    a = np.random.default_rng(1).standard_normal((5, 7))
    (r,) = evaluate(R, [a])
    assert_close(r, npf(a, axis=1))


def test_reference_reduction_over_two_axes_and_where():
    A = dsl.placeholder((3, 4, 5), "float64", name="A")
    k1, k2 = dsl.reduce_axis(4, name="k1"), dsl.reduce_axis(5, name="k2")
    S = dsl.compute((3,), lambda i: dsl.sum(A[i, k1, k2], axis=[k1, k2]), name="S")
    k = dsl.reduce_axis(5, name="k")
    W = dsl.compute((3,), lambda i: dsl.sum(A[i, 0, k], axis=k, where=k < i + 2), name="W")
    a = np.random.default_rng(2).standard_normal((3, 4, 5))
    s, w = evaluate([S, W], [a])
    assert_close(s, a.sum(axis=(1, 2)))
    assert_close(w, np.array([a[i, 0, :i + 2].sum() for i in range(3)]))


def test_reference_full_reduction_to_scalar():
    # regression: the reference once reduced only index 0 of the first reduce axis for 0-d outputs
    A = dsl.placeholder((6, 7), "float32", name="A")
    k1, k2 = dsl.reduce_axis(6, name="k1"), dsl.reduce_axis(7, name="k2")
    S = dsl.compute((), lambda: dsl.sum(A[k1, k2], axis=[k1, k2]), name="S")
    a = np.arange(42, dtype=np.float32).reshape(6, 7)
    (r,) = evaluate(S, [a])
    assert r.shape == () and float(r) == 861.0


def test_reference_chunked_evaluation(monkeypatch):
    """Row chunks of the reference (CHUNK_ELEMENTS) keep index values and reductions exact."""
    from hlotune.dsl import reference
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", 16)
    A = dsl.placeholder((10, 6), "float64", name="A")
    k = dsl.reduce_axis(6, name="k")
    C = dsl.compute((10, 6), lambda i, j: A[i, j] * i + j, name="C")
    R = dsl.compute((10,), lambda i: dsl.sum(A[i, k] * k, axis=k), name="R")
    a = np.random.default_rng(5).standard_normal((10, 6))
    c, r = evaluate([C, R], [a])
    assert_close(c, a * np.arange(10)[:, None] + np.arange(6))
    assert_close(r, (a * np.arange(6)).sum(axis=1))


def test_reference_matmul():
    C = matmul(16, 12, 20, dtype="float64")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 20)), rng.standard_normal((20, 12))
    (r,) = evaluate(C, [a, b])
    assert_close(r, a @ b)


def test_reference_argmax_comm_reducer():
    argmax = argmax_reducer()
    A = dsl.placeholder((6, 10), "float32", name="A")
    k = dsl.reduce_axis(10, name="k")
    idx, val = dsl.compute((6,), lambda i: argmax((k, A[i, k]), axis=k), name="am")
    assert idx.dtype is dt.int64 and val.dtype is dt.float32
    a = np.random.default_rng(4).standard_normal((6, 10)).astype(np.float32)
    a[2, 3] = a[2, 7] = 9.0                      # a tie: the first index wins
    a[4, :] = -1.0                               # all equal
    ri, rv = evaluate([idx, val], [a])
    np.testing.assert_array_equal(ri, np.argmax(a, axis=1))
    np.testing.assert_array_equal(rv, a.max(axis=1))


def test_reference_integer_division_semantics():
    a = np.array([7, -7, 7, -7, 5, -5, I32_MIN, I32_MIN, 0, 6], np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, -1, 0, 0, 3], np.int32)
    A = dsl.placeholder((10,), "int32", name="A")
    B = dsl.placeholder((10,), "int32", name="B")
    q = dsl.compute((10,), lambda i: A[i] / B[i], name="q")
    r = dsl.compute((10,), lambda i: A[i] % B[i], name="r")
    rq, rr = evaluate([q, r], [a, b])
    np.testing.assert_array_equal(rq, [3, -3, -3, 3, -1, -1, I32_MIN, -1, -1, 2])
    np.testing.assert_array_equal(rr, [1, -1, 1, -1, 5, -5, 0, I32_MIN, 0, 0])
    # // and floormod floor (divisors != 0)
    fq = dsl.compute((10,), lambda i: A[i] // B[i], name="fq")
    fm = dsl.compute((10,), lambda i: dsl.floormod(A[i], B[i]), name="fm")
    rfq, rfm = evaluate([fq, fm], [a, b])
    nz = b != 0
    np.testing.assert_array_equal(rfq[:4], [3, -4, -4, 3])
    np.testing.assert_array_equal(rfm[:4], [1, 1, -1, -1])
    np.testing.assert_array_equal(rfm[nz], np.mod(a[nz].astype(np.int64), b[nz]).astype(np.int32))


def test_reference_int64_min_division():
    """Regression: INT64_MIN / d (d != +-1) had the wrong sign (np.abs overflow)."""
    imin = -2**63
    assert folded(dsl.const(imin) / 2) == -2**62
    A = dsl.placeholder((3,), "int64", name="A")
    C = dsl.compute((3,), lambda i: A[i] / 3, name="C")
    (r,) = evaluate(C, [np.array([imin, imin + 1, 9], np.int64)])
    np.testing.assert_array_equal(r, [-3074457345618258602, -3074457345618258602, 3])


def test_reference_float16_rounds_each_op():
    A = dsl.placeholder((3,), "float16", name="A")
    C = dsl.compute((3,), lambda i: (A[i] + 1024.0) - 1024.0, name="C")
    (r,) = evaluate(C, [np.array([0.25, 0.5, 1.0], np.float16)])
    # 1024.25 is not a float16: the intermediate rounds to 1024 (0.5 ties to even)
    np.testing.assert_array_equal(r, np.array([0.0, 0.0, 1.0], np.float16))


def test_reference_input_errors():
    A = dsl.placeholder((4,), name="A")
    C = dsl.compute((4,), lambda i: A[i] + 1.0, name="C")
    with pytest.raises(DSLError, match="inputs expected"):
        evaluate(C, [])
    with pytest.raises(DSLError, match="'A'"):
        evaluate(C, [np.zeros(5, np.float32)])
    with pytest.raises(DSLError, match="'A'"):
        evaluate(C, {"B": np.zeros(4, np.float32)})
    D = dsl.compute((4,), lambda i: A[i + 1], name="D")
    with pytest.raises(DSLError, match="'A'"):
        evaluate(D, [np.zeros(4, np.float32)])


def test_reference_bfloat16_to_int_cast_saturates():
    """Regression: bfloat16 -> int did not saturate (ml_dtypes kind is 'V')."""
    x = np.array([float("-inf"), 1e30, -1e30, 3.5], BF16)
    A = dsl.placeholder((4,), "bfloat16", name="A")
    C = dsl.compute((4,), lambda i: A[i].astype("int32"), name="C")
    (r,) = evaluate(C, [x])
    np.testing.assert_array_equal(r, [I32_MIN, 2**31 - 1, I32_MIN, 3])


def test_reference_float_to_uint64_cast():
    """Regression: every float >= 2**63 saturated to UINT64_MAX."""
    x = np.array([1e19, 2.0**63, 2.0**64, -1.0])
    A = dsl.placeholder((4,), "float64", name="A")
    C = dsl.compute((4,), lambda i: A[i].astype("uint64"), name="C")
    (r,) = evaluate(C, [x])
    np.testing.assert_array_equal(r, np.array([10**19, 2**63, 2**64 - 1, 0], np.uint64))


# ----------------------------------------------------------------------------- DSLError cases

def _dsl_error_cases():
    A = dsl.placeholder((4, 5), "float32", name="A")
    I = dsl.placeholder((4,), "int32", name="I")

    def data_axis():
        return dsl.compute((2,), lambda i: A[i, 0]).axis[0]

    def with_k(body):
        """compute((4,), body(i, k)) with a fresh reduce axis k."""
        def make():
            k = dsl.reduce_axis(5, name="k")
            return dsl.compute((4,), lambda i: body(i, k))
        return make

    return {
        "index arity low": (lambda: A[1], "2 dimensions, indexed with 1"),
        "index arity high": (lambda: A[1, 2, 3], "indexed with 3"),
        "float index": (lambda: A[0, 1.5], "integer"),
        "exp of int": (lambda: dsl.exp(I[0]), "exp needs a float"),
        "sqrt of int": (lambda: dsl.sqrt(I[0]), "float"),
        "bitwise on float": (lambda: A[0, 0] & A[0, 1], "integer or bool"),
        "unindexed tensor": (lambda: A + 1.0, "indexed"),
        "lambda arity": (lambda: dsl.compute((4,), lambda i, j: A[i, j]), "2 indices"),
        "reduce axis outside reduction": (with_k(lambda i, k: A[i, k]), "'k'"),
        "reduction not outermost": (with_k(lambda i, k: dsl.sum(A[i, k], axis=k) + 1.0), None),
        "reduction under exp": (with_k(lambda i, k: dsl.exp(dsl.sum(A[i, k], axis=k))), None),
        "reduce over data axis": (lambda: dsl.sum(A[0, 0], axis=data_axis()), "reduce_axis"),
        "mixed tuple": (with_k(lambda i, k: (dsl.sum(A[i, k], axis=k), A[i, 0])), "every output or none"),
        "zero reduce extent": (lambda: dsl.reduce_axis(0), "positive extent"),
        "negative shape": (lambda: dsl.placeholder((-1, 2)), "negative"),
        "unknown dtype": (lambda: dsl.placeholder((2,), "datetime64"), "dtype"),
        "bitcast width": (lambda: dsl.bitcast(A[0, 0], "int64"), "bit width"),
        "rem on bool": (lambda: dsl.rem(scalar("bool", "p"), scalar("bool", "q")), "bool"),
        "graph output not tensor": (lambda: dsl.Graph([A[0, 0]]), "tensors"),
    }


_CASES = _dsl_error_cases()


@pytest.mark.parametrize("case", list(_CASES))
def test_dsl_errors(case):
    fn, words = _CASES[case]
    with pytest.raises(DSLError, match=words) as info:
        fn()
    assert isinstance(info.value, ValueError)


def test_reduction_not_outermost_without_axis_use_message():
    A = dsl.placeholder((4, 5), name="A")
    k = dsl.reduce_axis(5, name="k")
    with pytest.raises(DSLError, match="outermost"):
        dsl.compute((4,), lambda i: dsl.sum(A[i, 0], axis=k) * 2.0)


def test_reduction_not_outermost_message():
    """Regression: the message blamed a reduce axis 'used outside of a reduction'."""
    A = dsl.placeholder((4, 5), name="A")
    k = dsl.reduce_axis(5, name="k")
    with pytest.raises(DSLError, match="outermost"):
        dsl.compute((4,), lambda i: dsl.sum(A[i, k], axis=k) + 1.0)
