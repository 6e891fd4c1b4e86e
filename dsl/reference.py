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

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .dtypes import DType
from .errors import DSLError
from .expr import Expr
from .ops import Op
from .tensor import ComputeOp, ExternOp, Graph, Tensor

#: Elements evaluated at once per compute chunk (index box x reduce box).
CHUNK_ELEMENTS = 1 << 22

_UNARY = {
    Op.EXP: np.exp, Op.EXPM1: np.expm1, Op.LOG: np.log, Op.LOG1P: np.log1p, Op.SQRT: np.sqrt,
    Op.CBRT: np.cbrt, Op.TANH: np.tanh, Op.SIN: np.sin, Op.COS: np.cos, Op.TAN: np.tan,
    Op.FLOOR: np.floor, Op.CEIL: np.ceil, Op.ROUND: np.rint, Op.ABS: np.abs, Op.SIGN: np.sign,
    Op.ISFINITE: np.isfinite,
}
_BINARY = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.MAX: np.maximum,
    Op.MIN: np.minimum, Op.ATAN2: np.arctan2, Op.AND: np.bitwise_and, Op.OR: np.bitwise_or,
    Op.XOR: np.bitwise_xor, Op.LT: np.less, Op.LE: np.less_equal, Op.GT: np.greater,
    Op.GE: np.greater_equal, Op.EQ: np.equal, Op.NE: np.not_equal,
}


def _erf(x):
    from scipy.special import erf
    return erf(x)


def _rsqrt(x):
    return np.asarray(1, x.dtype) / np.sqrt(x)


def _int_div(a, b, d: DType):
    """C/XLA integer division: truncate; x/0 = -1 (all ones); INT_MIN/-1 = INT_MIN."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(a.dtype)
    if d.kind == "i":
        overflow = (a == np.iinfo(a.dtype).min) & (bs == -1)
        bs = np.where(overflow, 1, bs).astype(a.dtype)
        q = a // bs                                   # floor; step toward zero when inexact
        inexact = (a - q * bs) != 0
        q = np.where(inexact & ((a < 0) != (bs < 0)), q + 1, q).astype(a.dtype)
    else:
        q = a // bs
    return np.where(zero, np.array(-1).astype(a.dtype), q).astype(a.dtype)


def _int_rem(a, b, d: DType):
    """C/XLA remainder: sign of the dividend; x % 0 = x; INT_MIN % -1 = 0."""
    zero = b == 0
    bs = np.where(zero, 1, b).astype(a.dtype)
    if d.kind == "i":
        bs = np.where((a == np.iinfo(a.dtype).min) & (bs == -1), 1, bs).astype(a.dtype)
        r = np.fmod(a, bs)
    else:
        r = a % bs
    return np.where(zero, a, r).astype(a.dtype)


def _shift(op: Op, a, b, d: DType):
    bits = d.bits
    if d.is_sub_byte:   # on the low ``bits`` bits, as int64
        u, amt = a.astype(np.int64) & ((1 << bits) - 1), b.astype(np.int64)
        big = (amt < 0) | (amt >= bits)
        s = np.where(big, 0, amt)
        if op is Op.SHRA:
            v = _wrap(a, d)
            return np.where(big, np.where(v < 0, -1, 0), v >> s)
        return np.where(big, 0, u << s if op is Op.SHL else u >> s)
    ua = a.view(np.dtype(f"uint{bits}")) if d.kind == "i" else a
    amt = b.astype(np.int64)
    big = (amt < 0) | (amt >= bits)
    s = np.where(big, 0, amt).astype(ua.dtype)
    if op is Op.SHL:
        r = np.left_shift(ua, s)
        return np.where(big, 0, r).astype(ua.dtype).view(a.dtype)
    if op is Op.SHRL:
        r = np.right_shift(ua, s)
        return np.where(big, 0, r).astype(ua.dtype).view(a.dtype)
    if d.kind == "u":
        return np.where(big, 0, np.right_shift(a, s)).astype(a.dtype)
    r = np.right_shift(a, s.astype(a.dtype))
    return np.where(big, np.where(a < 0, -1, 0), r).astype(a.dtype)


def _int_pow(a, b):
    out = np.ones(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    base = np.broadcast_to(a, out.shape).copy()
    e = np.broadcast_to(b, out.shape).astype(np.int64).copy()
    neg = e < 0
    e = np.where(neg, 0, e)
    while np.any(e > 0):
        odd = (e & 1) == 1
        out = np.where(odd, out * base, out)
        base = base * base
        e >>= 1
    negres = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, negres, out).astype(a.dtype)


def _widen(x: np.ndarray) -> np.ndarray:
    """``x`` in a numpy type holding its values exactly: floats under 32 bits as float32,
    sub-byte integers as int8/uint8 (ml_dtypes' own arithmetic does not wrap at their width)."""
    d = dt.dtype(x.dtype)
    if d.is_narrow_float:
        return x.astype(np.float32)
    if d.is_sub_byte:
        return x.astype(np.int8 if d.kind == "i" else np.uint8)
    return x


def _wrap(x: np.ndarray, d: DType) -> np.ndarray:
    """Integers reduced modulo ``2**d.bits`` into ``d``'s range (two's complement)."""
    u = np.asarray(x).astype(np.int64) & ((1 << d.bits) - 1)
    if d.kind == "i":
        u = u - ((u >> (d.bits - 1)) << d.bits)
    return u


def _to_dtype(r, d: DType) -> np.ndarray:
    """A result computed in a wide type, as ``d`` (sub-byte integers wrap at their width)."""
    r = np.asarray(r)
    if d.is_sub_byte:
        return _wrap(r, d).astype(d.np)
    if d.np.name in ("float64", "float32") or not d.is_float or d.bits >= 16 or r.dtype.kind != "i":
        return r.astype(d.np)
    return r.astype(np.float64).astype(d.np)    # ints -> float8: through float64 (one rounding)


def _cast(x, d: DType):
    """XLA's convert: float -> int truncates, saturates, NaN -> 0; int -> int wraps; a complex
    converts to a real type through its real part; every float conversion rounds once."""
    src = dt.dtype(x.dtype)
    if src.is_complex:
        if d.is_complex:
            return x.astype(d.np)
        x, src = x.real, src.component
    x = _widen(x)
    if d.is_complex:
        return x.astype(np.float64 if d is dt.complex128 else np.float32).astype(d.np)
    if d.is_bool:
        return x != 0
    if d.is_int and src.is_float:
        info = ml_dtypes.iinfo(d.np)
        f = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0, posinf=info.max, neginf=info.min)
        f = np.clip(f, info.min, info.max)
        if d.is_sub_byte:
            return f.astype(np.int64).astype(d.np)
        out = f.astype(d.np)
        if d.bits == 64:  # float64 cannot hold the 64-bit maxima exactly: saturate explicitly
            top = 2.0**63 if d.kind == "i" else 2.0**64
            out = np.where(f >= top, info.max, out).astype(d.np)
        return out
    if d.is_sub_byte:
        return _wrap(x, d).astype(d.np)
    return _to_dtype(x, d)


def _bitcast(x: np.ndarray, d: DType) -> np.ndarray:
    """The bits of ``x`` as ``d`` (same width; a type under 8 bits is the low bits of a byte)."""
    src = dt.dtype(x.dtype)
    x = np.require(x, requirements="C")
    if src.bits >= 8 and d.bits >= 8:
        return x.view(d.np).reshape(x.shape)
    code = x.view(np.uint8).reshape(x.shape) & np.uint8((1 << src.bits) - 1)
    if d.is_int:
        return _wrap(code, d).astype(d.np)
    return code.view(d.np)


def _clz(a, d: DType):
    if d.is_sub_byte:
        u = a.astype(np.int64) & ((1 << d.bits) - 1)
        n = np.full(u.shape, d.bits, np.int64)
        for bit in range(d.bits):
            n = np.where((u >> bit) & 1 == 1, d.bits - 1 - bit, n)
        return n
    u = a.view(np.dtype(f"uint{d.bits}")) if d.kind == "i" else a
    n = np.zeros(u.shape, np.int64)
    found = np.zeros(u.shape, bool)
    for bit in range(d.bits - 1, -1, -1):
        set_ = ((u >> np.asarray(bit, u.dtype)) & np.asarray(1, u.dtype)) == 1
        found |= set_
        n += ~found
    return n.astype(a.dtype)


def eval_op(op: Op, dtype: DType, args: Sequence[np.ndarray]):
    """Apply one elementwise op to numpy arrays; ``dtype`` is the result dtype.

    Floats under 32 bits compute in float32 and round once to the result type (as XLA:CPU
    does); sub-byte integers compute in 8 bits and wrap at their width; complex operands go
    through the op's formula (dsl/complexmath.py).
    """
    with np.errstate(all="ignore"):
        args = [np.asarray(a) for a in args]
        if op is Op.CAST:
            return _cast(args[0], dtype)
        if op is Op.BITCAST:
            return _bitcast(args[0], dtype)
        if op in (Op.COMPLEX, Op.REAL, Op.IMAG):
            return _parts(op, dtype, args)
        if op is Op.SELECT:
            return _to_dtype(np.where(args[0], _widen(args[1]), _widen(args[2])), dtype)
        operand_dt = dt.dtype(args[-1].dtype)
        if operand_dt.is_complex:
            return _complex(op, dtype, operand_dt, args)
        args = [_widen(a) for a in args]
        r = _eval_math(op, operand_dt if operand_dt.is_sub_byte else dt.dtype(args[-1].dtype), args)
        return _to_dtype(r, dtype)


def _parts(op: Op, dtype: DType, args):
    """complex(re, im), real(z), imag(z) (of a real value: itself and zeros)."""
    if op is Op.COMPLEX:
        re, im = np.broadcast_arrays(*args)
        out = np.empty(re.shape, dtype.np)
        out.real, out.imag = re, im
        return out
    x = args[0]
    if not np.iscomplexobj(x):
        return x.astype(dtype.np) if op is Op.REAL else np.zeros(x.shape, dtype.np)
    return (x.real if op is Op.REAL else x.imag).astype(dtype.np)


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


def _eval_math(op: Op, d: DType, args):
    if op in _UNARY:
        return _UNARY[op](args[0])
    if op is Op.ERF:
        return _erf(args[0])
    if op is Op.RSQRT:
        return _rsqrt(args[0])
    if op is Op.NEG:
        return np.negative(args[0]) if not d.is_bool else args[0]
    if op is Op.NOT:
        return np.logical_not(args[0]) if d.is_bool else np.invert(args[0])
    if op is Op.POPCNT:
        if d.is_sub_byte:
            return np.bitwise_count(args[0].astype(np.int64) & ((1 << d.bits) - 1))
        u = args[0].view(np.dtype(f"uint{d.bits}")) if d.kind == "i" else args[0]
        return np.bitwise_count(u)
    if op is Op.CLZ:
        return _clz(args[0], d)
    a, b = args
    if op in _BINARY:
        return _BINARY[op](a, b)
    if op is Op.DIV:
        return np.true_divide(a, b).astype(a.dtype) if d.is_float else _int_div(a, b, d)
    if op is Op.REM:
        return np.fmod(a, b) if d.is_float else _int_rem(a, b, d)
    if op is Op.FLOORDIV:  # integer x // 0 = -1 (all ones), as x / 0
        if d.is_int:
            return np.where(b == 0, np.array(-1).astype(a.dtype), np.floor_divide(a, np.where(b == 0, 1, b)))
        return np.floor_divide(a, b)
    if op is Op.FLOORMOD:  # integer mod(x, 0) = x, as x % 0
        return np.where(b == 0, a, np.mod(a, np.where(b == 0, 1, b))) if d.is_int else np.mod(a, b)
    if op is Op.POW:
        return np.power(a, b) if d.is_float else _int_pow(a, b)
    if op in (Op.SHL, Op.SHRA, Op.SHRL):
        return _shift(op, a, b, d)
    raise DSLError(f"reference: no rule for op {op.name}")


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
