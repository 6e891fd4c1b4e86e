"""``batch-norm-training``, ``batch-norm-inference`` and ``batch-norm-grad`` as XLA's
BatchNormExpander writes them (sums over every dimension but ``feature_index``, the variance as
E[x^2] - E[x]^2, ``rsqrt(var + epsilon)``), plus ``stochastic-convert`` as its decomposer does and ``dynamic-reshape`` to a static shape.
https://openxla.org/xla/operation_semantics#batchnormtraining
"""

from __future__ import annotations

from ...dsl import dtypes as dt
from ...dsl.expr import binary, cast, const, select, unary
from ...dsl.ops import Op
from ...dsl.tensor import compute, reduce_axis
from ...dsl.tensor import sum as dsl_sum
from .common import dims_of, dtype_of, ew, load, reshape_index, unsupported


def _feature(ctx, instr, x, per_feature):
    f = instr.attr("feature_index", 0)
    if not isinstance(f, int) or isinstance(f, bool):
        raise unsupported(ctx, instr, f"feature_index must be an integer, got {f!r}")
    if not 0 <= f < len(x.shape):
        raise unsupported(ctx, instr, f"feature_index {f} outside the operand's {len(x.shape)} dims")
    for t in per_feature:
        if t.shape != (x.shape[f],) or t.dtype is not x.dtype:
            raise unsupported(ctx, instr, f"per-feature operands are {x.dtype}[{x.shape[f]}], got "
                                          f"{t.dtype}{list(t.shape)}")
    if not x.dtype.is_float:
        raise unsupported(ctx, instr, f"needs floating-point operands, got {x.dtype}")
    eps = instr.attr("epsilon", 0.0)
    try:
        return f, float(eps)
    except (TypeError, ValueError):
        raise unsupported(ctx, instr, f"epsilon must be a number, got {eps!r}") from None


def _feature_sum(instr, x, f, body, tag: str):
    """sum over every dim but ``f`` of ``body(full index)``, one value per feature."""
    rest = [d for d in range(len(x.shape)) if d != f]
    ks = [reduce_axis(x.shape[d], f"r{d}") for d in rest]

    def s(c):
        idx = [None] * len(x.shape)
        idx[f] = c
        for d, k in zip(rest, ks):
            idx[d] = k
        return dsl_sum(body(idx), axis=ks) if ks else body(idx)
    return compute((x.shape[f],), s, name=f"{instr.name}.{tag}", tag=instr.opcode)


def lower_batch_norm_training(ctx, instr, operands):
    """``batch-norm-training(x, scale, offset)``: (normalized x, batch mean, batch variance):
    https://openxla.org/xla/operation_semantics#batchnormtraining"""
    x, scale, offset = operands
    f, eps = _feature(ctx, instr, x, (scale, offset))
    n = x.size // x.shape[f] if x.shape[f] else 0
    d = x.dtype
    total = _feature_sum(instr, x, f, lambda i: load(x, i), "sum")
    squares = _feature_sum(instr, x, f, lambda i: load(x, i) * load(x, i), "sum_sq")
    inv = const(1.0 / n if n else float("inf"), d)
    mean = compute(total.shape, lambda c: total[c] * inv, name=f"{instr.name}.mean", tag=instr.opcode)
    var = compute(total.shape, lambda c: squares[c] * inv - mean[c] * mean[c],
                  name=f"{instr.name}.var", tag=instr.opcode)

    def out(*i):
        c = i[f]
        r = unary(Op.RSQRT, var[c] + const(eps, d))
        return (load(x, i) - mean[c]) * r * scale[c] + offset[c]
    return ew(instr, x.shape, out), mean, var


def lower_batch_norm_inference(ctx, instr, operands):
    """``batch-norm-inference(x, scale, offset, mean, variance)``: x * s + (offset - mean * s)
    with s = scale * rsqrt(variance + epsilon):
    https://openxla.org/xla/operation_semantics#batchnorminference"""
    x, scale, offset, mean, var = operands
    f, eps = _feature(ctx, instr, x, (scale, offset, mean, var))
    d = x.dtype

    def out(*i):
        c = i[f]
        s = scale[c] * unary(Op.RSQRT, var[c] + const(eps, d))
        return load(x, i) * s + (offset[c] - mean[c] * s)
    return ew(instr, dims_of(instr), out)


def lower_batch_norm_grad(ctx, instr, operands):
    """``batch-norm-grad(x, scale, mean, variance, grad_y)``: (grad x, grad scale, grad offset):
    https://openxla.org/xla/operation_semantics#batchnormgrad"""
    x, scale, mean, var, dy = operands
    f, eps = _feature(ctx, instr, x, (scale, mean, var))
    if dy.shape != x.shape or dy.dtype is not x.dtype:
        raise unsupported(ctx, instr, "grad_output must have the operand's shape and type")
    n = x.size // x.shape[f] if x.shape[f] else 0
    d = x.dtype
    inv = const(1.0 / n if n else float("inf"), d)
    grad_offset = _feature_sum(instr, x, f, lambda i: load(dy, i), "grad_offset")
    dot = _feature_sum(instr, x, f, lambda i: load(dy, i) * (load(x, i) - mean[i[f]]), "sum_dy_xc")
    grad_scale = compute(grad_offset.shape, lambda c: dot[c] * unary(Op.RSQRT, var[c] + const(eps, d)),
                         name=f"{instr.name}.grad_scale", tag=instr.opcode)

    def grad_x(*i):
        c = i[f]
        centered = load(x, i) - mean[c]
        i5 = centered * dot[c] / (var[c] + const(eps, d))
        i6 = load(dy, i) * const(n, d) - grad_offset[c] - i5
        return i6 * (scale[c] * unary(Op.RSQRT, var[c] + const(eps, d)) * inv)
    return ew(instr, x.shape, grad_x), grad_scale, grad_offset


def lower_dynamic_reshape(ctx, instr, operands):
    """``dynamic-reshape(x, sizes...)`` to a static shape: a row-major reshape (the sizes equal
    the result's dimensions): https://openxla.org/xla/operation_semantics#dynamicreshape"""
    x, *sizes = operands
    out = dims_of(instr)
    if len(sizes) != len(out) or any(s.shape for s in sizes) or x.size != _prod(out):
        raise unsupported(ctx, instr, f"reshapes {list(x.shape)} to {list(out)} with one scalar "
                                      "size per result dimension")
    return ew(instr, out, lambda *i: load(x, reshape_index(i, out, x.shape)) if x.size else const(0, x.dtype))


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def lower_stochastic_convert(ctx, instr, operands):
    """``stochastic-convert(x, random)`` to a signed integer: |x| rounded up when the random
    bits are below its fraction scaled to their width, then signed and saturated:
    https://openxla.org/xla/operation_semantics#stochasticconvert"""
    x, rnd = operands
    out = dtype_of(ctx, instr)
    if not (x.dtype.is_float and out.kind == "i" and rnd.dtype.kind == "u" and
            rnd.dtype.bits == x.dtype.bits and rnd.shape == x.shape):
        raise unsupported(ctx, instr, f"converts floats to signed integers with unsigned random bits "
                                      f"of the float's width and shape; got {x.dtype}, {rnd.dtype} -> {out}")
    lo, hi = -(1 << (out.bits - 1)), (1 << (out.bits - 1)) - 1

    def value(*i):
        v = load(x, i)
        neg = binary(Op.LT, unary(Op.SIGN, v), const(0, x.dtype))
        a = unary(Op.ABS, v)
        whole = unary(Op.FLOOR, a)
        frac = a - whole
        if x.dtype is dt.float16:
            frac = cast(frac, dt.float32)
        fixed = cast(frac * const(float(2 ** rnd.dtype.bits), frac.dtype), rnd.dtype)
        t = cast(whole, out)
        t = select(binary(Op.LT, load(rnd, i), fixed), t + const(1, out), t)
        r = select(neg, -t, t)
        r = select(binary(Op.LE, v, const(float(lo), x.dtype)), const(lo, out), r)
        return select(binary(Op.GE, v, const(float(hi), x.dtype)), const(hi, out), r)
    return ew(instr, dims_of(instr), value)


HANDLERS = {
    "batch-norm-training": lower_batch_norm_training, "batch-norm-inference": lower_batch_norm_inference,
    "batch-norm-grad": lower_batch_norm_grad, "stochastic-convert": lower_stochastic_convert,
    "dynamic-reshape": lower_dynamic_reshape,
}

__all__ = ["HANDLERS"]
