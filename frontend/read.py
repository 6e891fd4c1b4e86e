"""One entry for module text: XLA HLO text or StableHLO (MLIR) text, told apart by content.

StableHLO is what ``jax.jit(f).lower(x).as_text()`` prints: its first token is ``module``,
``func.func`` or an ``#alias``; HLO text starts with ``HloModule``. Anything else goes by the
file name (``.mlir``: StableHLO), else to the HLO parser (and its error messages).
"""

from __future__ import annotations

import os
import re

from .ast import HloModule
from .parser import parse_hlo
from .stablehlo import parse_stablehlo
from .textparse import read_source

__all__ = ["is_stablehlo", "load_module_file", "parse_module_text"]

_FIRST_TOKEN = re.compile(r'(?:\s|//[^\n]*)*("?[\w.$#]+)')


def is_stablehlo(text: str | bytes, file: str | os.PathLike | None = None) -> bool:
    """Whether ``text`` is StableHLO rather than HLO text."""
    head = text[:4096]
    if isinstance(head, (bytes, bytearray)):
        head = bytes(head).decode("utf-8", errors="replace")
    m = _FIRST_TOKEN.match(str(head).lstrip("\ufeff"))
    first = m[1] if m else ""
    if first == "HloModule":
        return False
    if first in ("module", "func.func") or first.startswith("#"):
        return True
    return file is not None and os.fspath(file).endswith(".mlir")


def parse_module_text(text: str | bytes, file: str | None = None) -> HloModule:
    """Parse HLO or StableHLO text (see :func:`is_stablehlo`) into the HLO AST. Raises
    :class:`HloParseError` (with file, line and column), and for StableHLO ops that have no
    lowering :class:`UnsupportedOpError`."""
    if isinstance(text, (str, bytes, bytearray)) and is_stablehlo(text, file):
        return parse_stablehlo(text, file)
    return parse_hlo(text, file)


def load_module_file(path: str | os.PathLike) -> HloModule:
    """Read and parse an HLO (``.hlo``/``.txt``) or StableHLO (``.mlir``) file."""
    path, data = read_source(path, "module")
    return parse_module_text(data, file=path)
