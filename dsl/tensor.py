"""Tensors, compute definitions, reducers and the Graph of a computation.

``compute(shape, f)`` defines ``out[i0, ..., in] = f(i0, ..., in)`` for every index in the box
``[0, shape[0]) x ... x [0, shape[n])``. A reduction ``sum(e, axis=k)`` folds ``e`` over
``k in [0, k.extent)`` and must be the outermost expression of its compute.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from . import dtypes as dt
from .dtypes import DType
from .errors import DSLError
from .expr import (
    AxisKind,
    Expr,
    ExprOps,
    IterVar,
    Reducer,
    ReduceSpec,
    as_expr,
    binary,
    cast,
    const,
    structural_key,
    walk,
)
from .ops import Op

_seq = itertools.count()


@dataclass(frozen=True, eq=False)
class PlaceholderOp:
    """An input of the computation."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    seq: int = field(default_factory=lambda: next(_seq))
    axis: tuple = ()
    reduce_axis: tuple = ()
    body: None = None

    __hash__ = object.__hash__

    @property
    def num_outputs(self) -> int:
        return 1


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """``out_v[axis] = body[v]`` over the box of ``axis``; ``reduce_axis`` are the axes that the
    top-level REDUCE of the body folds."""

    name: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    body: tuple[Expr, ...]
    tag: str = ""
    seq: int = field(default_factory=lambda: next(_seq))

    __hash__ = object.__hash__

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(v.extent for v in self.axis)

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    @property
    def is_reduction(self) -> bool:
        return self.body[0].op is Op.REDUCE

    def output(self, i: int = 0) -> Tensor:
        return Tensor(self.shape, self.body[i].dtype, self, i)


@dataclass(frozen=True, eq=False)
class ExternOp:
    """An op computed outside loop nests (while loops, sort, rng, ...).

    ``fn(arrays, run)`` maps the numpy values of ``inputs`` to a tuple of output arrays;
    ``run(outputs, arrays)`` evaluates a sub-computation given as output Tensors of a Graph
    (the reference evaluator passes itself; a compiling runtime passes compiled code).
    """

    name: str
    kind: str
    inputs: tuple[Tensor, ...]
    out_shapes: tuple[tuple[int, ...], ...]
    out_dtypes: tuple[DType, ...]
    fn: Callable = field(compare=False)
    attrs: tuple = ()
    seq: int = field(default_factory=lambda: next(_seq))
    axis: tuple = ()
    reduce_axis: tuple = ()
    body: None = None

    __hash__ = object.__hash__

    @property
    def num_outputs(self) -> int:
        return len(self.out_shapes)

    def output(self, i: int = 0) -> Tensor:
        return Tensor(self.out_shapes[i], self.out_dtypes[i], self, i)


@dataclass(frozen=True, eq=False)
class LoopState:
    """How a loop body treats its state, for a runtime that keeps the state in place.

    ``params``: the body's placeholders, one per state element (in state order); ``kept``: the
    elements the body passes through unchanged; ``updates``: ``(k, region, starts)`` where the
    body's output k is state element k with its box ``[starts[d], starts[d] +
    region.shape[d])`` replaced by ``region`` (``starts``: 0-d tensors of the box's corner,
    already clamped into the element; every read of element k in the body sees the old
    value). A runtime may then write ``region`` into element k after the body has run, instead
    of computing and copying the whole element."""

    params: tuple
    kept: tuple[int, ...] = ()
    updates: tuple = ()


@dataclass(frozen=True, eq=False)
class WhileLoop:
    """The ``fn`` of a ``while`` extern op over flat tuple state ``s``::

        while run(cond_outs, [s[k] for k in cond_pos])[0]:
            s = run(body_outs, [s[k] for k in body_pos])

    ``cond_outs``/``body_outs`` are output tensors of graphs on their own placeholders; the
    ``*_pos`` list, for each input of ``Graph(outs)`` in order, the state element it takes.
    Every body output is computed (none is a placeholder). A compiling runtime may run the
    loop natively instead of calling it."""

    cond_outs: tuple
    cond_pos: tuple[int, ...]
    body_outs: tuple
    body_pos: tuple[int, ...]
    #: what a compiling runtime may keep in place (``LoopState``); the loop's meaning is the above
    state: LoopState | None = None

    def __call__(self, arrays, run) -> tuple:
        state = list(arrays)
        while bool(run(list(self.cond_outs), [state[k] for k in self.cond_pos])[0].reshape(-1)[0]):
            state = list(run(list(self.body_outs), [state[k] for k in self.body_pos]))
        return tuple(state)


@dataclass(frozen=True, eq=False)
class Conditional:
    """The ``fn`` of a ``conditional`` extern op over inputs ``(index, operands...)``: branch
    ``k`` (a pred index: true 0, false 1; an int index out of ``[0, n)``: the last branch)
    computes ``branches[k] = (outs, pos, (lo, hi))``, the output tensors of a graph on its own
    placeholders, whose ``Graph(outs)`` input ``j`` is op input ``lo + pos[j]`` (the branch's
    operands are inputs ``lo..hi``). A compiling runtime may run the branches compiled."""

    is_pred: bool
    branches: tuple

    def pick(self, v) -> int:
        k = (0 if bool(v) else 1) if self.is_pred else int(v)
        return k if 0 <= k < len(self.branches) else len(self.branches) - 1

    def __call__(self, arrays, run) -> tuple:
        v = arrays[0]
        outs, pos, (lo, _) = self.branches[self.pick(v.reshape(()) if hasattr(v, "reshape") else v)]
        return tuple(run(list(outs), [arrays[lo + p] for p in pos]))


@dataclass(frozen=True, eq=False)
class Scatter:
    """The ``fn`` of a ``scatter`` extern op over inputs ``(x_0..x_{n-1}, indices, u_0..u_{n-1})``
    with XLA's dimension numbers ``dims`` = (update_window_dims, inserted_window_dims,
    scatter_dims_to_operand_dims, index_vector_dim, input_batching_dims,
    scatter_indices_batching_dims): every update window whose operand box lies wholly in bounds
    combines into the outputs, one window after another in row-major order of the update's
    scatter dims; ``comb[k]`` is output k's new value as an expression of the old values
    ``lhs`` (IterVars, one per output) and the update values ``rhs``. ``run(arrays, run)``
    computes it on the host (numpy); a compiling runtime may render it as a loop nest."""

    n: int
    dims: tuple
    lhs: tuple
    rhs: tuple
    comb: tuple
    run: Callable

    def __call__(self, arrays, run) -> tuple:
        return self.run(arrays, run)


@dataclass(frozen=True, eq=False)
class LapackCall:
    """The ``fn`` of an extern op that calls one LAPACK/BLAS routine per matrix of a batch (the
    leading dims), in ``prefix``'s type (``s`` float32, ``d`` float64); arrays are row-major
    logical matrices, LAPACK's column-major storage is the runtime's business:

    - ``trsm`` (a [..., k, k], b) -> x: ``op(a) x = b`` (``left``) or ``x op(a) = b``, op by
      ``trans`` (0 none, 1 transpose, 2 adjoint), from the ``lower`` or upper triangle of a
      alone, its diagonal ones when ``unit``;
    - ``getrf`` (a [..., m, n]) -> lu, pivots (int32 [..., min(m, n)], 1-based row swaps in
      order), info (int32 [...], i > 0: U[i-1, i-1] is exactly 0);
    - ``potrf`` (a [..., n, n]) -> the ``lower`` (a = l l^T) or upper (a = u^T u) factor: with
      ``hlo`` (the ``cholesky`` op) the other triangle is 0 and a matrix that is not positive
      definite gives all NaNs; without it (JAX's custom call) the other triangle is a's own,
      and an info output follows (i > 0: the leading minor of order i is not positive);
    - ``syevd`` (a [..., n, n], the ``lower`` or upper triangle read) -> the eigenvectors as
      columns (with ``vectors``; else what LAPACK left of a), the ascending eigenvalues, info;
    - ``gesdd`` (a [..., m, n]) -> what LAPACK left of a, the singular values, u, vt (``mode``
      65: full, 83: thin, 78: none, then zeros), info.

    ``opts`` holds the flags as sorted (name, value) pairs; ``run(arrays, run)`` computes the
    same on the host (scipy)."""

    routine: str
    prefix: str
    opts: tuple
    run: Callable

    def opt(self, name: str, default=False):
        return dict(self.opts).get(name, default)

    def __call__(self, arrays, run) -> tuple:
        return self.run(arrays, run)


@dataclass(frozen=True)
class SortKey:
    """Operand ``operand`` sorts by ``fn`` (an expression of ``var``, its element), ascending
    unless ``descending``. A float key compares as ``<`` does, -0 equal to +0 and every NaN
    equal and last; with ``total`` it is the operand's element itself in IEEE totalOrder
    (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN)."""

    operand: int
    fn: Expr
    var: IterVar
    descending: bool
    total: bool = False


@dataclass(frozen=True, eq=False)
class SortCall:
    """The ``fn`` of a ``sort``/``topk`` extern op: along ``dim`` of the inputs (all of one
    shape), the stable permutation ordering ``keys`` lexicographically (the first key
    primary; ties keep the lower index); output ``j < len(inputs)`` is input ``j`` gathered
    by its first ``take`` positions (``out_j[..., i, ...] = in_j[..., perm[i], ...]`` for
    ``i < take``) and, with ``indices``, one more int32 output holds ``perm[:take]``.
    ``run(arrays, run)`` computes the same on the host (numpy); a compiling runtime may
    render it as C."""

    dim: int
    keys: tuple
    take: int
    indices: bool
    run: Callable

    def __call__(self, arrays, run) -> tuple:
        return self.run(arrays, run)


def extern(name: str, kind: str, inputs, out_shapes, out_dtypes, fn: Callable, attrs=()) -> tuple:
    """Define an extern op; returns its output tensors (a tuple)."""
    op = ExternOp(name, kind, tuple(inputs), tuple(tuple(int(d) for d in s) for s in out_shapes),
                  tuple(dt.dtype(d) for d in out_dtypes), fn, tuple(attrs))
    return tuple(op.output(i) for i in range(op.num_outputs))


@dataclass(frozen=True, eq=False)
class Tensor(ExprOps):
    """Output ``value_index`` of ``op``: an array of ``shape`` and ``dtype``. Index it to read."""

    shape: tuple[int, ...]
    dtype: DType
    op: PlaceholderOp | ComputeOp | ExternOp
    value_index: int = 0

    def __hash__(self):
        return hash((id(self.op), self.value_index))

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.op is self.op and other.value_index == self.value_index

    @property
    def name(self) -> str:
        return self.op.name if self.value_index == 0 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def axis(self) -> tuple[IterVar, ...]:
        return self.op.axis

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return self.op.reduce_axis

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __getitem__(self, idx) -> Expr:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(self.shape):
            raise DSLError(f"tensor '{self.name}' has {len(self.shape)} dimensions, indexed with {len(idx)}")
        ix = []
        for i in idx:
            e = as_expr(i, dt.index)
            if not (e.dtype.is_int or e.dtype.is_bool):
                raise DSLError(f"index of '{self.name}' must be an integer expression, got {e.dtype}")
            ix.append(e if e.dtype is dt.index else cast(e, dt.index))
        return Expr(Op.LOAD, self.dtype, tuple(ix), self)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {list(self.shape)}, {self.dtype})"

    # a Tensor used directly in arithmetic means a 0-d read
    def _bin(self, op, other, reverse=False):
        if self.shape:
            raise DSLError(f"tensor '{self.name}' must be indexed before use in an expression")
        return ExprOps._bin(self[()], op, other, reverse)


def _check_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError as e:
        raise DSLError(f"shape must be a sequence of ints, got {shape!r}") from e
    if any(s < 0 for s in shape):
        raise DSLError(f"shape {shape} has a negative extent")
    return shape


def placeholder(shape, dtype="float32", name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` and ``dtype``."""
    shape = _check_shape(shape)
    d = dt.dtype(dtype)
    return Tensor(shape, d, PlaceholderOp(name, shape, d))


def reduce_axis(extent: int, name: str = "k") -> IterVar:
    """A reduction variable ranging over ``[0, extent)``."""
    extent = int(extent)
    if extent < 1:
        raise DSLError(f"reduce axis '{name}' needs a positive extent, got {extent}")
    return IterVar(name, extent, AxisKind.REDUCE)


#: The tag of one step of a log-step prefix scan (the front-end's cumulative reduce-window): each
#: step reads the one before at two places, so schedules keep every step materialized.
SCAN_STEP = "scan_step"


def compute(shape, fcompute: Callable, name: str = "compute", tag: str = ""):
    """Define ``out[idx] = fcompute(*idx)`` over ``shape``; a tuple result gives a tuple of tensors.

    The lambda's parameter names name the axes (``C.axis[0].name == 'i'``).
    """
    shape = _check_shape(shape)
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        names = [f"i{d}" for d in range(len(shape))]
    else:
        names = [p.name for p in params]
        if len(names) != len(shape):
            raise DSLError(f"compute '{name}': the function takes {len(names)} indices but the shape "
                           f"{list(shape)} has {len(shape)} dimensions")
    axis = tuple(IterVar(n, s, AxisKind.DATA) for n, s in zip(names, shape))
    out = fcompute(*axis)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    body = tuple(as_expr(o) for o in outs)
    raxis: tuple[IterVar, ...] = ()
    reduces = [b for b in body if b.op is Op.REDUCE]
    if reduces:
        if len(reduces) != len(body):
            raise DSLError(f"compute '{name}': either every output or none is a reduction")
        raxis = reduces[0].arg.axes
        for r in reduces[1:]:
            if r.arg.axes != raxis or r.arg.reducer is not reduces[0].arg.reducer:
                raise DSLError(f"compute '{name}': tuple outputs must share one reducer and axes")
    for b in body:
        if any(e.op is Op.REDUCE and e not in reduces for e in walk([b])):
            raise DSLError(f"compute '{name}': a reduction must be the outermost expression; "
                           "put the rest in a second compute")
        for e in walk([b]):
            if e.op is Op.VAR and e.arg.kind is AxisKind.REDUCE and e.arg not in raxis:
                raise DSLError(f"compute '{name}': reduce axis '{e.arg.name}' is used outside "
                               "of a reduction over it")
    op = ComputeOp(name, axis, raxis, body, tag)
    tensors = tuple(op.output(i) for i in range(len(body)))
    return tensors if isinstance(out, (tuple, list)) else tensors[0]


# ----------------------------------------------------------------------------- reducers

def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reducer", ufunc=None):
    """Build a commutative reducer.

    ``fcombine(lhs, rhs)`` takes two tuples of expressions (accumulator, incoming value) and
    returns a tuple; ``fidentity(dtypes)`` returns the identity values. The result is called
    as ``r(values, axis=k)`` with a tuple of values (a tuple of REDUCE exprs is returned) or a
    single value (one REDUCE expr).
    """
    def build(dtypes: tuple[DType, ...]) -> Reducer:
        lhs = tuple(IterVar(f"{name}_x{n}", 0, AxisKind.PARAM, d) for n, d in enumerate(dtypes))
        rhs = tuple(IterVar(f"{name}_y{n}", 0, AxisKind.PARAM, d) for n, d in enumerate(dtypes))
        comb = fcombine(tuple(v.var for v in lhs), tuple(v.var for v in rhs))
        comb = tuple(comb) if isinstance(comb, (tuple, list)) else (comb,)
        ident = fidentity(dtypes)
        ident = tuple(ident) if isinstance(ident, (tuple, list)) else (ident,)
        if len(comb) != len(dtypes) or len(ident) != len(dtypes):
            raise DSLError(f"reducer '{name}': combine and identity must give {len(dtypes)} values")
        comb = tuple(cast(as_expr(c, d), d) for c, d in zip(comb, dtypes))
        ident = tuple(cast(as_expr(c, d), d) for c, d in zip(ident, dtypes))
        return Reducer(name, lhs, rhs, comb, ident, ufunc)

    cache: dict[tuple, Reducer] = {}

    def reduce(values, axis, where=None):
        single = not isinstance(values, (tuple, list))
        vals = (values,) if single else tuple(values)
        vals = tuple(as_expr(v) for v in vals)
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        for a in axes:
            if not isinstance(a, IterVar) or a.kind is not AxisKind.REDUCE:
                raise DSLError(f"{name}: axis must be reduce_axis variables, got {a!r}")
        dts = tuple(v.dtype for v in vals)
        if dts not in cache:
            cache[dts] = build(dts)
        red = cache[dts]
        w = None if where is None else as_expr(where)
        outs = tuple(Expr(Op.REDUCE, d, vals, ReduceSpec(red, axes, n, w)) for n, d in enumerate(dts))
        return outs[0] if single else outs

    reduce.__name__ = name
    return reduce


def _identity_of(kind: str):
    def f(dtypes):
        d = dtypes[0]
        return const(limit_value(d, kind), d)
    return f


def limit_value(d: DType, kind: str):
    """'zero', 'one', 'lowest' (-inf for floats) or 'highest' (+inf for floats) of ``d``."""
    import numpy as np
    if kind in ("zero", "one"):
        return int(kind == "one") if not d.is_float else float(kind == "one")
    if d.is_float:
        return float("-inf") if kind == "lowest" else float("inf")
    if d.is_bool:
        return kind == "highest"
    info = np.iinfo(d.np)
    return int(info.min if kind == "lowest" else info.max)


sum = comm_reducer(lambda a, b: (binary(Op.ADD, a[0], b[0]),), _identity_of("zero"), "sum", "add")
prod = comm_reducer(lambda a, b: (binary(Op.MUL, a[0], b[0]),), _identity_of("one"), "prod", "multiply")
max = comm_reducer(lambda a, b: (binary(Op.MAX, a[0], b[0]),), _identity_of("lowest"), "max", "maximum")
min = comm_reducer(lambda a, b: (binary(Op.MIN, a[0], b[0]),), _identity_of("highest"), "min", "minimum")


# ----------------------------------------------------------------------------- graph

class Graph:
    """The DAG of ops reachable from ``outputs``, in topological order, with unique names.

    ``inputs`` are the placeholders in creation order (the kernel's argument order).
    """

    def __reduce__(self):
        # rebuilt on unpickling: the lookups inside are keyed by object identity
        return (Graph, (list(self.outputs), list(self.inputs)))

    def __init__(self, outputs: Sequence[Tensor] | Tensor, inputs: Sequence[Tensor] | None = None):
        """``inputs`` (optional) fixes the argument order; it may also name computed tensors,
        which then act as inputs (the graph stops there: a segment of a larger graph)."""
        outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        for t in outs:
            if not isinstance(t, Tensor):
                raise DSLError(f"graph outputs must be tensors, got {t!r}")
        self.outputs: tuple[Tensor, ...] = tuple(outs)
        given = list(inputs) if inputs is not None else None
        stop = {id(t.op) for t in given or ()}
        order: list = []
        seen: set[int] = set()

        def visit(op):
            stack = [(op, False)]
            while stack:
                o, done = stack.pop()
                if done:
                    order.append(o)
                    continue
                if id(o) in seen:
                    continue
                seen.add(id(o))
                stack.append((o, True))
                if id(o) in stop:
                    continue
                for t in reversed(input_tensors(o)):
                    if id(t.op) not in seen:
                        stack.append((t.op, False))

        for t in outs:
            visit(t.op)
        found = sorted((o for o in order if isinstance(o, PlaceholderOp)), key=lambda o: o.seq)
        if given is not None:
            have = {(id(t.op), t.value_index) for t in given}
            missing = [o.name for o in found if (id(o), 0) not in have]
            if missing:
                raise DSLError(f"graph reads placeholders {missing} that are not among the inputs")
            self.inputs: tuple[Tensor, ...] = tuple(given)
        else:
            self.inputs = tuple(Tensor(p.shape, p.dtype, p) for p in found)
        self.ops: tuple = tuple(o for o in order if id(o) not in stop)
        self.names: dict[int, str] = {}
        self.input_names: list[str] = []
        used: set[str] = set()

        def fresh(base: str) -> str:
            nm, n = base, 0
            while nm in used:
                n += 1
                nm = f"{base}_{n}"
            used.add(nm)
            return nm

        for t in self.inputs:
            self.input_names.append(fresh(t.name))
            self.names.setdefault(id(t.op), self.input_names[-1])
        for o in self.ops:
            if isinstance(o, ComputeOp) or id(o) not in self.names:
                self.names[id(o)] = fresh(o.name)


    @property
    def compute_ops(self) -> tuple[ComputeOp, ...]:
        return tuple(o for o in self.ops if isinstance(o, ComputeOp))

    @property
    def extern_ops(self) -> tuple[ExternOp, ...]:
        return tuple(o for o in self.ops if isinstance(o, ExternOp))

    def name(self, op) -> str:
        return self.names[id(op)]

    def consumers(self, op) -> list:
        """Compute ops that read ``op`` (in topological order)."""
        return [c for c in self.compute_ops if any(t.op is op for t in input_tensors(c))]

    @cached_property
    def key(self) -> tuple:
        """Structural key ignoring names: the workload key."""
        return (tuple((tuple(t.shape), t.dtype.name) for t in self.inputs),
                structural_key([t[tuple(const(0) for _ in t.shape)] if t.shape else t[()]
                                for t in self.outputs]))


def input_tensors(op) -> list[Tensor]:
    """Distinct tensors read by a compute or extern op, in order of first read."""
    if isinstance(op, ExternOp):
        return list(op.inputs)
    if not isinstance(op, ComputeOp):
        return []
    out: list[Tensor] = []
    seen = set()
    roots = list(op.body)
    for e in walk(roots):
        if e.op is Op.LOAD and isinstance(e.arg, Tensor):
            k = (id(e.arg.op), e.arg.value_index)
            if k not in seen:
                seen.add(k)
                out.append(e.arg)
    return out
