"""StableHLO's types and attributes (``tensor<...>``, quantized element types, attribute
dictionaries, ``dense<...>`` literals with their nesting, hex blobs and splats): the half of the
StableHLO parser (stablehlo.py) that reads values rather than ops."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from .ast import ELEMENT_TYPES, TOKEN, ArrayShape, Shape, TupleShape
from .stablehlo_ir import DenseAttr
from .stablehlo_types import QuantShape, parse_quant
from .textparse import TextParser, Tok
from .textparse import unescape as _unescape

_INT_RE = re.compile(r"-?[0-9]{1,40}\Z")
_HEX_RE = re.compile(r"-?0x[0-9a-fA-F]{1,32}\Z")
_FLOAT_RE = re.compile(r"-?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)\Z")
_MAX_DEPTH = 64


class _Complex(NamedTuple):
    re: Tok
    im: Tok


def element_type(name: str) -> str | None:
    """The HLO element type of an MLIR element type (``i1`` -> pred, ``ui8`` -> u8, ...)."""
    if name == "i1":
        return "pred"
    if name == "index":     # only in attributes (layouts of custom calls): a 64-bit integer
        return "s64"
    m = re.fullmatch(r"(i|si|ui)([0-9]+)", name)
    et = (("u" if m[1] == "ui" else "s") + m[2]) if m else name.lower()
    return et if et in ELEMENT_TYPES and et not in ("pred", "token", "opaque") else None


class TypesAndAttrs(TextParser):
    """The type and attribute readers of the StableHLO parser (a base class: the parser adds the
    op and module structure)."""

    def type_signature(self) -> tuple[list[Shape] | None, list[Shape]]:
        """``(ins) -> outs``, ``ins -> outs`` (chlo) or a type list: (operand types or None,
        the types after the arrow or the list)."""
        if self.accept("("):
            ins = self.items(self.type_, ")", "the operand types")
            self.expect("->", " after the operand types")
            return ins, self.func_results()
        types = [self.type_()]
        while self.accept(","):
            types.append(self.type_())
        if self.accept("->"):
            return types, self.func_results()
        return None, types

    def type_(self) -> Shape:
        tok = self.peek()
        if tok.kind == "bang":
            self.next()
            if tok.text in ("!stablehlo.token", "!mhlo.token"):
                return TOKEN
            raise self.error(f"unsupported type {tok.text}", tok)
        if tok.kind == "word" and tok.text == "tensor" and self.at("<", 1):
            return self.tensor_type()
        if tok.kind == "word" and tok.text == "tuple" and self.at("<", 1):
            self.i += 2
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise self.error("tuple type nested too deeply", tok)
            elements = self.items(self.type_, ">", "the tuple type")
            self.depth -= 1
            return TupleShape(tuple(elements))
        if tok.kind == "word":
            return ArrayShape(self.element(), ())
        raise self.error(f"expected a type, found {self.desc(tok)}", tok)

    def tensor_type(self) -> ArrayShape:
        """``tensor<2x3xf32>``, ``tensor<f32>``, ``tensor<4xcomplex<f32>>``: the dims and the
        element type are one run of adjacent tokens (``?`` is a token of its own)."""
        self.i += 2
        start, parts = self.peek(), []
        while (self.peek().kind == "word" or self.at("?") or self.at("*")) and \
                not (parts and self.peek().space):
            parts.append(self.next().text)
        spec = "".join(parts)
        if spec.endswith("complex"):
            head, et = spec[:-len("complex")], "complex"
            dims = head[:-1].split("x") if head.endswith("x") else [head] if head else []
        else:   # dims are the leading 'Nx' fields: the element type may hold an 'x' ('index')
            m = re.fullmatch(r"((?:[0-9?*]+x)*)(.*)", spec)
            dims, et = m[1].split("x")[:-1], m[2]
        if "?" in spec or "*" in spec:
            raise self.error("dynamic dimensions ('?') are not supported; use static shapes", start)
        if not all(re.fullmatch("[0-9]{1,18}", d) for d in dims):
            raise self.error(f"malformed tensor dimensions {spec!r}", start)
        if not et and self.peek().text == "!quant.uniform" and self.at("<", 1):
            return self.quant_tensor(tuple(int(d) for d in dims))
        etype = self.element_name(et or self.peek().text, start)
        if self.accept(","):  # an encoding (bounds of a bounded-dynamic shape, ...)
            self.attr_value(False)
        self.expect(">", " to close the tensor type")
        return ArrayShape(etype, tuple(int(d) for d in dims), None)

    def quant_tensor(self, dims: tuple[int, ...]) -> ArrayShape:
        """``!quant.uniform<i8:f32[:axis], scale:zero_point | {...}>`` (after the dims) ``>``:
        the storage integers, with their quantization (stablehlo_types.QuantShape)."""
        tok = self.next()
        q = parse_quant(self.skip_balanced(), element_type)
        if q is None:
            raise self.error("malformed !quant.uniform type (expected <storage:expressed[:axis], "
                             "scale:zero_point> with integer storage)", tok)
        self.expect(">", " to close the tensor type")
        return QuantShape(q.storage, dims, None, q)

    def element(self) -> str:
        tok = self.take("word", "an element type")
        return self.element_name(tok.text, tok)

    def element_name(self, name: str, tok: Tok) -> str:
        """The HLO element type of ``name`` (``complex`` reads its ``<f32>``)."""
        if name == "complex" and self.accept("<"):
            inner = self.take("word", "an element type").text
            self.expect(">", " to close the complex type")
            et = {"f32": "c64", "f64": "c128"}.get(inner)
        else:
            et = element_type(name)
        if et is None:
            raise self.error(f"unsupported element type {name!r}", tok)
        return et

    # ------------------------------------------------------------------ attributes
    def attr_dict(self) -> dict[str, Any]:
        """``{key = value, unit_key, "quoted" = value}``"""
        self.expect("{")
        out: dict[str, Any] = {}

        def entry():
            tok = self.peek()
            if tok.kind not in ("word", "str"):
                raise self.error(f"expected an attribute name, found {self.desc(tok)}")
            key = _unescape(self.next().text) if tok.kind == "str" else self.next().text
            out[key] = self.attr_value(True) if self.accept("=") else True
        self.items(entry, "}", "the attributes")
        return out

    def attr_value(self, typed: bool) -> Any:
        """One MLIR attribute as a python value (``typed``: consume a trailing ``: type``)."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error("attribute nested too deeply")
        try:
            return self._attr_value(typed)
        finally:
            self.depth -= 1

    def _attr_value(self, typed: bool) -> Any:
        tok = self.peek()
        if tok.kind == "str":
            return _unescape(self.next().text)
        if tok.kind == "sym":
            return self.symbol(self.next())
        if self.at("["):
            self.next()
            return tuple(self.items(lambda: self.attr_value(typed), "]", "the list"))
        if self.at("{"):
            return self.attr_dict()
        if tok.kind == "hash":
            return self.dialect_attr()
        if tok.kind == "word" and self.at("<", 1) and tok.text in ("dense", "array"):
            return self.dense() if tok.text == "dense" else self.array()
        if tok.kind == "word" and (self.at("<", 1) or self.at("(", 1)) and not self.peek(1).space:
            self.next()  # dense_resource<...>, loc(...), affine_map<...>: kept as text
            return tok.text + self.skip_balanced()
        if tok.kind in ("word", "num"):
            val = self.scalar_word(self.next())
            if typed and self.accept(":"):  # the type of a number (1 : i64): not needed
                self.next()
                if self.at("<") and not self.peek().space:
                    self.skip_balanced()
            return val
        if tok.kind == "bang" or self.at("("):
            return self.type_signature() if self.at("(") else self.type_()
        raise self.error(f"expected an attribute value, found {self.desc(tok)}")

    @staticmethod
    def scalar_word(tok: Tok) -> Any:
        text = tok.text
        if _INT_RE.match(text):
            return int(text)
        if _HEX_RE.match(text):
            return int(text, 16)
        if text in ("true", "false"):
            return text == "true"
        if text == "unit":
            return True
        return float(text) if _FLOAT_RE.match(text) else text

    def dialect_attr(self) -> Any:
        """``#stablehlo<precision DEFAULT>`` -> 'DEFAULT'; ``#stablehlo.gather<k = v, ...>``
        -> dict; ``#stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>`` -> HLO dim_labels;
        anything else -> its source text."""
        tok = self.next()
        if not self.at("<") or self.peek().space:
            return tok.text
        self.next()
        if tok.text.endswith(".conv") and self.at("["):
            val = self.conv_labels()
        elif self.peek().kind == "word" and self.at("=", 1) or self.at("raw") or self.at(">"):
            self.accept("raw")
            val = {}
            while self.peek().kind == "word" and self.at("=", 1):
                key = self.next().text
                self.next()
                val[key] = self.attr_value(False)
                if not self.accept(","):
                    break
        elif self.peek().kind == "word" and (self.at(">", 1) or
                                             self.peek(1).kind == "word" and self.at(">", 2)):
            val = self.next().text
            val = self.next().text if not self.at(">") else val
        else:
            self.i -= 1
            return tok.text + self.skip_balanced()
        self.expect(">", f" to close {tok.text}<...>")
        return val

    def array(self) -> tuple:
        """``array<i64: 1, 2>`` / ``array<i1: true>`` / ``array<i64>``."""
        self.i += 2
        self.element()
        vals: list = []
        if self.accept(":"):
            vals = self.items(lambda: self.scalar_word(self.take_scalar()), ">", "the array")
            return tuple(vals)
        self.expect(">", " to close the array")
        return tuple(vals)

    def dense(self) -> DenseAttr:
        """``dense<...> : tensor<...>``: a splat, nested lists or a hex blob."""
        tok = self.next()
        self.next()
        if self.at(">"):
            tree: Any = []
        elif self.peek().kind == "str":
            tree = self.next()
        else:
            tree = self.dense_tree()
        self.expect(">", " to close the dense literal")
        self.expect(":", " before the type of the dense literal")
        shape = self.type_()
        if shape.is_tuple or ELEMENT_TYPES.get(shape.element_type) is None:
            raise self.error(f"a dense literal cannot have type {shape}", tok)
        return DenseAttr(self.dense_array(tree, shape, tok), shape)

    def dense_tree(self) -> Any:
        """Nested lists of element tokens (a complex element: a (re, im) pair)."""
        if self.accept("["):
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise self.error("dense literal nested too deeply")
            out = self.items(self.dense_tree, "]", "the dense list")
            self.depth -= 1
            return out
        if self.accept("("):
            re_ = self.take_scalar()
            self.expect(",")
            im = self.take_scalar()
            self.expect(")")
            return _Complex(re_, im)
        return self.take_scalar()

    def take_scalar(self) -> Tok:
        tok = self.peek()
        if tok.kind not in ("word", "num"):
            raise self.error(f"expected a literal value, found {self.desc(tok)}")
        return self.next()

    def dense_array(self, tree, shape: ArrayShape, tok: Tok) -> np.ndarray:
        dt = ELEMENT_TYPES[shape.element_type]
        count = math.prod(shape.dims)
        if isinstance(tree, Tok) and tree.kind == "str":
            return self.hex_blob(tree, dt, shape, count)
        leaves: list = []
        nested = _flatten(tree, leaves)
        if nested is not None and nested != shape.dims and (leaves or count):
            raise self.error(f"dense literal of shape {list(nested)} for a tensor of shape "
                             f"{list(shape.dims)}", tok)
        arr = np.zeros(len(leaves), dt)
        for k, leaf in enumerate(leaves):
            self.set_element(arr, k, leaf, dt)
        return _fill(arr, shape.dims)

    def set_element(self, arr: np.ndarray, k: int, leaf, dt: np.dtype) -> None:
        if dt.kind == "c":
            parts = leaf if isinstance(leaf, _Complex) else (leaf,)
            if len(parts) != 2 or not all(_FLOAT_RE.match(t.text) or _INT_RE.match(t.text) or
                                          _HEX_RE.match(t.text) or t.text.lower().lstrip("-+") in
                                          ("inf", "nan") for t in parts):
                raise self.error("a complex element is (re, im)", parts[0])
            comp = np.zeros(2, np.float32 if dt.itemsize == 8 else np.float64)
            for j, t in enumerate(parts):   # a hex part is the bit pattern of a float part
                self.set_element(comp, j, t, comp.dtype)
            arr[k] = complex(comp[0], comp[1])
            return
        if isinstance(leaf, _Complex):
            raise self.error("a complex value for a real element type", leaf.re)
        text, low = leaf.text, leaf.text.lower()
        if dt.kind == "b":
            if low not in ("true", "false", "1", "0"):
                raise self.error(f"expected true/false, found {text!r}", leaf)
            arr[k] = low in ("true", "1")
        elif _HEX_RE.match(text) and not text.startswith("-"):
            bits = int(text, 16)  # the element's bit pattern (floats too: 0xFF800000 = -inf)
            udt = np.dtype(f"u{dt.itemsize}")
            if bits >= 1 << (8 * dt.itemsize):
                raise self.error(f"hex value {text} too wide for {dt.name}", leaf)
            arr.view(udt)[k] = bits
        elif dt.kind in "iu" or (dt.kind == "V" and "int" in dt.name):
            if not _INT_RE.match(text):
                raise self.error(f"expected an integer literal, found {text!r}", leaf)
            info = ml_dtypes.iinfo(dt)
            if not info.min <= int(text) <= info.max:
                raise self.error(f"integer {text} out of range for {dt.name}", leaf)
            arr[k] = int(text)
        else:
            body = low.lstrip("-+")
            if not (_FLOAT_RE.match(text) or _INT_RE.match(text) or body in ("inf", "nan")):
                raise self.error(f"expected a floating-point literal, found {text!r}", leaf)
            with np.errstate(over="ignore"):
                arr[k] = float(text)

    def hex_blob(self, tok: Tok, dt: np.dtype, shape: ArrayShape, count: int) -> np.ndarray:
        """``dense<"0x...">``: the raw little-endian element bytes (one element: a splat)."""
        hexs = tok.text[1:-1]
        if not re.fullmatch(r"0x(?:[0-9a-fA-F]{2})*", hexs):
            raise self.error("malformed hex literal (expected \"0x\" and bytes)", tok)
        data = bytes.fromhex(hexs[2:])
        size = dt.itemsize
        if dt.kind == "b" and len(data) == (count + 7) // 8 and len(data) != count:
            arr = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[:count].astype(bool)
        elif len(data) in (size, size * count):
            arr = np.frombuffer(data, dt).copy()  # little-endian, as MLIR writes it (and x86/arm)
        else:
            raise self.error(f"hex literal has {len(data)} bytes; {shape} needs {size * count}", tok)
        return _fill(arr, shape.dims)


def _fill(flat: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """``flat`` as an array of shape ``dims``, or for a splat (one element for several) that
    element alone, as a 0-d array: a splat is never expanded (see :class:`DenseAttr`)."""
    if flat.size == math.prod(dims):
        return flat.reshape(dims)
    return flat.reshape(())


def _flatten(tree, leaves: list) -> tuple[int, ...] | None:
    """Append the leaves of nested lists; their shape (None for a scalar splat)."""
    if not isinstance(tree, list):
        leaves.append(tree)
        return None
    shapes = {_flatten(t, leaves) or () for t in tree}
    if len(shapes) > 1:
        return (-1,)  # ragged: never matches a tensor shape
    return (len(tree),) + (shapes.pop() if shapes else ())




__all__ = ["TypesAndAttrs", "element_type"]
