"""``dot`` (general dimension numbers) and ``convolution`` as sum reductions.

Products accumulate in the result type (``preferred_element_type``): operands are converted to
it first (bf16 x bf16 -> f32 multiplies in f32). A 16-bit float result accumulates in f32 and
is rounded once by a second compute, as XLA:CPU does.
"""

from __future__ import annotations

from ...dsl import dtypes as dt
from ...dsl.dtypes import DType
from ...dsl.expr import binary, cast, const, select
from ...dsl.ops import Op
from ...dsl.tensor import reduce_axis
from ...dsl.tensor import sum as dsl_sum
from .common import all_of, dims_of, dtype_of, ew, ints, load, reduce_compute, unsupported, window_tap


def _acc_type(d: DType) -> DType:
    """Floats under 32 bits (16-bit, float8/6/4) accumulate in f32 and round once at the end."""
    return dt.float32 if d.is_narrow_float else d


def _finish(instr, acc_tensor, out_dt: DType):
    """Round an f32 accumulator to a narrow float result (identity otherwise)."""
    if acc_tensor.dtype is out_dt:
        return acc_tensor
    return ew(instr, acc_tensor.shape, lambda *i: cast(load(acc_tensor, i), out_dt))


def lower_dot(ctx, instr, operands):
    """``dot`` with batch and contracting dims; result dims are batch, lhs free, rhs free:
    https://openxla.org/xla/operation_semantics#dotgeneral"""
    lhs, rhs = operands
    lb, lc = ints(instr, "lhs_batch_dims"), ints(instr, "lhs_contracting_dims")
    rb, rc = ints(instr, "rhs_batch_dims"), ints(instr, "rhs_contracting_dims")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise unsupported(ctx, instr, "lhs and rhs batch/contracting dims differ in number")
    out_dt = dtype_of(ctx, instr)
    acc = _acc_type(out_dt)
    lfree = [d for d in range(len(lhs.shape)) if d not in lb and d not in lc]
    rfree = [d for d in range(len(rhs.shape)) if d not in rb and d not in rc]
    out = dims_of(instr)
    if any(lhs.shape[d] == 0 for d in lc):
        return ew(instr, out, lambda *i: const(0, out_dt))
    ks = [reduce_axis(lhs.shape[d], f"k{n}") for n, d in enumerate(lc)]

    def f(*i):
        nb, nl = len(lb), len(lfree)
        li, ri = [None] * len(lhs.shape), [None] * len(rhs.shape)
        for n, (a, b) in enumerate(zip(lb, rb)):
            li[a] = ri[b] = i[n]
        for n, d in enumerate(lfree):
            li[d] = i[nb + n]
        for n, d in enumerate(rfree):
            ri[d] = i[nb + nl + n]
        for k, a, b in zip(ks, lc, rc):
            li[a] = ri[b] = k
        p = binary(Op.MUL, cast(load(lhs, li), acc), cast(load(rhs, ri), acc))
        return dsl_sum(p, axis=ks) if ks else p
    name = instr.name if acc is out_dt else f"{instr.name}.acc"
    return _finish(instr, reduce_compute(out, f, name, "dot"), out_dt)


def _labels(ctx, instr):
    raw = instr.attr("dim_labels")
    try:
        lhs, rest = raw.split("_", 1)
        rhs, out = rest.split("->")
    except (AttributeError, ValueError):
        raise unsupported(ctx, instr, f"malformed dim_labels {raw!r}") from None
    n = len(lhs) - 2
    try:
        sp = [(lhs.index(str(s)), rhs.index(str(s)), out.index(str(s))) for s in range(n)]
        return (lhs.index("b"), lhs.index("f"), rhs.index("i"), rhs.index("o"), out.index("b"),
                out.index("f"), sp)
    except ValueError:
        raise unsupported(ctx, instr, f"dim_labels {raw!r} (at most 10 spatial dims)") from None


def lower_convolution(ctx, instr, operands):
    """``convolution`` (dim_labels, window size/stride/padding/lhs_dilate/rhs_dilate/reversal,
    feature_group_count, batch_group_count); padded taps multiply zero by the weight, as on XLA:CPU (skipped
    under lhs_dilate): https://openxla.org/xla/operation_semantics#conv_convolution"""
    lhs, rhs = operands
    lb, lf, ri, ro, ob, of, sp = _labels(ctx, instr)
    groups = int(instr.attr("feature_group_count", 1))
    bgroups = int(instr.attr("batch_group_count", 1))   # lhs batch split in groups, each with
    if bgroups > 1 and (groups > 1 or lhs.shape[lb] % bgroups or rhs.shape[ro] % bgroups):  # its outputs
        raise unsupported(ctx, instr, f"batch_group_count {bgroups} with feature_group_count {groups}, "
                                      f"lhs batch {lhs.shape[lb]} and {rhs.shape[ro]} output features")
    win = instr.attr("window") or {}
    n = len(sp)

    def wfield(key, default):
        v = tuple(win.get(key, ())) if win else ()
        return v if len(v) == n else (default,) * n
    size = wfield("size", 1)
    stride, pad = wfield("stride", 1), wfield("pad", (0, 0))
    ldil, rdil, rev = wfield("lhs_dilate", 1), wfield("rhs_dilate", 1), wfield("window_reversal", False)
    out = dims_of(instr)
    out_dt = dtype_of(ctx, instr)
    acc = _acc_type(out_dt)
    cin_g = rhs.shape[ri]
    o_per_g = rhs.shape[ro] // groups
    if lhs.shape[lf] != cin_g * groups or rhs.shape[ro] % groups:
        raise unsupported(ctx, instr, "feature dimensions do not match feature_group_count")
    if cin_g == 0 or any(s == 0 for s in size):
        return ew(instr, out, lambda *i: const(0, out_dt))
    kc = reduce_axis(cin_g, "ic")
    ks = [reduce_axis(size[s], f"kw{s}") for s in range(n)]
    # XLA:CPU multiplies the zero padding by the weights (0 * inf = NaN); with an lhs (base)
    # dilation it skips both the padding and the dilation holes
    multiply_padding = all(d == 1 for d in ldil)

    def f(*i):
        li, rix = [None] * len(lhs.shape), [None] * len(rhs.shape)
        li[lb] = i[ob]
        if bgroups > 1:         # output feature o belongs to batch group o // (O / bgroups)
            li[lb] = i[of] // (rhs.shape[ro] // bgroups) * (lhs.shape[lb] // bgroups) + i[ob]
        g = i[of] // o_per_g if groups > 1 else None
        li[lf] = g * cin_g + kc if groups > 1 else kc
        rix[ri], rix[ro] = kc, i[of]
        conds = []
        for s, (la, ra, oa) in enumerate(sp):
            k = ks[s]
            rix[ra] = size[s] - 1 - k if rev[s] else k
            c, li[la] = window_tap(i[oa], k, stride[s], rdil[s], pad[s][0], out[oa], size[s], lhs.shape[la],
                                   ldil[s])
            conds += c
        x, w = cast(load(lhs, li), acc), cast(load(rhs, rix), acc)
        c = all_of(conds)
        if c is None:
            return dsl_sum(binary(Op.MUL, x, w), axis=[kc] + ks)
        if multiply_padding:     # a padded tap is 0 * w (NaN for an inf or NaN weight)
            return dsl_sum(binary(Op.MUL, select(c, x, const(0, acc)), w), axis=[kc] + ks)
        return dsl_sum(select(c, binary(Op.MUL, x, w), const(0, acc)), axis=[kc] + ks)
    name = instr.name if acc is out_dt else f"{instr.name}.acc"
    return _finish(instr, reduce_compute(out, f, name, "convolution"), out_dt)


HANDLERS = {"dot": lower_dot, "convolution": lower_convolution}
