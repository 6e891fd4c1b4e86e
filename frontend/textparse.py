"""Machinery shared by the hand-written HLO (:mod:`.parser`) and StableHLO (:mod:`.stablehlo`)
parsers: tokens, the lexer loop, a token cursor, located :class:`HloParseError` s with a caret
context, and the entry and file-reading wrappers. Each parser keeps its token regex and grammar.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..dsl.errors import HloParseError, InternalError

__all__ = ["TextParser", "Tok", "caret_context", "read_source", "run_parser"]

_INT_RE = re.compile(r"-?[0-9]{1,40}\Z")  # bounded: int() of a huge string raises

P = TypeVar("P", bound="TextParser")
T = TypeVar("T")


class Tok(NamedTuple):
    kind: str      # the name of the token regex's group that matched, or 'eof'
    text: str
    start: int
    end: int
    line: int
    col: int
    space: bool    # whitespace or a comment precedes it


def caret_context(lines: list[str], line: int, col: int) -> str:
    """Source line ``line`` (1-based) of ``lines`` and a caret under column ``col``."""
    if not 1 <= line <= len(lines):
        return ""
    src, col0 = lines[line - 1].rstrip("\r"), max(col - 1, 0)
    if len(src) > 160:  # show a window around the column
        lo = max(0, col0 - 80)
        src, col0 = ("..." if lo else "") + src[lo:lo + 160], col0 - lo + (3 if lo else 0)
    return src + "\n" + "".join(c if c == "\t" else " " for c in src[:col0]) + "^"


def unescape(raw: str) -> str:
    """Decode a C-escaped string token (quotes included)."""
    simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
    return re.sub(r"\\(.)", lambda m: simple.get(m.group(1), m.group(1)), raw[1:-1], flags=re.DOTALL)


class TextParser:
    """Source text, its tokens and a cursor over them.

    Subclasses set :attr:`token_re` (named groups; a group's name is the token kind),
    :attr:`skip_kinds` (whitespace/comment groups), :attr:`keyword_kinds` (the kinds that
    :meth:`at` matches by text) and :meth:`bad_char`. ``toks[limit]`` reads as ``stop`` (an
    'eof' token) and so does everything after it: a subclass may narrow them to parse a range of
    tokens as if it were the whole input.
    """

    token_re: re.Pattern
    skip_kinds: frozenset[str] = frozenset()
    keyword_kinds: frozenset[str] = frozenset()

    def __init__(self, text: str, file: str | None):
        self.text, self.file = text, file
        self.lines = text.split("\n")
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.toks = self.lex()
        self.i = 0
        self.limit = len(self.toks) - 1          # index of the token acting as end of input
        self.stop = self.toks[-1]

    # ------------------------------------------------------------ errors / lexer
    def _loc(self, offset: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.line_starts, offset)
        return ln, offset - self.line_starts[ln - 1] + 1

    def error_at(self, msg: str, line: int, col: int) -> HloParseError:
        return HloParseError(msg, file=self.file, line=line, column=col,
                             context=caret_context(self.lines, line, col))

    def error(self, msg: str, tok: Tok | None = None) -> HloParseError:
        tok = tok or self.peek()
        return self.error_at(msg, tok.line, tok.col)

    def desc(self, tok: Tok) -> str:
        if tok.kind == "eof":
            return "end of input" if self.limit == len(self.toks) - 1 else "end of value"
        return repr(tok.text[:40])

    def bad_char(self, pos: int) -> str:
        """What is wrong at ``pos``, where no token matches."""
        return f"unexpected character {self.text[pos]!r}"

    def lex(self) -> list[Tok]:
        """All tokens of the text, then an 'eof' token."""
        text, toks, pos, space, match = self.text, [], 0, True, self.token_re.match
        while pos < len(text):
            m = match(text, pos)
            if m is None:
                raise self.error_at(self.bad_char(pos), *self._loc(pos))
            if m.lastgroup in self.skip_kinds:
                space = True
            else:
                toks.append(Tok(m.lastgroup, m.group(), pos, m.end(), *self._loc(pos), space))
                space = False
            pos = m.end()
        toks.append(Tok("eof", "", len(text), len(text), *self._loc(len(text)), True))
        return toks

    # ----------------------------------------------------------- token helpers
    def peek(self, k: int = 0) -> Tok:
        idx = self.i + k
        return self.toks[idx] if idx < self.limit else self.stop

    def next(self) -> Tok:
        tok = self.peek()
        self.i += tok.kind != "eof"
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.text == text and tok.kind in self.keyword_kinds

    def accept(self, text: str) -> bool:
        ok = self.at(text)
        self.i += ok
        return ok

    def expect(self, text: str, what: str = "") -> Tok:
        if not self.at(text):
            raise self.error(f"expected '{text}'{what}, found {self.desc(self.peek())}")
        return self.next()

    def take(self, kind: str, what: str) -> Tok:
        if self.peek().kind != kind:
            raise self.error(f"expected {what}, found {self.desc(self.peek())}")
        return self.next()

    def int_(self, what: str = "an integer") -> int:
        tok = self.peek()
        if tok.kind != "word" or not _INT_RE.match(tok.text):
            raise self.error(f"expected {what}, found {self.desc(tok)}", tok)
        return int(self.next().text)

    def items(self, item: Callable[[], Any], closer: str, what: str) -> list:
        """``item (',' item)* closer`` (possibly empty); consumes the closer."""
        out = []
        if not self.at(closer):
            out.append(item())
            while self.accept(","):
                out.append(item())
        self.expect(closer, f" to close {what}")
        return out


def run_parser(parser_cls: Callable[[str, str | None], P], parse: Callable[[P], T],
               text: Any, file: str | None, *, what: str, logger: logging.Logger,
               passthrough: tuple[type[BaseException], ...] = (HloParseError,)) -> T:
    """``parse(parser_cls(text, file))`` for ``what`` text (str or UTF-8 bytes). Exceptions in
    ``passthrough`` propagate; any other (a parser bug) becomes a located :class:`HloParseError`."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise HloParseError(f"{what} text is not UTF-8: {e}", file=file) from None
    if not isinstance(text, str):
        raise HloParseError(f"expected {what} text (str), got {type(text).__name__}", file=file)
    parser = None
    try:
        parser = parser_cls(text.lstrip("\ufeff"), file)
        return parse(parser)
    except passthrough:
        raise
    except Exception as e:  # noqa: BLE001  (a parser bug: reported as one, with where it stopped)
        logger.debug("internal %s parser error", what, exc_info=True)
        line = getattr(parser.peek(), "line", None) if parser is not None else None
        raise InternalError(f"parsing {what} text", e, line=line, file=file) from e


def read_source(path: str | os.PathLike, what: str) -> tuple[str, bytes]:
    """``(os.fspath(path), its bytes)``; an unreadable file raises :class:`HloParseError`
    ("cannot read ``what`` file"). Decoding is left to the parser, whose error names the format."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            return path, f.read()
    except OSError as e:
        raise HloParseError(f"cannot read {what} file: {e.strerror or e}", file=path) from None
