"""StableHLO types that HLO has no element type for, converted as XLA's StableHLO passes do.

* Quantized tensors (``tensor<4x!quant.uniform<i8:f32, 0.5:-20>>``, per-tensor or per-axis)
  are their storage integers in HLO (:class:`QuantShape` remembers the scales and zero points).
  ``uniform_quantize``/``uniform_dequantize`` become integer and float arithmetic, and every other
  op on quantized operands is ``dequantize_op_quantize`` (the StableHLO specification): its
  operands are dequantized, the op runs on floats and a quantized result is quantized again.
* Dynamic ops whose size operands are constants (``dynamic_iota``, ``dynamic_reshape``,
  ``dynamic_broadcast_in_dim``, ``dynamic_pad``, ``dynamic_gather``, ``dynamic_conv``) become their
  static ops, as XLA's shape refinement makes them; a size known only at run time is refused.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

from .ast import ArrayShape
from .stablehlo_ir import CONVERTERS as _HANDLERS
from .stablehlo_ir import MlirOp
from .stablehlo_ir import converter as _op

__all__ = ["QuantShape", "QuantType", "convert_quantized", "involves_quantized", "parse_quant"]


# ----------------------------------------------------------------------------- quantized types

@dataclass(frozen=True)
class QuantType:
    """``!quant.uniform<storage<min:max>:expressed[:axis], scales:zero_points>``."""

    storage: str                 # HLO element type of the stored integers
    expressed: str               # HLO element type of the values they stand for
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None             # None: one scale for the whole tensor
    storage_min: int
    storage_max: int


@dataclass(frozen=True)
class QuantShape(ArrayShape):
    """A quantized tensor type: the array of its storage integers, and how to read them."""

    quant: QuantType | None = field(default=None, compare=False)

    def __eq__(self, other) -> bool:     # in HLO it is its storage array: equal to that
        return isinstance(other, ArrayShape) and not other.is_tuple and \
            (self.element_type, self.dims, self.layout) == (other.element_type, other.dims, other.layout)

    def __hash__(self) -> int:
        return hash((self.element_type, self.dims, self.layout))

    def __str__(self) -> str:
        return super().__str__() + "!quant"


_QUANT_RE = re.compile(
    r"<\s*(?P<st>[a-z]+\d+)\s*(?:<\s*(?P<lo>-?\d+)\s*:\s*(?P<hi>-?\d+)\s*>)?\s*:\s*(?P<ex>\w+)"
    r"\s*(?::\s*(?P<axis>\d+))?\s*,\s*(?P<params>\{[^}]*\}|[^,>{}]+)\s*>\Z")
_PARAM_RE = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?::\s*([-+]?\d+))?\s*\Z")


def parse_quant(text: str, element_type) -> QuantType | None:
    """The QuantType of ``<...>`` after ``!quant.uniform`` (None when malformed);
    ``element_type(mlir_name)`` maps MLIR element types to HLO ones."""
    m = _QUANT_RE.match(text.strip())
    if m is None:
        return None
    storage, expressed = element_type(m["st"]), element_type(m["ex"])
    if storage is None or expressed is None or storage[0] not in "su":
        return None
    params = m["params"].strip().strip("{}").split(",")
    parsed = [_PARAM_RE.match(p) for p in params]
    if not params or any(p is None for p in parsed):
        return None
    scales = tuple(float(p[1]) for p in parsed)
    zps = tuple(int(p[2] or 0) for p in parsed)
    bits = int(storage[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if storage[0] == "s" else (0, (1 << bits) - 1)
    axis = int(m["axis"]) if m["axis"] is not None else None
    if (axis is None) != (len(scales) == 1 and not m["params"].strip().startswith("{")):
        return None
    return QuantType(storage, expressed, scales, zps, axis,
                     int(m["lo"]) if m["lo"] is not None else lo, int(m["hi"]) if m["hi"] is not None else hi)


def involves_quantized(cv, comp, op: MlirOp) -> bool:
    """Whether ``op`` reads or makes a quantized tensor (its own handler does not know them)."""
    types = list(op.result_types) + [comp.values[n][1] for n, _ in op.operands if n in comp.values]
    return op.name not in _QUANT_OPS and any(isinstance(t, QuantShape) for t in types)


def _params(cv, comp, op, q: QuantType, shape: ArrayShape, what: str):
    """Broadcast scale and zero-point instructions (float ``q.expressed``) over ``shape``."""
    out = []
    for vals in (q.scales, q.zero_points):
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.asarray(vals, np.float64).astype(ArrayShape(q.expressed, ()).numpy_dtype)
        if q.axis is None:
            c = comp.add("constant", ArrayShape(q.expressed, ()), (), None, op.tok, what, arr.reshape(()))
            dims: tuple[int, ...] = ()
        else:
            if q.axis >= shape.rank or shape.dims[q.axis] != len(vals):
                raise cv.error(f"'{op.name}': per-axis quantization on dimension {q.axis} with "
                               f"{len(vals)} scales does not fit {shape}", op.tok)
            c = comp.add("constant", ArrayShape(q.expressed, (len(vals),)), (), None, op.tok, what, arr)
            dims = (q.axis,)
        out.append(comp.add("broadcast", ArrayShape(q.expressed, shape.dims), [c[0]], {"dimensions": dims},
                            op.tok, what)[0])
    return out


def _scalar(comp, op, et: str, v, dims) -> str:
    c = comp.add("constant", ArrayShape(et, ()), (), None, op.tok, "q", np.asarray(v).astype(
        ArrayShape(et, ()).numpy_dtype))
    return comp.add("broadcast", ArrayShape(et, dims), [c[0]], {"dimensions": ()}, op.tok, "q")[0]


def _dequantize(cv, comp, op, value) -> tuple[str, ArrayShape]:
    """``(storage - zero_point) * scale`` in the expressed type (the difference is exact there;
    in the storage type ``127 - (-3)`` would wrap)."""
    name, shape = value
    q = shape.quant
    f = ArrayShape(q.expressed, shape.dims)
    scale, zp = _params(cv, comp, op, q, f, "deq")
    x = comp.add("convert", f, [name], None, op.tok, "deq")[0]
    sub = comp.add("subtract", f, [x, zp], None, op.tok, "deq")[0]
    return comp.add("multiply", f, [sub, scale], None, op.tok, "deq")


def _quantize(cv, comp, op, value, result: QuantShape) -> tuple[str, QuantShape]:
    """``convert(round_nearest_even(clamp(min, x / scale + zero_point, max)))``."""
    name, shape = value
    q = result.quant
    if isinstance(shape, QuantShape):
        name, shape = _dequantize(cv, comp, op, value)
    f = ArrayShape(q.expressed, result.dims)
    if shape.element_type != q.expressed:
        name = comp.add("convert", f, [name], None, op.tok, "q")[0]
    scale, zp = _params(cv, comp, op, q, f, "q")
    x = comp.add("divide", f, [name, scale], None, op.tok, "q")[0]
    x = comp.add("add", f, [x, zp], None, op.tok, "q")[0]
    lo, hi = (_scalar(comp, op, q.expressed, v, result.dims) for v in (q.storage_min, q.storage_max))
    x = comp.add("clamp", f, [lo, x, hi], None, op.tok, "q")[0]
    x = comp.add("round-nearest-even", f, [x], None, op.tok, "q")[0]
    out = comp.add("convert", ArrayShape(q.storage, result.dims), [x], None, op.tok, "q")[0]
    return out, result


def convert_quantized(cv, comp, op: MlirOp) -> list:
    """``op`` on quantized tensors: storage bitcasts pass through; anything else dequantizes its
    quantized operands, runs on floats and quantizes its quantized results."""
    ins = cv.operands(comp, op)
    if op.name == "stablehlo.bitcast_convert":
        (x,) = ins
        (out,) = cv.one_result(op)
        storage = [s.quant.storage if isinstance(s, QuantShape) else s.element_type for s in (x[1], out)]
        if storage[0] != storage[1] or x[1].dims != out.dims:
            raise cv.unsupported(op, f"bitcast_convert of quantized {x[1]} to {out}")
        return [(x[0], out)]
    temps, types = [], []
    for k, ((name, tok), v) in enumerate(zip(op.operands, ins)):
        if isinstance(v[1], QuantShape):
            v = _dequantize(cv, comp, op, v)
        tmp = f"deq:{name}:{k}:{len(comp.values)}"
        comp.values[tmp] = v
        temps.append((tmp, tok))
        types.append(v[1])
    results = [ArrayShape(t.quant.expressed, t.dims) if isinstance(t, QuantShape) else t
               for t in op.result_types]
    float_op = dataclasses.replace(op, operands=temps, operand_types=types, result_types=results)
    values = _HANDLERS[op.name](cv, comp, float_op)
    return [_quantize(cv, comp, op, v, t) if isinstance(t, QuantShape) else v
            for v, t in zip(values, op.result_types)]


@_op("stablehlo.uniform_quantize", hlo="convert (quantize: round-nearest-even(clamp(x / scale + zero point)))")
def _uniform_quantize(cv, comp, op):
    (x,) = cv.operands(comp, op, 1)
    (out,) = cv.one_result(op)
    if not isinstance(out, QuantShape):
        raise cv.error(f"uniform_quantize must give a quantized tensor, not {out}", op.tok)
    return [_quantize(cv, comp, op, x, out)]


@_op("stablehlo.uniform_dequantize", hlo="convert (dequantize: (storage - zero point) * scale)")
def _uniform_dequantize(cv, comp, op):
    (x,) = cv.operands(comp, op, 1)
    (out,) = cv.one_result(op)
    if not isinstance(x[1], QuantShape) or out.element_type != x[1].quant.expressed:
        raise cv.error(f"uniform_dequantize of {x[1]} to {out}", op.tok)
    return [_dequantize(cv, comp, op, x)]


_QUANT_OPS = frozenset({"stablehlo.uniform_quantize", "stablehlo.uniform_dequantize"})


# ----------------------------------------------------------------------------- dynamic ops

#: operands of each dynamic op (the size operands are among them)
_ARITY = {"stablehlo.dynamic_iota": 1, "stablehlo.dynamic_reshape": 2, "stablehlo.dynamic_broadcast_in_dim": 2,
          "stablehlo.dynamic_pad": 5, "stablehlo.dynamic_gather": 3, "stablehlo.dynamic_conv": 3}


def _constant(cv, comp, op, k: int, what: str) -> np.ndarray:
    """The value of operand ``k`` when a constant defines it (else an UnsupportedOpError)."""
    cv.operands(comp, op, _ARITY[op.name])       # located errors for missing or undefined operands
    name, _ = op.operands[k]
    instr = next((i for i in reversed(comp.instrs) if i.name == comp.values[name][0]), None)
    if instr is not None and instr.opcode == "broadcast" and not instr.attrs.get("dimensions"):
        src = next((i for i in comp.instrs if i.name == instr.operands[0]), None)
        if src is not None and src.opcode == "constant" and src.literal is not None:
            return np.broadcast_to(src.literal, instr.shape.dims)
    if instr is None or instr.opcode != "constant" or instr.literal is None:
        raise cv.unsupported(op, f"its {what} (%{name}) is not a constant: hlotune compiles static "
                                 "shapes (bounded dynamism), so sizes must be known when compiling")
    return np.asarray(instr.literal)


def _static(cv, comp, op, name: str, operands: list[int], attrs: dict, check=None):
    """``op`` as the static op ``name`` on the operands at ``operands``, with ``attrs`` added."""
    types = [op.operand_types[k] for k in operands] if op.operand_types is not None else None
    static = dataclasses.replace(op, name=name, operands=[op.operands[k] for k in operands],
                                 operand_types=types, attrs={**op.attrs, **attrs})
    if check is not None and not check():
        raise cv.error(f"'{op.name}': its size operands do not give its result type "
                       f"{op.result_types[0] if op.result_types else ''}", op.tok)
    return _HANDLERS[name](cv, comp, static)


def _dims_match(op, sizes) -> bool:
    (out,) = op.result_types
    return not out.is_tuple and tuple(int(s) for s in np.asarray(sizes).reshape(-1)) == out.dims


@_op("stablehlo.dynamic_iota", hlo="iota (its output shape a constant)")
def _dynamic_iota(cv, comp, op):
    shape = _constant(cv, comp, op, 0, "output shape")
    return _static(cv, comp, op, "stablehlo.iota", [], {}, lambda: _dims_match(op, shape))


@_op("stablehlo.dynamic_reshape", hlo="reshape (its output shape a constant)")
def _dynamic_reshape(cv, comp, op):
    shape = _constant(cv, comp, op, 1, "output shape")
    return _static(cv, comp, op, "stablehlo.reshape", [0], {}, lambda: _dims_match(op, shape))


@_op("stablehlo.dynamic_broadcast_in_dim", hlo="broadcast (its output dimensions a constant)")
def _dynamic_broadcast_in_dim(cv, comp, op):
    shape = _constant(cv, comp, op, 1, "output dimensions")
    return _static(cv, comp, op, "stablehlo.broadcast_in_dim", [0], {}, lambda: _dims_match(op, shape))


@_op("stablehlo.dynamic_pad", hlo="pad (its paddings constants)")
def _dynamic_pad(cv, comp, op):
    lo, hi, inner = (tuple(int(v) for v in _constant(cv, comp, op, k, what).reshape(-1))
                     for k, what in ((2, "low padding"), (3, "high padding"), (4, "interior padding")))
    attrs = {"edge_padding_low": lo, "edge_padding_high": hi, "interior_padding": inner}
    return _static(cv, comp, op, "stablehlo.pad", [0, 1], attrs)


@_op("stablehlo.dynamic_gather", hlo="gather (its slice sizes a constant)")
def _dynamic_gather(cv, comp, op):
    sizes = tuple(int(v) for v in _constant(cv, comp, op, 2, "slice sizes").reshape(-1))
    return _static(cv, comp, op, "stablehlo.gather", [0, 1], {"slice_sizes": sizes})


@_op("stablehlo.dynamic_conv", hlo="convolution (its padding a constant)")
def _dynamic_conv(cv, comp, op):
    pad = np.asarray(_constant(cv, comp, op, 2, "padding")).reshape(-1)
    if pad.size % 2:
        raise cv.error(f"dynamic_conv padding has {pad.size} values, not (low, high) pairs", op.tok)
    pairs = tuple((int(pad[k]), int(pad[k + 1])) for k in range(0, pad.size, 2))
    return _static(cv, comp, op, "stablehlo.convolution", [0, 1], {"padding": pairs})

