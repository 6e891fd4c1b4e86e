"""A stage's scheduling state (:class:`Stage`: its leaf loops, split and fuse relations,
annotations and attach point) and the rule check every step uses; shared by the schedule, its
lowering and the work-group reductions (schedule.py, lower.py, xreduce.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from ..dsl.errors import ScheduleError
from ..dsl.expr import AxisKind, IterVar
from ..dsl.tensor import ComputeOp


def check(cond, msg: str) -> None:
    """Raise ``ScheduleError(msg)`` unless ``cond``."""
    if not cond:
        raise ScheduleError(msg)


@dataclass(frozen=True)
class SplitRel:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int


@dataclass(frozen=True)
class FuseRel:
    outer: IterVar
    inner: IterVar
    fused: IterVar


class AttachKind(StrEnum):
    """Where a stage is computed (see ``Attach``)."""

    ROOT = "root"
    INLINE = "inline"
    AT = "at"


class Attach(NamedTuple):
    """A stage's attach point: its own loop nest (``ROOT``), inlined into its readers
    (``INLINE``), or inside loop ``axis`` of ``stage`` (``AttachKind.AT``)."""

    kind: AttachKind
    stage: Stage | None = None
    axis: IterVar | None = None


ROOT = Attach(AttachKind.ROOT)
INLINE = Attach(AttachKind.INLINE)


@dataclass(eq=False)
class Stage:
    """Scheduling state of one compute op (mutable while steps are applied)."""

    name: str
    op: ComputeOp
    leaf: list[IterVar]
    relations: list = field(default_factory=list)
    annotations: dict = field(default_factory=dict)     # IterVar -> LoopKind, or the Thread it is bound to
    attach: Attach = ROOT
    scope: str = "global"
    vars: dict = field(default_factory=dict)             # name -> IterVar (every var ever made)
    origin: ComputeOp | None = None                      # op before cache_write (what readers load)
    former: list = field(default_factory=list)           # ops this stage's op replaced (cache_read)
    local: dict = field(default_factory=dict)            # IterVar -> its unique name in this stage
    tensorize: tuple | None = None                       # (intrinsic, params) computing the stage whole

    def __post_init__(self):
        for v in self.op.axis + self.op.reduce_axis:
            self._register(v)

    @property
    def is_root(self) -> bool:
        return self.attach.kind is AttachKind.ROOT

    @property
    def is_inline(self) -> bool:
        return self.attach.kind is AttachKind.INLINE

    @property
    def is_at(self) -> bool:
        return self.attach.kind is AttachKind.AT

    def _register(self, v: IterVar, name: str | None = None) -> IterVar:
        """Give ``v`` a name unique in this stage (two axes both called 'k' become k, k_1)."""
        if v in self.local:
            return v
        base = nm = name or v.name
        n = 0
        while nm in self.vars:
            n += 1
            nm = f"{base}_{n}"
        self.vars[nm] = v
        self.local[v] = nm
        return v

    def name_of(self, v: IterVar) -> str:
        return self.local[v]

    def fresh(self, name: str, extent: int, kind: AxisKind) -> IterVar:
        base, n = name, 0
        while name in self.vars:
            n += 1
            name = f"{base}{n}"
        return self._register(IterVar(name, extent, kind), name)

    def var(self, name: str) -> IterVar:
        check(name in self.vars, f"stage '{self.name}' has no axis '{name}' "
              f"(axes: {', '.join(self.vars)})")
        return self.vars[name]

    def leaf_var(self, name: str) -> IterVar:
        v = self.var(name)
        check(v in self.leaf, f"stage '{self.name}': axis '{name}' was already split or fused; "
              f"leaf axes are {[x.name for x in self.leaf]}")
        return v


__all__ = ["FuseRel", "SplitRel", "Stage", "check"]
