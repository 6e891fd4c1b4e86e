"""``fft``: FFT, IFFT, RFFT and IRFFT over the trailing ``fft_length`` dimensions (up to three),
as an extern op through numpy's pocketfft in the operand's precision (c64/f32 stay single
precision, as XLA:CPU's FFT library computes them).
https://openxla.org/xla/operation_semantics#fft
"""

from __future__ import annotations

import numpy as np

from .common import dims_of, dtype_of, ints, unsupported
from .control import _extern_result

_KINDS = ("fft", "ifft", "rfft", "irfft")


def lower_fft(ctx, instr, operands):
    """``fft(x)``, ``fft_type`` FFT/IFFT (complex to complex, IFFT scaled by 1/n), RFFT (real to
    the n/2+1 non-negative frequencies) or IRFFT (back to ``fft_length`` reals), ``fft_length``
    the sizes of the trailing 1-3 dims: https://openxla.org/xla/operation_semantics#fft"""
    (x,) = operands
    kind = str(instr.attr("fft_type", "FFT")).lower()
    lengths = ints(instr, "fft_length")
    out = dtype_of(ctx, instr)
    shape = dims_of(instr)
    rank = len(x.shape)
    if kind not in _KINDS:
        raise unsupported(ctx, instr, f"fft_type={kind.upper()!r} (FFT, IFFT, RFFT, IRFFT)")
    if not 1 <= len(lengths) <= 3 or len(lengths) > rank:
        raise unsupported(ctx, instr, f"fft_length {list(lengths)} must name 1 to 3 trailing dims")
    axes = tuple(range(rank - len(lengths), rank))
    real_in, real_out = kind == "rfft", kind == "irfft"
    if real_in != (not x.dtype.is_complex) or real_out != (not out.is_complex) or \
            not (x.dtype.is_complex or x.dtype.is_float):
        raise unsupported(ctx, instr, f"{kind.upper()} of {x.dtype} to {out}")
    expect_in = tuple(lengths) if kind != "irfft" else tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    expect_out = tuple(lengths) if kind != "rfft" else tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    if x.shape[rank - len(lengths):] != expect_in or shape[rank - len(lengths):] != expect_out or \
            shape[:rank - len(lengths)] != x.shape[:rank - len(lengths)]:
        raise unsupported(ctx, instr, f"{kind.upper()} with fft_length {list(lengths)} takes "
                                      f"[..., {expect_in}] to [..., {expect_out}], got {list(x.shape)} -> "
                                      f"{list(shape)}")

    def run_fft(arrays, run):
        a = np.asarray(arrays[0])
        if 0 in a.shape or 0 in shape:
            return (np.zeros(shape, out.np),)
        if kind == "fft":
            r = np.fft.fftn(a, axes=axes)
        elif kind == "ifft":
            r = np.fft.ifftn(a, axes=axes)
        elif kind == "rfft":
            r = np.fft.rfftn(a, s=lengths, axes=axes)
        else:
            r = np.fft.irfftn(a, s=lengths, axes=axes)
        return (np.asarray(r).astype(out.np),)
    return _extern_result(ctx, instr, "fft", [x], run_fft, (("type", kind), ("length", tuple(lengths))))


HANDLERS = {"fft": lower_fft}

__all__ = ["HANDLERS"]
