"""Hand-written tokenizer and recursive-descent parser for XLA HLO text.

Accepts what ``jax.jit(f).lower(x).compiler_ir('hlo').as_hlo_text()`` and XLA's
(optimized) dumps print. Every failure is an :class:`HloParseError` with a 1-based
line/column and a caret context; nothing else escapes :func:`parse_hlo`.

Attribute values become python values:

* ``{1,2}`` -> ``(1, 2)`` (nested braces -> nested tuples; ``{true,false}`` -> bools)
* ``slice={[0:10:2], [1:5]}`` -> ``((0, 10, 2), (1, 5, 1))`` (start, limit, stride)
* ``padding=0_0_1x1_-2_0`` -> ``((0, 0, 1), (1, -2, 0))`` (lo, hi, interior)
* ``window={...}`` -> read-only dict: size/stride/lhs_dilate/rhs_dilate (int tuples),
  pad (tuple of (lo, hi)), window_reversal (bool tuple; XLA prints ``rhs_reversal``);
  absent fields get XLA's defaults
* ``to_apply``/``calls``/``condition``/``body``/... -> computation name(s) without ``%``
  (a str, or a tuple of str when written in braces)
* ``control-predecessors={%a}`` -> tuple of instruction names without ``%``
* ``metadata={k="v" n=3}`` -> read-only dict of str -> str/int/bool
* ``operand_precision``/``precision_config={default,high}`` -> tuple of str
* a quoted string -> its unescaped text; an int/bool/float/identifier -> int/bool/float/str
* anything else (``dim_labels=b01f_01io->b01f``, ``backend_config={...}``, ``sharding``,
  unknown attributes) -> its raw source text

``parameter(N)`` stores N as ``attrs["parameter_number"]``; ``constant(...)`` stores a numpy
array in ``Instruction.literal`` (a tuple of arrays for tuple shapes; for a literal elided
as ``{...}``: None plus ``attrs["literal_elided"] = True``).
"""

from __future__ import annotations

import logging
import math
import re
from types import MappingProxyType
from typing import Any

import ml_dtypes
import numpy as np

from ..dsl.errors import HloParseError
from .ast import ELEMENT_TYPES, ArrayShape, Computation, HloModule, Instruction, Shape, TupleShape
from .textparse import TextParser, Tok, caret_context, run_parser
from .textparse import unescape as _unescape
from .verify import verify_module

__all__ = ["caret_context", "parse_hlo"]

log = logging.getLogger(__name__)

_TOKEN_RE = re.compile(r"""
 (?P<ws>\s+) | (?P<bc>/\*.*?\*/) | (?P<lc>//[^\n]*)
|(?P<str>"(?:[^"\\\n]|\\.)*") | (?P<arrow>->) | (?P<le><=)
|(?P<word>%?(?:[A-Za-z0-9_.$+@]|-(?!>))+)
|(?P<p>[{}()\[\],=:?*])
""", re.VERBOSE | re.DOTALL)
_NAME_RE = re.compile(r"%?[A-Za-z_$][A-Za-z0-9_.$\-]*\Z")
_INT_RE = re.compile(r"-?[0-9]{1,40}\Z")  # bounded: int() of a huge string raises
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]|\Z))(?:[eE][-+]?[0-9]+)?\Z")
_HEX_RE = re.compile(r"[-+]?0[xX][0-9a-fA-F.]+(?:[pP][-+]?[0-9]+)?\Z")
_ANY_RE = re.compile(".")
_HEADER_BLOCKS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
COMP_KEYS = frozenset({"to_apply", "calls", "condition", "body", "true_computation",
                        "false_computation", "branch_computations", "called_computations",
                        "select", "scatter"})
_INSTR_KEYS = frozenset({"control-predecessors"})
_STR_LIST_KEYS = frozenset({"operand_precision", "precision_config"})
_WINDOW_INTS = ("size", "stride", "lhs_dilate", "rhs_dilate", "window_reversal")
_OPEN_CLOSE = {"{": "}", "(": ")", "[": "]"}
_SUB_BYTE_INTS = frozenset(np.dtype(t) for t in (ml_dtypes.int2, ml_dtypes.int4,
                                                 ml_dtypes.uint2, ml_dtypes.uint4))
_MAX_DEPTH = 64
_MAX_RANK = 128


class _Parser(TextParser):
    token_re = _TOKEN_RE
    skip_kinds = frozenset({"ws", "bc", "lc"})
    keyword_kinds = frozenset({"word", "arrow", "le", "p"})  # all but 'str' and 'eof'

    def __init__(self, text: str, file: str | None):
        super().__init__(text, file)
        self.open_group: tuple[str, Tok] | None = None

    def bad_char(self, pos: int) -> str:
        text = self.text
        return ("unterminated /* comment" if text.startswith("/*", pos) else
                "unterminated string literal" if text[pos] == '"' else
                super().bad_char(pos))

    # ----------------------------------------------------------- token helpers
    def word(self, what: str, pattern: re.Pattern = _NAME_RE) -> Tok:
        tok = self.peek()
        if tok.kind != "word" or not pattern.match(tok.text):
            raise self.error(f"expected {what}, found {self.desc(tok)}", tok)
        return self.next()

    def name(self, what: str) -> tuple[str, Tok]:
        tok = self.word(what)
        return tok.text.lstrip("%"), tok

    def is_shape_start(self, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "word" and tok.text in ELEMENT_TYPES and self.at("[", k + 1)

    # ------------------------------------------------------------------ module
    def parse_module(self) -> HloModule:
        tok = self.peek()
        if tok.text != "HloModule" or tok.kind != "word":
            raise self.error(f"expected 'HloModule' header, found {self.desc(tok)}", tok)
        self.next()
        mod_name, _ = self.name("module name")
        attrs: dict[str, Any] = {}
        while self.accept(","):
            self.attribute(attrs, None)
        self.skip_header_blocks()
        comps: dict[str, Computation] = {}
        refs: list[tuple[str, Tok]] = []
        entry_tok = None
        while self.peek().kind != "eof":
            comp, crefs, etok = self.computation()
            if etok is not None:
                if entry_tok is not None:
                    raise self.error("second ENTRY computation (only one allowed)", etok)
                entry_tok = etok
            if comp.name in comps:
                raise self.error_at(f"duplicate computation name '{comp.name}'", comp.line, 1)
            comps[comp.name] = comp
            refs.extend(crefs)
        if not comps:
            raise self.error("HLO module has no computations")
        for ref, rtok in refs:
            if ref not in comps:
                raise self.error(f"reference to unknown computation '{ref}'", rtok)
        entry = next((c.name for c in comps.values() if c.is_entry), None)
        if entry is None:  # as XLA: the last computation is the entry
            last = list(comps.values())[-1]
            entry = last.name
            comps[entry] = Computation(entry, last.params, last.instructions, last.root, True,
                                       last.line)
        log.debug("parsed HLO module %s: %d computations, entry %s", mod_name, len(comps), entry)
        return HloModule(mod_name, tuple(comps.values()), entry, attrs, self.file)

    def skip_header_blocks(self) -> None:
        """Skip XLA's FileNames/FunctionNames/FileLocations/StackFrames index tables."""
        while self.peek().kind == "word" and self.peek().text in _HEADER_BLOCKS \
                and not self.at("{", 1) and not self.at("(", 1):
            self.next()
            while self.peek().kind == "word" and _INT_RE.match(self.peek().text):
                line = self.peek().line
                while self.peek().kind != "eof" and self.peek().line == line:
                    self.next()

    # ------------------------------------------------------------- computation
    def computation(self):
        entry_tok = self.next() if self.at("ENTRY") and not self.at("=", 1) else None
        name, name_tok = self.name("computation name")
        n_sig = None
        if self.accept("("):
            def param():
                if self.peek().kind == "word" and self.at(":", 1):
                    self.i += 2  # "name:"
                return self.shape(0, "adjacent")
            n_sig = len(self.items(param, ")", "the parameter list"))
            self.expect("->", " before the computation's result shape")
            self.shape(0, "adjacent")
        self.expect("{", f" to open computation '{name}'")
        instrs: list[Instruction] = []
        refs: list[tuple[str, str, Tok]] = []
        root_tok = None
        self.open_group = None
        while not self.at("}"):
            if self.peek().kind == "eof" or (self.at("ENTRY") and not self.at("=", 1)):
                raise self.missing_close(name)
            ins, irefs, rtok = self.instruction()
            if rtok is not None:
                if root_tok is not None:
                    raise self.error(f"second ROOT in computation '{name}'", rtok)
                root_tok = rtok
            instrs.append(ins)
            refs.extend(irefs)
        self.next()
        while self.accept(","):  # e.g. execution_thread="..."
            self.attribute({}, None)
        if not instrs:
            raise self.error(f"computation '{name}' has no instructions", name_tok)
        by_name: dict[str, Instruction] = {}
        for ins in instrs:
            if ins.name in by_name:
                raise self.error_at(f"duplicate instruction name '{ins.name}' in computation "
                                    f"'{name}'", ins.line, ins.column)
            by_name[ins.name] = ins
        for kind, ref, tok in refs:
            if kind == "instr" and ref not in by_name:
                raise self.error(f"operand '{ref}' is not defined in computation '{name}'", tok)
        params = [i for i in instrs if i.opcode == "parameter"]
        seen: set[int] = set()
        for p in params:
            num = p.attrs["parameter_number"]
            if num >= len(params) or num in seen:
                why = "used twice" if num in seen else \
                    f"out of range: '{name}' has {len(params)} parameter(s)"
                raise self.error_at(f"parameter number {num} {why}", p.line, p.column)
            seen.add(num)
        if n_sig is not None and n_sig != len(params):
            raise self.error(f"computation '{name}' declares {n_sig} parameter(s) but defines "
                             f"{len(params)}", name_tok)
        params.sort(key=lambda i: i.attrs["parameter_number"])
        root = next((i.name for i in instrs if i.is_root), instrs[-1].name)
        comp = Computation(name, tuple(params), tuple(instrs), root, entry_tok is not None,
                           (entry_tok or name_tok).line)
        return comp, [(r, t) for k, r, t in refs if k == "comp"], entry_tok

    def missing_close(self, name: str) -> HloParseError:
        """Unclosed computation; blame a multi-line attribute group that swallowed its '}'."""
        if self.open_group is not None:
            key, tok = self.open_group
            return self.error(f"unterminated '{tok.text}' in attribute '{key}' (it consumed the "
                              f"closing '}}' of computation '{name}')", tok)
        return self.error(f"missing '}}' at the end of computation '{name}'")

    # ------------------------------------------------------------- instruction
    def instruction(self):
        root_tok = self.next() if self.at("ROOT") and not self.at("=", 1) else None
        name, name_tok = self.name("instruction name")
        self.expect("=", f" after instruction name '{name}'")
        shape = self.shape(0, "any")
        op_tok = self.peek()
        if op_tok.kind != "word" or not _NAME_RE.match(op_tok.text) or op_tok.text[0] == "%":
            raise self.error(f"expected opcode, found {self.desc(op_tok)}", op_tok)
        opcode = self.next().text
        self.expect("(", f" after opcode '{opcode}'")
        attrs: dict[str, Any] = {}
        refs: list[tuple[str, str, Tok]] = []
        operands: list[str] = []
        literal = None
        if opcode == "parameter":
            attrs["parameter_number"] = self.int_("parameter number")
            if attrs["parameter_number"] < 0:
                raise self.error("parameter number must be >= 0", self.toks[self.i - 1])
            self.expect(")", " after the parameter number")
        elif opcode == "constant":
            literal = self.constant_literal(shape, attrs)
            self.expect(")", " to close the constant")
        else:
            def operand():
                if self.at("(") or self.is_shape_start():
                    self.shape(0, "any")  # older "f32[2]{0} %x" operand form
                opname, otok = self.name("operand name")
                refs.append(("instr", opname, otok))
                return opname
            operands = self.items(operand, ")", f"the operands of '{opcode}'")
        while self.accept(","):
            self.attribute(attrs, refs)
        ins = Instruction(name, opcode, shape, tuple(operands), attrs, literal,
                          root_tok is not None, name_tok.line, name_tok.col)
        return ins, refs, root_tok

    # ------------------------------------------------------------------- shape
    def shape(self, depth: int, layout: str) -> Shape:
        """A shape; ``layout``: 'any', 'adjacent' (must touch ']') or 'none' (not parsed)."""
        if depth > _MAX_DEPTH:
            raise self.error("tuple shape nested too deeply")
        if self.accept("("):
            return TupleShape(tuple(self.items(lambda: self.shape(depth + 1, layout), ")",
                                               "the tuple shape")))
        tok = self.peek()
        if tok.kind != "word" or tok.text not in ELEMENT_TYPES:
            raise self.error("expected a shape (element type such as f32, or a tuple), found "
                             f"{self.desc(tok)}", tok)
        self.next()
        self.expect("[", f" after element type '{tok.text}'")

        def dim():
            dtok = self.peek()
            if dtok.kind == "le" or dtok.text == "?":
                raise self.error("dynamic dimensions ('<=' bound or '?') are not supported; "
                                 "use static shapes", dtok)
            d = self.int_("dimension size")
            if d < 0:
                raise self.error("dimension size must be >= 0", dtok)
            return d
        dims = self.items(dim, "]", "the dimensions")
        if len(dims) > _MAX_RANK:
            raise self.error(f"rank {len(dims)} exceeds {_MAX_RANK}", tok)
        m2m = None
        if self.at("{") and (layout == "any" or (layout == "adjacent" and not self.peek().space)):
            open_tok = self.next()
            m2m = []
            if self.peek().kind == "word":
                m2m = [self.int_("layout dimension")]
                while self.accept(","):
                    m2m.append(self.int_("layout dimension"))
            if self.accept(":"):  # tiling, element size, memory space ...: skipped
                self.skip_balanced("}")
            self.expect("}", " to close the layout")
            if sorted(m2m) != list(range(len(dims))):
                raise self.error(f"layout {{{','.join(map(str, m2m))}}} is not a permutation of "
                                 f"the {len(dims)} dimensions", open_tok)
        return ArrayShape(tok.text, tuple(dims), None if m2m is None else tuple(m2m))

    def skip_balanced(self, closer: str) -> None:
        """Advance to the unmatched ``closer`` (not consumed), checking bracket balance."""
        stack: list[Tok] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                raise self.error(f"unterminated '{stack[-1].text}'", stack[-1]) if stack else \
                    self.error(f"expected '{closer}', found {self.desc(tok)}", tok)
            if tok.kind == "p" and tok.text in _OPEN_CLOSE:
                stack.append(tok)
            elif tok.kind == "p" and tok.text in ")]}":
                if not stack and tok.text == closer:
                    return
                if not stack or _OPEN_CLOSE[stack[-1].text] != tok.text:
                    raise self.error(f"unbalanced '{tok.text}'", tok)
                stack.pop()
            self.next()

    # -------------------------------------------------------------- attributes
    def attribute(self, attrs: dict[str, Any], refs: list | None) -> None:
        key_tok = self.word("attribute name")
        key = key_tok.text
        self.expect("=", f" after attribute '{key}'")
        if key in attrs:
            raise self.error(f"duplicate attribute '{key}'", key_tok)
        start, end = self.value_span(key)
        saved = self.limit, self.stop
        last = self.toks[end - 1]
        self.i, self.limit = start, end
        self.stop = Tok("eof", "", last.end, last.end, last.line, last.col + len(last.text), False)
        try:
            attrs[key] = self.value(key, refs, self.text[self.toks[start].start:last.end])
            if self.peek().kind != "eof":
                raise self.error(f"unexpected {self.desc(self.peek())} in attribute '{key}'")
        finally:
            (self.limit, self.stop), self.i = saved, end

    def value_span(self, key: str) -> tuple[int, int]:
        """Token range of one attribute value: adjacent tokens and balanced groups."""
        start, stack = self.i, []
        first = self.peek()
        if first.kind == "eof" or (first.kind == "p" and first.text in ",=)]}:"):
            raise self.error(f"expected a value for attribute '{key}', found {self.desc(first)}")
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                if stack:
                    raise self.error(f"unterminated '{stack[-1].text}' in attribute '{key}'",
                                     stack[-1])
                return start, self.i
            if not stack and self.i > start and (tok.space or (tok.kind == "p" and
                                                               tok.text in ",)]}")):
                return start, self.i
            if stack and tok.line != self.toks[self.i - 1].line and self.looks_like_instruction():
                raise self.error(f"unterminated '{stack[-1].text}' in attribute '{key}'", stack[-1])
            if tok.kind == "p" and tok.text in _OPEN_CLOSE:
                if len(stack) > _MAX_DEPTH:
                    raise self.error("attribute value nested too deeply", tok)
                stack.append(tok)
            elif tok.kind == "p" and tok.text in ")]}":
                if _OPEN_CLOSE[stack[-1].text] != tok.text:
                    raise self.error(f"'{tok.text}' does not match '{stack[-1].text}' at "
                                     f"{stack[-1].line}:{stack[-1].col}", tok)
                opener = stack.pop()
                if not stack and opener.line != tok.line != self.toks[self.i - 1].line:
                    self.open_group = (key, opener)  # '}' alone on its line: suspicious
            self.next()

    def looks_like_instruction(self) -> bool:
        """``ROOT name`` or ``name = <shape>`` (to diagnose an unclosed brace)."""
        t0, t1 = self.peek(), self.peek(1)
        if t0.kind != "word":
            return False
        if t0.text == "ROOT" and t1.kind == "word":
            return True
        return self.at("=", 1) and (self.at("(", 2) or self.is_shape_start(2))

    def value(self, key: str, refs: list | None, raw: str) -> Any:
        if key in COMP_KEYS or key in _INSTR_KEYS:
            braced = self.accept("{")
            names = self.items(lambda: self.name(f"a name in '{key}'"), "}", key) if braced \
                else [self.name(f"a name in '{key}'")]
            if refs is not None:
                refs.extend(("comp" if key in COMP_KEYS else "instr", n, t) for n, t in names)
            return tuple(n for n, _ in names) if braced else names[0][0]
        if key == "slice":
            def rng():
                self.expect("[", " to open a slice range")
                vals = [self.int_("slice start")]
                while self.accept(":"):
                    vals.append(self.int_("slice bound"))
                if len(vals) not in (2, 3):
                    raise self.error("a slice range is [start:limit] or [start:limit:stride]")
                self.expect("]", " to close the slice range")
                return (vals[0], vals[1], vals[2] if len(vals) == 3 else 1)
            self.expect("{", " to open the slices")
            return tuple(self.items(rng, "}", "the slices"))
        if key == "padding":
            return tuple(d + (0,) * (3 - len(d)) for d in self.x_dims("padding", (2, 3)))
        if key == "window":
            return self.window()
        if key == "metadata":
            self.expect("{", " to open metadata")
            out: dict[str, Any] = {}
            while not self.at("}") and self.peek().kind != "eof":
                k = self.word("metadata key").text
                self.expect("=", f" after metadata key '{k}'")
                out[k] = self.generic("")
            self.expect("}", " to close metadata")
            return MappingProxyType(out)
        if key in _STR_LIST_KEYS and self.accept("{"):
            return tuple(self.items(lambda: self.word("precision name").text, "}", key))
        return self.generic(raw)

    def generic(self, raw: str) -> Any:
        """Int/bool tuples and scalars; else ``raw`` (the whole value's text), or for one
        metadata item (``raw == ""``) the text of its group."""
        start, tok = self.i, self.peek()
        if self.at("{"):
            val = self.int_tuple()
            if val is not None and (not raw or self.peek().kind == "eof"):
                return val
            self.i = start
        if raw and self.peek(1).kind != "eof":  # several adjacent tokens or a group
            self.i = self.limit
            return raw
        if tok.kind == "p" and tok.text in _OPEN_CLOSE:
            self.skip_group()
            return raw or self.text[tok.start:self.toks[self.i - 1].end]
        if tok.kind not in ("word", "str"):
            raise self.error(f"expected a value, found {self.desc(tok)}", tok)
        self.next()
        if tok.kind == "str":
            return _unescape(tok.text)
        if _INT_RE.match(tok.text):
            return int(tok.text)
        if tok.text in ("true", "false"):
            return tok.text == "true"
        return float(tok.text) if _FLOAT_RE.match(tok.text) else tok.text

    def skip_group(self) -> None:
        opener = self.next()
        self.skip_balanced(_OPEN_CLOSE[opener.text])
        self.next()

    def int_tuple(self):
        """``{1,2}`` / ``{{0,1},{2}}`` / ``{true,false}`` -> tuples; None if not that form."""
        self.next()
        out: list[Any] = []
        while not self.at("}"):
            tok = self.peek()
            if self.at("{"):
                out.append(self.int_tuple())
            elif tok.kind == "word" and (_INT_RE.match(tok.text) or tok.text in ("true", "false")):
                out.append(int(tok.text) if _INT_RE.match(tok.text) else tok.text == "true")
                self.next()
            else:
                return None
            if out[-1] is None or not (self.accept(",") or self.at("}")):
                return None
        self.next()
        return tuple(out)

    def x_dims(self, what: str, parts: tuple[int, ...]) -> tuple:
        """``1_2_0x3_-1_1`` -> ((1,2,0),(3,-1,1)); ``parts``: allowed numbers per dim."""
        tok = self.word(what, _ANY_RE)
        out = []
        for chunk in tok.text.split("x"):
            nums = chunk.split("_")
            if len(nums) not in parts or not all(_INT_RE.match(n) for n in nums):
                raise self.error(f"malformed {what} {tok.text!r}", tok)
            out.append(tuple(int(n) for n in nums))
        return tuple(out)

    def window(self):
        self.expect("{", " to open the window")
        fields: dict[str, tuple] = {}
        while not self.at("}") and self.peek().kind != "eof":
            ktok = self.word("window field")
            key = "window_reversal" if ktok.text == "rhs_reversal" else ktok.text
            self.expect("=", f" after window field '{ktok.text}'")
            if key in fields or (key != "pad" and key not in _WINDOW_INTS):
                raise self.error(f"unknown or repeated window field '{ktok.text}'", ktok)
            vals = self.x_dims(f"window {key}", (2,) if key == "pad" else (1,))
            fields[key] = vals if key == "pad" else tuple(
                bool(v[0]) if key == "window_reversal" else v[0] for v in vals)
        self.expect("}", " to close the window")
        n = len(fields.get("size", ()))
        for k, v in fields.items():
            if len(v) != n:
                raise self.error(f"window field '{k}' has {len(v)} dims but size has {n}")
        res = {"size": (), "stride": (1,) * n, "pad": ((0, 0),) * n, "lhs_dilate": (1,) * n,
               "rhs_dilate": (1,) * n, "window_reversal": (False,) * n}
        res.update(fields)
        return MappingProxyType(res)

    # ---------------------------------------------------------------- literals
    def constant_literal(self, shape: Shape, attrs: dict[str, Any]):
        if self.at("{") and self.at("...", 1) and self.at("}", 2):
            log.warning("%s:%d: constant literal elided as {...}; its value is unknown (print the "
                        "module with as_hlo_text(print_large_constants=True))",
                        self.file or "<hlo>", self.peek().line)
            self.i += 3
            attrs["literal_elided"] = True
            return None
        if not shape.is_tuple:
            return self.array_literal(shape)
        if self.at("(") and not self.is_shape_start(1):
            self.next()
            val = self.tuple_literal(shape)
            self.expect(")", " to close the tuple literal")
            return val
        return self.tuple_literal(shape)

    def tuple_literal(self, shape: TupleShape) -> tuple:
        vals = []
        for k, sub in enumerate(shape.elements):
            if k:
                self.expect(",", " between tuple literal elements")
            if sub.is_tuple:
                if self.is_shape_start():
                    self.shape(0, "none")
                self.expect("(", " to open a nested tuple literal")
                vals.append(self.tuple_literal(sub))
                self.expect(")", " to close the nested tuple literal")
            else:
                vals.append(self.array_literal(sub))
        return tuple(vals)

    def array_literal(self, shape: ArrayShape) -> np.ndarray:
        if self.is_shape_start():  # old style "f32[2] {1, 2}"
            self.shape(0, "none")
        dt = ELEMENT_TYPES.get(shape.element_type)
        if dt is None:
            raise self.error(f"a constant cannot have type {shape.element_type}[]")
        vals: list[Any] = []
        self.literal_level(shape.dims, 0, vals, dt)
        if dt.kind in "biu" or dt in _SUB_BYTE_INTS:
            return np.array(vals, dtype=np.int64 if dt in _SUB_BYTE_INTS else dt) \
                .astype(dt).reshape(shape.dims)
        with np.errstate(over="ignore", invalid="ignore"):
            base = np.complex128 if dt.kind == "c" else np.float64
            return np.array(vals, dtype=base).astype(dt).reshape(shape.dims)

    def literal_level(self, dims, d: int, vals: list, dt: np.dtype) -> None:
        if d == len(dims):
            vals.append(self.scalar(dt))
            return
        open_tok = self.expect("{", f" to open dimension {d} ({dims[d]} elements) of the literal")
        for k in range(dims[d]):
            if k and self.at("}"):
                raise self.error(f"literal has {k} elements in dimension {d}, shape says "
                                 f"{dims[d]}", open_tok)
            if k:
                self.expect(",", " between literal elements")
            self.literal_level(dims, d + 1, vals, dt)
        if self.at(","):
            raise self.error(f"literal has more than {dims[d]} elements in dimension {d}")
        self.expect("}", f" to close dimension {d} of the literal")

    def scalar(self, dt: np.dtype):
        """One literal element, converted to a python bool/int/float/complex."""
        if dt.kind == "c":
            self.expect("(", " to open a complex value (re, im)")
            re_ = self.scalar(np.dtype(np.float64))
            self.expect(",", " in a complex value (re, im)")
            im = self.scalar(np.dtype(np.float64))
            self.expect(")", " to close a complex value")
            return complex(re_, im)
        tok = self.word("a literal value", _ANY_RE)
        text, low = tok.text, tok.text.lower()
        if dt.kind == "b":
            if low not in ("true", "false", "1", "0"):
                raise self.error(f"expected true/false, found {text!r}", tok)
            return low in ("true", "1")
        if dt.kind in "iu" or dt in _SUB_BYTE_INTS:
            if _INT_RE.match(text):
                val = int(text)
            elif _HEX_RE.match(text) and not re.search("[.pP]", text):
                val = int(text, 16)
            else:
                raise self.error(f"expected an integer literal, found {text!r}", tok)
            info = ml_dtypes.iinfo(dt)
            if not info.min <= val <= info.max:
                raise self.error(f"integer {val} out of range for {dt.name}", tok)
            return val
        body = low.lstrip("-+")
        if body == "nan" and self.at("(") and not self.peek().space:
            self.skip_group()  # nan(0x...) payload
        if body in ("inf", "infinity", "nan"):
            return math.copysign(math.inf if body != "nan" else math.nan, -1.0 if low[0] == "-" else 1.0)
        if _FLOAT_RE.match(text):
            return float(text)
        if _HEX_RE.match(text):
            try:
                return float.fromhex(text)
            except (ValueError, OverflowError):
                pass
        raise self.error(f"expected a floating-point literal, found {text!r}", tok)


def parse_hlo(text: str, file: str | None = None, *, verify: bool = True) -> HloModule:
    """Parse and (unless ``verify`` is false: syntax only) verify (:mod:`.verify`) HLO module
    text; raises :class:`HloParseError` (with line/column) on any problem. Lowering verifies
    again, so an unverified module is never lowered."""
    def parse(p: _Parser) -> HloModule:
        mod = p.parse_module()
        return verify_module(mod, p.lines) if verify else mod
    return run_parser(_Parser, parse, text, file, what="HLO", logger=log)
