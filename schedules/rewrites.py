"""Plan decisions that rewrite the graph before it is scheduled: one-pass row statistics
(schedules/onepass.py, kind 'onepass') and online-softmax attention (schedules/attention.py,
kind 'online'). One-pass statistics are off by default, the online fold on by default only where a
head's scores outgrow the cache (``attention.online_default``); both are measured as plans. The
rewritten graph computes the same outputs in the same order from the same inputs.
"""

from __future__ import annotations

from ..dsl.rewrite import replace
from ..dsl.tensor import Graph
from .attention import match_attention, online, online_default
from .onepass import matches, one_pass


def rewrite(g: Graph, plan: dict, choice, hw=None) -> tuple[Graph, list]:
    """``g`` with the rewrites that ``plan`` turns on (knobs of ``choice(kind, position, 0)``,
    position: the rewritten reduction's among ``g``'s compute ops); returns the graph and the
    decisions. Attention folds are offered on machines without work-groups only; where a fold
    is on, its softmax keeps two passes (the fold replaces what reads them).
    The rewritten graph carries ``plan_positions`` (id(op) -> the position naming its decisions,
    as before the rewrite: ``fusion.positions``) and ``fold_chains`` (id(fold op) -> its block
    chain's ops)."""
    position = {id(op): k for k, op in enumerate(g.compute_ops)}
    out, mapping, folds, taken = [], {}, [], set()
    found = matches(g)
    if hw is None or not getattr(hw, "work_groups", False):
        for m in match_attention(g, found):
            c = choice("online", position[id(m.dot)], online_default(m, hw) if hw is not None else 0)
            out.append(c)
            if plan.get(c.knob, c.default):
                new, (fold, *chain) = online(m)
                mapping.update(new)
                folds.append((fold, chain))
                taken.add(id(m.soft.second))
    for m in found:
        c = choice("onepass", position[id(m.second)], 0)
        out.append(c)
        if plan.get(c.knob, c.default) and id(m.second) not in taken:
            mapping.update(one_pass(m))
    out.sort(key=lambda c: (c.stage, c.kind))
    if not mapping:
        return g, out
    origin: dict = {}
    g2 = replace(g, mapping, origin)
    extra = iter(range(len(position), len(position) + len(g2.compute_ops)))
    g2.plan_positions = {id(op): position[id(origin[id(op)])] if id(op) in origin and id(origin[id(op)]) in position
                         else next(extra) for op in g2.compute_ops}
    now = {id(old): new for new in g2.compute_ops for old in [origin.get(id(new), new)]}
    g2.fold_chains = {id(now.get(id(fold), fold)): [now.get(id(op), op) for op in chain] for fold, chain in folds}
    return g2, out


__all__ = ["rewrite"]
