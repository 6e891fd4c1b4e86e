"""Common subexpressions of one statement's value, which the renderers compute once.

Expression nodes compare by identity, and lowering's substitutions copy them, so one stored value
can hold many equal copies of a subexpression (exact GELU's ``erfc`` holds its argument 30 times).
Printed as a tree, every copy is computed again; worse, gcc if-converts a select whose two arms
share a subexpression into two masked computations of it (two ``exp``\\ s, four divisions).

``shared(value)`` finds the float subexpressions that occur more than once, by structure: the same
op, dtype and argument (buffers and variables by identity) over the same operands. It keeps only
those safe to compute unconditionally: every load inside is evaluated anyway, outside any select
arm (a select's arms may guard out-of-bounds indices, as padding does).
"""

from __future__ import annotations

from collections import Counter

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, walk
from ...dsl.ops import Op

#: the dtypes a temporary is declared in (their C value type is their storage type)
HOISTED = (dt.float32, dt.float64)


def _arg_key(arg):
    if arg is None or isinstance(arg, (bool, int, float, str)):
        return (type(arg).__name__, repr(arg))
    if isinstance(arg, tuple) and all(isinstance(a, (bool, int, float, str)) for a in arg):
        return ("tuple", repr(arg))
    return ("id", id(arg))


def shared(value: Expr) -> list[tuple[Expr, list[int]]]:
    """The subexpressions of ``value`` to compute once, operands before users: each as (a
    representative node, the ids of every node equal to it)."""
    canon: dict[int, Expr] = {}
    table: dict[tuple, Expr] = {}
    members: dict[int, list[int]] = {}
    reps: list[Expr] = []
    for e in walk([value]):
        key = (e.op, e.dtype, _arg_key(e.arg), tuple(id(canon[id(s)]) for s in e.src))
        rep = table.setdefault(key, e)
        canon[id(e)] = rep
        members.setdefault(id(rep), []).append(id(e))
        if rep is e:
            reps.append(e)
    uses = Counter(id(canon[id(s)]) for r in reps for s in r.src)
    root = canon[id(value)]
    always, stack = {id(root)}, [root]      # evaluated whatever the selects choose
    while stack:
        r = stack.pop()
        for s in (r.src[:1] if r.op is Op.SELECT else r.src):
            s = canon[id(s)]
            if id(s) not in always:
                always.add(id(s))
                stack.append(s)
    safe: dict[int, bool] = {}
    for r in reps:
        safe[id(r)] = (r.op is not Op.LOAD or id(r) in always) and \
            all(safe[id(canon[id(s)])] for s in r.src)
    return [(r, members[id(r)]) for r in reps
            if uses[id(r)] > 1 and r.op not in (Op.CONST, Op.VAR) and r.dtype in HOISTED and safe[id(r)]]


__all__ = ["HOISTED", "shared"]
