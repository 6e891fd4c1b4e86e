"""The numpy reference evaluator: the living definition of the DSL's semantics.

Each compute is evaluated vectorized over its whole index box (in row chunks to bound memory):
index variables become broadcast ``arange`` arrays, loads become views or gathers, reductions
fold the trailing reduce dimensions. Every generated kernel is checked against this.

Integer semantics follow C and XLA: ``/`` and ``%`` truncate toward zero; ``x / 0 == -1``,
``x % 0 == x``; ``INT_MIN / -1 == INT_MIN``; shifts by >= the bit width give 0 (or the sign for
arithmetic right shifts); float -> int casts truncate, map NaN to 0 and saturate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .dtypes import DType
from .errors import DSLError
from .expr import Expr
from .ops import Op
from .semantics import _parts, _to_dtype
from .semantics import eval_op as _eval_op
from .tensor import ComputeOp, ExternOp, Graph, Tensor

#: Elements evaluated at once per compute chunk (index box x reduce box).
CHUNK_ELEMENTS = 1 << 22

def eval_op(op: Op, dtype: DType, args: Sequence[np.ndarray]):
    """Apply one elementwise op to numpy arrays (dsl/semantics.py), complex operands through
    the op's formula (dsl/complexmath.py)."""
    return _eval_op(op, dtype, args, _complex)


def _complex(op: Op, dtype: DType, operand: DType, args):
    """An op on complex operands through its formula, evaluated on the parts."""
    from .complexmath import formula
    f = formula(op, operand)
    parts = [p for a in args for p in (a.real, a.imag)]
    env = dict(zip(f.params, np.broadcast_arrays(*parts)))
    ctx = _Ctx({}, env)
    for var, e in f.steps:
        env[var] = _eval(e, ctx)
    res = [_eval(r, ctx) for r in f.results]
    if dtype.is_complex:
        return _parts(Op.COMPLEX, dtype, [r.astype(dtype.component.np) for r in res])
    return np.asarray(res[0]).astype(dtype.np)


# ----------------------------------------------------------------------------- expressions

class _Ctx:
    def __init__(self, values: Mapping, env: dict):
        self.values = values      # id(op) -> tuple of arrays per output
        self.env = env            # IterVar -> array
        self.memo: dict[int, np.ndarray] = {}


def _eval(e: Expr, ctx: _Ctx):
    r = ctx.memo.get(id(e))
    if r is not None:
        return r
    if e.op is Op.CONST:
        r = np.asarray(e.arg, dtype=e.dtype.np)
    elif e.op is Op.VAR:
        if e.arg not in ctx.env:
            raise DSLError(f"reference: variable '{e.arg.name}' is not bound here")
        r = ctx.env[e.arg]
    elif e.op is Op.LOAD:
        t: Tensor = e.arg
        arr = ctx.values[id(t.op)][t.value_index]
        idx = [_eval(i, ctx) for i in e.src]
        if not idx:
            r = arr[()]
        else:
            shp = np.broadcast_shapes(*[np.shape(i) for i in idx])
            for n, (i, extent) in enumerate(zip(idx, arr.shape)):
                if np.size(i) and (np.min(i) < 0 or np.max(i) >= extent):
                    raise DSLError(f"reference: index {n} of '{t.name}' leaves [0, {extent}) "
                                   f"(seen {int(np.min(i))}..{int(np.max(i))})")
            r = arr[tuple(np.broadcast_to(i, shp) if np.ndim(i) else i for i in idx)]
    elif e.op is Op.REDUCE:
        raise DSLError("reference: a reduction must be the outermost expression of a compute")
    else:
        r = eval_op(e.op, e.dtype, [_eval(s, ctx) for s in e.src])
    ctx.memo[id(e)] = r
    return r


def _reduce(op: ComputeOp, ctx: _Ctx, nred: int, out_shape):
    spec = op.body[0].arg
    red = spec.reducer
    vals = [_eval(s, ctx) for s in op.body[0].src]
    full = out_shape + tuple(v.extent for v in op.reduce_axis)
    vals = [np.broadcast_to(v, full) for v in vals]
    if spec.where is not None:
        mask = np.broadcast_to(_eval(spec.where, ctx), full)
        idc = [_eval(i, _Ctx({}, {})) for i in red.identity]
        vals = [np.where(mask, v, i) for v, i in zip(vals, idc)]
    axes = tuple(range(len(out_shape), len(full)))
    d = op.body[0].dtype
    if red.ufunc is not None and len(vals) == 1 and not d.is_narrow_float:
        with np.errstate(all="ignore"):
            if d.is_sub_byte:   # wrapping sums and products are exact modulo 2**bits
                wide = getattr(np, red.ufunc).reduce(vals[0].astype(np.int64), axis=axes)
                return (_to_dtype(wide, d),)
            out = getattr(np, red.ufunc).reduce(vals[0], axis=axes, dtype=d.np)
        return (np.asarray(out, d.np),)
    flat = [v.reshape(out_shape + (-1,)) for v in vals]
    acc = [np.broadcast_to(_eval(i, _Ctx({}, {})), out_shape).copy() for i in red.identity]
    for r in range(flat[0].shape[-1]):
        env = {p: a for p, a in zip(red.lhs, acc)}
        env.update({p: f[..., r] for p, f in zip(red.rhs, flat)})
        c = _Ctx({}, env)
        acc = [np.broadcast_to(_eval(x, c), out_shape).astype(x.dtype.np) for x in red.combine]
    return tuple(acc)


def _contraction(op: ComputeOp, values: Mapping):
    """A float sum of products of two tensors, each indexed by distinct plain axes
    (``C[i, j] = sum_r A[i, r] * B[r, j]`` and its batched, transposed and outer forms), as
    one ``einsum`` accumulated in float64 and rounded once; None for any other compute (the
    general evaluator, chunked, defines it). Axes within their tensor's extent only: anything
    else takes the general path, which reports an out-of-range index."""
    b = op.body[0]
    if len(op.body) != 1 or b.op is not Op.REDUCE or b.arg.where is not None or b.arg.reducer.ufunc != "add":
        return None
    d = b.dtype
    if d.name not in ("float32", "float64") or len(b.src) != 1 or b.src[0].op is not Op.MUL:
        return None
    loads = b.src[0].src
    if any(x.op is not Op.LOAD or not isinstance(x.arg, Tensor) or x.dtype != d for x in loads):
        return None
    letters = {v: chr(ord("a") + n) for n, v in enumerate(op.axis + op.reduce_axis)}
    if len(letters) > 26:
        return None
    arrays, subs = [], []
    for x in loads:
        arr = values[id(x.arg.op)][x.arg.value_index]
        vs = [i.arg if i.op is Op.VAR else None for i in x.src]
        if None in vs or len(set(vs)) != len(vs) or any(v not in letters for v in vs) or \
                any(v.extent > n for v, n in zip(vs, arr.shape)):
            return None
        arrays.append(arr[tuple(slice(0, v.extent) for v in vs)].astype(np.float64))
        subs.append("".join(letters[v] for v in vs))
    used = set("".join(subs))
    if any(letters[v] not in used for v in op.axis + op.reduce_axis):
        return None
    spec = f"{subs[0]},{subs[1]}->" + "".join(letters[v] for v in op.axis)
    with np.errstate(all="ignore"):
        out = np.einsum(spec, *arrays, optimize=True)
    return (np.asarray(out, d.np).reshape(op.shape),)


def _eval_compute(op: ComputeOp, values: Mapping) -> tuple[np.ndarray, ...]:
    fast = _contraction(op, values) if op.reduce_axis and all(op.shape) else None
    if fast is not None:
        return fast
    shape = op.shape
    rshape = tuple(v.extent for v in op.reduce_axis)
    outs = [np.empty(shape, b.dtype.np) for b in op.body]
    if any(s == 0 for s in shape):
        return tuple(outs)
    inner = int(np.prod(shape[1:] + rshape, dtype=np.int64)) if shape else 1
    rows = max(1, CHUNK_ELEMENTS // max(inner, 1))
    nd = len(shape) + len(rshape)
    for start in range(0, shape[0] if shape else 1, rows):
        stop = min(start + rows, shape[0]) if shape else 1
        env = {}
        for n, v in enumerate(op.axis + op.reduce_axis):
            lo, hi = (start, stop) if n == 0 and shape else (0, v.extent)
            a = np.arange(lo, hi, dtype=np.int64)
            env[v] = a.reshape([-1 if m == n else 1 for m in range(nd)])
        ctx = _Ctx(values, env)
        cshape = ((stop - start),) + shape[1:] if shape else ()
        if op.reduce_axis:
            res = _reduce(op, ctx, len(rshape), cshape)
        else:
            res = tuple(np.broadcast_to(_eval(b, ctx), cshape) for b in op.body)
        for o, r in zip(outs, res):
            if shape:
                o[start:stop] = r
            else:
                o[()] = r
    return tuple(outs)


def evaluate(outputs, inputs, input_tensors: Sequence[Tensor] | None = None) -> list[np.ndarray]:
    """Evaluate a graph with numpy.

    ``outputs``: a Graph, a Tensor or a list of Tensors. ``inputs``: arrays in the graph's input
    order, or a dict keyed by placeholder Tensor or name. Returns one array per output.
    """
    g = outputs if isinstance(outputs, Graph) else Graph(outputs, input_tensors)
    values: dict[int, tuple] = {}
    if isinstance(inputs, Mapping):
        arrays = []
        for t, nm in zip(g.inputs, g.input_names):
            key = t if t in inputs else nm
            if key not in inputs:
                raise DSLError(f"reference: no value for input '{nm}'")
            arrays.append(inputs[key])
    else:
        arrays = list(inputs)
        if len(arrays) != len(g.inputs):
            raise DSLError(f"reference: {len(g.inputs)} inputs expected, got {len(arrays)}")
    for t, nm, a in zip(g.inputs, g.input_names, arrays):
        a = np.asarray(a)
        if tuple(a.shape) != t.shape:
            raise DSLError(f"reference: input '{nm}' has shape {a.shape}, expected {t.shape}")
        vals = list(values.get(id(t.op), (None,) * t.op.num_outputs))
        vals[t.value_index] = a.astype(t.dtype.np, copy=False)
        values[id(t.op)] = tuple(vals)
    for op in g.ops:
        if isinstance(op, ComputeOp):
            values[id(op)] = _eval_compute(op, values)
        elif isinstance(op, ExternOp):
            args = [values[id(t.op)][t.value_index] for t in op.inputs]
            outs = op.fn(args, evaluate)
            values[id(op)] = tuple(np.asarray(o, d.np).reshape(shp)
                                   for o, d, shp in zip(outs, op.out_dtypes, op.out_shapes))
    return [values[id(t.op)][t.value_index] for t in g.outputs]


def abs_error(got, want) -> np.ndarray:
    """``|got - want|`` in float64, where matching NaNs and equal infinities count as 0 and a
    NaN or infinity facing anything else counts as ``inf``: the error every answer check uses.
    Complex values: the modulus of the difference (NaN in either part counts as NaN)."""
    a, b = _as_wide(got), _as_wide(want)
    same = (_nan(a) & _nan(b)) | (a == b)
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    return np.where(np.isnan(diff), np.inf, diff)


def _as_wide(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128) if np.iscomplexobj(x) else x.astype(np.float64)


def _nan(x: np.ndarray) -> np.ndarray:
    return np.isnan(x.real) | np.isnan(x.imag) if np.iscomplexobj(x) else np.isnan(x)


def tolerance_limit(want, rtol: float, atol: float) -> np.ndarray:
    """``atol + rtol * |want|`` per element (non-finite reference values add no relative slack)."""
    b = _as_wide(want)
    return atol + rtol * np.abs(np.where(np.isfinite(b), b, 0.0))
