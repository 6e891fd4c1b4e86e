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
* ``control-predecessors={%a}`` -> instruction names without ``%``
* ``metadata={k="v" n=3}`` -> read-only dict of str -> str/int/bool
* ``operand_precision``/``precision_config={default,high}`` -> tuple of str
* a quoted string -> its unescaped text; an int/bool/float/identifier -> int/bool/float/str
* anything else (``dim_labels=b01f_01io->b01f``, ``backend_config={...}``, ``sharding``,
  unknown attributes) -> its raw source text

``parameter(N)`` stores N as ``attrs["parameter_number"]``; ``constant(...)`` stores a numpy
array in ``Instruction.literal`` (``{...}``-elided literals: None plus
``attrs["literal_elided"] = True``).
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import re
from types import MappingProxyType
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from ..errors import HloParseError
from .ast import ELEMENT_TYPES, ArrayShape, Computation, HloModule, Instruction, Shape, TupleShape

__all__ = ["parse_hlo", "load_hlo_file"]

log = logging.getLogger(__name__)

_TOKEN_RE = re.compile(r"""
 (?P<ws>\s+)
|(?P<bc>/\*.*?\*/)
|(?P<lc>//[^\n]*)
|(?P<str>"(?:[^"\\\n]|\\.)*")
|(?P<arrow>->)
|(?P<le><=)
|(?P<word>%?(?:[A-Za-z0-9_.$+@]|-(?!>))+)
|(?P<p>[{}()\[\],=:?*])
""", re.X | re.S)
_NAME_RE = re.compile(r"%?[A-Za-z_$][A-Za-z0-9_.$\-]*\Z")
_INT_RE = re.compile(r"-?[0-9]{1,40}\Z")  # bounded: int() of huge strings raises
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]|\Z))(?:[eE][-+]?[0-9]+)?\Z")
_HEXF_RE = re.compile(r"[-+]?0[xX][0-9a-fA-F.]+(?:[pP][-+]?[0-9]+)?\Z")
_HEADER_BLOCKS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_COMP_KEYS = frozenset({"to_apply", "calls", "condition", "body", "true_computation",
                        "false_computation", "branch_computations", "called_computations",
                        "async_wrapped_computation", "select", "scatter"})
_INSTR_REF_KEYS = frozenset({"control-predecessors"})
_STR_LIST_KEYS = frozenset({"operand_precision", "precision_config"})
_OPEN_CLOSE = {"{": "}", "(": ")", "[": "]"}
_MAX_DEPTH = 64
_MAX_RANK = 128


class _Tok(NamedTuple):
    kind: str      # 'word' | 'str' | 'arrow' | 'le' | 'p' | 'eof'
    text: str
    start: int
    end: int
    line: int
    col: int
    space: bool    # whitespace or a comment precedes it


def _unescape(raw: str) -> str:
    """Decode a C-escaped string token (quotes included)."""
    body, out, i = raw[1:-1], [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(simple.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, text: str, file: str | None):
        self.text = text
        self.file = file
        self.lines = text.split("\n")
        self.line_starts = [0]
        for m in re.finditer("\n", text):
            self.line_starts.append(m.end())
        self.toks = self._lex()
        self.i = 0
        self.open_group: tuple[str, _Tok] | None = None

    # ----------------------------------------------------------------- errors
    def _loc(self, offset: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.line_starts, offset)
        return ln, offset - self.line_starts[ln - 1] + 1

    def error_at(self, msg: str, line: int, col: int) -> HloParseError:
        ctx = ""
        if 1 <= line <= len(self.lines):
            src, col0 = self.lines[line - 1].rstrip("\r"), max(col - 1, 0)
            if len(src) > 160:  # show a window around the column
                lo = max(0, col0 - 80)
                src, col0 = ("..." if lo else "") + src[lo:lo + 160], col0 - lo + (3 if lo else 0)
            caret = "".join(c if c == "\t" else " " for c in src[:col0])
            ctx = f"{src}\n{caret}^"
        return HloParseError(msg, file=self.file, line=line, column=col, context=ctx)

    def error(self, msg: str, tok: _Tok | None = None) -> HloParseError:
        tok = tok or self.peek()
        return self.error_at(msg, tok.line, tok.col)

    @staticmethod
    def _desc(tok: _Tok) -> str:
        return "end of input" if tok.kind == "eof" else repr(tok.text[:40])

    # ------------------------------------------------------------------ lexer
    def _lex(self) -> list[_Tok]:
        text, toks, pos, n, space = self.text, [], 0, len(self.text), True
        match = _TOKEN_RE.match
        while pos < n:
            m = match(text, pos)
            if m is None:
                line, col = self._loc(pos)
                if text.startswith("/*", pos):
                    raise self.error_at("unterminated /* comment", line, col)
                if text[pos] == '"':
                    raise self.error_at("unterminated string literal", line, col)
                raise self.error_at(f"unexpected character {text[pos]!r}", line, col)
            kind = m.lastgroup
            if kind in ("ws", "bc", "lc"):
                space = True
            else:
                line, col = self._loc(pos)
                toks.append(_Tok(kind, m.group(), pos, m.end(), line, col, space))
                space = False
            pos = m.end()
        line, col = self._loc(n)
        toks.append(_Tok("eof", "", n, n, line, col, True))
        return toks

    # --------------------------------------------------------------- helpers
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.peek()
        if tok.kind != "eof":
            self.i += 1
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind != "str" and tok.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str = "") -> _Tok:
        tok = self.peek()
        if not self.at(text):
            raise self.error(f"expected '{text}'{what}, found {self._desc(tok)}", tok)
        return self.next()

    def name(self, what: str) -> tuple[str, _Tok]:
        tok = self.peek()
        if tok.kind != "word" or not _NAME_RE.match(tok.text):
            raise self.error(f"expected {what}, found {self._desc(tok)}", tok)
        self.i += 1
        return tok.text.lstrip("%"), tok

    def int_tok(self, tok: _Tok, what: str = "integer") -> int:
        if tok.kind != "word" or not _INT_RE.match(tok.text):
            raise self.error(f"expected {what}, found {self._desc(tok)}", tok)
        return int(tok.text)

    def int_(self, what: str = "integer") -> int:
        val = self.int_tok(self.peek(), what)
        self.i += 1
        return val

    # ----------------------------------------------------------------- module
    def parse_module(self) -> HloModule:
        tok = self.peek()
        if tok.text != "HloModule" or tok.kind != "word":
            raise self.error(f"expected 'HloModule' header, found {self._desc(tok)}", tok)
        self.i += 1
        mod_name, _ = self.name("module name")
        attrs: dict[str, Any] = {}
        while self.accept(","):
            self.attribute(attrs, None)
        self.skip_header_blocks()
        comps: list[Computation] = []
        comp_refs: list[tuple[str, _Tok]] = []
        entry_tok = None
        while self.peek().kind != "eof":
            comp, refs, is_entry_tok = self.computation()
            if is_entry_tok is not None:
                if entry_tok is not None:
                    raise self.error("second ENTRY computation (only one allowed)", is_entry_tok)
                entry_tok = is_entry_tok
            comps.append(comp)
            comp_refs.extend(refs)
        if not comps:
            raise self.error("HLO module has no computations")
        seen: dict[str, Computation] = {}
        for c in comps:
            if c.name in seen:
                raise self.error_at(f"duplicate computation name '{c.name}'", c.line, 1)
            seen[c.name] = c
        for ref, rtok in comp_refs:
            if ref not in seen:
                raise self.error(f"reference to unknown computation '{ref}'", rtok)
        if entry_tok is None:  # XLA: the last computation is the entry
            last = comps[-1]
            comps[-1] = Computation(last.name, last.params, last.instructions, last.root,
                                    True, last.line)
        entry = next(c.name for c in comps if c.is_entry)
        log.debug("parsed HLO module %s: %d computations, entry %s", mod_name, len(comps), entry)
        return HloModule(mod_name, tuple(comps), entry, attrs, self.file)

    def skip_header_blocks(self) -> None:
        """Skip XLA's FileNames/FunctionNames/FileLocations/StackFrames index tables."""
        while self.peek().kind == "word" and self.peek().text in _HEADER_BLOCKS \
                and not self.at("{", 1) and not self.at("(", 1):
            self.i += 1
            while self.peek().kind == "word" and _INT_RE.match(self.peek().text):
                line = self.peek().line
                while self.peek().kind != "eof" and self.peek().line == line:
                    self.i += 1

    # ------------------------------------------------------------ computation
    def computation(self):
        entry_tok = None
        if self.at("ENTRY") and not self.at("=", 1):
            entry_tok = self.next()
        name, name_tok = self.name("computation name")
        start_tok = entry_tok or name_tok
        n_sig = None
        if self.at("("):
            self.next()
            n_sig = 0
            if not self.at(")"):
                while True:
                    if self.peek().kind == "word" and self.at(":", 1):
                        self.name("parameter name")
                        self.next()
                    self.shape(0, layout="adjacent")
                    n_sig += 1
                    if not self.accept(","):
                        break
            self.expect(")", " to close the parameter list")
            self.expect("->", " before the computation's result shape")
            self.shape(0, layout="adjacent")
        self.expect("{", f" to open computation '{name}'")
        instrs: list[Instruction] = []
        refs: list[tuple[str, _Tok]] = []
        root_tok = None
        self.open_group = None
        while not self.at("}"):
            if self.peek().kind == "eof" or (self.at("ENTRY") and not self.at("=", 1)):
                raise self.missing_close(name)
            instr, irefs, is_root_tok = self.instruction()
            if is_root_tok is not None:
                if root_tok is not None:
                    raise self.error(f"second ROOT in computation '{name}'", is_root_tok)
                root_tok = is_root_tok
            instrs.append(instr)
            refs.extend(irefs)
        self.next()
        while self.accept(","):  # e.g. execution_thread="..."
            self.attribute({}, None)
        if not instrs:
            raise self.error(f"computation '{name}' has no instructions", name_tok)
        comp_refs = self.check_computation(name, instrs, refs, n_sig, name_tok)
        root = next((i.name for i in instrs if i.is_root), instrs[-1].name)
        params = sorted((i for i in instrs if i.opcode == "parameter"),
                        key=lambda i: i.attrs["parameter_number"])
        comp = Computation(name, tuple(params), tuple(instrs), root, entry_tok is not None,
                           start_tok.line)
        return comp, comp_refs, entry_tok

    def missing_close(self, name: str) -> HloParseError:
        """Unclosed computation; blame a multi-line attribute group that swallowed its '}'."""
        if self.open_group is not None:
            key, tok = self.open_group
            return self.error(f"unterminated '{tok.text}' in attribute '{key}' (it consumed the "
                              f"closing '}}' of computation '{name}')", tok)
        return self.error(f"missing '}}' at the end of computation '{name}'")

    def check_computation(self, name, instrs, refs, n_sig, name_tok):
        """Names unique, operands defined, parameter numbers 0..n-1; returns computation refs."""
        names: dict[str, Instruction] = {}
        for ins in instrs:
            if ins.name in names:
                raise self.error_at(f"duplicate instruction name '{ins.name}' in computation "
                                    f"'{name}'", ins.line, ins.column)
            names[ins.name] = ins
        comp_refs = []
        for kind, ref, tok in refs:
            if kind == "comp":
                comp_refs.append((ref, tok))
            elif ref not in names:
                raise self.error(f"operand '{ref}' is not defined in computation '{name}'", tok)
        params = [i for i in instrs if i.opcode == "parameter"]
        seen: set[int] = set()
        for p in params:
            num = p.attrs["parameter_number"]
            if num >= len(params) or num in seen:
                why = "used twice" if num in seen else f"out of range: '{name}' has {len(params)}" \
                    " parameter(s)"
                raise self.error_at(f"parameter number {num} {why}", p.line, p.column)
            seen.add(num)
        if n_sig is not None and n_sig != len(params):
            raise self.error(f"computation '{name}' declares {n_sig} parameter(s) but defines "
                             f"{len(params)}", name_tok)
        return comp_refs

    # ------------------------------------------------------------ instruction
    def instruction(self):
        root_tok = None
        if self.at("ROOT") and not self.at("=", 1):
            root_tok = self.next()
        name, name_tok = self.name("instruction name")
        self.expect("=", f" after instruction name '{name}'")
        shape = self.shape(0, layout="any")
        op_tok = self.peek()
        if op_tok.kind != "word" or not _NAME_RE.match(op_tok.text) or op_tok.text[0] == "%":
            raise self.error(f"expected opcode, found {self._desc(op_tok)}", op_tok)
        opcode = self.next().text
        self.expect("(", f" after opcode '{opcode}'")
        attrs: dict[str, Any] = {}
        refs: list[tuple[str, str, _Tok]] = []
        operands: list[str] = []
        literal = None
        if opcode == "parameter":
            tok = self.peek()
            num = self.int_("parameter number")
            if num < 0:
                raise self.error("parameter number must be >= 0", tok)
            attrs["parameter_number"] = num
        elif opcode == "constant":
            literal = self.constant_literal(shape, attrs)
        elif not self.at(")"):
            while True:
                if self.at("(") or (self.peek().kind == "word" and self.peek().text in ELEMENT_TYPES
                                    and self.at("[", 1)):
                    self.shape(0, layout="any")  # older "f32[2]{0} %x" operand form
                opname, otok = self.name("operand name")
                operands.append(opname)
                refs.append(("instr", opname, otok))
                if not self.accept(","):
                    break
        self.expect(")", f" to close the operands of '{opcode}'")
        while self.accept(","):
            self.attribute(attrs, refs)
        ins = Instruction(name, opcode, shape, tuple(operands), attrs, literal,
                          root_tok is not None, name_tok.line, name_tok.col)
        return ins, refs, root_tok

    # ------------------------------------------------------------------ shape
    def shape(self, depth: int, layout: str) -> Shape:
        """A shape; ``layout``: 'any', 'adjacent' (must touch ']') or 'none'."""
        if depth > _MAX_DEPTH:
            raise self.error("tuple shape nested too deeply")
        tok = self.peek()
        if self.accept("("):
            elems = []
            if not self.at(")"):
                while True:
                    elems.append(self.shape(depth + 1, layout))
                    if not self.accept(","):
                        break
            self.expect(")", " to close the tuple shape")
            return TupleShape(tuple(elems))
        if tok.kind != "word" or tok.text not in ELEMENT_TYPES:
            raise self.error(f"expected a shape (element type such as f32 or a tuple), found "
                             f"{self._desc(tok)}", tok)
        self.i += 1
        self.expect("[", f" after element type '{tok.text}'")
        dims: list[int] = []
        if not self.at("]"):
            while True:
                dtok = self.peek()
                if dtok.kind == "le" or dtok.text == "?":
                    raise self.error("dynamic dimensions ('<=' bound or '?') are not supported; "
                                     "use static shapes", dtok)
                d = self.int_("dimension size")
                if d < 0:
                    raise self.error("dimension size must be >= 0", dtok)
                dims.append(d)
                if len(dims) > _MAX_RANK:
                    raise self.error(f"rank exceeds {_MAX_RANK}", dtok)
                if not self.accept(","):
                    break
        self.expect("]", " to close the dimensions")
        m2m = None
        if self.at("{") and (layout == "any" or (layout == "adjacent" and not self.peek().space)):
            m2m = self.layout(len(dims))
        return ArrayShape(tok.text, tuple(dims), m2m)

    def layout(self, rank: int) -> tuple[int, ...]:
        open_tok = self.expect("{")
        m2m: list[int] = []
        if self.peek().kind == "word" and _INT_RE.match(self.peek().text):
            while True:
                m2m.append(self.int_("layout dimension"))
                if not self.accept(","):
                    break
        if self.accept(":"):  # tiling / memory space etc.: skipped
            self.skip_balanced_until("}")
        self.expect("}", " to close the layout")
        if sorted(m2m) != list(range(rank)):
            raise self.error(f"layout {{{','.join(map(str, m2m))}}} is not a permutation of the "
                             f"{rank} dimensions", open_tok)
        return tuple(m2m)

    def skip_balanced_until(self, closer: str) -> None:
        """Advance to the unmatched ``closer`` (not consumed), checking bracket balance."""
        stack: list[_Tok] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                raise self.error(f"unterminated '{stack[-1].text}'", stack[-1]) if stack else \
                    self.error(f"expected '{closer}', found end of input", tok)
            if tok.kind == "p":
                if tok.text in _OPEN_CLOSE:
                    stack.append(tok)
                elif tok.text in ")]}":
                    if not stack:
                        if tok.text == closer:
                            return
                        raise self.error(f"unexpected '{tok.text}'", tok)
                    if _OPEN_CLOSE[stack[-1].text] != tok.text:
                        raise self.error(f"'{tok.text}' does not match '{stack[-1].text}' at "
                                         f"{stack[-1].line}:{stack[-1].col}", tok)
                    stack.pop()
            self.i += 1

    # -------------------------------------------------------------- attributes
    def attribute(self, attrs: dict[str, Any], refs: list | None) -> None:
        key_tok = self.peek()
        if key_tok.kind != "word" or not _NAME_RE.match(key_tok.text):
            raise self.error(f"expected attribute name, found {self._desc(key_tok)}", key_tok)
        self.i += 1
        key = key_tok.text
        self.expect("=", f" after attribute '{key}'")
        if key in attrs:
            raise self.error(f"duplicate attribute '{key}'", key_tok)
        a, b = self.value_span(key)
        attrs[key] = _Values(self, a, b).interpret(key, refs)

    def value_span(self, key: str) -> tuple[int, int]:
        """Token range of one attribute value: adjacent tokens and balanced groups."""
        start = self.i
        first = self.peek()
        if first.kind == "eof" or (first.kind == "p" and first.text in ",=)]}:"):
            raise self.error(f"expected a value for attribute '{key}', found {self._desc(first)}",
                             first)
        stack: list[_Tok] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                if stack:
                    raise self.error(f"unterminated '{stack[-1].text}' in attribute '{key}'",
                                     stack[-1])
                break
            if not stack and self.i > start and (tok.space or (tok.kind == "p" and tok.text in ",)]}")):
                break
            if stack and tok.line != self.toks[self.i - 1].line and self.looks_like_instruction():
                raise self.error(f"unterminated '{stack[-1].text}' in attribute '{key}'", stack[-1])
            if tok.kind == "p":
                if tok.text in _OPEN_CLOSE:
                    if len(stack) > _MAX_DEPTH:
                        raise self.error("attribute value nested too deeply", tok)
                    stack.append(tok)
                elif tok.text in ")]}":
                    if _OPEN_CLOSE[stack[-1].text] != tok.text:
                        raise self.error(f"'{tok.text}' does not match '{stack[-1].text}' at "
                                         f"{stack[-1].line}:{stack[-1].col}", tok)
                    opener = stack.pop()
                    if not stack and opener.line != tok.line and \
                            tok.line != self.toks[self.i - 1].line:
                        self.open_group = (key, opener)  # '}' alone on its line: suspicious
            self.i += 1
        return start, self.i

    def looks_like_instruction(self) -> bool:
        """At a line start: ``ROOT ...`` or ``name = <shape>`` (to diagnose unclosed braces)."""
        t0, t1, t2 = self.peek(), self.peek(1), self.peek(2)
        if t0.kind != "word":
            return False
        if t0.text == "ROOT" and t1.kind == "word":
            return True
        return t1.text == "=" and t1.kind == "p" and (
            (t2.kind == "word" and t2.text in ELEMENT_TYPES and self.at("[", 3)) or
            (t2.kind == "p" and t2.text == "("))

    # ---------------------------------------------------------------- literals
    def constant_literal(self, shape: Shape, attrs: dict[str, Any]):
        if self.at("{") and self.at("...", 1) and self.at("}", 2):
            log.warning("%s:%d: constant literal elided as {...}; its value is unknown",
                        self.file or "<hlo>", self.peek().line)
            self.i += 3
            attrs["literal_elided"] = True
            return None
        if shape.is_tuple:
            if self.at("(") and not (self.peek(1).kind == "word" and
                                     self.peek(1).text in ELEMENT_TYPES and self.at("[", 2)):
                self.next()
                val = self.tuple_literal(shape)
                self.expect(")", " to close the tuple literal")
                return val
            return self.tuple_literal(shape)
        return self.array_literal(shape)

    def tuple_literal(self, shape: TupleShape) -> tuple:
        vals = []
        for k, sub in enumerate(shape.elements):
            if k:
                self.expect(",", " between tuple literal elements")
            if sub.is_tuple:
                self.skip_literal_shape()
                self.expect("(", " to open a nested tuple literal")
                vals.append(self.tuple_literal(sub))
                self.expect(")", " to close the nested tuple literal")
            else:
                vals.append(self.array_literal(sub))
        return tuple(vals)

    def skip_literal_shape(self) -> None:
        tok = self.peek()
        if tok.kind == "word" and tok.text in ELEMENT_TYPES and self.at("[", 1):
            self.shape(0, layout="none")

    def array_literal(self, shape: ArrayShape) -> np.ndarray:
        self.skip_literal_shape()  # old style "f32[2] {1, 2}"
        tok0 = self.peek()
        dt = ELEMENT_TYPES.get(shape.element_type)
        if dt is None:
            raise self.error(f"a constant cannot have type {shape.element_type}[]", tok0)
        leaves: list[Any] = []
        self.literal_level(shape.dims, 0, leaves, dt)
        try:
            return _to_array(leaves, dt, shape.dims)
        except _LiteralError as e:
            raise self.error(str(e.args[0]), e.args[1]) from None

    def literal_level(self, dims, d: int, leaves: list, dt: np.dtype) -> None:
        if d == len(dims):
            leaves.append(self.scalar(dt))
            return
        open_tok = self.expect("{", f" to open dimension {d} ({dims[d]} elements) of the literal")
        for k in range(dims[d]):
            if k:
                if self.at("}"):
                    raise self.error(f"literal has {k} elements in dimension {d}, shape says "
                                     f"{dims[d]}", open_tok)
                self.expect(",", " between literal elements")
            self.literal_level(dims, d + 1, leaves, dt)
        if self.at(","):
            raise self.error(f"literal has more than {dims[d]} elements in dimension {d}")
        self.expect("}", f" to close dimension {d} of the literal")

    def scalar(self, dt: np.dtype):
        if dt.kind == "c":
            self.expect("(", " to open a complex value (re, im)")
            parts = []
            for k in range(2):
                if k:
                    self.expect(",", " in a complex value (re, im)")
                text, tok = self.scalar(np.dtype(np.float64))
                try:
                    parts.append(_scalar_value(text, tok, np.dtype(np.float64)))
                except _LiteralError as e:
                    raise self.error(str(e.args[0]), tok) from None
            self.expect(")", " to close a complex value")
            return complex(parts[0], parts[1]), tok
        tok = self.peek()
        if tok.kind != "word":
            raise self.error(f"expected a literal value, found {self._desc(tok)}", tok)
        self.i += 1
        if tok.text.lstrip("-+").lower() == "nan" and self.at("(") and not self.peek().space:
            self.skip_group()  # nan(0x...) payload
        return tok.text, tok

    def skip_group(self) -> None:
        self.next()
        self.skip_balanced_until(")")
        self.next()


class _LiteralError(Exception):
    pass


def _scalar_value(text: str, tok, dt: np.dtype):
    low = text.lower()
    if dt.kind == "b":
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise _LiteralError(f"expected true/false, found {text!r}", tok)
    if dt.kind in "iu" or dt in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4),
                                 np.dtype(ml_dtypes.int2), np.dtype(ml_dtypes.uint2)):
        if _INT_RE.match(text):
            val = int(text)
        elif _HEXF_RE.match(text) and "." not in text and "p" not in low:
            val = int(text, 16)
        elif low in ("true", "false"):
            val = int(low == "true")
        else:
            raise _LiteralError(f"expected an integer literal, found {text!r}", tok)
        info = ml_dtypes.iinfo(dt)
        if not info.min <= val <= info.max:
            raise _LiteralError(f"integer {val} out of range for {dt.name}", tok)
        return val
    sign = -1.0 if low.startswith("-") else 1.0
    body = low.lstrip("-+")
    if body in ("inf", "infinity"):
        return sign * math.inf
    if body == "nan":
        return math.copysign(math.nan, sign)
    if _INT_RE.match(text) or _FLOAT_RE.match(text):
        return float(text)
    if _HEXF_RE.match(text):
        try:
            return float.fromhex(text)
        except (ValueError, OverflowError):
            pass
    raise _LiteralError(f"expected a floating-point literal, found {text!r}", tok)


def _to_array(leaves: list, dt: np.dtype, dims: tuple[int, ...]) -> np.ndarray:
    """Convert (text, token) leaves to an array of ``dt`` and shape ``dims``."""
    if dt.kind == "c":
        vals = [v for v, _ in leaves]
        return np.array(vals, dtype=dt).reshape(dims)
    vals = [_scalar_value(t, tok, dt) for t, tok in leaves]
    if dt.kind == "b":
        return np.array(vals, dtype=np.bool_).reshape(dims)
    if vals and isinstance(vals[0], int) and not isinstance(vals[0], bool):
        if dt.kind in "iu":
            return np.array(vals, dtype=dt).reshape(dims)
        return np.array(vals, dtype=np.int64).astype(dt).reshape(dims)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(vals, dtype=np.float64).astype(dt).reshape(dims)


class _Values:
    """Interprets the tokens [a, b) of one attribute value."""

    def __init__(self, p: _Parser, a: int, b: int):
        self.p, self.a, self.b = p, a, b
        self.toks = p.toks[a:b]
        self.raw = p.text[self.toks[0].start:self.toks[-1].end]
        self.k = 0

    def err(self, msg: str, tok: _Tok | None = None) -> HloParseError:
        if tok is None:
            tok = self.toks[self.k] if self.k < len(self.toks) else self.toks[-1]
        return self.p.error(msg, tok)

    def peek(self) -> _Tok | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def take(self, text: str | None = None, what: str = "") -> _Tok:
        tok = self.peek()
        if tok is None or (text is not None and (tok.kind == "str" or tok.text != text)):
            found = "end of value" if tok is None else repr(tok.text)
            raise self.err(f"expected {what or repr(text)}, found {found}")
        self.k += 1
        return tok

    def done(self, key: str) -> None:
        if self.k != len(self.toks):
            raise self.err(f"unexpected {self.toks[self.k].text!r} in attribute '{key}'")

    def int_(self, what: str = "integer") -> int:
        tok = self.take(None, what)
        return self.p.int_tok(tok, what)

    def interpret(self, key: str, refs: list | None) -> Any:
        if key in _COMP_KEYS or key in _INSTR_REF_KEYS:
            names = self.name_list(key)
            if refs is not None:
                kind = "comp" if key in _COMP_KEYS else "instr"
                refs.extend((kind, n, t) for n, t in names)
            vals = tuple(n for n, _ in names)
            single = self.toks[0].text != "{"
            return vals[0] if single else vals
        if key == "slice":
            return self.slices()
        if key == "padding":
            return self.padding()
        if key == "window":
            return self.window()
        if key == "metadata":
            return self.metadata()
        if key in _STR_LIST_KEYS and self.toks[0].text == "{":
            self.take("{")
            out = []
            while self.peek() is not None and self.peek().text != "}":
                if out:
                    self.take(",")
                out.append(self.take(None, "precision name").text)
            self.take("}")
            self.done(key)
            return tuple(out)
        return self.generic()

    def generic(self) -> Any:
        if len(self.toks) == 1:
            return _scalar_attr(self.toks[0], self.raw)
        if self.toks[0].text == "{" and self.toks[0].kind == "p":
            val = self.int_tuple()
            if val is not None and self.k == len(self.toks):
                return val
        return self.raw

    def int_tuple(self):
        """``{1,2}`` / ``{{0,1},{2}}`` / ``{true,false}`` -> tuples, else None."""
        self.take("{")
        out: list[Any] = []
        while True:
            tok = self.peek()
            if tok is None:
                return None
            if tok.text == "}" and tok.kind == "p" and not out:
                self.k += 1
                return ()
            if tok.text == "{" and tok.kind == "p":
                sub = self.int_tuple()
                if sub is None:
                    return None
                out.append(sub)
            elif tok.kind == "word" and (_INT_RE.match(tok.text) or tok.text in ("true", "false")):
                self.k += 1
                out.append(int(tok.text) if _INT_RE.match(tok.text) else tok.text == "true")
            else:
                return None
            tok = self.peek()
            if tok is None or tok.kind != "p" or tok.text not in ",}":
                return None
            self.k += 1
            if tok.text == "}":
                return tuple(out)

    def name_list(self, key: str) -> list[tuple[str, _Tok]]:
        out = []
        if self.peek().text == "{" and self.peek().kind == "p":
            self.take("{")
            while self.peek() is not None and self.peek().text != "}":
                if out:
                    self.take(",")
                out.append(self.one_name(key))
            self.take("}")
        else:
            out.append(self.one_name(key))
        self.done(key)
        return out

    def one_name(self, key: str) -> tuple[str, _Tok]:
        tok = self.take(None, "a name")
        if tok.kind != "word" or not _NAME_RE.match(tok.text):
            raise self.err(f"expected a name in attribute '{key}', found {tok.text!r}", tok)
        return tok.text.lstrip("%"), tok

    def slices(self) -> tuple:
        self.take("{")
        out = []
        while self.peek() is not None and self.peek().text != "}":
            if out:
                self.take(",")
            self.take("[", what="'[' to open a slice range")
            vals = [self.int_("slice start")]
            while self.peek() is not None and self.peek().text == ":":
                self.k += 1
                vals.append(self.int_("slice bound"))
            if len(vals) not in (2, 3):
                raise self.err("slice range must be [start:limit] or [start:limit:stride]")
            self.take("]", what="']' to close the slice range")
            out.append((vals[0], vals[1], vals[2] if len(vals) == 3 else 1))
        self.take("}")
        self.done("slice")
        return tuple(out)

    def _dims_x(self, tok: _Tok, parts: int, what: str) -> tuple:
        """``1_2_0x3_-1_1`` -> ((1,2,0),(3,-1,1)); ``parts`` = allowed group sizes."""
        out = []
        for chunk in tok.text.split("x"):
            nums = chunk.split("_")
            if len(nums) not in parts or not all(_INT_RE.match(n) for n in nums):
                raise self.err(f"malformed {what} {tok.text!r}", tok)
            out.append(tuple(int(n) for n in nums))
        return tuple(out)

    def padding(self) -> tuple:
        tok = self.take(None, "padding")
        self.done("padding")
        if tok.kind != "word":
            raise self.err(f"malformed padding {tok.text!r}", tok)
        return tuple(d if len(d) == 3 else d + (0,) for d in self._dims_x(tok, (2, 3), "padding"))

    def window(self):
        self.take("{")
        fields: dict[str, tuple] = {}
        while self.peek() is not None and self.peek().text != "}":
            ktok = self.take(None, "window field")
            self.take("=")
            vtok = self.take(None, "window field value")
            key = {"rhs_reversal": "window_reversal"}.get(ktok.text, ktok.text)
            if key in fields or vtok.kind != "word":
                raise self.err(f"bad window field {ktok.text!r}", ktok)
            if key == "pad":
                fields[key] = self._dims_x(vtok, (2,), "window pad")
            elif key in ("size", "stride", "lhs_dilate", "rhs_dilate", "window_reversal"):
                vals = tuple(v[0] for v in self._dims_x(vtok, (1,), f"window {key}"))
                fields[key] = tuple(bool(v) for v in vals) if key == "window_reversal" else vals
            else:
                raise self.err(f"unknown window field {ktok.text!r}", ktok)
        self.take("}")
        self.done("window")
        n = len(fields.get("size", ()))
        for k, v in fields.items():
            if len(v) != n:
                raise self.err(f"window field '{k}' has {len(v)} dims but size has {n}", self.toks[0])
        res = {"size": (), "stride": (1,) * n, "pad": ((0, 0),) * n, "lhs_dilate": (1,) * n,
               "rhs_dilate": (1,) * n, "window_reversal": (False,) * n}
        res.update(fields)
        return MappingProxyType(res)

    def metadata(self):
        self.take("{")
        out: dict[str, Any] = {}
        while self.peek() is not None and self.peek().text != "}":
            ktok = self.take(None, "metadata key")
            self.take("=")
            tok = self.peek()
            if tok is None:
                raise self.err("expected metadata value")
            if tok.kind == "p" and tok.text in _OPEN_CLOSE:
                start, depth = self.k, 0
                while True:  # balanced group (already checked by value_span)
                    t = self.take(None, "'}'")
                    depth += (t.kind == "p" and t.text in _OPEN_CLOSE) - \
                        (t.kind == "p" and t.text in ")]}")
                    if depth == 0:
                        break
                out[ktok.text] = self.p.text[self.toks[start].start:t.end]
            else:
                self.k += 1
                out[ktok.text] = _scalar_attr(tok, tok.text)
        self.take("}")
        self.done("metadata")
        return MappingProxyType(out)


def _scalar_attr(tok: _Tok, raw: str) -> Any:
    if tok.kind == "str":
        return _unescape(tok.text)
    text = tok.text
    if _INT_RE.match(text):
        return int(text)
    if text in ("true", "false"):
        return text == "true"
    if _FLOAT_RE.match(text):
        return float(text)
    if _NAME_RE.match(text):
        return text
    return raw


def parse_hlo(text: str, file: str | None = None) -> HloModule:
    """Parse HLO module text; raises :class:`HloParseError` (with line/column) on any problem."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise HloParseError(f"HLO text is not UTF-8: {e}", file=file) from None
    if not isinstance(text, str):
        raise HloParseError(f"expected HLO text (str), got {type(text).__name__}", file=file)
    text = text.lstrip("\ufeff")
    parser = None
    try:
        parser = _Parser(text, file)
        return parser.parse_module()
    except HloParseError:
        raise
    except Exception as e:  # a parser bug: still report it as a located parse error
        log.debug("internal HLO parser error", exc_info=True)
        tok = parser.peek() if parser is not None else None
        msg = f"internal parser error ({type(e).__name__}: {e})"
        if tok is None:
            raise HloParseError(msg, file=file) from e
        raise parser.error(msg, tok) from e


def load_hlo_file(path: str | os.PathLike) -> HloModule:
    """Read and parse an HLO text file (``.hlo``/``.txt``)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise HloParseError(f"cannot read HLO file: {e.strerror or e}", file=path) from None
    return parse_hlo(data, file=path)
