"""Integer interval arithmetic on index expressions, for bound inference and guard elision.

``Interval(lo, ext)`` is the set ``[lo, lo + ext)`` where ``lo`` is an index Expr (it may name
loop variables fixed at the attach point) and ``ext`` a constant. ``static_range`` gives the
constant ``(min, max)`` of an expression over known variable ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dsl import dtypes as dt
from ..dsl.expr import Expr, as_expr, binary, rebuild
from ..dsl.ops import Op


@dataclass(frozen=True)
class Interval:
    lo: Expr
    ext: int

    @property
    def is_point(self) -> bool:
        return self.ext == 1


def interval(e: Expr, env: dict) -> Interval | None:
    """The interval of index expression ``e`` when each variable ``v`` in ``env`` ranges over
    ``env[v]`` (an Interval); other variables are fixed. ``None`` when not inferable."""
    op = e.op
    if op is Op.CONST:
        return Interval(e, 1)
    if op is Op.VAR:
        return env.get(e.arg, Interval(e, 1))
    src = [interval(s, env) for s in e.src] if op is not Op.LOAD else None
    if src is not None and any(s is None for s in src):
        return None
    if op is Op.ADD:
        a, b = src
        return Interval(binary(Op.ADD, a.lo, b.lo), a.ext + b.ext - 1)
    if op is Op.SUB:
        a, b = src
        return Interval(binary(Op.SUB, a.lo, binary(Op.ADD, b.lo, b.ext - 1)), a.ext + b.ext - 1)
    if op is Op.MUL:
        a, b = src
        if a.is_point and a.lo.op is Op.CONST and not (b.is_point and b.lo.op is Op.CONST):
            a, b = b, a
        if not (b.is_point and b.lo.op is Op.CONST):
            return Interval(binary(Op.MUL, a.lo, b.lo), 1) if a.is_point and b.is_point else None
        c = b.lo.arg
        if c >= 0:
            return Interval(binary(Op.MUL, a.lo, c), (a.ext - 1) * c + 1)
        return Interval(binary(Op.MUL, binary(Op.ADD, a.lo, a.ext - 1), c), (a.ext - 1) * -c + 1)
    if op in (Op.FLOORDIV, Op.DIV) and src[1].is_point and src[1].lo.op is Op.CONST and src[1].lo.arg > 0:
        a, c = src[0], src[1].lo.arg
        if a.is_point:
            return Interval(binary(op, a.lo, c), 1)
        q = exact_div(a.lo, c)      # (c*q + t) / c = q + t / c for t in [0, ext)
        if q is not None:
            return Interval(q, (a.ext - 1) // c + 1)
        return Interval(binary(op, a.lo, c), (a.ext - 1) // c + 2)
    if op in (Op.FLOORMOD, Op.REM) and src[1].is_point and src[1].lo.op is Op.CONST and src[1].lo.arg > 0:
        a, c = src[0], src[1].lo.arg
        if a.is_point:
            return Interval(binary(op, a.lo, c), 1)
        if a.ext <= c and exact_div(a.lo, c) is not None:
            return Interval(as_expr(0, e.dtype), a.ext)
        return Interval(as_expr(0, e.dtype), c)
    if src is not None and all(s.is_point for s in src) and op is not Op.REDUCE:
        return Interval(rebuild(e, tuple(s.lo for s in src)), 1)
    return None


def exact_div(e: Expr, c: int) -> Expr | None:
    """``e / c`` when ``e`` is affine with every coefficient and its constant divisible by ``c``
    (then floor and truncating division agree), else None."""
    lf = linear(e)
    if lf is None or lf[1] % c or any(k % c for k, _ in lf[0].values()):
        return None
    return simplify(_from_linear({key: (k // c, at) for key, (k, at) in lf[0].items()}, lf[1] // c, e.dtype))


def _int_range(d) -> tuple[int, int] | None:
    """Every value of integer type ``d`` (None for other types)."""
    if not d.is_int:
        return None
    n = d.bits
    return (0, (1 << n) - 1) if d.name.startswith("u") else (-(1 << (n - 1)), (1 << (n - 1)) - 1)


def static_range(e: Expr, ranges: dict) -> tuple[int, int] | None:
    """Constant ``(min, max)`` of ``e`` with variables in ``ranges`` (IterVar -> (min, max));
    ``None`` when unknown. An integer value read from memory (a dynamic index) spans its type,
    so a clamp of it (``min(max(x, 0), n - 1)``) has the clamp's range; a result that may wrap
    spans its type."""
    r = _static_range(e, ranges)
    full = _int_range(e.dtype)
    if full is None:
        return r
    if r is None:
        return full if e.op is Op.LOAD else None
    return r if full[0] <= r[0] and r[1] <= full[1] else full


def _static_range(e: Expr, ranges: dict) -> tuple[int, int] | None:
    op = e.op
    if op is Op.CONST:
        v = e.arg
        return (int(v), int(v)) if isinstance(v, (int, bool)) else None
    if op is Op.VAR:
        return ranges.get(e.arg)
    if op is Op.SELECT:
        rs = [static_range(s, ranges) for s in e.src[1:]]
        return None if any(r is None for r in rs) else (min(r[0] for r in rs), max(r[1] for r in rs))
    if op not in (Op.ADD, Op.SUB, Op.MUL, Op.MIN, Op.MAX, Op.DIV, Op.FLOORDIV, Op.REM, Op.FLOORMOD, Op.CAST):
        return None
    rs = [static_range(s, ranges) for s in e.src]
    if any(r is None for r in rs):
        return None
    if op is Op.CAST:
        return rs[0] if e.dtype.is_int else None
    (a0, a1), (b0, b1) = rs
    if op is Op.ADD:
        return a0 + b0, a1 + b1
    if op is Op.SUB:
        return a0 - b1, a1 - b0
    if op is Op.MUL:
        p = [a0 * b0, a0 * b1, a1 * b0, a1 * b1]
        return min(p), max(p)
    if op is Op.MIN:
        return min(a0, b0), min(a1, b1)
    if op is Op.MAX:
        return max(a0, b0), max(a1, b1)
    if b0 == b1 and b0 > 0 and a0 >= 0:
        if op in (Op.DIV, Op.FLOORDIV):
            return a0 // b0, a1 // b0
        return (a0, a1) if a1 < b0 else (0, b0 - 1)
    return None


_ORDER = {Op.LT: (lambda a, b: a[1] < b[0], lambda a, b: a[0] >= b[1]),
          Op.LE: (lambda a, b: a[1] <= b[0], lambda a, b: a[0] > b[1]),
          Op.GT: (lambda a, b: a[0] > b[1], lambda a, b: a[1] <= b[0]),
          Op.GE: (lambda a, b: a[0] >= b[1], lambda a, b: a[1] < b[0])}


def fold_guards(e: Expr, ranges: dict) -> Expr:
    """``e`` with each integer comparison that holds (or fails) for every value in ``ranges``
    (IterVar -> (min, max)) replaced by its truth value, ``and``/``or`` and ``select`` on such
    values by their outcome, and an integer ``min``/``max`` whose order is decided by its
    operand: the padding guards and clamps of a pack whose region lies inside the tensor."""
    memo: dict[int, Expr] = {}

    def truth(x: Expr):
        return bool(x.arg) if x.op is Op.CONST and x.dtype is dt.bool_ else None

    def go(x: Expr) -> Expr:
        r = memo.get(id(x))
        if r is not None:
            return r
        src = tuple(go(a) for a in x.src)
        r = None
        if x.op in _ORDER and src[0].dtype.is_int:
            a, b = static_range(src[0], ranges), static_range(src[1], ranges)
            if a is not None and b is not None:
                holds, fails = _ORDER[x.op]
                r = as_expr(True, dt.bool_) if holds(a, b) else as_expr(False, dt.bool_) if fails(a, b) else None
        elif x.op in (Op.AND, Op.OR) and x.dtype is dt.bool_:
            t = [truth(a) for a in src]
            absorbing = x.op is Op.OR
            if absorbing in t:
                r = as_expr(absorbing, dt.bool_)
            elif t[0] is not None or t[1] is not None:
                r = src[1] if t[0] is not None else src[0]
        elif x.op is Op.SELECT and truth(src[0]) is not None:
            r = src[1] if truth(src[0]) else src[2]
        elif x.op in (Op.MIN, Op.MAX) and x.dtype.is_int:
            a, b = static_range(src[0], ranges), static_range(src[1], ranges)
            if a is not None and b is not None:
                first = a[1] <= b[0] if x.op is Op.MIN else a[0] >= b[1]
                second = b[1] <= a[0] if x.op is Op.MIN else b[0] >= a[1]
                r = src[0] if first else src[1] if second else None
        if r is None:
            r = x if all(n is o for n, o in zip(src, x.src)) else rebuild(x, src)
        memo[id(x)] = r
        return r
    return go(e)


def linear(e: Expr):
    """``e`` as ``({atom_key: (coeff, atom)}, const)`` for affine index expressions; atoms are
    variables or other sub-expressions keyed structurally. ``None`` if a product is not affine."""
    op = e.op
    if op is Op.CONST and isinstance(e.arg, int):
        return {}, e.arg
    if op in (Op.ADD, Op.SUB):
        a, b = linear(e.src[0]), linear(e.src[1])
        if a is None or b is None:
            return None
        s = -1 if op is Op.SUB else 1
        terms = dict(a[0])
        for k, (c, at) in b[0].items():
            terms[k] = (terms.get(k, (0, at))[0] + s * c, at)
        return {k: v for k, v in terms.items() if v[0] != 0}, a[1] + s * b[1]
    if op is Op.MUL:
        a, b = linear(e.src[0]), linear(e.src[1])
        if a is None or b is None:
            return None
        if not b[0]:
            a, b = b, a
        if a[0]:
            return None
        c = a[1]
        return {k: (v[0] * c, v[1]) for k, v in b[0].items() if v[0] * c}, b[1] * c
    return {ident_key(e): (1, e)}, 0


def ident_key(e: Expr) -> tuple:
    """A key equal for expressions built from the same variables and buffers (by identity)."""
    if e.op is Op.VAR or e.op is Op.LOAD:
        return (e.op.value, id(e.arg), tuple(ident_key(s) for s in e.src))
    return (e.op.value, e.dtype.name, e.arg if e.op is Op.CONST else None,
            tuple(ident_key(s) for s in e.src))


def const_difference(a: Expr, b: Expr) -> int | None:
    """``a - b`` when it is a constant, else None."""
    la, lb = linear(a), linear(b)
    if la is None or lb is None:
        return None
    if {k: v[0] for k, v in la[0].items()} != {k: v[0] for k, v in lb[0].items()}:
        return None
    return la[1] - lb[1]


def simplify(e: Expr) -> Expr:
    """Rebuild an affine index expression from its linear form (``(a*4+b) - a*4`` -> ``b``,
    ``(x/c)*c*k + (x%c)*k`` -> ``x*k``)."""
    lf = linear(e)
    if lf is None or not e.dtype.is_int:
        return e
    return _from_linear(_merge_divmod(lf[0]), lf[1], e.dtype)


def _merge_divmod(terms: dict) -> dict:
    """Fold ``k*c*(x/c) + k*(x%c)`` into ``k*x`` (true for C's and floor division alike)."""
    for key, (k, at) in list(terms.items()):
        if key not in terms or at.op not in (Op.REM, Op.FLOORMOD) or at.src[1].op is not Op.CONST:
            continue
        c = at.src[1].arg
        dop = Op.DIV if at.op is Op.REM else Op.FLOORDIV
        dkey = (dop.value, at.dtype.name, None, (ident_key(at.src[0]), ident_key(at.src[1])))
        inner = linear(at.src[0])
        if dkey not in terms or terms[dkey][0] != k * c or inner is None or inner[1]:
            continue
        del terms[key], terms[dkey]
        for ik, (ic, iat) in inner[0].items():
            terms[ik] = (terms.get(ik, (0, iat))[0] + ic * k, iat)
        terms = {a: v for a, v in terms.items() if v[0] != 0}
        return _merge_divmod(terms)
    return terms


def simplify_index(e: Expr, ranges: dict) -> Expr:
    """Simplify an index expression using variable ranges: affine parts are regrouped and
    ``(a*c + b) // c -> a``, ``(a*c + b) % c -> b`` when ``0 <= b < c`` (likewise ``/`` and ``%``
    for non-negative operands)."""
    if not e.dtype.is_int or e.op in (Op.CONST, Op.VAR):
        return e
    if e.op in (Op.FLOORDIV, Op.FLOORMOD, Op.DIV, Op.REM) and e.src[1].op is Op.CONST and e.src[1].arg > 0:
        a = simplify_index(e.src[0], ranges)
        c = e.src[1].arg
        lf = linear(a)
        if lf is not None:
            terms, k = lf
            keep = {key: v for key, v in terms.items() if v[0] % c == 0}
            rest = {key: v for key, v in terms.items() if v[0] % c != 0}
            rest_e = simplify(_from_linear(rest, k, a.dtype))
            rng = static_range(rest_e, ranges)
            whole = static_range(a, ranges)
            nonneg = whole is not None and whole[0] >= 0
            if rng is not None and (e.op in (Op.FLOORDIV, Op.FLOORMOD) or nonneg) and rng[0] // c == rng[1] // c:
                q = rng[0] // c
                if e.op in (Op.FLOORDIV, Op.DIV):
                    div = {key: (v[0] // c, v[1]) for key, v in keep.items()}
                    return simplify(_from_linear(div, q, a.dtype))
                return simplify(binary(Op.SUB, rest_e, q * c)) if q else rest_e
        return binary(e.op, a, c)
    if e.op in (Op.ADD, Op.SUB, Op.MUL):
        return simplify(binary(e.op, *(simplify_index(s, ranges) for s in e.src)))
    return e


def _from_linear(terms: dict, c: int, dtype) -> Expr:
    out: Expr | None = None
    for coeff, atom in terms.values():
        t = atom if coeff == 1 else binary(Op.MUL, atom, coeff)
        out = t if out is None else binary(Op.ADD, out, t)
    if out is None:
        return as_expr(c, dtype)
    return binary(Op.ADD, out, c) if c else out
