"""The converters from StableHLO ops to HLO instructions, one per op (``@_op``), registered in
stablehlo_ir's table: attributes read into the formats the HLO parser produces, shape ops,
compute ops, calls and control flow. stablehlo_convert.py walks a module and calls them."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

import numpy as np

from .ast import ArrayShape, TupleShape
from .handlers.chlo import HANDLERS as _CHLO_HANDLERS
from .handlers.collective import REFUSED as _REFUSED_WHY
from .stablehlo_ir import (
    CONVERTERS,
    HLO_NAMES,
    DenseAttr,
    Region,
    converter,
)

__all__ = ["hlo_opcode_table"]


# the op tree and the converter table: stablehlo_ir.py (shared with stablehlo_types.py)
_HANDLERS, _HLO_NAMES, _op = CONVERTERS, HLO_NAMES, converter


def _direct(cv, comp, op):
    """Same operands, result type and no attributes in HLO (elementwise ops, reshape, ...)."""
    return cv.emit(comp, op, _HLO_NAMES[op.name])


_DIRECT_OPS = (
    "abs", "add", "and", "atan2", "bitcast_convert", "cbrt", "ceil", "clamp", "convert", "cosine",
    "count_leading_zeros", "divide", "dynamic_update_slice", "exponential", "exponential_minus_one",
    "floor", "is_finite", "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply",
    "negate", "not", "or", "partition_id", "popcnt", "power", "remainder", "replica_id", "reshape",
    "round_nearest_afz", "round_nearest_even", "rsqrt", "select", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "sqrt", "subtract", "tan",
    "tanh", "tuple", "xor")
for _name in _DIRECT_OPS:
    _op(f"stablehlo.{_name}", hlo=_name.replace("_", "-"))(_direct)
_op("chlo.erf", hlo="erf")(_direct)
_op("chlo.tan", hlo="tan")(_direct)
for _name in ("complex", "real", "imag"):      # complex parts (handlers/types.py)
    _op(f"stablehlo.{_name}", hlo=_name)(_direct)


def _chlo(cv, comp, op):
    """A CHLO op that handlers/chlo.py decomposes as XLA's CHLO legalization does."""
    return cv.emit(comp, op, op.name)


for _name in _CHLO_HANDLERS:
    _op(_name, hlo=f"{_name} (decomposed at lowering)")(_chlo)


def hlo_opcode_table() -> dict[str, str]:
    """StableHLO/chlo/func op name -> the HLO opcode(s) it becomes (for the docs)."""
    table = {**_HLO_NAMES, "func.return": "the ROOT (a tuple of several values)",
             "stablehlo.return": "the ROOT of a region's computation"}
    return dict(sorted(table.items()))


# ----------------------------------------------------------------------------- attributes

#: the most values an integer-list attribute may have (one per dimension, or a pair of them)
_MAX_LIST = 4096


def _ints(cv, op, key: str, default=None, attrs=None) -> tuple[int, ...]:
    """An integer-list attribute (``[1, 2]``, ``array<i64: 1, 2>``, ``dense<...>``, an int) of
    ``op`` (or of ``attrs``, a dimension-numbers dict of it)."""
    v = (op.attrs if attrs is None else attrs).get(key, default)
    if v is None:
        raise cv.error(f"'{op.name}' needs the attribute '{key}'", op.tok)
    if isinstance(v, DenseAttr):
        if v.values().size > _MAX_LIST:
            raise cv.error(f"attribute '{key}' of '{op.name}' has {v.values().size} values", op.tok)
        v = v.values().reshape(-1).tolist()
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    if isinstance(v, (tuple, list)) and all(isinstance(x, (int, np.integer)) for x in v):
        return tuple(int(x) for x in v)
    raise cv.error(f"attribute '{key}' of '{op.name}' must be integers, got {v!r}", op.tok)


def _int(cv, op, key: str, default=None, attrs=None) -> int:
    v = _ints(cv, op, key, default, attrs)
    if len(v) != 1:
        raise cv.error(f"attribute '{key}' of '{op.name}' must be one integer, got {v!r}", op.tok)
    return v[0]


def _pairs(cv, op, key: str, n: int) -> tuple[tuple[int, int], ...]:
    """``[[lo, hi], ...]`` or ``dense<...> : tensor<Nx2xi64>`` -> ((lo, hi), ...); default 0s."""
    v = op.attrs.get(key)
    if v is None:
        return ((0, 0),) * n
    flat = _ints(cv, op, key) if isinstance(v, DenseAttr) or not isinstance(v, (tuple, list)) \
        else tuple(x for p in v for x in (p if isinstance(p, (tuple, list)) else (p,)))
    if len(flat) != 2 * n or not all(isinstance(x, (int, np.integer)) for x in flat):
        raise cv.error(f"attribute '{key}' of '{op.name}' must be {n} (low, high) pairs", op.tok)
    return tuple((int(flat[2 * k]), int(flat[2 * k + 1])) for k in range(n))


def _window(cv, op, size, stride: str, pad: str, lhs: str, rhs: str, rev: str | None):
    """The HLO ``window`` value (see :mod:`.parser`) from StableHLO's separate attributes."""
    n = len(size)
    ones = (1,) * n
    reverse = _ints(cv, op, rev, (0,) * n) if rev else (0,) * n
    res = {"size": tuple(size), "stride": _ints(cv, op, stride, ones), "pad": _pairs(cv, op, pad, n),
           "lhs_dilate": _ints(cv, op, lhs, ones), "rhs_dilate": _ints(cv, op, rhs, ones),
           "window_reversal": tuple(bool(x) for x in reverse)}
    for k, v in res.items():
        if len(v) != n:
            raise cv.error(f"'{op.name}': window {k} has {len(v)} dims, expected {n}", op.tok)
    return MappingProxyType(res)


def _dims_dict(cv, op, key: str) -> dict:
    v = op.attrs.get(key)
    if not isinstance(v, dict):
        raise cv.error(f"'{op.name}' needs the attribute '{key}' (#stablehlo.<...> dimension "
                       "numbers)", op.tok)
    return v


def _precision(op) -> dict:
    prec = op.attrs.get("precision_config")
    return {"operand_precision": tuple(str(p).lower() for p in prec)} \
        if isinstance(prec, (tuple, list)) and prec else {}


# ----------------------------------------------------------------------------- shape ops

@_op("stablehlo.constant", hlo="constant")
def _constant(cv, comp, op):
    value = op.attrs.get("value")
    if not isinstance(value, DenseAttr):
        raise cv.unsupported(op, "only dense<...> literals are supported (not dense_resource or "
                                 "elided data)")
    (out,) = cv.one_result(op)
    if out != value.shape:
        raise cv.error(f"constant literal of type {value.shape} for a result of type {out}", op.tok)
    if value.is_splat:   # kept as a scalar and broadcast, as XLA folds splats
        c = comp.add("constant", ArrayShape(out.element_type, ()), (), None, op.tok,
                     cv.hint(op), value.array)
        return cv.emit(comp, op, "broadcast", {"dimensions": ()}, operands=[c[0]])
    return cv.emit(comp, op, "constant", literal=value.array)


@_op("stablehlo.broadcast_in_dim", hlo="broadcast (after a reshape when it expands size-1 dims)")
def _broadcast_in_dim(cv, comp, op):
    """HLO ``broadcast`` keeps operand dims as they are; StableHLO also expands size-1 dims,
    which are dropped by a ``reshape`` first (as XLA does)."""
    dims = _ints(cv, op, "broadcast_dimensions")
    ((x, shape),), (out,) = cv.operands(comp, op, 1), cv.one_result(op)
    if shape.is_tuple or out.is_tuple or len(dims) != shape.rank or \
            not all(0 <= d < out.rank for d in dims):
        raise cv.error(f"broadcast_in_dim dims {list(dims)} do not fit {shape} -> {out}", op.tok)
    keep = [k for k, d in enumerate(dims) if shape.dims[k] == out.dims[d]]
    if len(keep) < len(dims):
        squeezed = ArrayShape(shape.element_type, tuple(shape.dims[k] for k in keep))
        x = comp.add("reshape", squeezed, [x], None, op.tok, cv.hint(op))[0]
        dims = tuple(dims[k] for k in keep)
    return cv.emit(comp, op, "broadcast", {"dimensions": dims}, operands=[x])


@_op("stablehlo.broadcast", hlo="broadcast")
def _broadcast(cv, comp, op):
    sizes, (out,) = _ints(cv, op, "broadcast_sizes"), cv.one_result(op)
    return cv.emit(comp, op, "broadcast", {"dimensions": tuple(range(len(sizes), out.rank))})


def _per_dim(cv, op, what: str, first: str, second: str, third: str, fill: int) -> tuple:
    """``((a0, b0, c0), ...)`` from three per-dimension lists (the third defaults to ``fill``)."""
    a, b = _ints(cv, op, first), _ints(cv, op, second)
    c = _ints(cv, op, third, (fill,) * len(a))
    if not len(a) == len(b) == len(c):
        raise cv.error(f"{what} lists differ in length", op.tok)
    return tuple(zip(a, b, c))


@_op("stablehlo.slice", hlo="slice")
def _slice(cv, comp, op):
    dims = _per_dim(cv, op, "slice start, limit and stride", "start_indices", "limit_indices", "strides", 1)
    return cv.emit(comp, op, "slice", {"slice": dims})


@_op("stablehlo.pad", hlo="pad")
def _pad(cv, comp, op):
    dims = _per_dim(cv, op, "pad low, high and interior", "edge_padding_low", "edge_padding_high",
                    "interior_padding", 0)
    return cv.emit(comp, op, "pad", {"padding": dims})


#: ops that rename one integer-list attribute: StableHLO name -> (HLO opcode, HLO attribute,
#: StableHLO attribute, whether it is a single integer wrapped into a one-element tuple)
_RENAMED = {
    "stablehlo.transpose": ("transpose", "dimensions", "permutation", False),
    "stablehlo.reverse": ("reverse", "dimensions", "dimensions", False),
    "stablehlo.concatenate": ("concatenate", "dimensions", "dimension", True),
    "stablehlo.dynamic_slice": ("dynamic-slice", "dynamic_slice_sizes", "slice_sizes", False),
    "stablehlo.get_dimension_size": ("get-dimension-size", "dimensions", "dimension", True),
}


def _renamed(cv, comp, op):
    hlo, key, attr, single = _RENAMED[op.name]
    return cv.emit(comp, op, hlo, {key: (_int(cv, op, attr),) if single else _ints(cv, op, attr)})


for _name, (_hlo, *_) in _RENAMED.items():
    _op(_name, hlo=_hlo)(_renamed)


@_op("stablehlo.iota", hlo="iota")
def _iota(cv, comp, op):
    return cv.emit(comp, op, "iota", {"iota_dimension": _int(cv, op, "iota_dimension")})


@_op("stablehlo.get_tuple_element", hlo="get-tuple-element")
def _get_tuple_element(cv, comp, op):
    return cv.emit(comp, op, "get-tuple-element", {"index": _int(cv, op, "index")})


@_op("stablehlo.reduce_precision", hlo="reduce-precision")
def _reduce_precision(cv, comp, op):
    fmt = op.attrs.get("format")
    m = re.fullmatch(r"e(\d+)m(\d+)", fmt) if isinstance(fmt, str) else None
    bits = (int(m[1]), int(m[2])) if m else \
        (_int(cv, op, "exponent_bits"), _int(cv, op, "mantissa_bits"))
    return cv.emit(comp, op, "reduce-precision", {"exponent_bits": bits[0], "mantissa_bits": bits[1]})


@_op("stablehlo.optimization_barrier", hlo="optimization-barrier")
def _optimization_barrier(cv, comp, op):
    if len(op.operands) == 1:
        return cv.emit(comp, op, "optimization-barrier")
    tup = cv.tuple_of(comp, op, cv.operands(comp, op))
    return cv.emit(comp, op, "optimization-barrier", operands=[tup[0]], variadic=True)


@_op("chlo.square", hlo="multiply (x, x)")
def _square(cv, comp, op):
    (x,) = cv.operands(comp, op, 1)
    return cv.emit(comp, op, "multiply", operands=[x[0], x[0]])


# ----------------------------------------------------------------------------- compute ops

@_op("stablehlo.compare", hlo="compare")
def _compare(cv, comp, op):
    if not isinstance(op.attrs.get("comparison_direction"), str):
        raise cv.error("stablehlo.compare needs a comparison direction (EQ, LT, ...)", op.tok)
    attrs = {"direction": op.attrs["comparison_direction"]}
    if op.attrs.get("compare_type") is not None:
        attrs["type"] = str(op.attrs["compare_type"])
    return cv.emit(comp, op, "compare", attrs)


@_op("stablehlo.dot_general", hlo="dot")
def _dot_general(cv, comp, op):
    dn = _dims_dict(cv, op, "dot_dimension_numbers")
    keys = {"lhs_batch_dims": "lhs_batching_dimensions", "rhs_batch_dims": "rhs_batching_dimensions",
            "lhs_contracting_dims": "lhs_contracting_dimensions",
            "rhs_contracting_dims": "rhs_contracting_dimensions"}
    attrs = {k: _ints(cv, op, v, (), dn) for k, v in keys.items()}
    return cv.emit(comp, op, "dot", {**attrs, **_precision(op)})


@_op("stablehlo.dot", hlo="dot")
def _dot(cv, comp, op):
    (_, lhs), _ = cv.operands(comp, op, 2)
    return cv.emit(comp, op, "dot", {"lhs_contracting_dims": (lhs.rank - 1,),
                                     "rhs_contracting_dims": (0,), **_precision(op)})


def _conv_labels(cv, op, dn) -> str:
    """HLO ``dim_labels`` (``b01f_01io->b01f``) from ``#stablehlo.conv<raw ...>`` fields."""
    def side(batch, feature, spatial, letters):
        out = [""] * (2 + len(spatial))
        out[dn[batch]], out[dn[feature]] = letters
        for k, d in enumerate(dn[spatial]):
            out[d] = str(k)
        return "".join(out)
    try:
        return (side("input_batch_dimension", "input_feature_dimension",
                     "input_spatial_dimensions", "bf") + "_" +
                side("kernel_input_feature_dimension", "kernel_output_feature_dimension",
                     "kernel_spatial_dimensions", "io") + "->" +
                side("output_batch_dimension", "output_feature_dimension",
                     "output_spatial_dimensions", "bf"))
    except (KeyError, IndexError, TypeError):
        raise cv.error("malformed convolution dimension numbers", op.tok) from None


@_op("stablehlo.convolution", hlo="convolution")
def _convolution(cv, comp, op):
    labels = op.attrs.get("dimension_numbers")
    if isinstance(labels, dict):
        labels = _conv_labels(cv, op, labels)
    m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", labels) if isinstance(labels, str) else None
    if m is None:
        raise cv.error("convolution needs dim_numbers such as [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                       op.tok)
    _, (_, rhs) = cv.operands(comp, op, 2)
    n = len(m[1]) - 2
    try:
        size = tuple(rhs.dims[m[2].index(str(s))] for s in range(n))
    except (ValueError, IndexError, AttributeError):
        raise cv.error(f"convolution dim_numbers {labels!r} do not fit the kernel", op.tok) from None
    attrs = {"dim_labels": labels,
             "window": _window(cv, op, size, "window_strides", "padding", "lhs_dilation",
                               "rhs_dilation", "window_reversal"),
             "feature_group_count": _int(cv, op, "feature_group_count", 1),
             "batch_group_count": _int(cv, op, "batch_group_count", 1), **_precision(op)}
    return cv.emit(comp, op, "convolution", attrs)


@_op("stablehlo.gather", hlo="gather")
def _gather(cv, comp, op):
    dn = _dims_dict(cv, op, "dimension_numbers")
    keys = ("offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
            "start_indices_batching_dims")
    attrs = {k: _ints(cv, op, k, (), dn) for k in keys}
    attrs["index_vector_dim"] = _int(cv, op, "index_vector_dim", 0, dn)
    attrs["slice_sizes"] = _ints(cv, op, "slice_sizes")
    attrs["indices_are_sorted"] = bool(op.attrs.get("indices_are_sorted", False))
    return cv.emit(comp, op, "gather", attrs)


@_op("stablehlo.scatter", hlo="scatter")
def _scatter(cv, comp, op):
    dn = _dims_dict(cv, op, "scatter_dimension_numbers")
    keys = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
            "input_batching_dims", "scatter_indices_batching_dims")
    attrs = {k: _ints(cv, op, k, (), dn) for k in keys}
    attrs["index_vector_dim"] = _int(cv, op, "index_vector_dim", 0, dn)
    attrs["to_apply"] = cv.scalar_region(comp, op)
    return cv.emit(comp, op, "scatter", attrs, variadic=True)


@_op("stablehlo.reduce", hlo="reduce")
def _reduce(cv, comp, op):
    attrs = {"dimensions": _ints(cv, op, "dimensions"), "to_apply": cv.scalar_region(comp, op)}
    return cv.emit(comp, op, "reduce", attrs, variadic=True)


@_op("stablehlo.reduce_window", hlo="reduce-window")
def _reduce_window(cv, comp, op):
    size = _ints(cv, op, "window_dimensions")
    attrs = {"window": _window(cv, op, size, "window_strides", "padding", "base_dilations",
                               "window_dilations", None),
             "to_apply": cv.scalar_region(comp, op)}
    return cv.emit(comp, op, "reduce-window", attrs, variadic=True)


@_op("stablehlo.sort", hlo="sort")
def _sort(cv, comp, op):
    attrs = {"dimensions": (_int(cv, op, "dimension", -1),),
             "is_stable": bool(op.attrs.get("is_stable", False)), "to_apply": cv.scalar_region(comp, op)}
    return cv.emit(comp, op, "sort", attrs, variadic=True)


@_op("stablehlo.map", hlo="map")
def _map(cv, comp, op):
    attrs = {"dimensions": _ints(cv, op, "dimensions"), "to_apply": cv.scalar_region(comp, op)}
    return cv.emit(comp, op, "map", attrs)


# ----------------------------------------------------------------------------- calls, control flow

@_op("func.call", hlo="call")
def _call(cv, comp, op):
    return cv.emit(comp, op, "call", {"to_apply": cv.callee(op, op.attrs.get("callee"))}, variadic=True)


@_op("stablehlo.composite", hlo="call")
def _composite(cv, comp, op):
    return cv.emit(comp, op, "call", {"to_apply": cv.callee(op, op.attrs.get("decomposition"))},
                   variadic=True)


@_op("stablehlo.custom_call", hlo="custom-call")
def _custom_call(cv, comp, op):
    attrs = {"custom_call_target": str(op.attrs.get("call_target_name", ""))}
    config = op.attrs.get("mhlo.backend_config", op.attrs.get("backend_config"))
    if config:
        attrs["backend_config"] = config
    return cv.emit(comp, op, "custom-call", attrs, variadic=True)


@_op("sdy.sharding_constraint", hlo="custom-call (Sharding: the identity on one device)")
def _sharding_constraint(cv, comp, op):
    return cv.emit(comp, op, "custom-call", {"custom_call_target": "Sharding"})


@_op("chlo.top_k", hlo="custom-call (TopK)")
def _top_k(cv, comp, op):
    if len(op.result_types) != 2:
        raise cv.error("chlo.top_k has two results (values, indices)", op.tok)
    return cv.emit(comp, op, "custom-call", {"custom_call_target": "TopK", "k": _int(cv, op, "k")},
                   variadic=True)


def _batch_norm(cv, comp, op):
    """batch_norm_training/inference/grad with HLO's ``epsilon`` and ``feature_index``."""
    eps = op.attrs.get("epsilon", 0.0)
    if not isinstance(eps, (int, float)):
        raise cv.error(f"'{op.name}' needs a numeric epsilon, got {eps!r}", op.tok)
    attrs = {"epsilon": float(eps), "feature_index": _int(cv, op, "feature_index")}
    return cv.emit(comp, op, op.name.split(".")[-1].replace("_", "-"), attrs, variadic=True)


for _name in ("batch_norm_training", "batch_norm_inference", "batch_norm_grad"):
    _op(f"stablehlo.{_name}", hlo=_name.replace("_", "-"))(_batch_norm)


@_op("stablehlo.cholesky", hlo="cholesky")
def _cholesky(cv, comp, op):
    return cv.emit(comp, op, "cholesky", {"lower": bool(op.attrs.get("lower", False))})


@_op("stablehlo.triangular_solve", hlo="triangular-solve")
def _triangular_solve(cv, comp, op):
    attrs = {k: bool(op.attrs.get(k, False)) for k in ("left_side", "lower", "unit_diagonal")}
    attrs["transpose_a"] = str(op.attrs.get("transpose_a", "NO_TRANSPOSE"))
    return cv.emit(comp, op, "triangular-solve", attrs)


@_op("stablehlo.select_and_scatter", hlo="select-and-scatter")
def _select_and_scatter(cv, comp, op):
    if len(op.regions) != 2:
        raise cv.error("stablehlo.select_and_scatter needs a select and a scatter region", op.tok)
    (_, x), _, _ = cv.operands(comp, op, 3)
    size = _ints(cv, op, "window_dimensions", (1,) * x.rank)
    window = _window(cv, op, size, "window_strides", "padding", "lhs_dilation", "rhs_dilation", None)
    attrs = {"window": window, "select": cv.scalar_region(comp, op, 0),
             "scatter": cv.scalar_region(comp, op, 1)}
    return cv.emit(comp, op, "select-and-scatter", attrs)


@_op("stablehlo.fft", hlo="fft")
def _fft(cv, comp, op):
    kind = op.attrs.get("fft_type", op.attrs.get("type", "FFT"))
    length = _ints(cv, op, "fft_length", None) if "fft_length" in op.attrs else _ints(cv, op, "length")
    return cv.emit(comp, op, "fft", {"fft_type": str(kind), "fft_length": length})


@_op("chlo.ragged_dot", hlo="ragged-dot")
def _ragged_dot(cv, comp, op):
    dn = _dims_dict(cv, op, "ragged_dot_dimension_numbers")
    keys = {"lhs_batch_dims": "lhs_batching_dimensions", "rhs_batch_dims": "rhs_batching_dimensions",
            "lhs_contracting_dims": "lhs_contracting_dimensions",
            "rhs_contracting_dims": "rhs_contracting_dimensions",
            "lhs_ragged_dims": "lhs_ragged_dimensions", "rhs_group_dims": "rhs_group_dimensions"}
    return cv.emit(comp, op, "ragged-dot", {k: _ints(cv, op, v, (), dn) for k, v in keys.items()})


@_op("chlo.scan", hlo="chlo.scan")
def _scan(cv, comp, op):
    if len(op.regions) != 1:
        raise cv.error("chlo.scan needs one body region", op.tok)
    free = _free_values(op.regions)
    if free:
        raise cv.unsupported(op, f"its body uses %{free[0][0]}, defined outside it")
    attrs = {"num_inputs": _int(cv, op, "num_inputs", 0), "dimension": _int(cv, op, "dimension"),
             "is_reverse": bool(op.attrs.get("is_reverse", False)),
             "to_apply": cv.region(op.regions[0], cv.comp_name(comp, op))}
    return cv.emit(comp, op, "chlo.scan", attrs, variadic=True)


def _to_shape(cv, comp, op, value, out: ArrayShape, dims=None):
    """``value`` broadcast numpy-style (or along ``dims``) to ``out``'s dims, keeping its type."""
    name, shape = value
    if shape.dims == out.dims:
        return name
    dims = tuple(range(out.rank - shape.rank, out.rank)) if dims is None else tuple(dims)
    if len(dims) != shape.rank or any(shape.dims[k] not in (1, out.dims[d]) for k, d in enumerate(dims)):
        raise cv.error(f"cannot broadcast {shape} to {out.dims} along {list(dims)}", op.tok)
    keep = [k for k, d in enumerate(dims) if shape.dims[k] == out.dims[d]]
    if len(keep) < shape.rank:
        name = comp.add("reshape", ArrayShape(shape.element_type, tuple(shape.dims[k] for k in keep)),
                        [name], None, op.tok, cv.hint(op))[0]
    full = ArrayShape(shape.element_type, out.dims)
    return comp.add("broadcast", full, [name], {"dimensions": tuple(dims[k] for k in keep)}, op.tok,
                    cv.hint(op))[0]


_CHLO_BROADCAST = {f"broadcast_{n}": n.replace("_", "-") for n in (
    "add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical", "subtract", "xor")}
_CHLO_BROADCAST.update({"broadcast_next_after": "chlo.next_after", "broadcast_polygamma": "chlo.polygamma",
                        "broadcast_zeta": "chlo.zeta", "broadcast_compare": "compare",
                        "broadcast_select": "select"})


def _chlo_broadcast(cv, comp, op):
    """A CHLO broadcasting op: its operands broadcast to the result's dims (numpy style, or
    ``broadcast_dimensions`` for the first of two of different ranks), then the plain op."""
    (out,) = cv.one_result(op)
    ins = cv.operands(comp, op)
    dims = op.attrs.get("broadcast_dimensions")
    names = []
    for k, v in enumerate(ins):
        d = _ints(cv, op, "broadcast_dimensions") if dims is not None and v[1].rank < out.rank and \
            len(ins) == 2 else None
        names.append(_to_shape(cv, comp, op, v, ArrayShape(v[1].element_type, out.dims), d))
    attrs = None
    if op.name == "chlo.broadcast_compare":
        attrs = {"direction": str(op.attrs.get("comparison_direction"))}
        if op.attrs.get("compare_type") is not None:
            attrs["type"] = str(op.attrs["compare_type"])
    return cv.emit(comp, op, _CHLO_BROADCAST[op.name.split(".")[-1]], attrs, operands=names)


for _name, _hlo in _CHLO_BROADCAST.items():
    _op(f"chlo.{_name}", hlo=f"{_hlo} (after broadcasting the operands)")(_chlo_broadcast)


@_op("chlo.conj", hlo="copy (a real type), or complex(real, -imag)")
def _conj(cv, comp, op):
    ((x, shape),) = cv.operands(comp, op, 1)
    if not shape.element_type.startswith("c"):
        return cv.emit(comp, op, "copy")
    part = ArrayShape({"c64": "f32", "c128": "f64"}[shape.element_type], shape.dims)
    re = comp.add("real", part, [x], None, op.tok, cv.hint(op))[0]
    im = comp.add("imag", part, [x], None, op.tok, cv.hint(op))[0]
    neg = comp.add("negate", part, [im], None, op.tok, cv.hint(op))[0]
    return cv.emit(comp, op, "complex", operands=[re, neg])


@_op("chlo.constant", hlo="constant")
def _chlo_constant(cv, comp, op):
    return _constant(cv, comp, op)


@_op("chlo.constant_like", hlo="broadcast (of a scalar constant)")
def _constant_like(cv, comp, op):
    value = op.attrs.get("value")
    (out,) = cv.one_result(op)
    if isinstance(value, DenseAttr):
        value = value.values().reshape(-1)[0]
    if not isinstance(value, (int, float, bool, np.generic)):
        raise cv.error("chlo.constant_like needs a scalar 'value'", op.tok)
    c = comp.add("constant", ArrayShape(out.element_type, ()), (), None, op.tok, cv.hint(op),
                 np.asarray(value))
    return cv.emit(comp, op, "broadcast", {"dimensions": ()}, operands=[c[0]])


@_op("stablehlo.rng_bit_generator", hlo="rng-bit-generator")
def _rng_bit_generator(cv, comp, op):
    alg = op.attrs.get("rng_algorithm", op.attrs.get("algorithm", "DEFAULT"))
    return cv.emit(comp, op, "rng-bit-generator", {"algorithm": f"rng_{str(alg).lower()}"},
                   variadic=True)


@_op("stablehlo.rng", hlo="rng (the shape operand dropped)")
def _rng(cv, comp, op):
    a, b, _shape = cv.operands(comp, op, 3)
    dist = op.attrs.get("rng_distribution", op.attrs.get("distribution", "UNIFORM"))
    return cv.emit(comp, op, "rng", {"distribution": f"rng_{str(dist).lower()}"},
                   operands=[a[0], b[0]])


def _groups(v):
    """Replica groups / source-target pairs (a dense 2-d attribute) as nested tuples."""
    if isinstance(v, DenseAttr):
        return tuple(tuple(int(x) for x in row) for row in np.atleast_2d(v.values()))
    return v


def _collective(cv, comp, op):
    """A collective, its attributes in HLO's names (one device: see handlers/collective.py)."""
    attrs = {k: _groups(op.attrs[k]) for k in ("replica_groups", "source_target_pairs")
             if k in op.attrs}
    for key in ("all_gather_dim", "scatter_dimension", "split_dimension"):
        if key in op.attrs:
            attrs["dimensions"] = (_int(cv, op, key),)
    if op.regions:
        attrs["to_apply"] = cv.scalar_region(comp, op)
    opcode = op.name.split(".")[-1].replace("_", "-")
    return cv.emit(comp, op, opcode, attrs, variadic=True)


for _name in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "collective_broadcast",
              "collective_permute"):
    _op(f"stablehlo.{_name}", hlo=_name.replace("_", "-"))(_collective)


@_op("stablehlo.after_all", "stablehlo.create_token", hlo="after-all")
def _after_all(cv, comp, op):
    return cv.emit(comp, op, "after-all")


def _refused(cv, comp, op):
    """Ops that need another device: refused with the reason."""
    raise cv.unsupported(op, _REFUSED_WHY[op.name.split(".")[-1]])


for _name in ("send", "recv"):
    _op(f"stablehlo.{_name}", hlo=f"{_name} (refused with the reason)")(_refused)


@_op("stablehlo.infeed", hlo="infeed")
def _infeed(cv, comp, op):
    """``infeed(token) -> (data..., token)``: HLO's ``infeed`` gives ``((data...), token)``."""
    (token,) = cv.operands(comp, op, 1)
    types = op.result_types
    if not token[1].is_token or not types or not types[-1].is_token or \
            not all(isinstance(t, ArrayShape) and not t.is_token for t in types[:-1]):
        raise cv.error("stablehlo.infeed takes a token and returns tensors and a token", op.tok)
    data = TupleShape(tuple(types[:-1]))
    feed = comp.add("infeed", TupleShape((data, types[-1])), [token[0]], None, op.tok, cv.hint(op))
    d = comp.add("get-tuple-element", data, [feed[0]], {"index": 0}, op.tok, f"{cv.hint(op)}.data")
    return cv.unpack(comp, op, d, len(types) - 1) + \
        [comp.add("get-tuple-element", types[-1], [feed[0]], {"index": 1}, op.tok, f"{cv.hint(op)}.token")]


@_op("stablehlo.outfeed", hlo="outfeed")
def _outfeed(cv, comp, op):
    """``outfeed(data..., token) -> token``: HLO's ``outfeed`` takes the data as one tuple."""
    ins = cv.operands(comp, op)
    if not ins or not ins[-1][1].is_token or len(op.result_types) != 1 or not op.result_types[0].is_token \
            or any(s.is_token for _, s in ins[:-1]):
        raise cv.error("stablehlo.outfeed takes tensors and a token and returns a token", op.tok)
    data = cv.tuple_of(comp, op, ins[:-1])
    return cv.emit(comp, op, "outfeed", operands=[data[0], ins[-1][0]])


@_op("stablehlo.while", hlo="while")
def _while(cv, comp, op):
    if len(op.regions) != 2:
        raise cv.error("stablehlo.while needs a cond and a body region", op.tok)
    ins = cv.operands(comp, op)
    if any(len(r.args) != len(ins) for r in op.regions):
        raise cv.error("stablehlo.while regions must take one argument per operand", op.tok)
    caps = cv.captures(comp, op)
    shapes = tuple(s for _, s in ins + [v for _, v in caps])
    state = cv.tuple_of(comp, op, ins + [v for _, v in caps])
    base = cv.comp_name(comp, op)
    cond = cv.region(op.regions[0], f"{base}.cond", packed=caps)
    body = cv.region(op.regions[1], f"{base}.body", packed=caps, passthrough=True)
    loop = comp.add("while", TupleShape(shapes), [state[0]], {"condition": cond, "body": body},
                    op.tok, cv.hint(op))
    return cv.unpack(comp, op, loop, len(ins))


@_op("stablehlo.case", "stablehlo.if", hlo="conditional")
def _conditional(cv, comp, op):
    index = cv.operands(comp, op, 1)[0]
    if any(r.args for r in op.regions):
        raise cv.error(f"'{op.name}' regions take no arguments", op.tok)
    caps = cv.captures(comp, op)
    arg = cv.tuple_of(comp, op, [v for _, v in caps])
    base = cv.comp_name(comp, op)
    branches = tuple(cv.region(r, f"{base}.branch{k}", packed=caps) for k, r in enumerate(op.regions))
    if not branches:
        raise cv.error(f"'{op.name}' needs at least one region", op.tok)
    return cv.emit(comp, op, "conditional", {"branch_computations": branches},
                   operands=[index[0]] + [arg[0]] * len(branches), variadic=True)


def _free_values(regions: list[Region]) -> list[tuple[str, Any]]:
    """Values the regions use but do not define (implicit captures), in order of first use."""
    out: dict[str, Any] = {}

    def walk(region: Region, bound: set[str]) -> None:
        local = bound | {a[0] for a in region.args}
        for op in region.ops:
            for name, tok in op.operands:
                if name not in local:
                    out.setdefault(name, tok)
            for r in op.regions:
                walk(r, local)
            local |= {n for n, _ in op.results} | set(op.aliases)
    for r in regions:
        walk(r, set())
    return list(out.items())
