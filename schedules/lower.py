"""Lower a Schedule to the loop-nest IR.

Per stage: leaf loops (outer to inner) come from the stage's split/fuse relations, with
``axis = outer * factor + inner`` and ``outer = fused / extent(inner)``,
``inner = fused % extent(inner)``. A split that does not divide bounds its inner loop by
``min(factor, n - outer * factor)`` when the outer loop encloses it, else guards the body.
Reductions initialize the accumulator just before their first reduction loop. Stages computed
at a loop get a local buffer covering the region their reader touches inside that loop
(bound inference), indexed relative to the region's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..dsl import dtypes as dt
from ..dsl.errors import ScheduleError
from ..dsl.expr import AxisKind, Expr, IterVar, as_expr, binary, substitute, walk
from ..dsl.ops import Op
from ..dsl.tensor import PlaceholderOp, Tensor, input_tensors
from .bounds import Interval, const_difference, fold_guards, interval, simplify_index, static_range
from .gpu_gemm import gemm_form
from .loops import (
    Allocate,
    Assign,
    Barrier,
    Buffer,
    For,
    If,
    Let,
    LoopKind,
    LoweredFunc,
    MatmulKernel,
    Seq,
    Stmt,
    Store,
    Thread,
    seq,
)
from .stage import FuseRel, SplitRel, Stage, check
from .xreduce import bound_reduce_axis, cross_item_reduce

if TYPE_CHECKING:    # annotations only: schedule.py imports this module (Schedule.lower)
    from .schedule import Schedule

#: Root intermediates up to this many bytes live on the stack; larger ones on the heap.
STACK_BYTES = 1 << 16


@dataclass
class _Region:
    """Where a stage's values live: ``buffers[k]`` holds output k; element ``x`` of the stage
    is at ``buffer[x - lo]`` (``lo`` None for root stages)."""

    buffers: tuple[Buffer, ...]
    lo: tuple[Expr, ...] | None = None
    ext: tuple[int, ...] | None = None


class _Lowerer:
    def __init__(self, s: Schedule):
        self.s = s
        self.g = s.graph
        self.ranges: dict[IterVar, tuple[int, int]] = {}
        self.regions: dict[str, _Region] = {}
        self.inline_memo: dict[int, tuple[Expr, ...]] = {}
        self.attached: dict[IterVar, list[Stage]] = {}
        self.planned: dict[str, list[Interval]] = {}
        self.inputs: dict[tuple[int, int], Buffer] = {}
        self.args: list[Buffer] = []
        self.readers = self._readers()
        for st in s.stages.values():
            if st.is_at:
                self.attached.setdefault(_leaf_of(st.attach.stage, st.attach.axis), []).append(st)

    # -------------------------------------------------------------- graph facts
    def _stage_of(self, t: Tensor) -> Stage | None:
        return self.s.stage_of_op(t.op)

    def body(self, st: Stage) -> tuple[Expr, ...]:
        """The stage's body with inlined stages substituted (tensor loads remain)."""
        if id(st) in self.inline_memo:
            return self.inline_memo[id(st)]

        def load_fn(e, idx):
            p = self._stage_of(e.arg)
            if p is None or not p.is_inline:
                return None
            pb = self.body(p)[e.arg.value_index]
            return substitute(pb, dict(zip(p.op.axis, idx)))

        out = tuple(substitute(b, {}, load_fn) for b in st.op.body)
        self.inline_memo[id(st)] = out
        return out

    def _readers(self) -> dict[str, set[str]]:
        """Non-inlined reader stages of each stage (through inlined ones)."""
        direct: dict[str, set[str]] = {n: set() for n in self.s.stages}
        for st in self.s.stages.values():
            for t in input_tensors(st.op):
                p = self._stage_of(t)
                if p is not None:
                    direct[p.name].add(st.name)
        out: dict[str, set[str]] = {}

        def resolve(n, seen=()):
            res = set()
            for r in direct[n]:
                if self.s.stages[r].is_inline and r not in seen:
                    res |= resolve(r, seen + (r,))
                else:
                    res.add(r)
            return res

        for n in self.s.stages:
            out[n] = resolve(n)
        return out

    # -------------------------------------------------------------- buffers
    def make_args(self) -> list[Buffer]:
        """Argument buffers: the inputs, then one per graph output in order. Outputs of a
        multi-output stage that the graph does not return get scratch buffers (returned)."""
        for t, nm in zip(self.g.inputs, self.g.input_names):
            b = Buffer(nm, t.dtype, t.shape, "arg")
            self.inputs[(id(t.op), t.value_index)] = b
            self.args.append(b)
        out_bufs: dict[tuple[int, int], Buffer] = {}
        for t in self.g.outputs:
            if isinstance(t.op, PlaceholderOp):
                raise ScheduleError(f"output '{t.name}' is an input; nothing to compute")
            st = self._stage_of(t)
            key = (id(st.op), t.value_index)
            if key not in out_bufs:
                k = t.value_index
                out_bufs[key] = Buffer(st.name if k == 0 else f"{st.name}_v{k}", t.dtype, st.op.shape, "arg")
                self.args.append(out_bufs[key])
        scratch: list[Buffer] = []
        for st in {id(self._stage_of(t)): self._stage_of(t) for t in self.g.outputs}.values():
            bufs = []
            for k, b in enumerate(st.op.body):
                buf = out_bufs.get((id(st.op), k))
                if buf is None:
                    buf = Buffer(f"{st.name}_v{k}", b.dtype, st.op.shape,
                                 "global" if _nbytes(b.dtype, st.op.shape) > STACK_BYTES else "local")
                    scratch.append(buf)
                bufs.append(buf)
            self.regions[st.name] = _Region(tuple(bufs))
        return scratch

    def region_of(self, t: Tensor) -> tuple[Buffer, tuple[Expr, ...] | None]:
        if (id(t.op), t.value_index) in self.inputs:
            return self.inputs[(id(t.op), t.value_index)], None
        st = self._stage_of(t)
        if st is None:
            raise ScheduleError(f"'{t.name}' is neither an input nor a stage of this schedule")
        reg = self.regions.get(st.name)
        if reg is None:
            raise ScheduleError(f"stage '{st.name}' is read before it is computed; is it computed at "
                                "a loop that does not enclose its reader?")
        return reg.buffers[t.value_index], reg.lo

    def to_buffers(self, e: Expr) -> Expr:
        """Replace tensor loads by buffer loads (relative to local regions)."""
        def load_fn(x, idx):
            if not isinstance(x.arg, Tensor):
                return None
            buf, lo = self.region_of(x.arg)
            if lo is not None:
                idx = tuple(binary(Op.SUB, i, l) for i, l in zip(idx, lo))
            return buf.load(tuple(simplify_index(i, self.ranges) for i in idx))
        return fold_guards(substitute(e, {}, load_fn), self.ranges)

    # -------------------------------------------------------------- one stage
    def stage_nest(self, st: Stage, dom: dict[IterVar, Interval] | None) -> Stmt:
        """Loop nest computing stage ``st``; ``dom`` maps each data axis to the region computed
        (None: the whole axis)."""
        op = st.op
        if st.tensorize is not None:
            return self.tensorized(st)
        ext = _extents(st, [dom[v].ext for v in op.axis] if dom else None)
        val: dict[IterVar, Expr] = {v: v.var for v in st.leaf}
        tails: list[SplitRel] = []
        for r in reversed(st.relations):
            if isinstance(r, SplitRel):
                f = ext[r.inner]
                val[r.parent] = binary(Op.ADD, binary(Op.MUL, val[r.outer], f), val[r.inner])
                if ext[r.outer] * f != ext[r.parent]:
                    tails.append(r)
            else:
                n = ext[r.inner]
                val[r.outer] = binary(Op.DIV, val[r.fused], n)
                val[r.inner] = binary(Op.REM, val[r.fused], n)
        for v in st.leaf:
            self.ranges[v] = (0, ext[v] - 1)
        # readers before the stages they read: a pack computed at an outer loop and read by a
        # stage attached further in needs that stage's region first
        order = {n: k for k, n in enumerate(self.s.stages)}
        pairs = [(p, v) for v in st.leaf for p in self.attached.get(v, [])]
        for p, v in sorted(pairs, key=lambda pv: -order[pv[0].name]):
            self.plan_attached(p, v)
        # loop extents and guards
        pos = {v: k for k, v in enumerate(st.leaf)}
        loop_ext: dict[IterVar, Expr] = {v: as_expr(ext[v], dt.index) for v in st.leaf}
        guards: list[tuple[Expr, bool]] = []   # (cond, involves reduce axes)
        for r in tails:
            if r.inner in pos and r.outer in pos and pos[r.outer] < pos[r.inner]:
                f = ext[r.inner]
                rest = binary(Op.SUB, ext[r.parent], binary(Op.MUL, r.outer.var, f))
                loop_ext[r.inner] = binary(Op.MIN, as_expr(f, dt.index), rest)
            else:
                guards.append((binary(Op.LT, val[r.parent], ext[r.parent]), r.parent.kind is AxisKind.REDUCE))
        absval: dict[IterVar, Expr] = {}
        for v in op.axis + op.reduce_axis:
            absval[v] = val[v] if not dom or v.kind is AxisKind.REDUCE else binary(Op.ADD, dom[v].lo, val[v])
        if dom and not self.overcomputable(st, absval):
            for v in op.axis:
                a = absval[v]
                rng = static_range(a, self.ranges)
                if rng is None or rng[0] < 0:
                    guards.append((binary(Op.GE, a, 0), False))
                if rng is None or rng[1] >= v.extent:
                    if v in pos and not self.attached.get(v) and \
                            st.annotations.get(v, LoopKind.SERIAL) in (LoopKind.SERIAL, LoopKind.VECTORIZE):
                        # the region's edge past the domain: the loop stops there (a loop with
                        # a variable trip count vectorizes; a guard in its body may not)
                        stop = binary(Op.SUB, as_expr(v.extent, dt.index), dom[v].lo)
                        loop_ext[v] = binary(Op.MIN, loop_ext[v], stop)
                    else:
                        guards.append((binary(Op.LT, a, v.extent), False))
        # statements
        bufs = self.regions[st.name].buffers
        store_idx = tuple(simplify_index(val[v] if dom else absval[v], self.ranges) for v in op.axis)
        body = [substitute(b, absval) for b in self.body(st)]

        def guarded(stmt, reduce_part: bool):
            conds = [c for c, r in guards if reduce_part or not r]
            return If(_all(conds), stmt) if conds else stmt

        if op.is_reduction:
            spec = body[0].arg
            red = spec.reducer
            init = seq(*[Store(b, store_idx, self.to_buffers(i)) for b, i in zip(bufs, red.identity)])
            vals = [self.to_buffers(x) for x in body[0].src]
            accs = [b.load(store_idx) for b in bufs]
            if len(bufs) == 1:
                new = substitute(red.combine[0], {red.lhs[0]: accs[0], red.rhs[0]: vals[0]})
                update: Stmt = Store(bufs[0], store_idx, new)
            else:
                tv = [IterVar(f"{st.name}_v{k}", 0, AxisKind.PARAM, x.dtype) for k, x in enumerate(vals)]
                tn = [IterVar(f"{st.name}_n{k}", 0, AxisKind.PARAM, c.dtype) for k, c in enumerate(red.combine)]
                m = {**dict(zip(red.lhs, accs)), **{p: t.var for p, t in zip(red.rhs, tv)}}
                update = seq(*[Store(b, store_idx, t.var) for b, t in zip(bufs, tn)])
                for t, c in reversed(list(zip(tn, red.combine))):
                    update = Let(t, substitute(c, m), update)
                for t, x in reversed(list(zip(tv, vals))):
                    update = Let(t, x, update)
            if spec.where is not None:
                update = If(self.to_buffers(spec.where), update)
            first_red = next((k for k, v in enumerate(st.leaf) if v.kind is AxisKind.REDUCE), len(st.leaf))
            kl = bound_reduce_axis(st)
            if kl is not None:
                inner = cross_item_reduce(self, st, kl, bufs, store_idx, vals, spec, loop_ext, guards, guarded)
                return self.wrap(st, st.leaf[:first_red], inner, loop_ext)
            init_nest = self.wrap(st, [v for v in st.leaf[first_red:] if v.kind is AxisKind.DATA],
                                  guarded(init, False), loop_ext, attach=False)
            kv = st.leaf[-1]
            if kv.kind is AxisKind.REDUCE and st.annotations.get(kv) is LoopKind.VECTORIZE:
                inner = self.vector_reduce(st, kv, bufs, store_idx, vals, spec, loop_ext, guards)
                inner = self.wrap(st, st.leaf[first_red:-1], guarded(inner, False), loop_ext)
            else:
                for v in st.leaf:
                    check(not (v.kind is AxisKind.REDUCE and st.annotations.get(v) is LoopKind.VECTORIZE),
                          f"vectorize: reduction axis '{v.name}' of '{st.name}' must be the innermost loop")
                inner = self.wrap(st, st.leaf[first_red:], guarded(update, True), loop_ext)
            return self.wrap(st, st.leaf[:first_red], seq(init_nest, inner), loop_ext)
        stores = seq(*[Store(b, store_idx, self.to_buffers(x)) for b, x in zip(bufs, body)])
        return self.wrap(st, st.leaf, guarded(stores, False), loop_ext)

    def tensorized(self, st: Stage) -> Stmt:
        """The one statement computing a tensorized root stage (its intrinsic's node)."""
        value = self.body(st)[0].src[0]
        form = gemm_form(st.op.axis, st.op.reduce_axis, value)
        check(not isinstance(form, str), f"tensorize gpu_gemm: '{st.name}' is not a matrix product: {form}")
        for v in st.op.axis + st.op.reduce_axis:
            self.ranges[v] = (0, v.extent - 1)
        out = self.regions[st.name].buffers[0]
        return MatmulKernel(out, tuple(v.var for v in st.op.axis), form.batch, form.m, form.n, form.k,
                            self.to_buffers(form.a), self.to_buffers(form.b), st.tensorize[1])

    def overcomputable(self, st: Stage, absval: dict) -> bool:
        """Whether a stage computed over a region may run on the whole region even where it
        leaves the stage's domain (a register tile at the edge of a padded pack): every load it
        makes is in bounds for every value of the loops' ranges, and no integer division by a
        non-constant can trap. Such a stage needs no guard in its innermost loops."""
        if st.scope == "shared" or any(t.op is st.op or t.op is st.origin for t in self.g.outputs):
            return False
        exprs = []
        for b in self.body(st):
            b = substitute(b, absval)
            if b.op is Op.REDUCE:
                exprs += list(b.src) + ([b.arg.where] if b.arg.where is not None else [])
            else:
                exprs.append(b)
        for e in walk([self.to_buffers(x) for x in exprs]):
            if e.op in (Op.DIV, Op.REM, Op.FLOORDIV, Op.FLOORMOD) and e.dtype.is_int and \
                    not (e.src[1].op is Op.CONST and e.src[1].arg > 0):
                return False
            if e.op is Op.LOAD:
                for i, n in zip(e.src, e.arg.shape):
                    r = static_range(i, self.ranges)
                    if r is None or r[0] < 0 or r[1] >= n:
                        return False
        return True

    def vector_reduce(self, st, kv, bufs, idx, vals, spec, loop_ext, guards) -> Stmt:
        """``acc = buf[idx]; for kv (SIMD, any order): acc = combine(acc, v); buf[idx] = acc``."""
        parts = spec.reducer.parts()
        check(parts is not None and spec.where is None,
              f"vectorize: reduction axis '{kv.name}' of '{st.name}' needs sum/prod/max/min reductions "
              "(each accumulator combining only with itself) without a mask")
        check(not any(b.dtype.is_narrow_float or b.dtype.is_bool for b in bufs),
              f"vectorize: reduction axis '{kv.name}' of '{st.name}': a SIMD reduction needs a float32/64 or "
              "integer accumulator (floats under 32 bits round after every step; bool has no SIMD sum)")
        check(not self.attached.get(kv), f"vectorize: a stage is computed at reduction axis '{kv.name}'")
        accs = [IterVar(f"{st.name}_acc{k or ''}", 0, AxisKind.PARAM, b.dtype) for k, b in enumerate(bufs)]
        body: Stmt = seq(*[Assign(a, substitute(r.combine[0], {r.lhs[0]: a.var, r.rhs[0]: v}))
                           for a, r, v in zip(accs, parts, vals)])
        conds = [c for c, r in guards if r]
        if conds:
            c = conds[0]
            for x in conds[1:]:
                c = binary(Op.AND, c, x)
            body = If(c, body)
        loop = For(kv, loop_ext[kv], LoopKind.VECTORIZE, body, tuple(zip(accs, parts)))
        out: Stmt = seq(loop, *[Store(b, idx, a.var) for b, a in zip(bufs, accs)])
        for b, a in reversed(list(zip(bufs, accs))):
            out = Let(a, b.load(idx), out)
        return out

    def wrap(self, st: Stage, loops: list[IterVar], inner: Stmt,
             loop_ext: dict, attach: bool = True) -> Stmt:
        """Wrap ``inner`` in ``loops`` (outer first); stages attached at a loop go first in its
        body (only when ``attach``)."""
        out = inner
        for v in reversed(loops):
            if attach:
                out = self.attach_at(v, out)
            a = st.annotations.get(v, LoopKind.SERIAL)
            if isinstance(a, Thread):
                out = For(v, loop_ext[v], LoopKind.BIND, out, thread=a)
                continue
            outside, out = _split_guard(out, v)
            out = For(v, loop_ext[v], a, out)
            if outside is not None:         # a tail guard of outer loops: out of this loop,
                out = If(outside, out)      # so a vectorized inner loop has no branch
        return out

    def attach_at(self, v: IterVar, rest: Stmt) -> Stmt:
        """The stages attached at loop ``v`` computed (in order) before ``rest``; when any is a
        'shared' buffer, the work-group waits after the fills and again after ``rest`` (before
        the next iteration refills)."""
        ps = self.attached.get(v, [])
        if not ps:
            return rest
        nests = [self.stage_nest(p, dict(zip(p.op.axis, self.planned[p.name]))) for p in ps]
        bufs = [b for p in ps for b in self.regions[p.name].buffers]
        sync = [Barrier()] if any(b.scope == "shared" for b in bufs) else []
        out = seq(*nests, *sync, rest, *sync)
        for b in reversed(bufs):
            out = Allocate(b, out)
        return out

    # -------------------------------------------------------------- compute_at
    def plan_attached(self, p: Stage, at: IterVar) -> None:
        """Infer the region of ``p`` read inside loop ``at`` and give it a local buffer. ``at`` is a
        loop of each reader of ``p``, or of the stage that reader is computed in at a loop
        inside ``at`` (a pack shared by every register tile of a cache block; a softmax's
        exponentials read by its sum and its division, both computed per row block). Several
        readers read the union of their regions (which must differ by constants, else the
        whole extent of that dimension)."""
        owner = self.s.stage(at)
        readers = self.readers[p.name]
        check(readers, f"compute_at: '{p.name}' is read by no stage")
        regions = []
        for name in sorted(readers):
            cons = self.s.stages[name]
            if cons is owner:
                regions.append(self.infer_region(p, cons, at))
                continue
            anc = self._tile_ancestor(cons, owner, at)
            if anc is not None:
                regions.append(self.infer_region(p, cons, None, (owner, at), like=self.regions[anc.name]))
                continue
            check(cons.is_at and cons.attach.stage is owner and _inside(owner, cons.attach.axis, at),
                  f"compute_at: '{p.name}' is read by {sorted(readers)}; it can only be computed at a loop of its "
                  f"readers, or of the stage they are computed at (inside that loop); '{name}' is not; "
                  f"'{at.name}' is a loop of '{owner.name}'")
            regions.append(self.infer_region(p, cons, None, (owner, at)))
        region = regions[0] if len(regions) == 1 else \
            [self._union([rg[d] for rg in regions], dim) for d, dim in enumerate(p.op.shape)]
        shape = tuple(iv.ext for iv in region)
        bufs = []
        for k, b in enumerate(p.op.body):     # one buffer per output (several: a tuple reduction)
            scope = "shared" if p.scope == "shared" else "global" if _nbytes(b.dtype, shape) > STACK_BYTES \
                else "local"
            bufs.append(Buffer(p.name if k == 0 else f"{p.name}_v{k}", b.dtype, shape, scope))
        self.regions[p.name] = _Region(tuple(bufs), tuple(iv.lo for iv in region), tuple(iv.ext for iv in region))
        self.planned[p.name] = region

    def _tile_ancestor(self, cons: Stage, owner: Stage, at: IterVar) -> Stage | None:
        """The stage ``cons`` is nested in (through its attach chain) that is itself computed at
        a loop of ``owner`` inside ``at``, when ``cons`` has that stage's shape (its register
        tile, ``cache_write``) and that stage's region is already planned; else None. The tile
        then reads what that stage's region needs (a dot's operand computed beside the dot)."""
        anc = cons
        while anc.is_at and anc.attach.stage is not owner:
            anc = anc.attach.stage
        if anc is cons or not anc.is_at or anc.attach.stage is not owner or \
                cons.op.shape != anc.op.shape or anc.name not in self.planned:
            return None
        return anc if _inside(owner, anc.attach.axis, at) else None

    def infer_region(self, p: Stage, cons: Stage, at: IterVar | None, outer=None, like=None) -> list[Interval]:
        """Region of ``p`` that ``cons`` reads inside loop ``at`` (loops outside and ``at`` fixed);
        with ``at`` None, ``cons``'s whole nest, over every iteration of the loops inside
        ``outer[1]`` of stage ``outer[0]`` (where ``cons`` is computed); ``like``: the region
        to take for ``cons``'s (that of the stage whose tile it is) instead of its own."""
        if at is None:
            free = set(cons.leaf)
        else:
            at = _leaf_of(cons, at)
            k = cons.leaf.index(at)
            free = set(cons.leaf[k + 1:])
        env: dict[IterVar, Interval] = {}
        op = cons.op
        reg = like if like is not None else self.regions.get(cons.name)
        ext = _extents(cons, list(reg.ext) if reg and reg.lo is not None else None)
        for v in cons.leaf:
            env[v] = Interval(as_expr(0, dt.index), ext[v]) if v in free else Interval(v.var, 1)
        for r in reversed(cons.relations):
            if isinstance(r, SplitRel):
                f = ext[r.inner]
                o, i = env[r.outer], env[r.inner]
                lo = binary(Op.ADD, binary(Op.MUL, o.lo, f), i.lo)
                env[r.parent] = Interval(lo, min((o.ext - 1) * f + i.ext, ext[r.parent]))
            else:
                fz = env[r.fused]
                n = ext[r.inner]
                if fz.is_point:
                    env[r.outer] = Interval(binary(Op.DIV, fz.lo, n), 1)
                    env[r.inner] = Interval(binary(Op.REM, fz.lo, n), 1)
                else:
                    env[r.outer] = Interval(as_expr(0, dt.index), ext[r.outer])
                    env[r.inner] = Interval(as_expr(0, dt.index), n)
        if reg is not None and reg.lo is not None:
            for v, lo in zip(op.axis, reg.lo):
                env[v] = Interval(binary(Op.ADD, lo, env[v].lo), env[v].ext)
        sites: list[tuple[Expr, ...]] = []
        for b in self.body(cons):
            for e in walk([b]):
                if e.op is Op.LOAD and isinstance(e.arg, Tensor) and self._stage_of(e.arg) is p:
                    sites.append(e.src)
        check(sites, f"compute_at: '{cons.name}' does not read '{p.name}'")
        group = self._group_env() if p.scope == "shared" else {}
        if outer is not None:
            ost, oat = outer
            inner = ost.leaf[ost.leaf.index(_leaf_of(ost, oat)) + 1:]
            group.update((v, Interval(as_expr(0, dt.index), self.ranges[v][1] + 1)) for v in inner)
        region = []
        for d, dim in enumerate(p.op.shape):
            ivs = [_relax(interval(s[d], env), group) for s in sites]
            region.append(self._union(ivs, dim))
        return region

    def _group_env(self) -> dict[IterVar, Interval]:
        """Every loop bound to a work-item index (``local.*``/``threadIdx.*``) over its range: a
        'shared' buffer serves all work-items of the group."""
        out = {}
        for st in self.s.stages.values():
            for v, a in st.annotations.items():
                if isinstance(a, Thread) and a.axis == "local":
                    out[v] = Interval(as_expr(0, dt.index), max(v.extent, 1))
        return out

    def _union(self, ivs: list[Interval | None], dim: int) -> Interval:
        full = Interval(as_expr(0, dt.index), dim)
        if any(iv is None for iv in ivs):
            return full
        base = ivs[0]
        lo_off, hi_off = 0, base.ext
        for iv in ivs[1:]:
            d = const_difference(iv.lo, base.lo)
            if d is None:
                return full
            lo_off, hi_off = min(lo_off, d), max(hi_off, d + iv.ext)
        lo = binary(Op.ADD, base.lo, lo_off)
        ext = hi_off - lo_off
        if ext >= dim:
            return full
        if lo.op is Op.CONST:
            a = max(0, lo.arg)
            b = min(dim, lo.arg + ext)
            return Interval(as_expr(a, dt.index), max(1, b - a))
        return Interval(lo, ext)

    # -------------------------------------------------------------- function
    def lower(self, name: str) -> LoweredFunc:
        allocs: list[Buffer] = self.make_args()
        for st in self.s.stages.values():
            if st.is_at:
                tgt = st.attach.stage
                check(not tgt.is_inline, f"compute_at: '{st.name}' is computed at a loop of "
                      f"'{tgt.name}', which is inlined")
        body: list[Stmt] = []
        for st in self.s.stages.values():
            if not st.is_root:
                continue
            if st.name not in self.regions:
                bufs = tuple(Buffer(st.name if k == 0 else f"{st.name}_v{k}", b.dtype, st.op.shape,
                                    "global" if _nbytes(b.dtype, st.op.shape) > STACK_BYTES else "local")
                             for k, b in enumerate(st.op.body))
                self.regions[st.name] = _Region(bufs)
                allocs.extend(bufs)
            body.append(self.stage_nest(st, None))
        for st in self.s.stages.values():
            if st.is_at and st.name not in self.regions:
                raise ScheduleError(f"compute_at: '{st.name}' is computed at axis '{st.attach.axis.name}' "
                                    f"of '{st.attach.stage.name}', which is not a loop of the final nest")
        stmt = seq(*body)
        for b in reversed(allocs):
            stmt = Allocate(b, stmt)
        _validate(stmt)
        return LoweredFunc(name, tuple(self.args), len(self.g.inputs), stmt)


def _relax(iv: Interval | None, group: dict) -> Interval | None:
    """``iv`` widened to cover every value its start takes as the ``group`` variables vary."""
    if iv is None or not group:
        return iv
    lo = interval(iv.lo, group)
    return None if lo is None else Interval(lo.lo, lo.ext - 1 + iv.ext)


def _extents(st: Stage, data_ext: list[int] | None) -> dict[IterVar, int]:
    """Extent of every axis of ``st`` when its data axes span ``data_ext`` (None: the whole
    axes): a split gives ``inner = min(factor, n)``, ``outer = ceil(n / inner)`` (an empty
    axis: both 0); a fuse the product."""
    op = st.op
    ext = dict(zip(op.axis, data_ext if data_ext is not None else [v.extent for v in op.axis]))
    ext.update((v, v.extent) for v in op.reduce_axis)
    for r in st.relations:
        if isinstance(r, SplitRel):
            e = ext[r.parent]
            f = min(r.factor, e)
            ext[r.inner], ext[r.outer] = f, -(-e // f) if f else 0
        else:
            ext[r.fused] = ext[r.outer] * ext[r.inner]
    return ext


def _inside(owner: Stage, v: IterVar, at: IterVar) -> bool:
    """Whether loop ``v`` of ``owner`` is ``at`` or nested inside it."""
    return owner.leaf.index(_leaf_of(owner, v)) >= owner.leaf.index(_leaf_of(owner, at))


def _leaf_of(st: Stage, v: IterVar) -> IterVar:
    """The leaf loop standing for ``v`` after later splits (its inner part) and fuses (the fused
    loop): computing at it computes at least once per iteration of ``v``."""
    while v not in st.leaf:
        for r in st.relations:
            if isinstance(r, SplitRel) and r.parent is v:
                v = r.inner
                break
            if isinstance(r, FuseRel) and v in (r.outer, r.inner):
                v = r.fused
                break
        else:
            raise ScheduleError(f"axis '{v.name}' is not a loop of stage '{st.name}'")
    return v


def _nbytes(d, shape) -> int:
    n = d.itemsize
    for s in shape:
        n *= s
    return n


def _validate(stmt: Stmt, parallel: str | None = None) -> None:
    """Check loop annotations: vectorized loops are innermost; parallel loops do not nest."""
    if isinstance(stmt, Seq):
        for s in stmt.stmts:
            _validate(s, parallel)
    elif isinstance(stmt, For):
        if stmt.kind is LoopKind.PARALLEL:
            check(parallel is None, f"parallel loop '{stmt.var.name}' is nested in parallel loop "
                  f"'{parallel}'; only one level of parallel loops is allowed")
            parallel = stmt.var.name
        if stmt.kind is LoopKind.VECTORIZE:
            check(not _has_loop(stmt.body), f"vectorize: loop '{stmt.var.name}' is not innermost "
                  "(another loop runs inside it); vectorize the innermost loop")
        _validate(stmt.body, parallel)
    elif isinstance(stmt, (Allocate, If, Let)):
        _validate(stmt.body if not isinstance(stmt, If) else stmt.then, parallel)


def _has_loop(s: Stmt) -> bool:
    if isinstance(s, For):
        return True
    if isinstance(s, Seq):
        return any(_has_loop(x) for x in s.stmts)
    if isinstance(s, (Allocate, Let)):
        return _has_loop(s.body)
    if isinstance(s, If):
        return _has_loop(s.then)
    return False


def lower(s: Schedule, name: str = "kernel") -> LoweredFunc:
    """Lower schedule ``s`` to a LoweredFunc (inputs then outputs as arguments)."""
    return _Lowerer(s).lower(name)


def _conjuncts(c: Expr) -> list[Expr]:
    return _conjuncts(c.src[0]) + _conjuncts(c.src[1]) if c.op is Op.AND and c.dtype == dt.bool_ else [c]


def _split_guard(body: Stmt, v: IterVar) -> tuple[Expr | None, Stmt]:
    """``body`` (a loop over ``v``'s body) as (the part of its guard that does not depend on
    ``v``, the body under the rest): ``for v: if (a && b(v)) s`` runs as
    ``if (a) for v: if (b(v)) s``. Only guards over loop indices (no loads) move."""
    if not isinstance(body, If):
        return None, body
    inv, dep = [], []
    for c in _conjuncts(body.cond):
        nodes = list(walk([c]))
        movable = all(e.op is not Op.LOAD for e in nodes) and all(e.arg is not v for e in nodes if e.op is Op.VAR)
        (inv if movable else dep).append(c)
    if not inv:
        return None, body
    rest = body.then
    if dep:
        rest = If(_all(dep), rest)
    return _all(inv), rest


def _all(cs: list[Expr]) -> Expr:
    c = cs[0]
    for x in cs[1:]:
        c = binary(Op.AND, c, x)
    return c
