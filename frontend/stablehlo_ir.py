"""The MLIR op tree the StableHLO parser builds, and the table of converters from StableHLO ops to
HLO instructions that stablehlo_convert.py and stablehlo_types.py fill (``converter``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .ast import ArrayShape, Shape


@dataclass
class MlirOp:
    """One MLIR op. Values are SSA names without ``%`` (``0#2`` for result 2 of ``%0:3``);
    ``tok`` (anything with ``line``/``col``) locates it."""

    name: str
    tok: Any
    results: list[tuple[str, Any]] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)   # '0' of '%0:3' -> '0#0'
    operands: list[tuple[str, Any]] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    result_types: list[Shape] = field(default_factory=list)
    operand_types: list[Shape] | None = None   # when the signature gives them


@dataclass
class Region:
    """A one-block region: its arguments ``(name, type, tok)`` and ops (the last a return)."""

    args: list[tuple[str, Shape, Any]]
    ops: list[MlirOp]
    tok: Any
    end: Any


@dataclass
class Func:
    name: str
    tok: Any
    args: list[tuple[str, Shape, Any]]
    result_types: list[Shape]
    body: Region


@dataclass
class MlirModule:
    name: str | None
    attrs: dict[str, Any]
    funcs: list[Func]


class DenseAttr(NamedTuple):
    """A ``dense<...> : tensor<...>`` attribute: its value as a numpy array and its type. A
    splat (one value for every element) keeps that value alone, as a 0-d ``array``: a dead
    ``dense<0.0> : tensor<268435456xf32>`` costs nothing."""

    array: np.ndarray
    shape: ArrayShape

    @property
    def is_splat(self) -> bool:
        return self.array.shape != self.shape.dims

    def values(self) -> np.ndarray:
        """Every element (a read-only broadcast view of a splat)."""
        return np.broadcast_to(self.array, self.shape.dims) if self.is_splat else self.array


# ----------------------------------------------------------------------------- op table

TERMINATORS = frozenset({"func.return", "stablehlo.return"})
CONVERTERS: dict[str, Callable] = {}
HLO_NAMES: dict[str, str] = {}


def converter(*names: str, hlo: str):
    """Register a converter ``fn(cv, comp, op) -> [(instr name, shape)]`` (one per result)."""
    def register(fn):
        for n in names:
            CONVERTERS[n], HLO_NAMES[n] = fn, hlo
        return fn
    return register


__all__ = ["CONVERTERS", "HLO_NAMES", "TERMINATORS", "DenseAttr", "Func", "MlirModule", "MlirOp", "Region", "converter"]
