"""Common subexpressions across a module, as XLA's HloCSE finds them after inlining calls: an
instruction whose opcode, shape, attributes (all but ``metadata``) and operand *values* equal
an earlier one's is that value, lowered once.

Operand values are compared by identity (lowered tensors are immutable, and a ``call`` inlines
its computation on the caller's values), and called computations (a while loop's body, a
reducer) by their content, not their names: so two ``call``s of one computation on the same
arguments, or the three LU factorizations (and the pivot loops after them) JAX writes for
``slogdet``, ``inv`` and ``solve`` of one matrix, become one; so do equal constants (up to ``MAX_CONSTANT_BYTES``) and iotas. Never
merged: non-deterministic or effectful ops (``rng``, feeds, send/recv, tokens, a custom call
marked ``custom_call_has_side_effect``, a call or fusion holding a feed), and collectives with a
``channel_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .ast import Computation, HloModule, Instruction
from .parser import COMP_KEYS

#: opcodes whose every instance is a value of its own
NEVER = frozenset({"parameter", "rng", "rng-get-and-update-state", "infeed", "outfeed",
                   "send", "send-done", "recv", "recv-done", "after-all", "add-dependency", "domain",
                   "optimization-barrier", "partition-id", "replica-id"})
#: constants larger than this are not compared (their bytes would be copied to be hashed)
MAX_CONSTANT_BYTES = 1 << 20
#: attributes that do not change the value (where it came from in the user's source)
IGNORED = frozenset({"metadata", "statistics"})


class _Unhashable(Exception):
    pass


@dataclass(frozen=True)
class _Content:
    """A computation's content key inside another's: hashed and compared as is, never walked."""

    key: tuple


#: attribute values nested deeper than this are not compared (a hostile module's, say)
MAX_DEPTH = 32


def _frozen(v, depth: int = 0):
    """``v`` as a hashable value that compares equal exactly when ``v`` does."""
    if depth > MAX_DEPTH:
        raise _Unhashable
    if isinstance(v, Mapping):
        return ("map", tuple(sorted((str(k), _frozen(x, depth + 1)) for k, x in v.items())))
    if isinstance(v, (list, tuple)):
        return ("seq", type(v).__name__, tuple(_frozen(x, depth + 1) for x in v))
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    try:
        hash(v)
    except TypeError:
        raise _Unhashable from None
    return (type(v).__name__, v)


def _leaves(instr: Instruction) -> tuple[np.ndarray, ...]:
    """A constant's value as arrays (one per leaf of a tuple-shaped constant)."""
    lit = instr.literal
    return tuple(np.asarray(x) for x in (lit if isinstance(lit, tuple) else (lit,)))


def _literal(instr: Instruction) -> tuple:
    """A constant's value as a hashable key."""
    return _frozen(_leaves(instr))


class Fingerprints:
    """Content keys of a module's computations (memoized): two computations with equal keys
    compute the same function of their parameters, whatever their and their values' names."""

    def __init__(self, module: HloModule):
        self.module = module
        self._keys: dict[str, tuple] = {}

    def of(self, name: str) -> tuple:
        if name not in self._keys:
            self._keys[name] = ("recursive", name)          # a guard: HLO calls are acyclic
            self._keys[name] = self._content(self.module.computation(name))
        return self._keys[name]

    def _content(self, comp: Computation) -> tuple:
        index = {i.name: k for k, i in enumerate(comp.instructions)}
        body = []
        for i in comp.instructions:
            lit = _literal(i) if i.opcode == "constant" else None
            body.append((i.opcode, i.shape, tuple(index[o] for o in i.operands), self.attrs(i), lit,
                         i.parameter_number))
        return (tuple(body), index[comp.root])

    def attrs(self, instr: Instruction) -> tuple:
        """``instr``'s attributes that decide its value, called computations by content."""
        out = {}
        for k, v in instr.attrs.items():
            if k in IGNORED:
                continue
            if k in COMP_KEYS:
                names = v if isinstance(v, (list, tuple)) else (v,)
                v = tuple(_Content(self.of(n)) if isinstance(n, str) else n for n in names)
            out[k] = v
        return _frozen(out)


def cse_key(instr: Instruction, operands: Sequence, effects: bool, scope: tuple,
            fingerprints: Fingerprints) -> tuple | None:
    """The key under which ``instr`` on lowered ``operands`` equals an earlier instruction, or
    None when it must be lowered on its own (``effects``: it holds a feed; ``scope``: the
    lowering's nesting, part of the key). The caller keeps ``operands`` alive with the key."""
    if instr.opcode in NEVER or effects or "channel_id" in instr.attrs:
        return None
    if not instr.operands and instr.opcode not in ("constant", "iota"):
        return None
    if instr.opcode == "custom-call" and str(instr.attr("custom_call_has_side_effect", "")).lower() == "true":
        return None
    try:
        attrs = fingerprints.attrs(instr)
        lit = None
        if instr.opcode == "constant":
            if sum(x.nbytes for x in _leaves(instr)) > MAX_CONSTANT_BYTES:
                return None
            lit = _literal(instr)
    except (_Unhashable, KeyError):
        return None
    return (instr.opcode, instr.shape, tuple(id(v) for v in operands), attrs, lit, scope)


__all__ = ["IGNORED", "MAX_CONSTANT_BYTES", "NEVER", "Fingerprints", "cse_key"]
