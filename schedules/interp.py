"""A numpy interpreter of the loop-nest IR (as tinygrad's Python backend): runs a LoweredFunc
statement by statement on numpy arrays, with the scalar semantics of ``dsl.reference.eval_op``.

It needs no compiler, so lowering is tested on its own: when a generated kernel is wrong, the
interpreter's answer on the same IR says whether lowering or rendering is at fault. Every buffer
access is bounds-checked (an index outside a buffer is a lowering bug, raised as LoweringError).
``Interpreter`` runs bound loops as serial loops, so IR whose work-items synchronize (barriers
inside loops bound to work-items) is refused there; elsewhere a barrier is a no-op, as on the
cpu. :func:`interpret_gpu` runs the kernels of the GPU lowering pass instead: every work-item of
a group is a coroutine that pauses at each barrier until all items of its group reach it, with
ThreadIndex nodes read from the item's ids and 'shared' buffers one per group.
"""

from __future__ import annotations

import math
from collections import ChainMap
from itertools import product

import numpy as np

from ..dsl.errors import LoweringError
from ..dsl.expr import Expr
from ..dsl.ops import Op
from ..dsl.reference import eval_op
from .gpu_lower import UNLIMITED, GpuLimits, lower_gpu
from .loops import (
    Allocate,
    Assign,
    Barrier,
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
    walk_stmts,
)


class Interpreter:
    """``Interpreter(fn)(*inputs, *outputs)`` fills the outputs (numpy arrays of the argument
    buffers' shapes and dtypes) as the compiled kernel would."""

    def __init__(self, fn: LoweredFunc, work_groups: bool = False):
        stmts = list(walk_stmts(fn.body))
        if not work_groups and any(isinstance(s, Barrier) for s in stmts) and \
                any(isinstance(s, For) and s.kind is LoopKind.BIND for s in stmts):
            raise LoweringError(f"interpreter: '{fn.name}' synchronizes work-groups (barriers); it runs "
                                "work-items one after another and cannot (use interpret_gpu)")
        self.fn, self.work_groups = fn, work_groups
        self.ids: dict = {}          # (axis, dim) -> this work-item's index

    def bind(self, *arrays) -> dict:
        """The argument arrays by buffer id, checked against the function's arguments."""
        if len(arrays) != len(self.fn.args):
            raise LoweringError(f"interpreter: '{self.fn.name}' takes {len(self.fn.args)} arrays, got {len(arrays)}")
        mem = {}
        for b, a in zip(self.fn.args, arrays):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype.np:
                raise LoweringError(f"interpreter: argument '{b.name}' is {a.dtype}{list(a.shape)}, "
                                    f"expected {b.dtype}{list(b.shape)}")
            mem[id(b)] = a.reshape(-1)
        return mem

    def __call__(self, *arrays) -> None:
        self.mem = ChainMap({}, {}, self.bind(*arrays))     # work-item, work-group, global
        self.env: dict = {}
        for _ in self.run(self.fn.body):
            pass

    # ------------------------------------------------------------------ statements
    def run(self, s: Stmt):
        """Execute ``s``; a generator that yields at each barrier (a no-op outside work-groups)."""
        if isinstance(s, Seq):
            for x in s.stmts:
                yield from self.run(x)
        elif isinstance(s, For):
            for i in range(int(self.value(s.extent))):
                self.env[s.var] = np.int64(i)
                yield from self.run(s.body)
        elif isinstance(s, Store):
            buf = self.mem[id(s.buffer)]
            buf[self.offset(s.buffer, s.indices)] = self.value(s.value)
        elif isinstance(s, Let):
            self.env[s.var] = self.value(s.value)
            yield from self.run(s.body)
        elif isinstance(s, ThreadIndex):
            self.env[s.var] = np.int64(self.ids[(s.axis, s.dim)])
            yield from self.run(s.body)
        elif isinstance(s, Assign):
            self.env[s.var] = self.value(s.value)
        elif isinstance(s, If):
            if bool(self.value(s.cond)):
                yield from self.run(s.then)
        elif isinstance(s, Barrier):
            if self.work_groups:
                yield s
        elif isinstance(s, Allocate):
            b = s.buffer
            if self.work_groups and b.scope == "shared":      # one per group: the first item allocates it
                self.mem.maps[1].setdefault(id(b), np.zeros(max(b.size, 1), b.dtype.np))
                yield from self.run(s.body)
                return
            self.mem[id(b)] = np.zeros(max(b.size, 1), b.dtype.np)
            yield from self.run(s.body)
            del self.mem[id(b)]
        elif isinstance(s, MatmulKernel):
            self.matmul(s)
        else:
            raise LoweringError(f"interpreter: no rule for statement {type(s).__name__}")

    def matmul(self, s: MatmulKernel) -> None:
        """A MatmulKernel by its definition: every output the sum over k of ``a * b`` (in loop
        order, accumulated in ``a``'s type); GPU interpretation runs it on the first work-item."""
        if self.work_groups and any(v for v in self.ids.values()):
            return
        data = (*s.batch, *s.m, *s.n)
        for idx in product(*(range(v.extent) for v in data)):
            self.env.update({v: np.int64(i) for v, i in zip(data, idx)})
            acc = np.zeros((), s.a.dtype.np)[()]
            for kk in product(*(range(v.extent) for v in s.k)):
                self.env.update({v: np.int64(i) for v, i in zip(s.k, kk)})
                acc = eval_op(Op.ADD, s.a.dtype, [acc, eval_op(Op.MUL, s.a.dtype, [self.value(s.a), self.value(s.b)])])[()]
            buf = self.mem[id(s.out)]
            buf[self.offset(s.out, s.out_index)] = acc

    def offset(self, buf, indices) -> int:
        """Row-major offset of ``buf[indices]``, checked against its shape."""
        off = 0
        for n, (i, dim) in enumerate(zip(indices, buf.shape)):
            v = int(self.value(i))
            if not 0 <= v < dim:
                raise LoweringError(f"interpreter: index {n} of '{buf.name}' is {v}, outside [0, {dim})")
            off = off * dim + v
        return off

    # ------------------------------------------------------------------ expressions
    def value(self, e: Expr):
        if e.op is Op.CONST:
            return np.asarray(e.arg, dtype=e.dtype.np)[()]
        if e.op is Op.VAR:
            if e.arg not in self.env:
                raise LoweringError(f"interpreter: variable '{e.arg.name}' is used outside its loop")
            return self.env[e.arg]
        if e.op is Op.LOAD:
            mem = self.mem.get(id(e.arg))
            if mem is None:
                raise LoweringError(f"interpreter: buffer '{e.arg.name}' is read outside its allocation")
            return mem[self.offset(e.arg, e.src)]
        if e.op is Op.SELECT:        # C's ?: evaluates only the branch it takes
            return self.value(e.src[1] if bool(self.value(e.src[0])) else e.src[2]).astype(e.dtype.np)
        return eval_op(e.op, e.dtype, [self.value(x) for x in e.src])[()]


def interpret(fn: LoweredFunc, *arrays) -> None:
    """Run ``fn`` on ``arrays`` (inputs then outputs) with the interpreter."""
    Interpreter(fn)(*arrays)


def interpret_gpu(fn: LoweredFunc, *arrays, limits: GpuLimits = UNLIMITED) -> None:
    """Run the kernels ``lower_gpu(fn, limits)`` makes of ``fn`` on ``arrays``, in launch order:
    every group in turn, its work-items interleaved at barriers (see the module docstring). A
    work-item that ends while others of its group wait at a barrier raises LoweringError."""
    it = Interpreter(fn, work_groups=True)
    gp = lower_gpu(fn, limits)
    items = {id(sc.buffer) for k in gp.kernels for sc in k.item_scratch}
    glob = it.bind(*arrays)
    for sc in gp.scratch:          # root intermediates; per-item scratch is allocated in the kernel
        if id(sc.buffer) not in items:
            glob[id(sc.buffer)] = np.zeros(max(sc.buffer.size, 1), sc.buffer.dtype.np)
    for k in gp.kernels:
        gsize = k.launch.global_size
        lsize = k.launch.local_size or (1,) * len(gsize)
        for group in product(*[range(g // n) for g, n in zip(gsize, lsize)]):
            shared: dict = {}
            coros = []
            for local in product(*[range(n) for n in lsize]):
                ids = {("group", d): group[d] for d in range(len(gsize))}
                ids.update({("local", d): local[d] for d in range(len(gsize))})
                ids.update({("global", d): group[d] * lsize[d] + local[d] for d in range(len(gsize))})
                coros.append((ids, {}, {}, it.run(k.body)))
            _run_group(it, k.launch.name, coros, shared, glob, math.prod(lsize))


def _run_group(it: Interpreter, name: str, coros: list, shared: dict, glob: dict, size: int) -> None:
    """Advance every work-item of a group to its next barrier, until all have ended."""
    live = coros
    while live:
        waiting, ended = [], 0
        for ids, env, private, co in live:
            it.ids, it.env, it.mem = ids, env, ChainMap(private, shared, glob)
            if next(co, None) is None:
                ended += 1
            else:
                waiting.append((ids, env, private, co))
        if waiting and ended:
            raise LoweringError(f"interpreter: in kernel '{name}', {ended} of {size} work-items of a group "
                                "ended while the others wait at a barrier")
        live = waiting


__all__ = ["Interpreter", "interpret", "interpret_gpu"]
