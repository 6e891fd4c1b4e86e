"""Hand-written tokenizer and recursive-descent parser for StableHLO text (MLIR).

Accepts what ``jax.jit(f).lower(x).as_text()`` prints: a ``module`` (or bare ``func.func``s)
whose functions hold ``stablehlo``, ``chlo`` and ``func`` ops, each in its pretty form
(``stablehlo.add %a, %b : tensor<4xf32>``, ``stablehlo.reduce(...) applies ...``,
``stablehlo.while(...) cond {...} do {...}``, ...) or the generic one
(``"stablehlo.gather"(%a, %i) <{...}> ({...}) {...} : (...) -> ...``); ``tensor<2x3xf32>``,
``tuple<...>`` and ``!stablehlo.token`` types with element types i1 (pred), i2..i64, ui2..ui64,
f16, bf16, f32, f64, f8*/f4* and complex; ``dense<...>`` literals (scalars, splats, nested
lists, hex bit patterns such as ``0xFF800000``, hex blobs ``"0x..."``, true/false); attribute
dicts, ``loc(...)`` locations, ``#alias = ...`` definitions and ``//`` comments.

The result is the HLO AST of :mod:`.ast` (see :mod:`.stablehlo_convert` for the op mapping), so
``lower_module`` runs it unchanged. Syntax errors raise :class:`HloParseError` with a 1-based
line/column and a caret context; an op hlotune cannot lower raises :class:`UnsupportedOpError`
naming it. Nothing else escapes :func:`parse_stablehlo`. Quantized types (``!quant.uniform``)
and dynamic ops with constant sizes are converted by :mod:`.stablehlo_types`; dynamic shapes
(``?``), multi-block regions and ``dense_resource`` literals are not supported.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..dsl.errors import HloParseError, UnsupportedOpError
from .ast import ArrayShape, HloModule, Shape
from .stablehlo_attrs import TypesAndAttrs
from .stablehlo_convert import SUPPORTED, DenseAttr, Func, MlirModule, MlirOp, Region, to_hlo_module
from .textparse import Tok, run_parser
from .textparse import unescape as _unescape
from .verify import verify_module

__all__ = ["parse_stablehlo"]

log = logging.getLogger(__name__)

_TOKEN_RE = re.compile(r"""
 (?P<ws>\s+) | (?P<lc>//[^\n]*) | (?P<res>\{-\#.*?\#-\})
|(?P<str>"(?:[^"\\\n]|\\.)*") | (?P<arrow>->)
|(?P<val>%[\w$.\-]+(?:\#\d+)?)
|(?P<sym>@(?:[\w$.\-]+|"(?:[^"\\\n]|\\.)*"))
|(?P<hash>\#[\w$.\-]+) | (?P<bang>![\w$.\-]+) | (?P<blk>\^[\w$.\-]+)
|(?P<num>-?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|-?[0-9]+[eE][-+]?[0-9]+)
|(?P<word>-?[\w$.]+)
|(?P<p>[(){}\[\]<>,=:?*+|])
""", re.VERBOSE | re.DOTALL)
_INT_RE = re.compile(r"-?[0-9]{1,40}\Z")
_HEX_RE = re.compile(r"-?0x[0-9a-fA-F]{1,32}\Z")
_FLOAT_RE = re.compile(r"-?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)\Z")
_OPEN_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}
_MAX_DEPTH = 64

#: pretty-form keywords -> the op's generic attribute names
_KEYWORDS = {
    "stablehlo.broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.broadcast": {"sizes": "broadcast_sizes"},
    "stablehlo.transpose": {"dims": "permutation"},
    "stablehlo.reverse": {"dims": "dimensions"},
    "stablehlo.concatenate": {"dim": "dimension"},
    "stablehlo.iota": {"dim": "iota_dimension"},
    "stablehlo.dynamic_iota": {"dim": "iota_dimension"},
    "stablehlo.get_dimension_size": {"dim": "dimension"},
    "stablehlo.dynamic_slice": {"sizes": "slice_sizes"},
    "stablehlo.pad": {"low": "edge_padding_low", "high": "edge_padding_high",
                      "interior": "interior_padding"},
    "stablehlo.dot": {"precision": "precision_config"},
    "stablehlo.dot_general": {"precision": "precision_config"},
}
_CONV_WINDOW = {"stride": "window_strides", "pad": "padding", "lhs_dilate": "lhs_dilation",
                "rhs_dilate": "rhs_dilation", "reverse": "window_reversal"}


class _Parser(TypesAndAttrs):
    token_re = _TOKEN_RE
    skip_kinds = frozenset({"ws", "lc", "res"})
    keyword_kinds = frozenset({"p", "word", "arrow"})

    def __init__(self, text: str, file: str | None):
        super().__init__(text, file)
        self.depth = 0

    def bad_char(self, pos: int) -> str:
        text = self.text
        return ("unterminated string literal" if text[pos] == '"' else
                "unterminated {-# ... #-} block" if text.startswith("{-#", pos) else
                super().bad_char(pos))

    # ----------------------------------------------------------- token helpers
    def skip_balanced(self) -> str:
        """Skip one bracketed group (the current token opens it); return its source text."""
        stack: list[Tok] = []
        start = self.peek()
        while True:
            tok = self.next()
            if tok.kind == "eof":
                raise self.error(f"unterminated '{stack[-1].text}'", stack[-1])
            if tok.kind == "p" and tok.text in _OPEN_CLOSE:
                stack.append(tok)
            elif tok.kind == "p" and tok.text in ")]}>":
                if not stack or _OPEN_CLOSE[stack[-1].text] != tok.text:
                    raise self.error(f"unbalanced '{tok.text}'", tok)
                stack.pop()
            if not stack:
                return self.text[start.start:tok.end]

    def use(self) -> tuple[str, Tok]:
        tok = self.take("val", "an SSA value (%name)")
        return tok.text[1:], tok

    def skip_loc(self) -> None:
        if self.at("loc") and self.at("(", 1):
            self.next()
            self.skip_balanced()

    # ------------------------------------------------------------------ module
    def parse_module(self) -> MlirModule:
        self.skip_aliases()
        name, attrs = None, {}
        if self.accept("module"):
            if self.peek().kind == "sym":
                name = self.symbol(self.next())
            if self.accept("attributes"):
                attrs = self.attr_dict()
            open_tok = self.expect("{", " to open the module body")
            funcs = self.funcs(open_tok)
            self.skip_loc()
        else:
            funcs = self.funcs(None)
        self.skip_aliases()
        if self.peek().kind != "eof":
            raise self.error(f"unexpected {self.desc(self.peek())} after the module")
        log.debug("parsed StableHLO module %s: %d functions", name, len(funcs))
        return MlirModule(name, attrs, funcs)

    def skip_aliases(self) -> None:
        """Skip ``#name = <attribute>`` and ``!name = <type>`` alias definitions."""
        while self.peek().kind in ("hash", "bang") and self.at("=", 1):
            self.i += 2
            self.attr_value(True)

    def funcs(self, open_tok: Tok | None) -> list[Func]:
        out = []
        while not (open_tok is not None and self.at("}")):
            tok = self.peek()
            if tok.kind == "eof":
                if open_tok is None:
                    break
                raise self.error(f"missing '}}' to close the module opened at line {open_tok.line}")
            if tok.kind in ("hash", "bang") and self.at("=", 1):
                self.skip_aliases()
                continue
            if self.accept("sdy.mesh"):   # a Shardy mesh: one device's meshes mean nothing here
                self.take("sym", "a mesh name (@name)")
                self.expect("=", " after the mesh name")
                self.skip_balanced() if self.at("<") else self.attr_value(False)
                if self.at("{"):
                    self.attr_dict()
                continue
            if not self.at("func.func"):
                raise self.error(f"expected 'func.func', found {self.desc(tok)}")
            out.append(self.func())
        if open_tok is not None:
            self.next()
        return out

    def func(self) -> Func:
        self.next()  # func.func
        if self.peek().text in ("public", "private", "nested"):
            self.next()
        name_tok = self.take("sym", "a function name (@name)")
        self.expect("(", " to open the parameter list")
        args = self.items(self.block_arg, ")", "the parameter list")
        results: list[Shape] = []
        if self.accept("->"):
            results = self.func_results()
        if self.accept("attributes"):
            self.attr_dict()
        if not self.at("{"):
            raise self.error(f"expected '{{' to open the body of {name_tok.text}, found "
                             f"{self.desc(self.peek())}")
        body = self.region(args)
        self.skip_loc()
        return Func(self.symbol(name_tok), name_tok, args, results, body)

    def func_results(self) -> list[Shape]:
        """``type`` or ``(type [{attrs}], ...)``."""
        def one():
            shape = self.type_()
            if self.at("{"):
                self.attr_dict()
            return shape
        if self.accept("("):
            return self.items(one, ")", "the result types")
        return [self.type_()]

    @staticmethod
    def symbol(tok: Tok) -> str:
        return _unescape(tok.text[1:]) if tok.text.startswith('@"') else tok.text[1:]

    # ------------------------------------------------------------------ regions and ops
    def region(self, args) -> Region:
        """``{ [^bb0(%a: type, ...):] op* }``; ``args`` are the arguments the op gives it."""
        open_tok = self.expect("{", " to open a region")
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error("regions nested too deeply", open_tok)
        if self.peek().kind == "blk":
            self.next()
            block_args = self.items(self.block_arg, ")", "the block arguments") \
                if self.accept("(") else []
            self.expect(":", " after the block label")
            args = block_args
        ops = []
        while not self.at("}"):
            tok = self.peek()
            if tok.kind == "eof":
                raise self.error(f"missing '}}' to close the region opened at line {open_tok.line}")
            if tok.kind == "blk":
                raise self.error("regions with several blocks are not supported", tok)
            ops.append(self.op())
        self.depth -= 1
        return Region(list(args or []), ops, open_tok, self.next())

    def block_arg(self) -> tuple[str, Shape, Tok]:
        """``%name: type [{attrs}] [loc(...)]``"""
        name, tok = self.use()
        self.expect(":", f" after %{name}")
        shape = self.type_()
        if self.at("{"):
            self.attr_dict()
        self.skip_loc()
        return name, shape, tok

    def op(self) -> MlirOp:
        """``[%r, %s:2 =] op-in-pretty-or-generic-form [loc(...)]``"""
        first = self.peek()
        results, aliases = self.result_names() if first.kind == "val" else ([], {})
        tok = self.next()
        if tok.kind not in ("str", "word"):
            raise self.error(f"expected an operation, found {self.desc(tok)}", tok)
        name = _unescape(tok.text) if tok.kind == "str" else \
            {"call": "func.call", "return": "func.return"}.get(tok.text, tok.text)
        if not name.strip():
            raise self.error("expected an operation, found an empty operation name", tok)
        if name not in SUPPORTED:
            raise UnsupportedOpError(name, line=tok.line, file=self.file,
                                     detail="no HLO equivalent that hlotune lowers")
        op = MlirOp(name, first, results, aliases)
        form = _Parser.generic_form if tok.kind == "str" else _PRETTY.get(name, _Parser.default_form)
        form(self, op)
        self.resolve_types(op)
        self.skip_loc()
        return op

    def result_names(self) -> tuple[list[tuple[str, Tok]], dict[str, str]]:
        """``%a, %b:3 =`` -> [(a, tok), (b#0, tok), ...] and the alias b -> b#0."""
        results, aliases = [], {}
        while True:
            name, tok = self.use()
            if "#" in name:
                raise self.error("a result name cannot have '#N'", tok)
            if self.accept(":"):
                n = self.int_("a result count")
                if n < 1:
                    raise self.error("result count must be >= 1", tok)
                names = [f"{name}#{k}" for k in range(n)]
                aliases[name] = names[0]
            else:
                names = [name]
            results += [(n, tok) for n in names]
            if not self.accept(","):
                break
        self.expect("=", " after the result names")
        return results, aliases

    def generic_form(self, op: MlirOp) -> None:
        """``"dialect.op"(%a, ...) [<{props}>] [({region}, ...)] [{attrs}] : (types) -> types``"""
        self.expect("(", f" after \"{op.name}\"")
        op.operands = self.items(self.use, ")", "the operands")
        if self.at("<") and self.at("{", 1):
            self.next()
            op.attrs.update(self.attr_dict())
            self.expect(">", " to close the properties")
        if self.at("(") and self.at("{", 1):
            self.next()
            op.regions = self.items(lambda: self.region(None), ")", "the regions")
        if self.at("{"):
            op.attrs.update(self.attr_dict())
        self.expect(":", f" before the type of \"{op.name}\"")
        if not self.at("("):
            raise self.error(f"expected a function type '(...) -> ...', found {self.desc(self.peek())}")
        op.operand_types, op.result_types = self.type_signature()

    def tail(self, op: MlirOp) -> None:
        """``[{attrs}] [: type-signature]`` ending a pretty op."""
        if self.at("{"):
            op.attrs.update(self.attr_dict())
        if self.accept(":"):
            op.operand_types, op.result_types = self.type_signature()
        elif op.results:
            raise self.error(f"expected ':' and the type of '{op.name}', found {self.desc(self.peek())}")
        else:
            op.operand_types, op.result_types = None, []

    def resolve_types(self, op: MlirOp) -> None:
        """Result types from the signature: after ``->``; else one per result, or the last
        (``select``'s ``pred_type, result_type``); an op without results (a return): none, and
        the types listed are its operands'."""
        n, types = len(op.results), op.result_types
        if op.operand_types is None and n == 0:
            op.operand_types, op.result_types = types or None, []
        elif op.operand_types is None and n == 1 and types:
            op.result_types = [types[-1]]
        if len(op.result_types) != n:
            raise self.error(f"'{op.name}' defines {n} result(s) but its type gives "
                             f"{len(op.result_types)}", op.tok)

    def default_form(self, op: MlirOp) -> None:
        """``%a, %b, key = value, ... [{attrs}] : types`` (elementwise ops, broadcast_in_dim,
        iota, pad, dot_general, dynamic_slice, ...)."""
        keys = _KEYWORDS.get(op.name, {})
        while True:
            if self.peek().kind == "val":
                op.operands.append(self.use())
            elif self.peek().kind == "word" and self.at("=", 1):
                key = self.next().text
                self.next()
                op.attrs[keys.get(key, key)] = self.keyword_value()
            else:
                break
            if not self.accept(","):
                break
        self.tail(op)

    def keyword_value(self) -> Any:
        if self.at("<"):
            return self.skip_balanced()
        v = self.attr_value(False)
        if isinstance(v, tuple) and self.accept("x"):  # dot_general: [0] x [0]
            return v, self.attr_value(False)
        return v

    # ---------------------------------------------------- pretty forms with own syntax
    def dot_general_form(self, op: MlirOp) -> None:
        """``%a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [..]``"""
        self.default_form(op)
        dn = {}
        for key, name in (("batching_dims", "batching_dimensions"),
                          ("contracting_dims", "contracting_dimensions")):
            pair = op.attrs.pop(key, ((), ()))
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, tuple) for p in pair)):
                raise self.error(f"dot_general {key} must be [..] x [..]", op.tok)
            dn[f"lhs_{name}"], dn[f"rhs_{name}"] = pair
        op.attrs.setdefault("dot_dimension_numbers", dn)

    def compare_form(self, op: MlirOp) -> None:
        """``LT, %a, %b[, SIGNED]``"""
        op.attrs["comparison_direction"] = self.take("word", "a comparison direction").text
        self.expect(",", " after the comparison direction")
        op.operands = [self.use()]
        self.expect(",", " between the operands")
        op.operands.append(self.use())
        if self.accept(","):
            op.attrs["compare_type"] = self.take("word", "a comparison type").text
        self.tail(op)

    def slice_form(self, op: MlirOp) -> None:
        """``%x [start:limit(:stride)?, ...]``"""
        op.operands = [self.use()]
        self.expect("[", " to open the slice ranges")

        def rng():
            vals = [self.int_("a slice start")]
            while self.accept(":"):
                vals.append(self.int_("a slice bound"))
            if len(vals) not in (2, 3):
                raise self.error("a slice range is start:limit or start:limit:stride")
            return vals + [1] * (3 - len(vals))
        ranges = self.items(rng, "]", "the slice ranges")
        for k, key in enumerate(("start_indices", "limit_indices", "strides")):
            op.attrs[key] = tuple(r[k] for r in ranges)
        self.tail(op)

    def convolution_form(self, op: MlirOp) -> None:
        """``(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
        window = {stride = [..], pad = [[..]], ...} {attrs} : types``"""
        self.expect("(", " to open the operands")
        op.operands = self.items(self.use, ")", "the operands")
        while self.peek().kind == "word" and self.at("=", 1):
            key = self.next().text
            self.next()
            if key == "dim_numbers":
                op.attrs["dimension_numbers"] = self.conv_labels()
            elif key == "window":
                window = self.attr_dict()
                op.attrs.update({_CONV_WINDOW.get(k, k): v for k, v in window.items()})
            else:
                op.attrs[key] = self.attr_value(False)
            if not self.accept(","):
                break
        self.tail(op)

    def conv_labels(self) -> str:
        """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`` -> HLO ``b01f_01io->b01f``."""
        def side():
            self.expect("[", " to open convolution dimension labels")
            return "".join(self.items(lambda: self.take("word", "a dimension label").text, "]",
                                      "the dimension labels"))
        lhs = side()
        self.expect("x", " between input and kernel labels")
        rhs = side()
        self.expect("->", " before the output labels")
        return f"{lhs}_{rhs}->{side()}"

    def reduce_form(self, op: MlirOp) -> None:
        """``(%x init: %i), ... applies OP across dimensions = [..] : types`` or
        ``... across dimensions = [..] : types reducer(%a: t, %b: t) ... { body }``"""
        inputs, inits = [], []
        while True:
            self.expect("(", " to open a reduce operand")
            inputs.append(self.use())
            self.expect("init")
            self.expect(":")
            inits.append(self.use())
            self.expect(")", " to close a reduce operand")
            if not self.accept(","):
                break
        op.operands = inputs + inits
        body = self.take("word", "a reducer op") if self.accept("applies") else None
        self.expect("across")
        self.expect("dimensions")
        self.expect("=")
        op.attrs["dimensions"] = self.attr_value(False)
        self.tail(op)
        if body is not None:
            op.regions = [self.applies_region(op, body)]
            return
        self.expect("reducer", " (the reduce body)")
        groups = []
        while self.accept("("):
            a = self.block_arg()
            self.expect(",")
            groups.append((a, self.block_arg()))
            self.expect(")", " to close a reducer argument pair")
        op.regions = [self.region([g[0] for g in groups] + [g[1] for g in groups])]

    def applies_region(self, op: MlirOp, body: Tok) -> Region:
        """The region of ``applies stablehlo.add``: ``return add(acc_k, x_k)`` per operand."""
        if body.text not in SUPPORTED:
            raise UnsupportedOpError(body.text, line=body.line, file=self.file,
                                     detail="as a reduce body")
        scalars = [ArrayShape(t.element_type, ()) if not t.is_tuple else t for t in op.result_types]
        args = [(f"acc {k}", s, body) for k, s in enumerate(scalars)] + \
               [(f"x {k}", s, body) for k, s in enumerate(scalars)]
        ops = [MlirOp(body.text, body, results=[(f"r {k}", body)], result_types=[s],
                      operands=[(f"acc {k}", body), (f"x {k}", body)]) for k, s in enumerate(scalars)]
        ops.append(MlirOp("stablehlo.return", body, operands=[(f"r {k}", body) for k in range(len(scalars))]))
        return Region(args, ops, body, body)

    def while_form(self, op: MlirOp) -> None:
        """``(%iterArg = %x, ...) : types [attributes {..}] cond { .. } do { .. }``"""
        self.expect("(", " to open the loop variables")

        def pair():
            var = self.take("val", "a loop variable (%name)")
            self.expect("=", " after the loop variable")
            return var, self.use()
        pairs = self.items(pair, ")", "the loop variables")
        op.operands = [u for _, u in pairs]
        self.tail(op)
        if self.accept("attributes"):
            op.attrs.update(self.attr_dict())
        if len(op.result_types) != len(pairs):
            raise self.error(f"stablehlo.while has {len(pairs)} loop variable(s) but "
                             f"{len(op.result_types)} type(s)", op.tok)
        args = [(v.text[1:], t, v) for (v, _), t in zip(pairs, op.result_types)]
        self.expect("cond", " (the loop condition region)")
        cond = self.region(args)
        self.expect("do", " (the loop body region)")
        op.regions = [cond, self.region(args)]

    def symbol_call_form(self, op: MlirOp) -> None:
        """``@callee(%a, ...) [{attrs}] : types`` (func.call, custom_call)."""
        sym = self.take("sym", "a symbol (@name)")
        op.attrs["callee" if op.name == "func.call" else "call_target_name"] = self.symbol(sym)
        self.expect("(", " to open the operands")
        op.operands = self.items(self.use, ")", "the operands")
        self.tail(op)

    def composite_form(self, op: MlirOp) -> None:
        """``"name" %a, ... {decomposition = @f, ...} : types``"""
        op.attrs["name"] = _unescape(self.take("str", "the composite name").text)
        self.default_form(op)

    def constant_form(self, op: MlirOp) -> None:
        """``dense<...> : tensor<...>`` (the literal's type is the result type)."""
        if self.at("{"):
            op.attrs.update(self.attr_dict())
        value = op.attrs["value"] = self.attr_value(True)
        if isinstance(value, DenseAttr):
            op.operand_types, op.result_types = None, [value.shape]
        else:
            self.tail(op)

    def gte_form(self, op: MlirOp) -> None:
        """``%t[index] : (tuple<...>) -> type``"""
        op.operands = [self.use()]
        self.expect("[", " before the tuple index")
        op.attrs["index"] = self.int_("a tuple index")
        self.expect("]", " after the tuple index")
        self.tail(op)

    def scan_form(self, op: MlirOp) -> None:
        """``(%x, ...) inits(%c, ...) dimension=N [attributes {..}] {region} : types``"""
        self.expect("(", " to open the scan inputs")
        op.operands = self.items(self.use, ")", "the scan inputs")
        op.attrs["num_inputs"] = len(op.operands)
        self.expect("inits", " before the scan's initial carries")
        self.expect("(", " to open the initial carries")
        op.operands += self.items(self.use, ")", "the initial carries")
        while self.peek().kind == "word" and self.at("=", 1):
            key = self.next().text
            self.next()
            op.attrs[key] = self.attr_value(False)
        if self.accept("attributes"):
            op.attrs.update(self.attr_dict())
        op.regions = [self.region(None)]
        self.tail(op)

    def sharding_form(self, op: MlirOp) -> None:
        """``%x <@mesh, [{"x"}, {}]> : type`` (Shardy's sharding constraint)."""
        op.operands = [self.use()]
        if self.at("<"):
            op.attrs["sharding"] = self.skip_balanced()
        self.tail(op)

    def top_k_form(self, op: MlirOp) -> None:
        """``(%x, k = 3) : type -> (type, type)``"""
        self.expect("(", " to open the operands")
        op.operands = [self.use()]
        self.expect(",")
        self.expect("k")
        self.expect("=")
        op.attrs["k"] = self.int_("k")
        self.expect(")", " to close the operands")
        self.tail(op)

    # ------------------------------------------------------------------ types


_PRETTY = {
    "stablehlo.dot_general": _Parser.dot_general_form,
    "stablehlo.compare": _Parser.compare_form,
    "stablehlo.slice": _Parser.slice_form,
    "stablehlo.convolution": _Parser.convolution_form,
    "stablehlo.reduce": _Parser.reduce_form,
    "stablehlo.while": _Parser.while_form,
    "stablehlo.constant": _Parser.constant_form,
    "stablehlo.custom_call": _Parser.symbol_call_form,
    "func.call": _Parser.symbol_call_form,
    "stablehlo.composite": _Parser.composite_form,
    "stablehlo.get_tuple_element": _Parser.gte_form,
    "chlo.top_k": _Parser.top_k_form,
    "sdy.sharding_constraint": _Parser.sharding_form,
    "chlo.scan": _Parser.scan_form,
}


def parse_stablehlo(text: str | bytes, file: str | None = None, *, verify: bool = True) -> HloModule:
    """Parse StableHLO text into the HLO AST and (unless ``verify`` is false) verify it
    (:mod:`.verify`); raises :class:`HloParseError` (with line/column) on any problem and
    :class:`UnsupportedOpError` for an op hlotune cannot lower."""
    def parse(p: _Parser) -> HloModule:
        mod = to_hlo_module(p.parse_module(), p.error, file)
        return verify_module(mod, p.lines) if verify else mod
    return run_parser(_Parser, parse, text, file, what="StableHLO", logger=log,
                      passthrough=(HloParseError, UnsupportedOpError))
