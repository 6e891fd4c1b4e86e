"""Element types of the DSL, with numpy-compatible promotion.

A ``DType`` is interned by name: ``dtype("float32") is float32``. Beyond numpy's types:

* ``bfloat16``, the float8 family (``float8_e4m3fn``, ``float8_e5m2``, their FNUZ variants,
  ``float8_e4m3b11fnuz``, ``float8_e4m3``, ``float8_e3m4``, ``float8_e8m0fnu``) and
  ``float4_e2m1fn``/``float6_e2m3fn``/``float6_e3m2fn``: the ``ml_dtypes`` types, one element per
  byte. Floats narrower than 32 bits compute in float32 and round to their type after every
  op (as XLA:CPU does); :attr:`DType.format` describes the bits of those under 16 bits.
* ``int2``/``int4``/``uint2``/``uint4``: ``ml_dtypes``' sub-byte integers, one element per
  byte in memory (XLA:CPU's unpacked form; XLA packs them only in serialized literals), with
  wrap-around arithmetic at their width.
* ``complex64``/``complex128``: pairs of float32/float64 (real, imaginary), numpy's layout.

Types outside numpy's own promote only with themselves (HLO never mixes element types).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import ml_dtypes
import numpy as np

from .errors import DSLError


@dataclass(frozen=True)
class FloatFormat:
    """The encoding of a float narrower than 16 bits: ``ebits`` exponent and ``mbits`` mantissa
    bits with exponent ``bias``. ``inf``: IEEE infinities (exponent all ones, mantissa 0).
    ``nan``: where NaNs are: 'ieee' (exponent all ones, mantissa not 0), 'fn' (every bit of
    exponent and mantissa set), 'fnuz' (the negative-zero code, so no -0), 'e8m0' (all ones;
    the type has no sign, no zero and no mantissa) or 'none' (the type saturates at its largest
    finite value; a NaN converts to a zero of the opposite sign, as ml_dtypes does)."""

    ebits: int
    mbits: int
    bias: int
    inf: bool
    nan: str

    @property
    def bits(self) -> int:
        return self.ebits + self.mbits + (self.nan != "e8m0")

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal value (fields of 0 are subnormals, except e8m0)."""
        return -self.bias if self.nan == "e8m0" else 1 - self.bias

    @property
    def max_code(self) -> int:
        """Code (sign clear) of the largest finite value."""
        top = (1 << (self.ebits + self.mbits)) - 1
        if self.nan == "ieee":
            return top - (1 << self.mbits)      # exponent all ones is inf/NaN
        if self.nan in ("fn", "e8m0"):
            return top - 1
        return top

    def value(self, code: int) -> float:
        """The value of a finite non-negative code."""
        e, m = code >> self.mbits, code & ((1 << self.mbits) - 1)
        if e == 0 and self.nan != "e8m0":
            return m * 2.0 ** (self.emin - self.mbits)
        return (1 + m / (1 << self.mbits)) * 2.0 ** (e - self.bias)

    @property
    def max(self) -> float:
        return self.value(self.max_code)


@dataclass(frozen=True)
class DType:
    """An element type. ``kind``: 'f' (float), 'i' (signed), 'u' (unsigned), 'b' (bool) or
    'c' (complex); ``bits``: its width (a complex counts both parts)."""

    name: str
    kind: str
    bits: int

    @cached_property
    def np(self) -> np.dtype:
        return np.dtype(getattr(ml_dtypes, self.name) if self.name in _ML_DTYPES else self.name)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (sub-byte types take one)."""
        return max(1, self.bits // 8)

    @property
    def component(self) -> DType:
        """The type of each part of a complex (float32 or float64); a real type: itself."""
        return _BY_NAME[f"float{self.bits // 2}"] if self.is_complex else self

    @property
    def is_narrow_float(self) -> bool:
        """A float narrower than 32 bits: computed in float32, rounded after every op."""
        return self.is_float and self.bits < 32

    @property
    def is_sub_byte(self) -> bool:
        """An integer narrower than a byte (stored one per byte, wrapped at its width)."""
        return self.is_int and self.bits < 8

    @property
    def format(self) -> FloatFormat | None:
        """The encoding of a float under 16 bits (None for other types)."""
        return _FORMATS.get(self.name)

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return dtype, (self.name,)      # unpickles to the interned instance ('is' comparisons hold)


float16 = DType("float16", "f", 16)
bfloat16 = DType("bfloat16", "f", 16)
float32 = DType("float32", "f", 32)
float64 = DType("float64", "f", 64)
int8 = DType("int8", "i", 8)
int16 = DType("int16", "i", 16)
int32 = DType("int32", "i", 32)
int64 = DType("int64", "i", 64)
uint8 = DType("uint8", "u", 8)
uint16 = DType("uint16", "u", 16)
uint32 = DType("uint32", "u", 32)
uint64 = DType("uint64", "u", 64)
bool_ = DType("bool", "b", 8)
complex64 = DType("complex64", "c", 64)
complex128 = DType("complex128", "c", 128)
int2 = DType("int2", "i", 2)
int4 = DType("int4", "i", 4)
uint2 = DType("uint2", "u", 2)
uint4 = DType("uint4", "u", 4)
float8_e4m3fn = DType("float8_e4m3fn", "f", 8)
float8_e5m2 = DType("float8_e5m2", "f", 8)
float8_e4m3fnuz = DType("float8_e4m3fnuz", "f", 8)
float8_e5m2fnuz = DType("float8_e5m2fnuz", "f", 8)
float8_e4m3b11fnuz = DType("float8_e4m3b11fnuz", "f", 8)
float8_e4m3 = DType("float8_e4m3", "f", 8)
float8_e3m4 = DType("float8_e3m4", "f", 8)
float8_e8m0fnu = DType("float8_e8m0fnu", "f", 8)
float6_e2m3fn = DType("float6_e2m3fn", "f", 6)
float6_e3m2fn = DType("float6_e3m2fn", "f", 6)
float4_e2m1fn = DType("float4_e2m1fn", "f", 4)

#: numpy's own types and bfloat16: they promote as numpy does
STANDARD = (float16, bfloat16, float32, float64, int8, int16, int32, int64,
            uint8, uint16, uint32, uint64, bool_)
COMPLEX = (complex64, complex128)
SUB_BYTE_INTS = (int2, int4, uint2, uint4)
#: floats under 16 bits (ml_dtypes), each with a :class:`FloatFormat`
SMALL_FLOATS = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e4m3b11fnuz,
                float8_e4m3, float8_e3m4, float8_e8m0fnu, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn)
ALL = STANDARD + COMPLEX + SUB_BYTE_INTS + SMALL_FLOATS

_ML_DTYPES = frozenset(d.name for d in (bfloat16,) + SUB_BYTE_INTS + SMALL_FLOATS)
_FORMATS = {
    "float8_e4m3fn": FloatFormat(4, 3, 7, False, "fn"),
    "float8_e5m2": FloatFormat(5, 2, 15, True, "ieee"),
    "float8_e4m3fnuz": FloatFormat(4, 3, 8, False, "fnuz"),
    "float8_e5m2fnuz": FloatFormat(5, 2, 16, False, "fnuz"),
    "float8_e4m3b11fnuz": FloatFormat(4, 3, 11, False, "fnuz"),
    "float8_e4m3": FloatFormat(4, 3, 7, True, "ieee"),
    "float8_e3m4": FloatFormat(3, 4, 3, True, "ieee"),
    "float8_e8m0fnu": FloatFormat(8, 0, 127, False, "e8m0"),
    "float6_e2m3fn": FloatFormat(2, 3, 1, False, "none"),
    "float6_e3m2fn": FloatFormat(3, 2, 3, False, "none"),
    "float4_e2m1fn": FloatFormat(2, 1, 1, False, "none"),
}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "bf16": bfloat16, "f16": float16, "f32": float32, "f64": float64})

#: The dtype of loop and index variables.
index = int64


def dtype(x) -> DType:
    """Normalize a name, numpy dtype or DType to an interned DType."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        npd = np.dtype(x)
    except TypeError as e:
        raise DSLError(f"unknown dtype {x!r}; expected one of {[d.name for d in ALL]}") from e
    if npd.name in _BY_NAME and npd == _BY_NAME[npd.name].np:
        return _BY_NAME[npd.name]
    raise DSLError(f"unsupported dtype {npd}; expected one of {[d.name for d in ALL]}")


def promote(a: DType, b: DType) -> DType:
    """numpy's promotion of two array dtypes (bfloat16 with float16 gives float32); the types
    numpy does not know (sub-byte integers, floats under 16 bits) promote only with themselves."""
    if a is b:
        return a
    if a.name in _ML_DTYPES and a is not bfloat16 or b.name in _ML_DTYPES and b is not bfloat16:
        raise DSLError(f"no implicit conversion between {a} and {b}; convert one explicitly")
    return dtype(np.promote_types(a.np, b.np))
