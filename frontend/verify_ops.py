"""Verifier rules (see :mod:`.verify_rules`) of the ops added for JAX programs: CHLO functions
and their HLO opcodes, random numbers, linear algebra, fft, select-and-scatter, batch norm,
stochastic-convert, dynamic-reshape, ragged-dot, scan, collectives, tokens and async copies.

Each checks what XLA's shape inference checks and the declared shape it implies. The rules of
collectives only check that their values are arrays: their shapes depend on the device count,
which lowering checks (and refuses, naming why, beyond one device); refused ops (send, recv)
have no rule to pass, so lowering's reason reaches the user. Feeds take and give a token.
"""

from __future__ import annotations

from .ast import TOKEN, ArrayShape, TupleShape
from .shapecheck import array, check, expect, ints, is_float, is_int, leaves, n_operands, plain, scalar

__all__ = ["RULES"]

_FLOAT_UNARY = ("erfc", "erf_inv", "lgamma", "digamma", "cosh", "sinh", "asin", "acos", "atan", "acosh",
                "asinh", "atanh", "bessel_i1e")
_PRED_UNARY = ("is_inf", "is_pos_inf", "is_neg_inf")
_HLO_UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh")


def _same_operands(ops, n: int, want_float: bool | None):
    n_operands(ops, n)
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops)]
    for k, x in enumerate(xs[1:], 1):
        check(plain(x) == plain(xs[0]), f"operand {k} {plain(x)} differs from operand 0 {plain(xs[0])}")
    et = xs[0].element_type
    if want_float is True:
        check(is_float(et), f"needs floating-point operands, got {plain(xs[0])}")
    elif want_float is False:
        check(is_int(et), f"needs integer operands, got {plain(xs[0])}")
    return xs[0]


def float_unary(v, ins, ops):
    expect(ins, _same_operands(ops, 1, True))


def pred_unary(v, ins, ops):
    x = _same_operands(ops, 1, True)
    expect(ins, ArrayShape("pred", x.dims))


def float_binary(v, ins, ops):
    expect(ins, _same_operands(ops, 2, True))


def int_binary(v, ins, ops):
    expect(ins, _same_operands(ops, 2, False))


# ----------------------------------------------------------------------------- random

def rng_bit_generator(v, ins, ops):
    """(state of the operand's shape, bits of any 8-64 bit type)."""
    n_operands(ops, 1)
    s = array(ops[0], "the state")
    check(s.rank == 1 and s.element_type in ("u64", "s64"), f"the state is u64[n], got {plain(s)}")
    check(ins.shape.is_tuple and len(ins.shape.elements) == 2, "returns (state, bits)")
    expect(ins, TupleShape((s, array(ins.shape.elements[1], "the bits"))))


def rng(v, ins, ops):
    n_operands(ops, 2)
    a, b = scalar(ops[0], "a"), scalar(ops[1], "b")
    check(a.element_type == b.element_type, f"a and b differ: {plain(a)}, {plain(b)}")
    expect(ins, ArrayShape(a.element_type, array(ins.shape, "the result").dims))


def rng_get_and_update_state(v, ins, ops):
    n_operands(ops, 0)
    expect(ins, ArrayShape("u64", (2,)))


# ----------------------------------------------------------------------------- linear algebra, fft

def _square(x, what="the operand"):
    check(x.rank >= 2 and x.dims[-1] == x.dims[-2], f"{what} must be square matrices, got {plain(x)}")


def cholesky(v, ins, ops):
    n_operands(ops, 1)
    a = array(ops[0], "the operand")
    _square(a)
    expect(ins, a)


def triangular_solve(v, ins, ops):
    n_operands(ops, 2)
    a, b = array(ops[0], "a"), array(ops[1], "b")
    _square(a, "a")
    left = ins.attr("left_side", False)
    left = left is True or str(left).lower() == "true"
    check(b.rank == a.rank and b.dims[:-2] == a.dims[:-2] and
          (b.dims[-2] if left else b.dims[-1]) == a.dims[-1],
          f"a {plain(a)} does not fit b {plain(b)} (left_side={left})")
    check(a.element_type == b.element_type, "a and b differ in type")
    expect(ins, b)


_COMPLEX = {"f32": "c64", "f64": "c128"}


def fft(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    lengths = ints(ins, "fft_length")
    kind = str(ins.attr("fft_type", "FFT")).upper()
    n = len(lengths)
    check(1 <= n <= min(3, x.rank), f"fft_length {list(lengths)} must name 1 to 3 trailing dims")
    half = tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    real = {v_: k for k, v_ in _COMPLEX.items()}
    if kind == "RFFT":
        check(x.element_type in _COMPLEX and x.dims[-n:] == tuple(lengths), f"RFFT of {plain(x)}")
        want = ArrayShape(_COMPLEX[x.element_type], x.dims[:-n] + half)
    elif kind == "IRFFT":
        check(x.element_type in real and x.dims[-n:] == half, f"IRFFT of {plain(x)}")
        want = ArrayShape(real[x.element_type], x.dims[:-n] + tuple(lengths))
    else:
        check(kind in ("FFT", "IFFT") and x.element_type in real and x.dims[-n:] == tuple(lengths),
              f"{kind} of {plain(x)} with fft_length {list(lengths)}")
        want = x
    expect(ins, want)


def topk(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    k = ins.attr("k")
    check(isinstance(k, int) and x.rank >= 1 and 0 <= k <= x.dims[-1],
          f"k = {k!r} for an operand {plain(x)}")
    dims = x.dims[:-1] + (k,)
    expect(ins, TupleShape((ArrayShape(x.element_type, dims), ArrayShape("s32", dims))))


# ----------------------------------------------------------------------------- windows, norms

def select_and_scatter(v, ins, ops):
    n_operands(ops, 3)
    x, src = array(ops[0], "the operand"), array(ops[1], "the source")
    scalar(ops[2], "init", src.element_type)
    v.scalar_fn(ins, [x.element_type] * 2, ["pred"], "select")
    v.scalar_fn(ins, [src.element_type] * 2, [src.element_type], "scatter")
    expect(ins, ArrayShape(src.element_type, x.dims))


def _feature(ins, x, per_feature):
    f = ins.attr("feature_index", 0)
    check(isinstance(f, int) and 0 <= f < x.rank, f"feature_index {f!r} outside {plain(x)}")
    for k, s in enumerate(per_feature):
        c = array(s, f"per-feature operand {k}")
        check(plain(c) == ArrayShape(x.element_type, (x.dims[f],)),
              f"per-feature operand {k} is {plain(c)}, expected {x.element_type}[{x.dims[f]}]")
    check(is_float(x.element_type), f"needs floating-point operands, got {plain(x)}")
    return ArrayShape(x.element_type, (x.dims[f],))


def batch_norm_training(v, ins, ops):
    n_operands(ops, 3)
    x = array(ops[0], "the operand")
    c = _feature(ins, x, ops[1:])
    expect(ins, TupleShape((plain(x), c, c)))


def batch_norm_inference(v, ins, ops):
    n_operands(ops, 5)
    x = array(ops[0], "the operand")
    _feature(ins, x, ops[1:])
    expect(ins, x)


def batch_norm_grad(v, ins, ops):
    n_operands(ops, 5)
    x = array(ops[0], "the operand")
    c = _feature(ins, x, ops[1:4])
    check(plain(array(ops[4], "grad_output")) == plain(x), "grad_output must have the operand's shape")
    expect(ins, TupleShape((plain(x), c, c)))


def stochastic_convert(v, ins, ops):
    n_operands(ops, 2)
    x, r = array(ops[0], "the operand"), array(ops[1], "the random bits")
    check(x.dims == r.dims, f"the random bits {plain(r)} must have the operand's dims {plain(x)}")
    expect(ins, ArrayShape(array(ins.shape, "the result").element_type, x.dims))


def dynamic_reshape(v, ins, ops):
    check(len(ops) >= 1, "takes the operand and one size per result dimension")
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    check(len(ops) - 1 == out.rank and all(scalar(s, "a size") for s in ops[1:]),
          "takes one scalar size per result dimension")
    check(out.size == x.size and out.element_type == x.element_type, f"reshapes {plain(x)} to {plain(out)}")


def ragged_dot(v, ins, ops):
    n_operands(ops, 3)
    lhs, rhs = array(ops[0], "the lhs"), array(ops[1], "the rhs")
    gs = array(ops[2], "group_sizes")
    check(is_int(gs.element_type) and gs.rank >= 1, f"group_sizes must be integers, got {plain(gs)}")
    lb, rb = ints(ins, "lhs_batch_dims", ()), ints(ins, "rhs_batch_dims", ())
    lc, rc = ints(ins, "lhs_contracting_dims", ()), ints(ins, "rhs_contracting_dims", ())
    lr, rg = ints(ins, "lhs_ragged_dims"), ints(ins, "rhs_group_dims", ())
    check(len(lr) == 1, "needs one lhs ragged dim")
    for side, x, used in (("lhs", lhs, lb + lc), ("rhs", rhs, rb + rc + rg)):
        check(all(0 <= d < x.rank for d in used + (lr if side == "lhs" else ())),
              f"{side} dimension numbers must be dimensions of {plain(x)}")
        check(len(set(used)) == len(used), f"{side} batch, contracting and group dims must differ")
    check(len(lb) == len(rb) and all(lhs.dims[a] == rhs.dims[b] for a, b in zip(lb, rb)),
          "lhs and rhs batch dims must pair up with equal sizes")
    check(len(lc) == len(rc) and all(lhs.dims[a] == rhs.dims[b] for a, b in zip(lc, rc)),
          "lhs and rhs contracting dims must pair up with equal sizes")
    array(ins.shape, "the result")


def scan(v, ins, ops):
    """``chlo.scan``: inputs then inits; results are the outputs (stacked along ``dimension``)
    then one carry per init, shaped as its init; the body maps (input slices, carries) to
    (output slices, carries)."""
    for k, s in enumerate(ops):
        array(s, f"operand {k}")
    n_in, dim = int(ins.attr("num_inputs", 0)), int(ins.attr("dimension", 0))
    check(0 <= n_in <= len(ops), f"num_inputs {n_in} must be between 0 and the {len(ops)} operands")
    xs, inits = list(ops[:n_in]), list(ops[n_in:])
    outs = list(ins.shape.elements) if ins.shape.is_tuple else [ins.shape]
    for k, s in enumerate(outs):
        array(s, f"result {k}")
    n_out = len(outs) - len(inits)
    check(n_out >= 0, f"returns {len(outs)} values, fewer than its {len(inits)} inits")
    stacked = xs + outs[:n_out]
    check(all(0 <= dim < s.rank for s in stacked),
          f"dimension {dim} must be a dimension of every input and output")
    check(len({s.dims[dim] for s in stacked}) <= 1, "inputs and outputs must have one length along "
                                                     f"dimension {dim}")
    for k, (c, i) in enumerate(zip(outs[n_out:], inits)):
        check(plain(c) == plain(i), f"carry {k} is {plain(c)}, but its init is {plain(i)}")

    def slice_of(s):
        return ArrayShape(s.element_type, s.dims[:dim] + s.dims[dim + 1:])
    res = [slice_of(s) for s in outs[:n_out]] + inits
    v.signature(v.called(ins, "to_apply"), [slice_of(x) for x in xs] + inits,
                res[0] if len(res) == 1 else TupleShape(tuple(res)), "body")


# ----------------------------------------------------------------------------- plumbing

def arrays_only(v, ins, ops):
    """Collectives: values are arrays (their shapes depend on the device count)."""
    for k, s in enumerate(ops):
        for leaf in leaves(s):
            array(leaf, f"operand {k}")


def token(v, ins, ops):
    expect(ins, TOKEN)


def copy_start(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    check(ins.shape.is_tuple and len(ins.shape.elements) >= 2, "returns (destination, source, context)")
    check(all(plain(s) == plain(x) for s in ins.shape.elements[:2]), "copies the operand's shape")


def copy_done(v, ins, ops):
    n_operands(ops, 1)
    check(ops[0].is_tuple and len(ops[0].elements) >= 1, "takes a copy-start")
    expect(ins, ops[0].elements[0])


def same_as_operand(v, ins, ops):
    n_operands(ops, 1)
    expect(ins, ops[0])


def anything(v, ins, ops):
    """Ops whose lowering refuses them with the reason (send, recv)."""


def infeed(v, ins, ops):
    """``infeed(token) -> (data, token)``; data holds no token."""
    n_operands(ops, 1)
    check(ops[0].is_token, f"takes a token, got {plain(ops[0])}")
    s = ins.shape
    check(s.is_tuple and len(s.elements) == 2 and s.elements[1].is_token,
          f"returns (data, token), got {s}")
    check(all(not x.is_token for x in leaves(s.elements[0])), f"its data holds a token: {s}")


def outfeed(v, ins, ops):
    """``outfeed(data, token) -> token``."""
    n_operands(ops, 2)
    check(ops[1].is_token, f"takes a token as operand 1, got {plain(ops[1])}")
    check(all(not x.is_token for x in leaves(ops[0])), f"its data holds a token: {ops[0]}")
    expect(ins, TOKEN)


RULES = {f"chlo.{op}": float_unary for op in _FLOAT_UNARY}
RULES.update({f"chlo.{op}": pred_unary for op in _PRED_UNARY})
RULES.update({op: float_unary for op in _HLO_UNARY})
RULES.update({"chlo.next_after": float_binary, "chlo.polygamma": float_binary, "chlo.zeta": float_binary,
              "chlo.mulhi": int_binary, "mulhi": int_binary})
RULES.update({
    "rng-bit-generator": rng_bit_generator, "rng": rng, "rng-get-and-update-state": rng_get_and_update_state,
    "cholesky": cholesky, "triangular-solve": triangular_solve, "fft": fft, "topk": topk,
    "select-and-scatter": select_and_scatter, "batch-norm-training": batch_norm_training,
    "batch-norm-inference": batch_norm_inference, "batch-norm-grad": batch_norm_grad,
    "stochastic-convert": stochastic_convert, "dynamic-reshape": dynamic_reshape, "ragged-dot": ragged_dot,
    "chlo.scan": scan, "after-all": token, "create-token": token, "copy-start": copy_start,
    "copy-done": copy_done, "opt-barrier": same_as_operand, "domain": same_as_operand,
})
RULES.update({op: arrays_only for op in (
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-broadcast", "collective-reduce",
    "all-reduce-start", "all-gather-start", "all-reduce-done", "all-gather-done", "collective-permute",
    "collective-permute-start", "collective-permute-done")})
RULES.update({op: anything for op in ("send", "send-done", "recv", "recv-done")})
RULES.update({"infeed": infeed, "outfeed": outfeed})
