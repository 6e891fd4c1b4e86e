"""HLO ops about element types: complex parts, bitcast-convert between any widths, and
reduce-precision of every IEEE float type.

Complex arithmetic itself needs no handler: the elementwise handlers build DSL ops on complex
operands, which follow XLA's formulas (dsl/complexmath.py).
"""

from __future__ import annotations

from ...dsl import dtypes as dt
from ...dsl.dtypes import DType
from ...dsl.expr import Expr, binary, bitcast, cast, const, select, unary
from ...dsl.ops import Op
from .common import SEMANTICS, dims_of, dtype_of, ew, load, unsupported

#: (exponent bits, mantissa bits) of the IEEE float types reduce-precision takes
_IEEE = {dt.float16: (5, 10), dt.bfloat16: (8, 7), dt.float32: (8, 23), dt.float64: (11, 52)}


def lower_complex(ctx, instr, operands):
    """``complex(real, imag)``: https://openxla.org/xla/operation_semantics#complex"""
    re, im = operands
    return ew(instr, dims_of(instr), lambda *i: binary(Op.COMPLEX, load(re, i), load(im, i)),
              dtype_of(ctx, instr))


def _part(op: Op):
    def handler(ctx, instr, operands):
        (x,) = operands
        if not (x.dtype.is_complex or x.dtype.is_float):
            raise unsupported(ctx, instr, f"{instr.opcode} of {x.dtype} (needs a float or complex)")
        return ew(instr, dims_of(instr), lambda *i: unary(op, load(x, i)), dtype_of(ctx, instr))
    handler.__name__ = f"lower_{op.name.lower()}"
    handler.__doc__ = (f"``{op.name.lower()}``: the {op.name.lower()} part of a complex (of a real "
                       f"value: {'itself' if op is Op.REAL else 'zero'}): {SEMANTICS}#element-wise_unary_functions")
    return handler


# ----------------------------------------------------------------------------- bitcast-convert

def _parts_of(d: DType) -> tuple[DType, int]:
    """The scalar parts an element is made of and their bit width (pred counts as one bit, as
    XLA's bitcast-convert shape rule has it)."""
    if d.is_complex:
        return d.component, d.bits // 2
    return d, (1 if d.is_bool else d.bits)


def _part_bits(x: Expr, width: int) -> Expr:
    """The bits of scalar ``x`` (``width`` of them) as uint64."""
    if x.dtype.is_bool:
        return select(x, const(1, dt.uint64), const(0, dt.uint64))
    u = x if x.dtype.kind == "u" else bitcast(x, dt.dtype(f"uint{width}"))
    return cast(u, dt.uint64)


def _from_bits(u: Expr, d: DType, width: int) -> Expr:
    """The scalar of type ``d`` whose ``width`` bits are the low bits of uint64 ``u``."""
    if d.is_bool:
        return binary(Op.NE, binary(Op.AND, u, const(1, dt.uint64)), const(0, dt.uint64))
    if width < 64:
        u = binary(Op.AND, u, const((1 << width) - 1, dt.uint64))
    return bitcast(cast(u, dt.dtype(f"uint{width}")), d)


def lower_bitcast_convert(ctx, instr, operands):
    """``bitcast-convert``: the bits of each element reinterpreted; a narrower result gains a last
    dimension (its elements in little-endian order), a wider one consumes the operand's last:
    https://openxla.org/xla/operation_semantics#bitcastconverttype"""
    (x,) = operands
    out = dtype_of(ctx, instr)
    _, iw = _parts_of(x.dtype)
    op_, ow = _parts_of(out)
    in_bits, out_bits = iw * (2 if x.dtype.is_complex else 1), ow * (2 if out.is_complex else 1)
    if any(w not in (1, 2, 4, 8, 16, 32, 64) for w in (iw, ow)):
        raise unsupported(ctx, instr, f"bitcast-convert from {x.dtype} to {out}: parts of "
                                      f"{iw} and {ow} bits")
    dims = dims_of(instr)
    if in_bits == out_bits and iw == ow:
        if x.dtype.is_complex:
            return ew(instr, dims, lambda *i: binary(Op.COMPLEX, *(bitcast(unary(p, load(x, i)), op_)
                                                                  for p in (Op.REAL, Op.IMAG))))
        return ew(instr, dims, lambda *i: _from_bits(_part_bits(load(x, i), iw), out, ow)
                  if x.dtype.is_bool or out.is_bool else bitcast(load(x, i), out))
    ratio_in = max(1, out_bits // in_bits)      # operand elements per result element

    def in_parts(idx) -> list[Expr]:
        """The bit words (uint64) of the operand elements making up result element ``idx``, in
        order, each ``iw`` bits wide."""
        if ratio_in > 1:
            elems = [load(x, list(idx) + [const(k, dt.index)]) for k in range(ratio_in)]
        elif out_bits < in_bits:
            elems = [load(x, idx[:-1])]
        else:
            elems = [load(x, idx)]
        words = []
        for e in elems:
            parts = (unary(Op.REAL, e), unary(Op.IMAG, e)) if x.dtype.is_complex else (e,)
            words += [_part_bits(p, iw) for p in parts]
        return words

    def value(*idx):
        words = in_parts(idx)
        base = idx[-1] if out_bits < in_bits else None     # which piece of the operand element
        res = []
        for p in range(2 if out.is_complex else 1):
            start = p * ow                                  # bit offset in the result element
            if base is not None:
                start_e = binary(Op.ADD, binary(Op.MUL, cast(base, dt.uint64), const(out_bits, dt.uint64)),
                                 const(start, dt.uint64))
                res.append(_from_bits(_select_word(words, start_e, iw, ow), op_, ow))
                continue
            acc = None
            for k, w in enumerate(words):       # gather the words covering [start, start + ow)
                lo = k * iw
                if lo + iw <= start or lo >= start + ow:
                    continue
                piece = binary(Op.SHL, w, const(lo - start, dt.uint64)) if lo >= start else \
                    binary(Op.SHRL, w, const(start - lo, dt.uint64))
                acc = piece if acc is None else binary(Op.OR, acc, piece)
            res.append(_from_bits(acc, op_, ow))
        return binary(Op.COMPLEX, *res) if out.is_complex else res[0]
    return ew(instr, dims, value)


def _select_word(words: list[Expr], start: Expr, iw: int, ow: int) -> Expr:
    """Bits ``[start, start + ow)`` (``start`` a uint64 expression, ``ow <= iw``) of the words."""
    if len(words) == 1:
        return binary(Op.SHRL, words[0], start)
    out = binary(Op.SHRL, words[0], start)
    for k in range(1, len(words)):       # the last word starting at or before ``start``
        lo = const(k * iw, dt.uint64)
        out = select(binary(Op.GE, start, lo), binary(Op.SHRL, words[k], binary(Op.SUB, start, lo)), out)
    return out


# ----------------------------------------------------------------------------- reduce-precision

def lower_reduce_precision(ctx, instr, operands):
    """``reduce-precision`` to ``exponent_bits``/``mantissa_bits`` (round to nearest even,
    overflow to infinity, underflow to zero; NaN stays NaN while a mantissa bit is kept) of
    f16, bf16, f32 or f64: https://openxla.org/xla/operation_semantics#reduceprecision"""
    (x,) = operands
    d = x.dtype
    if d not in _IEEE:
        raise unsupported(ctx, instr, f"reduce-precision of {d} (needs f16, bf16, f32 or f64)")
    ebits, mbits = int(instr.attr("exponent_bits", 8)), int(instr.attr("mantissa_bits", 23))
    se, sm = _IEEE[d]
    n = 1 + se + sm
    u_t = dt.dtype(f"uint{n}")

    def c(v):
        return const(v & ((1 << n) - 1), u_t)

    def f(*i):
        v = load(x, i)
        u = bitcast(v, u_t)
        if mbits < sm:
            last = 1 << (sm - mbits)
            lastbit = binary(Op.SHRL, binary(Op.AND, u, c(last)), c(sm - mbits))
            u = binary(Op.ADD, u, binary(Op.ADD, lastbit, c((last >> 1) - 1)))
            u = binary(Op.AND, u, c(~(last - 1)))
        if ebits < se:
            exp_mask, rbias, sbias = ((1 << se) - 1) << sm, (1 << (ebits - 1)) - 1, (1 << (se - 1)) - 1
            e = binary(Op.AND, u, c(exp_mask))
            sign = binary(Op.AND, u, c(1 << (n - 1)))
            u = select(binary(Op.GT, e, c((sbias + rbias) << sm)), binary(Op.OR, sign, c(exp_mask)),
                       select(binary(Op.LE, e, c((sbias - rbias) << sm)), sign, u))
        r = bitcast(u, d)   # NaN stays NaN; without mantissa bits it is +infinity (XLA)
        return select(binary(Op.NE, v, v), v if mbits > 0 else const(float("inf"), d), r)
    return ew(instr, dims_of(instr), f)


HANDLERS = {
    "complex": lower_complex, "real": _part(Op.REAL), "imag": _part(Op.IMAG),
    "bitcast-convert": lower_bitcast_convert, "reduce-precision": lower_reduce_precision,
}

__all__ = ["HANDLERS"]
