"""Sort comparators read as lexicographic key orders, so that a ``sort`` runs as numpy's stable
lexsort instead of calling its comparator once per pair of elements.

A comparator takes parameters ``p[2i]`` (element ``x`` of operand ``i``) and ``p[2i+1]`` (element
``y``). It is recognised when it is, after lowering (TOTALORDER compares are already integer
compares of ``total_order_key``):

* ``k(x_i) < k(y_i)`` with one key function ``k`` of a single element (any elementwise
  expression: JAX's NaN/zero canonicalization, XLA's expanded total order, a negation, ...);
  ``>`` or swapped sides sort descending;
* ``lt(k1) | (eq(k1) & rest)``, ``rest`` recognised in turn: JAX's multi-key comparators
  (``lax.sort(..., num_keys=n)``), where ``eq(k1)`` compares the same key function ``k1``.

Anything else (``<=``, keys mixing operands, other shapes) is left to the pairwise path.
"""

from __future__ import annotations

import numpy as np

from ...dsl.expr import Expr, IterVar, walk
from ...dsl.ops import Op
from ...dsl.tensor import SortKey
from .common import eval_scalar

_STRICT = (Op.LT, Op.GT)


def _param(e: Expr, pv: list[IterVar]) -> int | None:
    """The one comparator parameter ``e`` depends on (its index in ``pv``), else None."""
    used = {x.arg for x in walk([e]) if x.op is Op.VAR}
    if len(used) != 1:
        return None
    (v,) = used
    return next((k for k, p in enumerate(pv) if p is v), None)


def _sides(e: Expr, pv: list[IterVar]) -> tuple[int, Expr] | None:
    """(operand, key of its ``x`` element) when ``e``'s two sides are one key function of the
    same operand's ``x`` and ``y`` parameters (in either order), else None."""
    a, b = e.src
    ia, ib = _param(a, pv), _param(b, pv)
    if ia is None or ib is None or ia // 2 != ib // 2 or ia == ib or a.key != b.key:
        return None
    return ia // 2, (a if ia % 2 == 0 else b)


def _strict(e: Expr, pv: list[IterVar]) -> SortKey | None:
    if e.op not in _STRICT:
        return None
    s = _sides(e, pv)
    if s is None:
        return None
    k, fn = s
    x_left = _param(e.src[0], pv) % 2 == 0
    return SortKey(k, fn, pv[2 * k], (e.op is Op.GT) == x_left)


def _equal(e: Expr, key: SortKey, pv: list[IterVar]) -> bool:
    s = _sides(e, pv) if e.op is Op.EQ else None
    return s is not None and s[0] == key.operand and s[1].key == key.fn.key


def lex_keys(less: Expr, pv: list[IterVar]) -> list[SortKey] | None:
    """The keys comparator ``less`` orders by, most significant first, or None (see the module
    docstring)."""
    k = _strict(less, pv)
    if k is not None:
        return [k]
    if less.op is not Op.OR:
        return None
    for first, rest in (less.src, less.src[::-1]):
        k = _strict(first, pv)
        if k is None or rest.op is not Op.AND:
            continue
        for eq, tail in (rest.src, rest.src[::-1]):
            if _equal(eq, k, pv):
                more = lex_keys(tail, pv)
                if more is not None:
                    return [k, *more]
    return None


def sortable(a: np.ndarray) -> np.ndarray:
    """An unsigned integer array ordered as ``a``: IEEE totalOrder for floats (-NaN < -inf <
    ... < -0.0 < +0.0 < ... < inf < NaN), two's complement order for signed integers."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "b":
        return a.astype(np.uint8)
    bits = a.dtype.itemsize * 8
    u = np.dtype(f"uint{bits}")
    sign = np.array(1 << (bits - 1), u)
    if a.dtype.kind == "u":
        return a
    if a.dtype.kind == "i":
        return a.view(u) ^ sign
    i = a.view(np.dtype(f"int{bits}"))
    k = i ^ ((i >> np.array(bits - 1, i.dtype)) & np.array((1 << (bits - 1)) - 1, i.dtype))
    return k.view(u) ^ sign


def _key_array(key: SortKey, a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        v = np.broadcast_to(eval_scalar(key.fn, {key.var: a}), a.shape)
    if key.fn.dtype.is_float:    # a float '<': -0 equals +0, NaNs (unordered in XLA) go last
        v = np.where(v == 0, np.zeros((), v.dtype), v)
        v = np.where(np.isnan(v), np.full((), np.nan, v.dtype), v)
    k = sortable(v)
    return ~k if key.descending else k


def lexsort_perm(keys: list[SortKey], arrays: list[np.ndarray], dim: int) -> np.ndarray:
    """The stable permutation along ``dim`` that sorts ``arrays`` by ``keys``."""
    ks = [np.moveaxis(_key_array(k, arrays[k.operand]), dim, -1) for k in keys]
    perm = np.lexsort(ks[::-1], axis=-1)       # lexsort: the last key is the primary one
    return np.moveaxis(perm, -1, dim)


__all__ = ["SortKey", "lex_keys", "lexsort_perm", "sortable"]
