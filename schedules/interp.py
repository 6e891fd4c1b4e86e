"""A numpy interpreter of the loop-nest IR (as tinygrad's Python backend): runs a LoweredFunc
statement by statement on numpy arrays, with the scalar semantics of ``dsl.reference.eval_op``.

It needs no compiler, so lowering is tested on its own: when a generated kernel is wrong, the
interpreter's answer on the same IR says whether lowering or rendering is at fault. Every buffer
access is bounds-checked (an index outside a buffer is a lowering bug, raised as LoweringError).
Work-group loops run one work-item after another, so IR whose work-items synchronize (barriers
inside loops bound to work-items) is refused; elsewhere a barrier is a no-op, as on the cpu.
"""

from __future__ import annotations

import numpy as np

from ..dsl.errors import LoweringError
from ..dsl.expr import Expr
from ..dsl.ops import Op
from ..dsl.reference import eval_op
from .loops import Allocate, Assign, Barrier, For, If, Let, LoopKind, LoweredFunc, Seq, Stmt, Store, walk_stmts


class Interpreter:
    """``Interpreter(fn)(*inputs, *outputs)`` fills the outputs (numpy arrays of the argument
    buffers' shapes and dtypes) as the compiled kernel would."""

    def __init__(self, fn: LoweredFunc):
        stmts = list(walk_stmts(fn.body))
        if any(isinstance(s, Barrier) for s in stmts) and \
                any(isinstance(s, For) and s.kind is LoopKind.BIND for s in stmts):
            raise LoweringError(f"interpreter: '{fn.name}' synchronizes work-groups (barriers); it runs "
                                "work-items one after another and cannot")
        self.fn = fn

    def __call__(self, *arrays) -> None:
        if len(arrays) != len(self.fn.args):
            raise LoweringError(f"interpreter: '{self.fn.name}' takes {len(self.fn.args)} arrays, got {len(arrays)}")
        self.mem = {}
        for b, a in zip(self.fn.args, arrays):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype.np:
                raise LoweringError(f"interpreter: argument '{b.name}' is {a.dtype}{list(a.shape)}, "
                                    f"expected {b.dtype}{list(b.shape)}")
            self.mem[id(b)] = a.reshape(-1)
        self.env: dict = {}
        self.run(self.fn.body)

    # ------------------------------------------------------------------ statements
    def run(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            for x in s.stmts:
                self.run(x)
        elif isinstance(s, For):
            for i in range(int(self.value(s.extent))):
                self.env[s.var] = np.int64(i)
                self.run(s.body)
        elif isinstance(s, Store):
            buf = self.mem[id(s.buffer)]
            buf[self.offset(s.buffer, s.indices)] = self.value(s.value)
        elif isinstance(s, Let):
            self.env[s.var] = self.value(s.value)
            self.run(s.body)
        elif isinstance(s, Assign):
            self.env[s.var] = self.value(s.value)
        elif isinstance(s, If):
            if bool(self.value(s.cond)):
                self.run(s.then)
        elif isinstance(s, Barrier):
            pass
        elif isinstance(s, Allocate):
            b = s.buffer
            self.mem[id(b)] = np.zeros(max(b.size, 1), b.dtype.np)
            self.run(s.body)
            del self.mem[id(b)]
        else:
            raise LoweringError(f"interpreter: no rule for statement {type(s).__name__}")

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


__all__ = ["Interpreter", "interpret"]
