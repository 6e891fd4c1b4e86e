"""Immutable data structures for a parsed XLA HLO module.

The parser (:mod:`hlotune.frontend.parser`) builds these; nothing here lowers or evaluates.
Names are stored without XLA's leading ``%``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from ..dsl.errors import UnsupportedOpError

__all__ = [
    "ELEMENT_TYPES",
    "TOKEN",
    "ArrayShape",
    "Computation",
    "HloModule",
    "Instruction",
    "Shape",
    "TupleShape",
]

#: HLO element type name -> numpy dtype (None: no numpy equivalent).
ELEMENT_TYPES: Mapping[str, np.dtype | None] = MappingProxyType({
    "pred": np.dtype(np.bool_),
    "s2": np.dtype(ml_dtypes.int2), "s4": np.dtype(ml_dtypes.int4),
    "s8": np.dtype(np.int8), "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32), "s64": np.dtype(np.int64),
    "u2": np.dtype(ml_dtypes.uint2), "u4": np.dtype(ml_dtypes.uint4),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
    "f8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "f8e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8e4m3b11fnuz": np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    "f8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "f8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8e3m4": np.dtype(ml_dtypes.float8_e3m4),
    "f8e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
    "f6e2m3fn": np.dtype(ml_dtypes.float6_e2m3fn),
    "f6e3m2fn": np.dtype(ml_dtypes.float6_e3m2fn),
    "f4e2m1fn": np.dtype(ml_dtypes.float4_e2m1fn),
    "token": None,
    "opaque": None,
})


def _freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if isinstance(mapping, MappingProxyType):
        return mapping
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class ArrayShape:
    """A dense array shape ``f32[2,3]{1,0}``; ``layout`` is minor-to-major or None if not printed.

    ``token[]`` and ``opaque[]`` are ArrayShapes of rank 0 whose ``numpy_dtype`` raises.
    """

    element_type: str
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None = None
    is_tuple: ClassVar[bool] = False

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.dims)

    @property
    def is_token(self) -> bool:
        return self.element_type == "token"

    @property
    def numpy_dtype(self) -> np.dtype:
        dt = ELEMENT_TYPES.get(self.element_type)
        if dt is None:
            raise UnsupportedOpError(self.element_type,
                                     detail=f"HLO type {self.element_type}[] has no numpy dtype")
        return dt

    def __str__(self) -> str:
        s = f"{self.element_type}[{','.join(map(str, self.dims))}]"
        if self.layout is not None:
            s += "{" + ",".join(map(str, self.layout)) + "}"
        return s


@dataclass(frozen=True)
class TupleShape:
    """A tuple shape ``(f32[2]{0}, s32[])``; elements may be tuples themselves."""

    elements: tuple[Shape, ...]
    is_tuple: ClassVar[bool] = True
    is_token: ClassVar[bool] = False

    def __len__(self) -> int:
        return len(self.elements)

    def __getitem__(self, i: int) -> Shape:
        return self.elements[i]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"


Shape = ArrayShape | TupleShape

#: The shape of ``token[]``.
TOKEN = ArrayShape("token", (), None)


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction ``[ROOT] name = shape opcode(operands), attrs...``.

    ``operands`` are instruction names in the same computation. ``attrs`` maps attribute
    names to parsed values (see the parser's module docstring). ``literal`` holds the
    numpy value of a ``constant`` (a tuple of arrays for a tuple-shaped constant).
    ``line``/``column`` locate the name in the source (1-based).
    """

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    literal: Any = field(default=None, compare=False, repr=False)
    is_root: bool = False
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", _freeze(self.attrs))
        object.__setattr__(self, "operands", tuple(self.operands))

    def attr(self, key: str, default: Any = None) -> Any:
        """The value of attribute ``key``, or ``default`` when absent."""
        return self.attrs.get(key, default)

    @property
    def parameter_number(self) -> int | None:
        """For ``parameter(N)``: N; otherwise None."""
        return self.attrs.get("parameter_number") if self.opcode == "parameter" else None


@dataclass(frozen=True)
class Computation:
    """A named computation. ``params`` are ordered by parameter number,
    ``instructions`` are in text order (parameters included), ``root`` names the result."""

    name: str
    params: tuple[Instruction, ...]
    instructions: tuple[Instruction, ...]
    root: str
    is_entry: bool = False
    line: int = field(default=0, compare=False)

    @cached_property
    def by_name(self) -> Mapping[str, Instruction]:
        """Instruction lookup by name."""
        return MappingProxyType({i.name: i for i in self.instructions})

    @property
    def root_instruction(self) -> Instruction:
        return self.by_name[self.root]

    @property
    def parameter_shapes(self) -> tuple[Shape, ...]:
        return tuple(p.shape for p in self.params)

    @property
    def result_shape(self) -> Shape:
        return self.root_instruction.shape


@dataclass(frozen=True)
class HloModule:
    """A parsed HLO module: its computations in text order and the entry's name."""

    name: str
    computations: tuple[Computation, ...]
    entry: str
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    source_file: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", _freeze(self.attrs))

    @cached_property
    def _by_name(self) -> Mapping[str, Computation]:
        return MappingProxyType({c.name: c for c in self.computations})

    def computation(self, name: str) -> Computation:
        """The computation called ``name`` (a leading ``%`` is ignored); KeyError if absent."""
        key = name.removeprefix("%")
        try:
            return self._by_name[key]
        except KeyError:
            raise KeyError(f"HLO module {self.name!r} has no computation {key!r}") from None

    @property
    def entry_computation(self) -> Computation:
        return self._by_name[self.entry]

    @property
    def parameter_shapes(self) -> tuple[Shape, ...]:
        """Shapes of the entry computation's parameters, by parameter number."""
        return self.entry_computation.parameter_shapes

    @property
    def result_shape(self) -> Shape:
        """Shape of the entry computation's root."""
        return self.entry_computation.result_shape
