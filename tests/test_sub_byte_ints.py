"""int2/int4/uint2/uint4: every op on every pair of values, in the reference and in generated C,
against an oracle written with Python integers (two's complement wrap-around at the type's width,
XLA's rules for division by zero, INT_MIN / -1 and shifts by the width or more); conversions
(wrapping from integers, saturating from floats); one element per byte, upper bits zero."""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np
import pytest
from hlotune.dsl import dtypes as dt
from hlotune.dsl.reference import evaluate
from hlotune.runtime.module import CompiledGraph

import hlotune
from hlotune import dsl

TYPES = dt.SUB_BYTE_INTS
IDS = [d.name for d in TYPES]


def values(d) -> list[int]:
    info = ml_dtypes.iinfo(d.np)
    return list(range(int(info.min), int(info.max) + 1))


def wrap(x: int, d) -> int:
    x &= (1 << d.bits) - 1
    return x - (1 << d.bits) if d.kind == "i" and x >> (d.bits - 1) else x


def _div(a, b, d):
    if b == 0:
        return wrap(-1, d)
    return wrap(int(a / b), d) if a * b >= 0 else wrap(-(abs(a) // abs(b)), d)


def _rem(a, b, d):
    return a if b == 0 else wrap(int(math.fmod(a, b)), d)


def _shift(kind, a, b, d):
    u = a & ((1 << d.bits) - 1)
    if not 0 <= b < d.bits:
        return (-1 if a < 0 else 0) if kind == "shra" else 0
    return wrap(u << b if kind == "shl" else u >> b if kind == "shrl" else a >> b, d)


def _pow(a, b, d):
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return wrap(a ** b, d)


BINARY = {
    "add": (lambda x, y: x + y, lambda a, b, d: wrap(a + b, d)),
    "sub": (lambda x, y: x - y, lambda a, b, d: wrap(a - b, d)),
    "mul": (lambda x, y: x * y, lambda a, b, d: wrap(a * b, d)),
    "div": (lambda x, y: x / y, _div),
    "rem": (lambda x, y: x % y, _rem),
    "max": (dsl.maximum, lambda a, b, d: max(a, b)),
    "min": (dsl.minimum, lambda a, b, d: min(a, b)),
    "and": (lambda x, y: x & y, lambda a, b, d: wrap(a & b, d)),
    "or": (lambda x, y: x | y, lambda a, b, d: wrap(a | b, d)),
    "xor": (lambda x, y: x ^ y, lambda a, b, d: wrap(a ^ b, d)),
    "shl": (lambda x, y: x << y, lambda a, b, d: _shift("shl", a, b, d)),
    "shra": (lambda x, y: x >> y, lambda a, b, d: _shift("shra", a, b, d)),
    "shrl": (dsl.shift_right_logical, lambda a, b, d: _shift("shrl", a, b, d)),
    "pow": (dsl.pow, _pow),
}
UNARY = {
    "neg": (lambda x: -x, lambda a, d: wrap(-a, d)),
    "abs": (dsl.abs, lambda a, d: wrap(abs(a), d)),
    "not": (lambda x: ~x, lambda a, d: wrap(~a, d)),
    "sign": (dsl.sign, lambda a, d: (a > 0) - (a < 0)),
    # counts wrap too: popcnt(-1) of an int2 is 2, which is -2 in two bits (as LLVM's ctpop on i2)
    "popcnt": (dsl.popcount, lambda a, d: wrap((a & ((1 << d.bits) - 1)).bit_count(), d)),
    "clz": (dsl.clz, lambda a, d: wrap(d.bits - (a & ((1 << d.bits) - 1)).bit_length(), d)),
}


@functools.cache
def _graph(d):
    n = len(values(d))
    a = dsl.placeholder((n, n), d, "a")
    b = dsl.placeholder((n, n), d, "b")

    def bin_(name, f):
        return dsl.compute((n, n), lambda i, j: f(a[i, j], b[i, j]), name=name)

    def un(name, f):
        return dsl.compute((n, n), lambda i, j: f(a[i, j]), name=name)
    outs = [bin_(k, f) for k, (f, _) in BINARY.items()] + [un(k, f) for k, (f, _) in UNARY.items()]
    return outs, [a, b]


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_every_op_on_every_pair(d):
    v = values(d)
    n = len(v)
    xa = np.array([[x] * n for x in v], np.int64).astype(d.np)
    xb = np.array([v] * n, np.int64).astype(d.np)
    outs, ins = _graph(d)
    ref = evaluate(outs, [xa, xb], ins)
    got = CompiledGraph(outs, ins, "cpu")(xa, xb)
    names = list(BINARY) + list(UNARY)
    for name, r, g in zip(names, ref, got):
        if name in BINARY:
            want = [[BINARY[name][1](x, y, d) for y in v] for x in v]
        else:
            want = [[UNARY[name][1](x, d)] * n for x in v]
        w = np.array(want, np.int64)
        np.testing.assert_array_equal(r.astype(np.int64), w, err_msg=f"reference {d} {name}")
        np.testing.assert_array_equal(g.astype(np.int64), w, err_msg=f"C {d} {name}")
        assert (g.view(np.uint8) >> d.bits == 0).all(), f"{d} {name}: upper bits of a stored element set"


@pytest.mark.parametrize("d", TYPES, ids=IDS)
def test_conversions(d):
    """From int32: wrap; from float: truncate, saturate, NaN -> 0 (XLA); to float and back."""
    ints = np.arange(-40, 41, dtype=np.int32)
    floats = np.array([0.0, -0.0, 0.9, -0.9, 1.5, -2.5, 7.9, -8.5, 100.0, -100.0, np.inf, -np.inf, np.nan],
                      np.float32)
    xi = dsl.placeholder(ints.shape, "int32", "xi")
    xf = dsl.placeholder(floats.shape, "float32", "xf")
    outs = [dsl.compute(ints.shape, lambda i: xi[i].astype(d), name="from_int"),
            dsl.compute(floats.shape, lambda i: xf[i].astype(d), name="from_float"),
            dsl.compute(ints.shape, lambda i: xi[i].astype(d).astype("float32"), name="round_trip")]
    info = ml_dtypes.iinfo(d.np)
    want_i = np.array([wrap(int(x), d) for x in ints])
    sat = np.clip(np.nan_to_num(np.trunc(floats.astype(np.float64)), nan=0, posinf=info.max, neginf=info.min),
                  info.min, info.max)
    for res in (evaluate(outs, [ints, floats], [xi, xf]), CompiledGraph(outs, [xi, xf], "cpu")(ints, floats)):
        np.testing.assert_array_equal(res[0].astype(np.int64), want_i)
        np.testing.assert_array_equal(res[1].astype(np.int64), sat.astype(np.int64))
        np.testing.assert_array_equal(res[2], want_i.astype(np.float32))


def test_hlo_module_with_s4_and_u4():
    text = """HloModule m
ENTRY e {
  a = s4[8] parameter(0)
  b = u4[8] parameter(1)
  c = s4[8] constant({1, -1, 7, -8, 0, 3, -3, 5})
  s = s4[8] add(a, c)
  m = s4[8] multiply(s, a)
  u = u4[8] convert(m)
  v = u4[8] subtract(b, u)
  w = s32[8] convert(v)
  x = s4[8] bitcast-convert(b)
  ROOT t = (s4[8], u4[8], s32[8], s4[8]) tuple(m, v, w, x)
}"""
    a = np.array([7, -8, 3, -1, 0, 4, -4, 2], ml_dtypes.int4)
    b = np.array([0, 15, 8, 1, 7, 9, 3, 12], ml_dtypes.uint4)
    m = hlotune.load_hlo(text)
    got = hlotune.compile(m)(a, b)
    ref = evaluate(list(m.outputs), [a, b], list(m.params))
    c = np.array([1, -1, 7, -8, 0, 3, -3, 5])
    s = [wrap(int(x) + int(y), dt.int4) for x, y in zip(a.astype(int), c)]
    mm = [wrap(x * int(y), dt.int4) for x, y in zip(s, a.astype(int))]
    v = [wrap(int(y) - wrap(x, dt.uint4), dt.uint4) for x, y in zip(mm, b.astype(int))]
    x = [wrap(int(y), dt.int4) for y in b.astype(int)]
    for res in (got, ref):
        np.testing.assert_array_equal(res[0].astype(int), mm)
        np.testing.assert_array_equal(res[1].astype(int), v)
        np.testing.assert_array_equal(res[2], v)
        np.testing.assert_array_equal(res[3].astype(int), x)


def test_opencl_every_op_on_every_pair_of_int4():
    from hlotune.dsl.errors import HlotuneError
    from hlotune.runtime.targets import get_target
    try:
        t = get_target("opencl")
    except HlotuneError as e:     # no pyopencl (MissingDependencyError), no device (TargetError)
        pytest.skip(f"no OpenCL device: {e}")
    d = dt.int4
    v = values(d)
    n = len(v)
    xa = np.array([[x] * n for x in v], np.int64).astype(d.np)
    xb = np.array([v] * n, np.int64).astype(d.np)
    outs, ins = _graph(d)
    for g, r in zip(CompiledGraph(outs, ins, t)(xa, xb), evaluate(outs, [xa, xb], ins)):
        np.testing.assert_array_equal(g.astype(np.int64), r.astype(np.int64))
