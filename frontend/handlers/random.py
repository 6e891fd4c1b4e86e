"""Random numbers: ``rng-bit-generator`` (bit-exact with XLA), ``rng`` and
``rng-get-and-update-state``, as extern ops running XLA's generators in numpy (:mod:`.prng`).

``rng-bit-generator(state)`` is a pure function of its state: Threefry takes the key from
``state[0]`` and a 64-bit counter from ``state[1]``; Philox the key from ``state[0]`` and a
128-bit counter from ``state[1:3]`` (a ``u64[2]`` state: ``state[1]`` is its low word, as XLA's
expander reads it). ``RNG_DEFAULT`` is Philox, XLA:CPU's default. ``rng`` is stateful as in XLA
(each run continues where the last stopped); its key is fixed per instruction rather than drawn
from the process, so runs are reproducible.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...dsl.tensor import extern
from .common import dtype_of, unsupported
from .control import _extern_result, _leaf_shapes
from .prng import half_shape, normal, philox_bits, threefry_bits, uniform_float, uniform_int

_ALGORITHMS = {"rng_default": "philox", "rng_three_fry": "threefry", "rng_philox": "philox",
               "default": "philox", "three_fry": "threefry", "philox": "philox"}


def _u64(a) -> np.ndarray:
    a = np.asarray(a).reshape(-1)
    return a.view(np.uint64) if a.dtype.itemsize == 8 else a.astype(np.uint64)


def generate(algorithm: str, state: np.ndarray, shape: tuple[int, ...], np_dtype: np.dtype
             ) -> tuple[np.ndarray, np.ndarray]:
    """(new state, random bits of ``shape`` viewed as ``np_dtype``) of XLA's RngBitGenerator."""
    s = _u64(state).copy()
    bits = np.dtype(np_dtype).itemsize * 8
    if algorithm == "threefry":
        out, n = threefry_bits(s[0], s[1], shape, bits)
        with np.errstate(over="ignore"):
            s[1] = s[1] + np.uint64(n)
    else:
        counter = (s[1], s[2]) if len(s) >= 3 else (s[1], s[0])
        out, (lo, hi) = philox_bits(s[0], counter, shape, bits)
        s[1] = lo
        if len(s) >= 3:
            s[2] = hi
    return s.view(np.asarray(state).dtype).reshape(np.shape(state)), out.view(np_dtype)


def lower_rng_bit_generator(ctx, instr, operands):
    """``rng-bit-generator(state)``, ``algorithm`` rng_default (Philox), rng_three_fry or
    rng_philox: (new state, random bits), bit for bit as XLA:
    https://openxla.org/xla/operation_semantics#rngbitgenerator"""
    (state,) = operands
    name = str(instr.attr("algorithm", "rng_default")).lower()
    algorithm = _ALGORITHMS.get(name)
    if algorithm is None:
        raise unsupported(ctx, instr, f"unknown algorithm {name!r} (rng_default, rng_three_fry, "
                                      "rng_philox)")
    leaves = _leaf_shapes(instr.shape)
    if len(leaves) != 2 or len(state.shape) != 1 or state.dtype.bits != 64 or not state.dtype.is_int:
        raise unsupported(ctx, instr, "takes a u64[n] state and returns (state, bits)")
    if state.shape[0] < 2 or tuple(leaves[0].dims) != state.shape:
        raise unsupported(ctx, instr, f"the state is u64[2] or longer and is returned with its "
                                      f"shape, got {list(state.shape)}")
    out = dtype_of(ctx, instr, leaves[1])
    if out.bits not in (8, 16, 32, 64) or out.is_bool:
        raise unsupported(ctx, instr, f"cannot generate {out} bits (8, 16, 32 or 64-bit types)")
    shape = tuple(leaves[1].dims)

    def run_rng(arrays, run):
        return generate(algorithm, arrays[0], shape, out.np)
    return _extern_result(ctx, instr, "rng-bit-generator", [state], run_rng,
                          (("algorithm", algorithm),))


def _instr_key(ctx, instr) -> int:
    text = f"{getattr(ctx.module, 'name', '')}/{instr.name}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little")


def lower_rng(ctx, instr, operands):
    """``rng(a, b)``: uniform in [a, b) (``rng_uniform``, floats and ints) or normal with mean
    a and deviation b (``rng_normal``) from Philox bits, as XLA's RngExpander; each run
    continues the previous one's counter: https://openxla.org/xla/operation_semantics#rnguniform"""
    a, b = operands
    dist = str(instr.attr("distribution", "")).lower()
    out = dtype_of(ctx, instr)
    if dist not in ("rng_uniform", "rng_normal"):
        raise unsupported(ctx, instr, f"distribution {dist!r} (rng_uniform or rng_normal)")
    if a.shape or b.shape or a.dtype is not out or b.dtype is not out:
        raise unsupported(ctx, instr, f"takes two {out} scalars")
    if dist == "rng_normal" and not out.is_float or out.is_bool or out.bits == 8:
        raise unsupported(ctx, instr, f"{dist} of {out}")
    shape = tuple(instr.shape.dims)
    key = _instr_key(ctx, instr)
    counter = [np.uint64(0), np.uint64(0)]
    wide = np.dtype(np.float32) if out.is_float and out.bits < 32 else out.np

    def run_rng(arrays, run):
        lo, hi = (np.asarray(x).astype(wide) for x in arrays)
        if dist == "rng_uniform":
            bits, new = philox_bits(key, counter, shape, wide.itemsize * 8)
            res = uniform_float(bits, lo, hi, wide) if out.is_float else uniform_int(bits, lo, hi, wide)
        else:
            res, new = _normal(key, counter, shape, wide)
            res = lo + hi * res
        counter[:] = new
        return (np.asarray(res).astype(out.np).reshape(shape),)
    (t,) = extern(instr.name, "rng", [a, b], [shape], [out], run_rng,
                  (("distribution", dist), ("key", key)))
    return t


def _normal(key, counter, shape, dtype):
    """``NormalFloatingPointDistribution``: uniform pairs along the split dimension, then
    Box-Muller, recombined as XLA's CombineShapePair."""
    split, size, half = half_shape(shape)
    pair_shape = half[:split + 1] + (2,) + half[split + 1:]
    bits, new = philox_bits(key, counter, pair_shape, dtype.itemsize * 8)
    u = uniform_float(bits, 0.0, 1.0, dtype)
    z0, z1 = normal((np.take(u, [0], axis=split + 1), np.take(u, [1], axis=split + 1)))
    full = list(half)
    full[split] *= 2
    out = np.concatenate([z0, z1], axis=split + 1).reshape(full)
    return np.take(out, np.arange(size), axis=split).reshape(shape), new


_STATES: dict[int, int] = {}


def lower_rng_get_and_update_state(ctx, instr, operands):
    """``rng-get-and-update-state``, ``delta=n``: the 128-bit counter XLA's RngExpander keys
    ``rng`` with (u64[2]: low, high), advanced by ``delta`` after each run."""
    delta = int(instr.attr("delta", 0))
    if tuple(instr.shape.dims) != (2,) or dtype_of(ctx, instr).bits != 64:
        raise unsupported(ctx, instr, "returns a u64[2] state")
    slot = _instr_key(ctx, instr)

    def run_state(arrays, run):
        v = _STATES.get(slot, 0)
        _STATES[slot] = (v + delta) % (1 << 128)
        return (np.array([v & ((1 << 64) - 1), v >> 64], np.uint64),)
    (t,) = extern(instr.name, "rng-get-and-update-state", [], [(2,)], [dtype_of(ctx, instr)],
                  run_state, (("delta", delta), ("slot", slot)))
    return t


HANDLERS = {
    "rng-bit-generator": lower_rng_bit_generator, "rng": lower_rng,
    "rng-get-and-update-state": lower_rng_get_and_update_state,
}

__all__ = ["HANDLERS", "generate"]
