"""GPU lowering: a LoweredFunc as kernels over a grid of work-groups, for any GPU dialect.

The pass is device-neutral (OpenCL and CUDA renderers only print its result); limits come as
plain data (:class:`GpuLimits`). Index semantics: a work-item has a ``group`` index (CUDA's
``blockIdx``), a ``local`` index within its group (``threadIdx``) and a ``global`` index
``group * local_size + local`` per dimension; each is a :class:`~.loops.ThreadIndex` node.

* A ``MatmulKernel`` (a stage tensorized as ``gpu_gemm``) is a kernel of its own: a 1-D grid of
  blocks over batch x row tiles x column tiles, the threads and dynamic shared memory its plan
  (schedules/gpu_gemm.py) gives, checked against the device's limits.
* One kernel per root loop nest, launched in order (a kernel boundary is the global barrier
  between stages). Root intermediates (the Allocates at the top of the function) become
  host-allocated :class:`Scratch` arguments shared by the kernels.
* Loops bound to a :class:`~.loops.Thread` become ``ThreadIndex(var, axis, dim)``; the launch
  extent of each index is the largest extent bound to it, and a loop with a smaller or dynamic
  extent is guarded ``if var < extent``. Code outside the bound loops runs redundantly on every
  work-item, so it may only write buffers private to the work-item. A loop bound to ``local.d``
  inside another bound to ``local.d`` reuses the index (the cooperative fill of a 'shared'
  buffer); a ``Barrier`` must not lie inside a guard or an ``if``.
* Without binds, the leading perfectly nested constant data loops of a nest, down to the
  outermost 'parallel' loop (else down to the first 'vectorize' loop), are flattened onto one
  global index ``gid`` (guarded ``gid < total``: a grid may be rounded up to whole groups):
  ``i_k = (gid / prod(extents after k)) % extent_k``.
* Nests without a data loop at their root (full reductions) run on one work-item; consecutive
  such nests share a kernel.
* Buffers allocated inside a nest stay private unless 'global' or larger than
  ``max_private_bytes``: those are a work-item's slice of a host-allocated :class:`Scratch`,
  indexed by the linear work-item id ``Kernel.work_item``. 'shared' buffers are one copy per
  work-group (``Kernel.shared``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..dsl import dtypes as dt
from ..dsl.errors import ScheduleError
from ..dsl.expr import AxisKind, Expr, IterVar, as_expr, binary, walk
from ..dsl.ops import Op
from .gpu_gemm import gemm_plan
from .loops import (
    Allocate,
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
    ThreadIndex,
    seq,
    stmt_children,
    stmt_exprs,
    walk_stmts,
)


@dataclass(frozen=True)
class GpuLimits:
    """A device's limits (None: unchecked), and the name errors use for it."""

    device: str = "the device"
    max_work_group_size: int | None = None
    max_work_item_sizes: tuple[int, ...] | None = None
    local_mem_size: int | None = None
    max_parameter_size: int | None = None
    max_private_bytes: int = 16384
    compute_capability: int | None = None      # CUDA devices (e.g. 90); None: unknown
    shared_optin: int | None = None            # dynamic shared memory a CUDA block may opt in to


#: no limits checked (the interpreter, tests)
UNLIMITED = GpuLimits()


@dataclass(frozen=True, eq=False)
class Scratch:
    """A buffer the host allocates: a root intermediate shared by kernels (``count`` 1) or
    per-work-item scratch (``count`` slices of ``buffer``, one per work-item)."""

    buffer: Buffer
    count: int = 1

    @property
    def nbytes(self) -> int:
        return self.buffer.size * self.buffer.dtype.itemsize * self.count


@dataclass(frozen=True)
class Launch:
    """One kernel enqueue: its arguments (function Buffers or Scratch) and global/local sizes
    in work-items (``local_size`` None: the runtime picks the group shape); ``shared_bytes`` of
    dynamic shared memory per group (CUDA's launch parameter; 0 for most kernels)."""

    name: str
    args: tuple
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    shared_bytes: int = 0


@dataclass(frozen=True, eq=False)
class Kernel:
    """One kernel: ``body`` uses ThreadIndex nodes; ``args`` are its function buffers and root
    Scratch (what it reads or writes), then ``item_scratch`` (per-work-item slices, allocated in
    ``body`` by the Allocate of their buffer and offset by ``work_item``)."""

    launch: Launch
    body: Stmt
    shared: tuple[Buffer, ...]
    item_scratch: tuple[Scratch, ...]
    work_item: IterVar | None


@dataclass(frozen=True)
class GpuProgram:
    kernels: tuple[Kernel, ...]
    scratch: tuple[Scratch, ...]       # root scratch, then every kernel's item scratch


def static_extent(e: Expr) -> int | None:
    """An upper bound of a loop extent: a constant, or the constant side of ``min(f, rest)``."""
    if e.op is Op.CONST:
        return int(e.arg)
    if e.op is Op.MIN:
        ks = [k for k in map(static_extent, e.src) if k is not None]
        return min(ks) if ks else None
    return None


def gid_chain(s: Stmt) -> list[For]:
    """The root data loops to flatten onto one global index (see the module docstring)."""
    chain = []
    while isinstance(s, For) and s.var.kind is AxisKind.DATA and s.extent.op is Op.CONST and s.kind is not LoopKind.BIND:
        chain.append(s)
        s = s.body
    par = next((k for k, f in enumerate(chain) if f.kind is LoopKind.PARALLEL), None)
    if par is not None:
        return chain[:par + 1]
    vec = next((k for k, f in enumerate(chain) if f.kind is LoopKind.VECTORIZE), len(chain))
    return chain[:max(vec, 1)]


def bound_loops(s: Stmt, enclosing: tuple = ()) -> list[For]:
    """Every bound loop in ``s``; checks that none is bound inside another loop bound to the same
    index (except the cooperative fill of a shared buffer) and that each has a static extent."""
    out = []
    if isinstance(s, For) and s.kind is LoopKind.BIND:
        t = s.thread
        shared_fill = t.axis == "local" and all(x.buffer.scope == "shared" for x in walk_stmts(s.body)
                                                if isinstance(x, Store))
        if t in enclosing and not shared_fill:
            raise ScheduleError(f"bind: loop '{s.var.name}' is bound to '{t}' inside another loop bound "
                                "to the same index")
        if static_extent(s.extent) is None:
            raise ScheduleError(f"bind: loop '{s.var.name}' has no static extent")
        out.append(s)
        enclosing = enclosing + (t,)
    for c in stmt_children(s):
        out += bound_loops(c, enclosing)
    return out


def _check_bound_stores(s: Stmt, need: set, tags: frozenset = frozenset(), private: frozenset = frozenset()):
    """Every store to a non-private buffer lies inside loops bound to all indices in ``need``."""
    if isinstance(s, For) and s.kind is LoopKind.BIND:
        tags = tags | {s.thread}
    if isinstance(s, Allocate):
        private = private | {id(s.buffer)}
    if isinstance(s, Store) and id(s.buffer) not in private and not need <= tags:
        miss = ", ".join(map(str, sorted(need - tags, key=lambda t: (t.axis, t.dim))))
        raise ScheduleError(f"bind: '{s.buffer.name}' is stored outside the loops bound to {miss}, so every "
                            "work-item would write it; bind loops that enclose the store")
    for c in stmt_children(s):
        _check_bound_stores(c, need, tags, private)


def _buffers(stmts) -> set[int]:
    """ids of the Buffers that ``stmts`` load or store."""
    out: set[int] = set()
    for root in stmts:
        for s in walk_stmts(root):
            if isinstance(s, (Store, MatmulKernel)):
                out.add(id(s.buffer if isinstance(s, Store) else s.out))
            out.update(id(e.arg) for e in walk(stmt_exprs(s)) if e.op is Op.LOAD)
    return out


def _index_var(name: str) -> IterVar:
    return IterVar(name, 0, AxisKind.PARAM, dt.index)


class _KernelLowerer:
    """Rewrites one kernel's statements: bound loops and the gid chain onto ThreadIndex nodes."""

    def __init__(self, limits: GpuLimits, mapped: dict, items: int):
        self.limits, self.mapped, self.items = limits, mapped, items     # mapped: id(For) -> (axis, dim, launch)
        self.shared: list[Buffer] = []
        self.item_scratch: list[Scratch] = []
        self.divergent = 0

    def guarded(self, s: Stmt) -> Stmt:
        self.divergent += 1
        try:
            return self.rewrite(s)
        finally:
            self.divergent -= 1

    def rewrite(self, s: Stmt) -> Stmt:
        if isinstance(s, For) and id(s) in self.mapped:
            axis, d, launch = self.mapped[id(s)]
            if s.extent.op is Op.CONST and s.extent.arg == launch:
                return ThreadIndex(s.var, axis, d, self.rewrite(s.body))
            return ThreadIndex(s.var, axis, d, If(binary(Op.LT, s.var.var, s.extent), self.guarded(s.body)))
        if isinstance(s, If):
            return If(s.cond, self.guarded(s.then))
        if isinstance(s, Barrier) and self.divergent:
            raise ScheduleError("a work-group barrier (after filling a cache_read 'local' buffer) lies in code that "
                                "only some work-items run (a guarded tail of a bound loop, or an if); make the bound "
                                "loops' extents divide evenly, or compute the cache at a loop outside the guard")
        if isinstance(s, Allocate):
            b = s.buffer
            if b.scope == "shared":
                self.shared.append(b)
            elif b.scope == "global" or b.size * b.dtype.itemsize > self.limits.max_private_bytes:
                self.item_scratch.append(Scratch(b, self.items))
            return Allocate(b, self.rewrite(s.body))
        if isinstance(s, Seq):
            return Seq(tuple(self.rewrite(x) for x in s.stmts))
        if isinstance(s, For):
            return For(s.var, s.extent, s.kind, self.rewrite(s.body), s.reduction, s.thread)
        if isinstance(s, Let):
            return Let(s.var, s.value, self.rewrite(s.body))
        return s


def _map_binds(root: Stmt, limits: GpuLimits) -> tuple[dict, tuple[int, ...], tuple[int, ...]]:
    loops = bound_loops(root)
    size = {"group": [1, 1, 1], "local": [1, 1, 1]}
    for f in loops:
        t = f.thread
        size[t.axis][t.dim] = max(size[t.axis][t.dim], static_extent(f.extent))
    mapped = {id(f): (f.thread.axis, f.thread.dim, size[f.thread.axis][f.thread.dim]) for f in loops}
    ndim = 1 + max(f.thread.dim for f in loops)
    local = tuple(size["local"][:ndim])
    if limits.max_work_group_size and math.prod(local) > limits.max_work_group_size:
        raise ScheduleError(f"bind: work-group of {' x '.join(map(str, local))} work-items exceeds "
                            f"{limits.device}'s maximum work-group size {limits.max_work_group_size}")
    for d, (n, m) in enumerate(zip(local, limits.max_work_item_sizes or ())):
        if n > m:
            raise ScheduleError(f"bind: local.{'xyz'[d]} extent {n} exceeds {limits.device}'s maximum "
                                f"work-item size {m} in that dimension")
    _check_bound_stores(root, {f.thread for f in loops})
    return mapped, tuple(g * n for g, n in zip(size["group"][:ndim], local)), local


def _gemm_kernel(fn: LoweredFunc, name: str, node: MatmulKernel, roots: dict[int, Scratch],
                 limits: GpuLimits) -> Kernel:
    """A MatmulKernel's own kernel: a 1-D grid of blocks (batch x row tiles x column tiles)."""
    plan = gemm_plan(node, limits.compute_capability)
    t = plan.params.threads
    if limits.max_work_group_size and t > limits.max_work_group_size:
        raise ScheduleError(f"gpu_gemm: {t} threads per block exceed {limits.device}'s maximum work-group size "
                            f"{limits.max_work_group_size}")
    cap = limits.shared_optin or limits.local_mem_size
    if cap and plan.shared_bytes > cap:
        raise ScheduleError(f"gpu_gemm: {plan.shared_bytes} bytes of shared memory per block exceed "
                            f"{limits.device}'s {cap}")
    used = _buffers([node])
    args = tuple(b for b in fn.args if id(b) in used) + tuple(sc for k, sc in roots.items() if k in used)
    launch = Launch(name, args, (plan.blocks * t,), (t,), plan.shared_bytes)
    return Kernel(launch, node, (), (), None)


def _lower_kernel(fn: LoweredFunc, name: str, kind: str, stmts: list[Stmt], roots: dict[int, Scratch],
                  limits: GpuLimits) -> Kernel:
    if kind == "gemm":
        return _gemm_kernel(fn, name, stmts[0], roots, limits)
    mapped, gsize, lsize, chain = {}, (1,), None, []
    if kind == "bind":
        mapped, gsize, lsize = _map_binds(stmts[0], limits)
    elif kind == "gid":
        chain = gid_chain(stmts[0])
        gsize = (math.prod(int(f.extent.arg) for f in chain),)
    kl = _KernelLowerer(limits, mapped, math.prod(gsize))
    body = seq(*[kl.rewrite(s) for s in ([chain[-1].body] if chain else stmts)])
    if kl.shared:
        names = ", ".join(f"'{b.name}'" for b in kl.shared)
        if kind != "bind":
            raise ScheduleError(f"cache_read 'local' buffers {names} need a work-group: bind the reader's loops "
                                "to local.*/group.* ids (without binds every work-item would fill them)")
        total = sum(b.size * b.dtype.itemsize for b in kl.shared)
        if limits.local_mem_size and total > limits.local_mem_size:
            raise ScheduleError(f"cache_read 'local': buffers {names} need {total} bytes of local memory, more than "
                                f"{limits.device}'s local memory size {limits.local_mem_size}")
    wid = _index_var("hl_wid") if kl.item_scratch else None
    if kind == "gid":
        gid = _index_var("hl_gid")
        exts = [int(f.extent.arg) for f in chain]
        for k in reversed(range(len(chain))):
            inner = math.prod(exts[k + 1:])
            e = gid.var if inner == 1 else binary(Op.DIV, gid.var, as_expr(inner, dt.index))
            body = Let(chain[k].var, e if k == 0 else binary(Op.REM, e, as_expr(exts[k], dt.index)), body)
        if wid is not None:
            body = Let(wid, gid.var, body)
        body = ThreadIndex(gid, "global", 0, If(binary(Op.LT, gid.var, as_expr(gsize[0], dt.index)), body))
    elif wid is not None and kind == "bind":
        ids = [_index_var(f"hl_global{d}") for d in range(len(gsize))]
        lin = ids[0].var
        for d in range(1, len(gsize)):
            lin = binary(Op.ADD, lin, binary(Op.MUL, as_expr(math.prod(gsize[:d]), dt.index), ids[d].var))
        body = Let(wid, lin, body)
        for d in reversed(range(len(gsize))):
            body = ThreadIndex(ids[d], "global", d, body)
    elif wid is not None:
        body = Let(wid, as_expr(0, dt.index), body)
    used = _buffers(stmts)
    args = tuple(b for b in fn.args if id(b) in used) + tuple(sc for k, sc in roots.items() if k in used)
    nparams = len(args) + len(kl.item_scratch)
    if limits.max_parameter_size and 8 * nparams > limits.max_parameter_size:
        raise ScheduleError(f"kernel '{name}' takes {nparams} buffer arguments ({8 * nparams} bytes), more "
                            f"than {limits.device}'s maximum parameter size {limits.max_parameter_size}; split the "
                            "module segment (fewer fused inputs and outputs per kernel)")
    launch = Launch(name, args + tuple(kl.item_scratch), gsize, lsize)
    return Kernel(launch, body, tuple(kl.shared), tuple(kl.item_scratch), wid)


def lower_gpu(fn: LoweredFunc, limits: GpuLimits = UNLIMITED) -> GpuProgram:
    """The kernels that run ``fn`` on a GPU (see the module docstring); raises ScheduleError
    naming the limit a binding breaks."""
    body, roots = fn.body, {}
    while isinstance(body, Allocate):
        roots[id(body.buffer)] = Scratch(body.buffer)
        body = body.body
    groups: list[tuple[str, list[Stmt]]] = []
    for r in (body.stmts if isinstance(body, Seq) else (body,)):
        kind = "gemm" if isinstance(r, MatmulKernel) else "bind" if bound_loops(r) else \
            ("gid" if gid_chain(r) else "one")
        if kind == "one" and groups and groups[-1][0] == "one":
            groups[-1][1].append(r)
        else:
            groups.append((kind, [r]))
    base = "hl_" + re.sub(r"[^0-9a-zA-Z_]", "_", fn.name)
    kernels = tuple(_lower_kernel(fn, base if len(groups) == 1 else f"{base}_{k}", kind, stmts, roots, limits)
                    for k, (kind, stmts) in enumerate(groups))
    return GpuProgram(kernels, tuple(roots.values()) + tuple(sc for k in kernels for sc in k.item_scratch))


__all__ = ["UNLIMITED", "GpuLimits", "GpuProgram", "Kernel", "Launch", "Scratch", "bound_loops", "gid_chain", "lower_gpu",
           "static_extent"]
