"""The loop-nest IR that schedules lower to and renderers print.

Statements: ``For`` (``var`` runs over ``[0, extent)``; ``kind`` a :class:`LoopKind`, with the
:class:`Thread` of a ``BIND`` loop), ``ThreadIndex`` (``var`` is this work-item's index, written
by the GPU lowering pass ``gpu_lower.py``), ``Store`` (``buffer[indices] = value``), ``Allocate`` (a buffer
live in ``body``), ``If``, ``Let`` (a scalar ``var = value`` visible in ``body``), ``Barrier``
(every work-item of the group waits here; a no-op without work-groups) and ``Seq``.
Buffer reads inside expressions are ``Expr(Op.LOAD, dtype, indices, buffer)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from ..dsl.dtypes import DType
from ..dsl.errors import ScheduleError
from ..dsl.expr import Expr, IterVar
from ..dsl.ops import Op
from ..dsl.printer import expr_str


class LoopKind(Enum):
    """How a loop runs: one iteration after another, across CPU threads, as SIMD lanes,
    unrolled, or bound to a GPU thread index (``For.thread``)."""
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZE = "vectorize"
    UNROLL = "unroll"
    BIND = "bind"

    def __str__(self) -> str:
        return self.value


#: the names ``Schedule.bind`` takes (OpenCL's and CUDA's words) -> :attr:`Thread.axis`
_THREAD_AXES = {"group": "group", "local": "local", "blockIdx": "group", "threadIdx": "local"}
THREAD_NAMES = tuple(f"{n}.{x}" for n in ("group", "local", "blockIdx", "threadIdx") for x in "xyz")


@dataclass(frozen=True)
class Thread:
    """A GPU thread index: ``axis`` 'group' (the work-group / CUDA block) or 'local' (the
    work-item within its group / CUDA thread), in dimension ``dim`` (0, 1, 2 = x, y, z);
    ``name``: how the schedule spelled it (for messages; not compared)."""
    axis: str
    dim: int
    name: str = field(default="", compare=False)

    @staticmethod
    def parse(name: str) -> Thread:
        """``'group.x'``, ``'local.y'``, ``'blockIdx.z'``, ``'threadIdx.x'``, ... as a Thread."""
        head, _, x = name.partition(".")
        if x not in ("x", "y", "z") or head not in _THREAD_AXES:
            raise ScheduleError(f"bind: unknown thread index '{name}'; expected one of {', '.join(THREAD_NAMES)}")
        return Thread(_THREAD_AXES[head], "xyz".index(x), name)

    def __str__(self) -> str:
        return self.name or f"{self.axis}.{'xyz'[self.dim]}"


@dataclass(frozen=True, eq=False)
class Buffer:
    """A row-major array: ``scope`` is 'arg' (kernel argument), 'global' (heap temporary),
    'local' (per-thread scratch, declared where it is allocated) or 'shared' (one copy per
    work-group, filled cooperatively; per-thread scratch where there are no work-groups)."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    scope: str = "global"

    __hash__ = object.__hash__

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def load(self, indices) -> Expr:
        return Expr(Op.LOAD, self.dtype, tuple(indices), self)


class Stmt:
    """Base of statements."""


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """``reduction``: ``(acc, reducer)`` pairs a vectorized loop combines into (in any order);
    ``thread``: the index a ``LoopKind.BIND`` loop is bound to (None for other kinds)."""
    var: IterVar
    extent: Expr
    kind: LoopKind
    body: Stmt
    reduction: tuple = ()
    thread: Thread | None = None


@dataclass(frozen=True, eq=False)
class ThreadIndex(Stmt):
    """``var`` = this work-item's index along ``axis`` in dimension ``dim``, visible in ``body``:
    'global' (group * group size + local, OpenCL's get_global_id), 'group' or 'local'."""
    var: IterVar
    axis: str
    dim: int
    body: Stmt


@dataclass(frozen=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True, eq=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt


@dataclass(frozen=True, eq=False)
class Let(Stmt):
    var: IterVar
    value: Expr
    body: Stmt


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    """Update the scalar ``var`` declared by an enclosing ``Let``."""
    var: IterVar
    value: Expr


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    """Work-group barrier: 'shared' buffers written before it are visible after it."""


@dataclass(frozen=True, eq=False)
class MatmulKernel(Stmt):
    """A whole (batched) matrix product computed by one GPU kernel (schedules/gpu_gemm.py):
    ``out[out_index] = sum over k of a * b`` for every value of the ``batch``, ``m`` and ``n``
    variables, where ``a`` reads batch/m/k variables, ``b`` batch/n/k ones and ``out_index``
    indexes ``out`` by the data variables. ``params`` are the kernel's (GemmParams items)."""
    out: Buffer
    out_index: tuple[Expr, ...]
    batch: tuple[IterVar, ...]
    m: tuple[IterVar, ...]
    n: tuple[IterVar, ...]
    k: tuple[IterVar, ...]
    a: Expr
    b: Expr
    params: tuple


@dataclass(frozen=True, eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]


def seq(*stmts) -> Stmt:
    """A Seq of the given statements with nested Seqs flattened."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, Seq) else [s])
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


@dataclass(frozen=True, eq=False)
class LoweredFunc:
    """A lowered kernel: ``args`` (inputs then outputs, as Buffers) and the loop nest."""

    name: str
    args: tuple[Buffer, ...]
    num_inputs: int
    body: Stmt

    def __str__(self) -> str:
        head = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in self.args)
        return f"def {self.name}({head}):\n" + stmt_str(self.body, 1)


def stmt_children(s: Stmt) -> list[Stmt]:
    """The statements directly inside ``s``."""
    if isinstance(s, Seq):
        return list(s.stmts)
    if isinstance(s, (For, Let, Allocate, ThreadIndex)):
        return [s.body]
    return [s.then] if isinstance(s, If) else []


def stmt_exprs(s: Stmt) -> list[Expr]:
    """The expressions ``s`` itself holds (not those of nested statements)."""
    if isinstance(s, Store):
        return [s.value, *s.indices]
    if isinstance(s, MatmulKernel):
        return [s.a, s.b, *s.out_index]
    if isinstance(s, For):
        return [s.extent]
    if isinstance(s, If):
        return [s.cond]
    return [s.value] if isinstance(s, (Let, Assign)) else []


def walk_stmts(s: Stmt):
    """Pre-order over ``s`` and every statement nested in it."""
    yield s
    for c in stmt_children(s):
        yield from walk_stmts(c)


def extern_name(op) -> str:
    """The C name of the kernel computing extern op ``op``: ``hl_`` and its name, every character
    outside ``[0-9a-zA-Z_]`` as ``_``."""
    return "hl_" + re.sub(r"[^0-9a-zA-Z_]", "_", op.name)


def extern_args(op) -> tuple[list[Buffer], list[Buffer]]:
    """The argument buffers of a kernel computing extern op ``op``: ``in{k}`` per input and
    ``out{k}`` per output, of their shapes and dtypes."""
    ins = [Buffer(f"in{k}", x.dtype, tuple(x.shape), "arg") for k, x in enumerate(op.inputs)]
    outs = [Buffer(f"out{k}", d, tuple(s), "arg") for k, (d, s) in enumerate(zip(op.out_dtypes, op.out_shapes))]
    return ins, outs


def stmt_str(s: Stmt, depth: int = 0) -> str:
    """Readable pseudo-code of a statement."""
    pad = "  " * depth
    if isinstance(s, Seq):
        return "".join(stmt_str(x, depth) for x in s.stmts)
    if isinstance(s, For):
        tag = "" if s.kind is LoopKind.SERIAL else f"  # {s.thread or s.kind}"
        if s.reduction:
            tag += f" reduction({', '.join(f'{r.name}:{a.name}' for a, r in s.reduction)})"
        return f"{pad}for {s.var.name} in range({expr_str(s.extent)}):{tag}\n" + stmt_str(s.body, depth + 1)
    if isinstance(s, Store):
        return f"{pad}{s.buffer.name}[{', '.join(expr_str(i) for i in s.indices)}] = {expr_str(s.value)}\n"
    if isinstance(s, Allocate):
        return (f"{pad}{s.buffer.name} = alloc({s.buffer.dtype}{list(s.buffer.shape)}, "
                f"{s.buffer.scope})\n" + stmt_str(s.body, depth))
    if isinstance(s, If):
        return f"{pad}if {expr_str(s.cond)}:\n" + stmt_str(s.then, depth + 1)
    if isinstance(s, Let):
        return f"{pad}{s.var.name} = {expr_str(s.value)}\n" + stmt_str(s.body, depth)
    if isinstance(s, Assign):
        return f"{pad}{s.var.name} = {expr_str(s.value)}\n"
    if isinstance(s, ThreadIndex):
        return f"{pad}{s.var.name} = {s.axis}_id({s.dim})\n" + stmt_str(s.body, depth)
    if isinstance(s, Barrier):
        return f"{pad}barrier()\n"
    if isinstance(s, MatmulKernel):
        ax = ", ".join(v.name for v in (*s.batch, *s.m, *s.n))
        return (f"{pad}{s.out.name}[{', '.join(expr_str(i) for i in s.out_index)}] = gpu_gemm[{ax}]("
                f"sum over {', '.join(v.name for v in s.k)} of {expr_str(s.a)} * {expr_str(s.b)}; "
                f"{dict(s.params)})\n")
    raise TypeError(f"not a statement: {s!r}")
