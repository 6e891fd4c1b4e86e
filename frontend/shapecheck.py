"""Helpers of the HLO verifier's rules (:mod:`.verify_rules`): shape comparison ignoring
layouts, typed attribute access, and :class:`Invalid`, which a failed rule raises (the verifier
turns it into a located :class:`~hlotune.dsl.errors.HloParseError`)."""

from __future__ import annotations

from collections.abc import Sequence

from .ast import ELEMENT_TYPES, ArrayShape, Instruction, Shape, TupleShape

__all__ = ["Invalid", "array", "bits", "check", "dim_list", "expect", "ints", "is_float", "is_int",
           "leaves", "n_operands", "one_int", "plain", "scalar"]

_SUB_BYTE = {"s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4, "f6e2m3fn": 6, "f6e3m2fn": 6}


class Invalid(Exception):
    """A rule failed; the verifier turns it into a located :class:`HloParseError`."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Invalid(msg)


# ----------------------------------------------------------------------------- shapes

def plain(shape: Shape) -> Shape:
    """``shape`` without layouts (shapes are compared ignoring them)."""
    if shape.is_tuple:
        return TupleShape(tuple(plain(s) for s in shape.elements))
    return shape if shape.layout is None else ArrayShape(shape.element_type, shape.dims)


def bits(element_type: str) -> int:
    """Bit width of an element type (pred: 8, as XLA stores it)."""
    if element_type in _SUB_BYTE:
        return _SUB_BYTE[element_type]
    dt = ELEMENT_TYPES.get(element_type)
    return 0 if dt is None else dt.itemsize * 8


def array(shape: Shape, what: str) -> ArrayShape:
    """``shape`` if it is an array (not a tuple or token)."""
    check(not shape.is_tuple and ELEMENT_TYPES.get(shape.element_type) is not None,
          f"{what} must be an array, got {plain(shape)}")
    return shape


def scalar(shape: Shape, what: str, element_type: str | None = None) -> ArrayShape:
    a = array(shape, what)
    check(a.rank == 0, f"{what} must be a scalar, got {plain(a)}")
    check(element_type is None or a.element_type == element_type,
          f"{what} must be {element_type}[], got {plain(a)}")
    return a


def is_int(element_type: str) -> bool:
    return element_type[0] in "su" and element_type != "token"


def is_float(element_type: str) -> bool:
    return element_type[0] == "f" or element_type == "bf16"


def expect(ins: Instruction, shape: Shape, why: str = "its operands") -> None:
    """The declared shape of ``ins`` must be ``shape`` (layouts aside)."""
    check(plain(ins.shape) == plain(shape), f"is declared {plain(ins.shape)}, but {why} imply "
                                             f"{plain(shape)}")


def n_operands(ops: Sequence, n: int) -> None:
    check(len(ops) == n, f"takes {n} operand(s), got {len(ops)}")


def leaves(shape: Shape) -> list[ArrayShape]:
    if shape.is_tuple:
        return [x for s in shape.elements for x in leaves(s)]
    return [shape]


# ----------------------------------------------------------------------------- attributes

_REQUIRED = object()


def ints(ins: Instruction, key: str, default=_REQUIRED) -> tuple[int, ...]:
    """An integer-list attribute (a single integer is a 1-tuple)."""
    v = ins.attr(key)
    if v is None:
        check(default is not _REQUIRED, f"needs the attribute '{key}'")
        return tuple(default)
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,)
    check(isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
          f"attribute '{key}' must be a list of integers, got {v!r}")
    return v


def one_int(ins: Instruction, key: str, default=_REQUIRED) -> int:
    v = ints(ins, key, default if default is _REQUIRED else (default,))
    check(len(v) == 1, f"attribute '{key}' must be one integer, got {v!r}")
    return v[0]


def dim_list(ins: Instruction, key: str, rank: int, default=_REQUIRED, *, sorted_: bool = False
             ) -> tuple[int, ...]:
    """Distinct dimension numbers in ``[0, rank)`` (ascending if ``sorted_``)."""
    dims = ints(ins, key, default)
    check(all(0 <= d < rank for d in dims), f"'{key}' {list(dims)} has a dimension outside "
                                            f"[0, {rank})")
    check(len(set(dims)) == len(dims), f"'{key}' {list(dims)} repeats a dimension")
    check(not sorted_ or list(dims) == sorted(dims), f"'{key}' {list(dims)} must be ascending")
    return dims
