"""Schedules: how a Graph is computed, as a list of step records applied by ``apply_step``.

A ``Stage`` per compute op holds its leaf loop order, the split/fuse relations that derive
leaves from the op's axes, loop annotations and where the stage is computed (root, inline,
or at a loop of another stage). Steps name stages and axes by name so a schedule replays
from JSON to the identical loop nest.
"""

from __future__ import annotations

import json
import math

import numpy as np

from ..dsl import dtypes as dt
from ..dsl.errors import DSLError, ScheduleError
from ..dsl.expr import AxisKind, Expr, IterVar, ReduceSpec, binary, cast, const, select, substitute, walk
from ..dsl.ops import Op
from ..dsl.tensor import ComputeOp, Graph, Tensor, input_tensors
from .gpu_gemm import GemmParams, gemm_form
from .loops import LoopKind, Thread
from .stage import INLINE, Attach, AttachKind, FuseRel, SplitRel, Stage, check
from .steps import (
    ANNOTATIONS,
    INTRINSICS,
    Annotate,
    Bind,
    CacheRead,
    CacheWrite,
    ComputeAt,
    ComputeInline,
    Fuse,
    Reorder,
    Split,
    Tensorize,
    step_from_json,
    step_to_json,
)


class Schedule:
    """A schedule of the graph computing ``outputs``.

    Every method records one step (``self.steps``) and applies it at once; preconditions raise
    ``ScheduleError`` naming the axis or stage and the rule.
    """

    def __init__(self, outputs, inputs=None):
        self.graph = outputs if isinstance(outputs, Graph) else Graph(outputs, inputs)
        self.steps: list = []
        self.stages: dict[str, Stage] = {}
        self._by_op: dict[int, Stage] = {}
        self._owner: dict[IterVar, Stage] = {}
        if self.graph.extern_ops:
            raise ScheduleError(f"graph has extern ops ({', '.join(o.kind for o in self.graph.extern_ops)}); "
                                "schedule the compute segments between them separately")
        for op in self.graph.compute_ops:
            st = Stage(self.graph.name(op), op, list(op.axis + op.reduce_axis))
            self._add_stage(st)

    # ------------------------------------------------------------------ bookkeeping
    def _add_stage(self, st: Stage, before: Stage | None = None) -> None:
        if before is None:
            self.stages[st.name] = st
        else:
            items = list(self.stages.items())
            k = [n for n, _ in items].index(before.name)
            items.insert(k, (st.name, st))
            self.stages = dict(items)
        self._by_op[id(st.op)] = st
        for v in st.vars.values():
            self._owner[v] = st

    def stage(self, x) -> Stage:
        """The stage of a Tensor, ComputeOp, stage name or axis."""
        if isinstance(x, Stage):
            return x
        if isinstance(x, str):
            check(x in self.stages, f"no stage named '{x}' (stages: {', '.join(self.stages)})")
            return self.stages[x]
        if isinstance(x, IterVar):
            check(x in self._owner, f"axis '{x.name}' belongs to no stage of this schedule")
            return self._owner[x]
        op = x.op if isinstance(x, Tensor) else x
        check(id(op) in self._by_op, f"'{getattr(op, 'name', op)}' is not a compute stage of this "
              "schedule (placeholders cannot be scheduled)")
        return self._by_op[id(op)]

    def stage_of_op(self, op) -> Stage | None:
        return self._by_op.get(id(op))

    def _axis(self, v) -> tuple[Stage, str]:
        if isinstance(v, IterVar):
            st = self.stage(v)
            check(v in st.local, f"axis '{v.name}' is no longer an axis of stage '{st.name}'")
            return st, st.name_of(v)
        raise ScheduleError(f"expected an axis (IterVar), got {v!r}")

    def apply(self, step):
        """Record and apply one step; returns what ``apply_step`` returns."""
        out = apply_step(self, step)
        self.steps.append(step)
        return out

    # ------------------------------------------------------------------ primitives
    def split(self, axis: IterVar, factor: int) -> tuple[IterVar, IterVar]:
        """Split ``axis`` into ``(outer, inner)`` with ``axis = outer * factor + inner``.

        ``for i in [0, n)`` becomes ``for o in [0, ceil(n/f)): for in in [0, f)``; a factor that
        does not divide ``n`` gets a guarded tail (``if o*f + in < n``).
        """
        st, name = self._axis(axis)
        check(isinstance(factor, (int, np.integer)) and not isinstance(factor, bool),
              f"split '{name}' of stage '{st.name}': factor must be a positive int, got {factor!r}")
        return self.apply(Split(st.name, name, int(factor)))

    def tile(self, x: IterVar, y: IterVar, x_factor: int, y_factor: int):
        """Split ``x`` and ``y`` and order the loops ``xo, yo, xi, yi``."""
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def reorder(self, *axes: IterVar) -> None:
        """The given leaf loops take, in this order, the positions they occupied."""
        check(axes, "reorder needs at least one axis")
        st = self.stage(axes[0])
        names = []
        for a in axes:
            s2, n = self._axis(a)
            check(s2 is st, f"reorder: axis '{n}' belongs to stage '{s2.name}', not '{st.name}'")
            names.append(n)
        self.apply(Reorder(st.name, tuple(names)))

    def fuse(self, outer: IterVar, inner: IterVar) -> IterVar:
        """Fuse adjacent leaves: ``fused = outer * extent(inner) + inner``."""
        st, a = self._axis(outer)
        s2, b = self._axis(inner)
        check(s2 is st, f"fuse: axes '{a}' and '{b}' belong to different stages")
        return self.apply(Fuse(st.name, a, b))

    def vectorize(self, axis: IterVar) -> None:
        """Run the (innermost) loop ``axis`` as SIMD lanes."""
        st, n = self._axis(axis)
        self.apply(Annotate(st.name, n, "vectorize"))

    def unroll(self, axis: IterVar) -> None:
        """Unroll loop ``axis``."""
        st, n = self._axis(axis)
        self.apply(Annotate(st.name, n, "unroll"))

    def parallel(self, axis: IterVar) -> None:
        """Run the iterations of loop ``axis`` on parallel threads (a data-parallel axis only)."""
        st, n = self._axis(axis)
        self.apply(Annotate(st.name, n, "parallel"))

    def bind(self, axis: IterVar, thread: str) -> None:
        """Bind loop ``axis`` to a GPU thread index (used by device backends). A reduction loop
        bound to ``local.*`` is reduced across the work-group (a tree in local memory; see
        schedules/xreduce.py)."""
        st, n = self._axis(axis)
        self.apply(Bind(st.name, n, thread))

    def compute_at(self, tensor, axis: IterVar) -> None:
        """Compute ``tensor`` inside loop ``axis`` of its reader, only the region that the loops
        inside ``axis`` read (bound inference), into a local buffer."""
        st = self.stage(tensor)
        tgt, n = self._axis(axis)
        self.apply(ComputeAt(st.name, tgt.name, n))

    def compute_inline(self, tensor) -> None:
        """Substitute ``tensor``'s definition into its readers (no buffer, no loop nest)."""
        self.apply(ComputeInline(self.stage(tensor).name))

    def tensorize(self, tensor, intrinsic: str, params=()) -> None:
        """Compute root stage ``tensor`` whole with kernel ``intrinsic`` of ``params`` (a dict or
        ``(name, value)`` pairs): ``gpu_gemm`` is one GPU matrix-product kernel
        (schedules/gpu_gemm.py). The stage then takes no other step."""
        items = tuple(sorted(dict(params).items()))
        self.apply(Tensorize(self.stage(tensor).name, intrinsic, items))

    def cache_read(self, tensor, scope: str = "shared", readers=None, layout=None, split=(), dtype=None) -> Tensor:
        """Copy ``tensor`` (an input or a stage) into a new stage ``<name>.<scope>`` that
        ``readers`` (default: every stage reading it) load instead: ``cache[i] = tensor[i]``.

        ``scope`` 'shared' (CUDA's name) or 'local' (OpenCL's) is work-group memory:
        ``compute_at`` the cache inside the reader's loops and it holds the region that the whole
        work-group reads there (loops bound to ``local.*`` range over the group), filled
        cooperatively by binding its own loops to ``local.*``, with barriers around the fill.
        Without binds (the cpu target) it is a packed per-iteration copy of that region.
        ``layout`` (a permutation of the dimensions) stores the copy transposed: its dimension
        ``d`` is the tensor's dimension ``layout[d]`` (a packed ``K^T`` for a dot reading ``K``).
        ``split`` ``((dim, f), ...)`` first splits dimension ``dim`` into ``(dim // f, dim % f)``
        (zero-padded to a multiple of ``f``), so that ``layout`` can interleave panels:
        ``B[k, n]`` with ``split=((1, 16),), layout=(1, 0, 2)`` is stored as
        ``P[n // 16, k, n % 16]``, each 16-column panel contiguous along ``k``. ``dtype``
        stores the copy converted to that type, for readers that read ``tensor`` only through a
        conversion to it (the conversion then happens once, in the copy).
        """
        if isinstance(tensor, Tensor):
            name = self._tensor_name(tensor)
        else:
            name = str(tensor)
        if readers is None:
            rs = tuple(st.name for st in self.stages.values()
                       if not st.is_inline and _reads(self, st.op, self._tensor_named(name)))
        else:
            rs = tuple(self.stage(r).name for r in readers)
        return self.apply(CacheRead(name, scope, rs, None if layout is None else tuple(int(x) for x in layout),
                                    tuple((int(d), int(f)) for d, f in split),
                                    None if dtype is None else _type_name(dtype)))

    def _tensor_name(self, t: Tensor) -> str:
        for x, nm in zip(self.graph.inputs, self.graph.input_names):
            if x.op is t.op and x.value_index == t.value_index:
                return nm
        st = self.stage(t)
        check(t.value_index == 0 and st.op.num_outputs == 1,
              f"cache_read: '{st.name}' has several outputs")
        return st.name

    def _tensor_named(self, name: str) -> Tensor:
        for x, nm in zip(self.graph.inputs, self.graph.input_names):
            if nm == name:
                return x
        check(name in self.stages, f"cache_read: no input or stage named '{name}' "
              f"(inputs: {', '.join(self.graph.input_names)}; stages: {', '.join(self.stages)})")
        st = self.stages[name]
        check(st.op.num_outputs == 1, f"cache_read: '{name}' has several outputs")
        return st.op.output(0)

    def cache_write(self, tensor, scope: str = "local") -> Tensor:
        """Compute ``tensor`` into a new stage ``<name>.<scope>`` and copy it out; returns the
        new tensor (schedule its axes, then ``compute_at`` it into ``tensor``'s loops)."""
        return self.apply(CacheWrite(self.stage(tensor).name, scope))

    # ------------------------------------------------------------------ serialization
    def to_json(self) -> str:
        return json.dumps([step_to_json(s) for s in self.steps])

    @classmethod
    def from_json(cls, outputs, text, inputs=None) -> Schedule:
        """Replay the steps in ``text`` (JSON list, or a list of dicts/steps) on a new schedule."""
        data = json.loads(text) if isinstance(text, str) else text
        s = cls(outputs, inputs)
        for d in data:
            s.apply(d if not isinstance(d, dict) else step_from_json(d))
        return s

    def lower(self):
        """Lower to the loop-nest IR (``print`` it to read the loop nest)."""
        from .lower import lower
        return lower(self)

    def __repr__(self) -> str:
        return f"Schedule({', '.join(self.stages)}; {len(self.steps)} steps)"


# ---------------------------------------------------------------------------- the one apply

def apply_step(s: Schedule, step):
    """Apply one step record to schedule ``s``, checking its preconditions."""
    if isinstance(step, CacheRead):
        check(all(s.stage(r).tensorize is None for r in step.readers),
              f"cache_read: a reader of '{step.stage}' is tensorized (its kernel reads its operands itself)")
        return _cache_read(s, step)
    st = s.stage(step.stage)
    check(st.tensorize is None, f"stage '{st.name}' is tensorized ({st.tensorize and st.tensorize[0]}); it takes no "
          "other step")
    if isinstance(step, Tensorize):
        return _tensorize(s, st, step)
    if isinstance(step, Split):
        check(isinstance(step.factor, int) and step.factor >= 1,
              f"split '{step.axis}' of stage '{st.name}': factor must be a positive int, got {step.factor!r}")
        v = st.leaf_var(step.axis)
        check(v not in st.annotations, f"split: axis '{v.name}' of '{st.name}' is already annotated "
              f"'{st.annotations.get(v)}'; split before annotating")
        f = min(step.factor, v.extent) if v.extent else step.factor
        outer = st.fresh(f"{step.axis}.outer", math.ceil(v.extent / f) if v.extent else 0, v.kind)
        inner = st.fresh(f"{step.axis}.inner", f, v.kind)
        st.relations.append(SplitRel(v, outer, inner, step.factor))
        k = st.leaf.index(v)
        st.leaf[k:k + 1] = [outer, inner]
        s._owner[outer] = s._owner[inner] = st
        return outer, inner
    if isinstance(step, Reorder):
        vs = [st.leaf_var(n) for n in step.axes]
        check(len(set(vs)) == len(vs), f"reorder of '{st.name}': an axis is named twice in {list(step.axes)}")
        pos = sorted(st.leaf.index(v) for v in vs)
        for p, v in zip(pos, vs):
            st.leaf[p] = v
        return None
    if isinstance(step, Fuse):
        a, b = st.leaf_var(step.outer), st.leaf_var(step.inner)
        check(st.leaf.index(b) == st.leaf.index(a) + 1,
              f"fuse: '{a.name}' and '{b.name}' of '{st.name}' must be adjacent, outer first")
        check(a.kind == b.kind, f"fuse: cannot fuse {a.kind} axis '{a.name}' with {b.kind} axis '{b.name}'")
        check(a not in st.annotations and b not in st.annotations,
              f"fuse: '{a.name}' or '{b.name}' of '{st.name}' is already annotated; fuse first")
        fused = st.fresh(f"{step.outer}.{step.inner}.fused", a.extent * b.extent, a.kind)
        st.relations.append(FuseRel(a, b, fused))
        k = st.leaf.index(a)
        st.leaf[k:k + 2] = [fused]
        s._owner[fused] = st
        return fused
    if isinstance(step, Annotate):
        check(step.kind in ANNOTATIONS, f"unknown annotation '{step.kind}'; expected one of {ANNOTATIONS}")
        v = st.leaf_var(step.axis)
        check(v not in st.annotations, f"axis '{v.name}' of '{st.name}' is already '{st.annotations.get(v)}'")
        if step.kind == "parallel":
            check(v.kind is AxisKind.DATA, f"parallel: '{v.name}' of '{st.name}' is a reduction axis; "
                  "parallel threads would race on the accumulator")
        st.annotations[v] = LoopKind(step.kind)
        return None
    if isinstance(step, Bind):
        v = st.leaf_var(step.axis)
        check(v not in st.annotations, f"axis '{v.name}' of '{st.name}' is already '{st.annotations.get(v)}'")
        thread = Thread.parse(step.thread)
        check(v.kind is AxisKind.DATA or thread.axis == "local",
              f"bind: '{v.name}' of '{st.name}' is a reduction axis; only work-item indices (local.*, threadIdx.*) "
              "can share a reduction (a tree across the work-group)")
        st.annotations[v] = thread
        return None
    if isinstance(step, ComputeAt):
        tgt = s.stage(step.target)
        check(tgt.tensorize is None, f"compute_at: '{tgt.name}' is tensorized; it has no loops to compute at")
        v = tgt.leaf_var(step.axis)
        check(tgt is not st, f"compute_at: stage '{st.name}' cannot be computed inside itself")
        check(st.op.num_outputs == 1 or st.op.is_reduction,
              f"compute_at: stage '{st.name}' has several outputs (only a tuple reduction may be computed at a loop)")
        check(not _is_output(s, st), f"compute_at: '{st.name}' is an output of the graph; "
              "outputs are computed at root")
        st.attach = Attach(AttachKind.AT, tgt, v)
        return None
    if isinstance(step, ComputeInline):
        check(not st.op.is_reduction, f"compute_inline: '{st.name}' is a reduction; only "
              "elementwise/injective stages can be inlined")
        check(not _is_output(s, st), f"compute_inline: '{st.name}' is an output of the graph")
        check(st.op.num_outputs == 1, f"compute_inline: stage '{st.name}' has several outputs")
        st.attach = INLINE
        return None
    if isinstance(step, CacheWrite):
        check(step.scope in ("local", "global", "shared"),
              f"cache_write: unknown scope '{step.scope}' (local, shared or global)")
        check(not st.relations and not st.annotations and st.is_root,
              f"cache_write: schedule '{st.name}' after cache_write, not before")
        check(st.op.num_outputs == 1, f"cache_write: stage '{st.name}' has several outputs")
        check(st.origin is None, f"cache_write: '{st.name}' already has a cache stage")
        return _cache_write(s, st, step.scope)
    raise ScheduleError(f"unknown schedule step {step!r}")


def _tensorize(s: Schedule, st: Stage, step: Tensorize) -> None:
    check(step.intrinsic in INTRINSICS, f"tensorize: unknown intrinsic '{step.intrinsic}'; expected one of "
          f"{list(INTRINSICS)}")
    check(st.is_root and not st.relations and not st.annotations,
          f"tensorize: '{st.name}' must be a root stage with no other step (tensorize it first)")
    check(st.op.is_reduction and st.op.num_outputs == 1 and st.op.body[0].arg.reducer.name == "sum"
          and st.op.body[0].arg.where is None,
          f"tensorize {step.intrinsic}: '{st.name}' is not a sum reduction with one output")
    GemmParams.from_items(step.params)
    why = gemm_form(st.op.axis, st.op.reduce_axis, st.op.body[0].src[0])
    check(not isinstance(why, str), f"tensorize gpu_gemm: '{st.name}' is not a matrix product: {why}")
    st.tensorize = (step.intrinsic, tuple(tuple(x) for x in step.params))


def _is_output(s: Schedule, st: Stage) -> bool:
    return any(t.op is st.op or t.op is st.origin or any(t.op is f for f in st.former)
               for t in s.graph.outputs)


def _same(s: Schedule, a: Tensor, t: Tensor) -> bool:
    """``a`` is ``t``, or an output of the same stage before cache_read/cache_write replaced its op."""
    if a.value_index != t.value_index:
        return False
    st = s.stage_of_op(t.op)
    return a.op is t.op or (st is not None and s.stage_of_op(a.op) is st)


def _reads(s: Schedule, op: ComputeOp, t: Tensor) -> bool:
    return any(_same(s, x, t) for x in input_tensors(op))


def _cache_read(s: Schedule, step: CacheRead) -> Tensor:
    check(step.scope in ("shared", "local"),
          f"cache_read: unknown scope '{step.scope}' ('shared', or 'local' as OpenCL names work-group memory)")
    t = s._tensor_named(step.stage)
    check(step.readers, f"cache_read: '{step.stage}' has no readers to redirect")
    readers = [s.stage(r) for r in step.readers]
    for r in readers:
        check(not r.is_inline, f"cache_read: reader '{r.name}' is inlined")
        check(_reads(s, r.op, t), f"cache_read: stage '{r.name}' does not read '{step.stage}'")
    dims, src_of = _split_dims(t.shape, step.split, step.stage)
    n = len(dims)
    perm = tuple(range(n)) if step.layout is None else tuple(step.layout)
    check(sorted(perm) == list(range(n)), f"cache_read: layout {list(perm)} of '{step.stage}' is not a "
          f"permutation of its {n} dimensions (after splits)")
    axes = tuple(IterVar(f"ax{p}", dims[p], AxisKind.DATA) for p in perm)
    pos = [None] * n
    for d, p in enumerate(perm):
        pos[p] = axes[d].var
    idx, inside = [], None
    for d, (dd, f) in enumerate(src_of):
        if f is None:
            idx.append(pos[dd])
            continue
        i = pos[dd] * f + pos[dd + 1]
        ok = i < t.shape[d]
        inside = ok if inside is None else (inside & ok)
        idx.append(binary(Op.MIN, i, t.shape[d] - 1))      # clamped: the padding reads in bounds
    to = _converted_to(s, step, t, readers)
    val = cast(t[tuple(idx)], to)
    if inside is not None:
        val = select(inside, val, const(0, to))
    name, k = f"{step.stage}.{step.scope}", 1
    while name in s.stages:     # a tensor several stages cache on their own: .shared, .shared1, ...
        name, k = f"{step.stage}.{step.scope}{k}", k + 1
    cache_op = ComputeOp(name, axes, (), (val,), "cache_read")
    cache_t = cache_op.output(0)
    first = min(readers, key=lambda r: list(s.stages).index(r.name))
    s._add_stage(Stage(cache_op.name, cache_op, list(axes), scope="shared"), before=first)

    def load_fn(e, idx):
        a = e.arg
        if isinstance(a, Tensor) and _same(s, a, t):
            full = []
            for k, (_, f) in enumerate(src_of):
                full += [idx[k]] if f is None else [binary(Op.DIV, idx[k], f), binary(Op.REM, idx[k], f)]
            return cache_t[tuple(full[p] for p in perm)]
        return None

    for r in readers:
        op = r.op
        new = ComputeOp(op.name, op.axis, op.reduce_axis, tuple(substitute(b, {}, load_fn) for b in op.body), op.tag)
        r.former.append(op)
        r.op = new
        s._by_op[id(new)] = r
    return cache_t


def _type_name(x) -> str:
    try:
        return dt.dtype(x).name
    except DSLError:
        return str(x)       # refused, naming it, when the step is applied


def only_converted(body, is_tensor, to: dt.DType) -> bool:
    """Whether every load in ``body`` (expressions) of a tensor ``is_tensor`` accepts sits directly
    under a conversion to ``to``."""
    roots = list(body)
    if any(e.op is Op.LOAD and isinstance(e.arg, Tensor) and is_tensor(e.arg) for e in roots):
        return False
    for e in walk(roots):
        if e.op is Op.CAST and e.dtype is to:
            continue
        kids = list(e.src) + ([e.arg.where] if e.op is Op.REDUCE and e.arg.where is not None else [])
        if any(k.op is Op.LOAD and isinstance(k.arg, Tensor) and is_tensor(k.arg) for k in kids):
            return False
    return True


def _converted_to(s: Schedule, step: CacheRead, t: Tensor, readers) -> dt.DType:
    """The type a cache of ``t`` holds: ``step.dtype`` where every read of ``t`` in the readers
    is a conversion to it (then the readers' conversions become loads of the copy), else t's."""
    if step.dtype is None:
        return t.dtype
    try:
        to = dt.dtype(step.dtype)
    except DSLError:
        to = None
    check(to is not None, f"cache_read: dtype {step.dtype!r} of '{step.stage}' is not a type name")
    for r in readers:
        check(only_converted(r.op.body, lambda x: _same(s, x, t), to),
              f"cache_read: stage '{r.name}' reads '{step.stage}' other than converted to {to.name}, "
              f"so its copy cannot hold {to.name}")
    return to


def _split_dims(shape, split, name) -> tuple[list[int], list[tuple[int, int | None]]]:
    """Dimensions of a copy of a tensor of ``shape`` with ``split`` applied, and for each tensor
    dimension ``(its first copy dimension, factor or None)``."""
    factors = {}
    for d, f in split:
        check(isinstance(d, int) and 0 <= d < len(shape) and d not in factors,
              f"cache_read: split dimension {d!r} of '{name}' is not one of its {len(shape)} dimensions "
              "(or is split twice)")
        check(isinstance(f, int) and f >= 1, f"cache_read: split factor {f!r} of '{name}' must be a positive int")
        factors[d] = f
    dims, src = [], []
    for d, n in enumerate(shape):
        f = factors.get(d)
        src.append((len(dims), f))
        dims += [n] if f is None else [-(-n // f), f]
    return dims, src


def _cache_write(s: Schedule, st: Stage, scope: str) -> Tensor:
    op = st.op
    axis = tuple(IterVar(v.name, v.extent, v.kind) for v in op.axis)
    raxis = tuple(IterVar(v.name, v.extent, v.kind) for v in op.reduce_axis)
    m = dict(zip(op.axis + op.reduce_axis, axis + raxis))
    body = []
    for b in op.body:
        if b.op is Op.REDUCE:
            spec = b.arg
            w = substitute(spec.where, m) if spec.where is not None else None
            nspec = ReduceSpec(spec.reducer, raxis, spec.value_index, w)
            body.append(Expr(Op.REDUCE, b.dtype, tuple(substitute(x, m) for x in b.src), nspec))
        else:
            body.append(substitute(b, m))
    cache_op = ComputeOp(f"{st.name}.{scope}", axis, raxis, tuple(body), op.tag)
    cache_t = cache_op.output(0)
    copy_op = ComputeOp(op.name, op.axis, (), (cache_t[tuple(op.axis)],), op.tag)
    cst = Stage(cache_op.name, cache_op, list(axis + raxis), scope=scope)
    check(cst.name not in s.stages, f"cache_write: stage '{cst.name}' exists already")
    s._add_stage(cst, before=st)
    s._by_op[id(copy_op)] = st
    st.origin = op
    st.op = copy_op
    st.leaf = list(op.axis)
    for v in op.reduce_axis:
        st.vars.pop(st.local.pop(v), None)
        s._owner.pop(v, None)
    return cache_t
