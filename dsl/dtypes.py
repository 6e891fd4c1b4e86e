"""Element types of the DSL, with numpy-compatible promotion.

A ``DType`` is interned by name: ``dtype("float32") is float32``. bfloat16 maps to
``ml_dtypes.bfloat16`` on the numpy side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import ml_dtypes
import numpy as np

from .errors import DSLError


@dataclass(frozen=True)
class DType:
    """An element type. ``kind`` is one of 'f' (float), 'i' (signed), 'u' (unsigned), 'b' (bool)."""

    name: str
    kind: str
    bits: int

    @cached_property
    def np(self) -> np.dtype:
        return np.dtype(ml_dtypes.bfloat16) if self.name == "bfloat16" else np.dtype(self.name)

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
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

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

ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64,
       uint8, uint16, uint32, uint64, bool_)
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
    if npd == np.dtype(ml_dtypes.bfloat16):
        return bfloat16
    if npd.name in _BY_NAME:
        return _BY_NAME[npd.name]
    raise DSLError(f"unsupported dtype {npd}; expected one of {[d.name for d in ALL]}")


def promote(a: DType, b: DType) -> DType:
    """numpy's promotion of two array dtypes (bfloat16 with float16 gives float32)."""
    if a is b:
        return a
    return dtype(np.promote_types(a.np, b.np))
