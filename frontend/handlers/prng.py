"""XLA's counter-based bit generators (``xla/hlo/builder/lib/prng.cc``) in numpy, bit for bit:
Threefry-2x32 (20 rounds) and Philox-4x32 (10 rounds), with the way XLA lays their outputs
out, advances their counters and derives uniform and normal values from bits. Host code: the
``rng-bit-generator`` and ``rng`` extern ops run these (:mod:`.random`).

Arithmetic is modulo 2^32 / 2^64 as in XLA (numpy unsigned arrays wrap).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["half_shape", "normal", "philox_bits", "threefry_bits", "uniform_float", "uniform_int"]

U32, U64 = np.uint32, np.uint64
_ROT = (13, 15, 26, 6, 17, 29, 16, 24)


def _split64(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, U64)
    return (v & U64(0xFFFFFFFF)).astype(U32), (v >> U64(32)).astype(U32)


def _join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(U64) | (hi.astype(U64) << U64(32))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, k0, k1) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds on counters (x0, x1) under key (k0, k1)."""
    with np.errstate(over="ignore"):
        return _threefry(x0, x1, U32(k0), U32(k1))


def _threefry(x0, x1, k0, k1):
    ks = (k0, k1, U32(0x1BD11BDA) ^ k0 ^ k1)
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for block in range(5):
        for r in _ROT[:4] if block % 2 == 0 else _ROT[4:]:
            x0 = x0 + x1
            x1 = (x1 << U32(r)) | (x1 >> U32(32 - r))
            x1 = x0 ^ x1
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + U32(block + 1)
    return x0, x1


def half_shape(shape: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
    """XLA's SplitShapeIntoHalves: (split dim, its size, the shape with that dim halved,
    rounding up): the first even dim, else the largest; a scalar splits as [1]."""
    if not shape:
        return 0, 1, (1,)
    split = next((i for i, n in enumerate(shape) if n % 2 == 0), None)
    if split is None:
        split = max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = list(shape)
    half[split] = (shape[split] + 1) // 2
    return split, shape[split], tuple(half)


def threefry_bits(key, counter, shape: tuple[int, ...], bits: int) -> tuple[np.ndarray, int]:
    """(``bits``-wide unsigned random bits of ``shape``, the counter's increment):
    ``ThreeFryBitGenerator`` for a u64 ``key`` and u64 ``counter``."""
    with np.errstate(over="ignore"):
        k0, k1 = _split64(U64(key))
        if bits == 64:
            n = math.prod(shape)
            c = U64(counter) + np.arange(n, dtype=U64)
            o0, o1 = threefry2x32(*_split64(c), k0, k1)
            return _join64(o0, o1).reshape(shape), n
        split, size, half = half_shape(tuple(shape))
        n = math.prod(half)
        c = U64(counter) + np.arange(n, dtype=U64)
        o0, o1 = threefry2x32(*_split64(c), k0, k1)
        pair = np.stack([o0.reshape(half), o1.reshape(half)], axis=split + 1)
        full = list(half)
        full[split] *= 2
        out = pair.reshape(full)
        out = np.take(out, np.arange(size), axis=split).reshape(shape)
        return _narrow(out, bits), n


def philox4x32(x: list[np.ndarray], k0, k1) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds on counters ``x`` (four u32 arrays) under key (k0, k1)."""
    with np.errstate(over="ignore"):
        return _philox(x, U32(k0), U32(k1))


def _philox(x, k0, k1):
    for _ in range(10):
        p0 = x[0].astype(U64) * U64(0xD2511F53)
        p1 = x[2].astype(U64) * U64(0xCD9E8D57)
        hi0, lo0 = (p0 >> U64(32)).astype(U32), p0.astype(U32)
        hi1, lo1 = (p1 >> U64(32)).astype(U32), p1.astype(U32)
        x = [hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0]
        k0, k1 = k0 + U32(0x9E3779B9), k1 + U32(0xBB67AE85)
    return x


def _add_u128(lo, hi, n) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) + n as a 128-bit sum (``Uint128AddUint64``)."""
    new_lo = U64(lo) + np.asarray(n, U64)
    return new_lo, np.where(new_lo < U64(lo), U64(hi) + U64(1), U64(hi)).astype(U64)


def philox_bits(key, counter: tuple, shape: tuple[int, ...], bits: int) -> tuple[np.ndarray, tuple]:
    """(``bits``-wide unsigned random bits of ``shape``, the new 128-bit counter (lo, hi)):
    ``PhiloxBitGenerator`` for a u64 ``key`` and counter (lo, hi)."""
    with np.errstate(over="ignore"):
        k0, k1 = _split64(U64(key))
        n = math.prod(shape)
        words = 2 * n if bits == 64 else n
        n4 = -(-words // 4)
        lo, hi = _add_u128(counter[0], counter[1], np.arange(n4, dtype=U64))
        (a, b), (c, d) = _split64(lo), _split64(hi)
        out = philox4x32([a, b, c, d], k0, k1)
        if bits == 64:
            flat = np.stack([_join64(out[0], out[1]), _join64(out[2], out[3])], axis=1).reshape(-1)
        else:
            flat = _narrow(np.stack(out, axis=1).reshape(-1), bits)
        new = _add_u128(counter[0], counter[1], n4)
        return flat[:n].reshape(shape), (U64(new[0]), U64(new[1]))


def _narrow(u32: np.ndarray, bits: int) -> np.ndarray:
    """32-bit values cut to their low ``bits`` (XLA's narrow generators drop the upper bits)."""
    return u32 if bits == 32 else u32.astype(np.dtype(f"uint{bits}"))


def uniform_float(bits: np.ndarray, lo, hi, dtype: np.dtype) -> np.ndarray:
    """``ConvertRandomBitsToUniformFloatingPoint``: the mantissa's worth of top bits scaled to
    [0, 1), then ``* (hi - lo) + lo``."""
    dtype = np.dtype(dtype)
    nbits = bits.dtype.itemsize * 8
    mant = np.finfo(dtype).nmant
    v = (bits >> np.asarray(nbits - mant, bits.dtype)).astype(dtype) * dtype.type(2.0 ** -mant)
    return (v * (dtype.type(hi) - dtype.type(lo)) + dtype.type(lo)).astype(dtype)


def uniform_int(bits: np.ndarray, lo, hi, dtype: np.dtype) -> np.ndarray:
    """``ConvertRandomBitsToUniformInt``: lo + (bits % (hi - lo)) split in two halves."""
    dtype = np.dtype(dtype)
    ut = np.dtype(f"uint{dtype.itemsize * 8}")
    with np.errstate(over="ignore"):
        rng = np.asarray(hi, dtype).astype(ut) - np.asarray(lo, dtype).astype(ut)
        dist = bits.astype(ut) % np.where(rng == 0, ut.type(1), rng)
        half = dist >> ut.type(1)
        return (np.asarray(lo, dtype) + half.view(dtype) + (dist - half).view(dtype)).astype(dtype)


def normal(uniform_pairs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``BoxMullerTransform`` of two uniform [0, 1) arrays."""
    x0, x1 = uniform_pairs
    t = x0.dtype.type
    u1 = np.maximum(x0, t(1.0e-7))
    v1 = t(2.0 * math.pi) * x1
    u2 = np.sqrt(t(-2.0) * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2
