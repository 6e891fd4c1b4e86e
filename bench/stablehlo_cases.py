"""StableHLO's interpreter tests (``stablehlo/tests/interpret/*.mlir``) as runnable modules.

A file holds cases separated by ``// -----``. A case is a function without arguments whose
``check.expect_*`` ops compare values with constants or with each other. :func:`harness` turns
one case into a StableHLO module whose ``@main`` returns every checked value (the ``check`` ops
removed) plus :class:`Check` records saying how to compare them; :func:`compare` applies the
check dialect's rules (``stablehlo/tests/CheckOps.cpp``):

* ``expect_eq[_const]``: elementwise ``==`` (a NaN never equals, as ``APFloat ==``);
* ``expect_almost_eq[_const]``: equal, both NaN, or finite within ``tolerance`` (default 1e-4,
  absolute; complex: each part);
* ``expect_close``: at most ``max_ulp_difference`` ulps apart (and at least the minimum).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Case", "Check", "HarnessError", "compare", "harness", "queue_module", "split_cases"]

_OPEN = {"<": ">", "[": "]", "(": ")", "{": "}"}
_CHECK_RE = re.compile(r"\bcheck\.(expect_\w+)\b")
_FUNC_RE = re.compile(r"func\.func\s+(?:public\s+|private\s+)?@([\w$.\-]+)\s*\(")
_RUN_PARALLEL_RE = re.compile(r'"interpreter\.run_parallel"\s*(\([^)]*\))\s*(\{[^}]*\})\s*:')


class HarnessError(Exception):
    """A case that cannot be turned into a module with results (the message says why)."""


@dataclass(frozen=True)
class Case:
    """One test of a file: a test function (one with check ops) of a ``// -----`` section
    (comments blanked), or a section without any; ``line``: where the function (section) starts."""

    file: str
    index: int
    text: str
    line: int
    func: str = ""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.index}" + (f" @{self.func}" if self.func else "")

    @property
    def kind(self) -> str:
        """'single' (a check case on one device), 'multi-device' (``run_parallel`` over several
        programs), 'single-run-parallel' (``run_parallel`` over one program: one device, fed by
        the interpreter's infeed/outfeed queues), 'probe' or 'no-check'."""
        if "interpreter.run_parallel" in self.text:
            m = re.search(r"programs\s*=\s*(\[\[.*?\]\])", self.text, re.DOTALL)
            return "multi-device" if m is None or m[1].count("@") > 1 else "single-run-parallel"
        if "expect_serialized_eq" in self.text or "interpreter.probe" in self.text:
            return "probe"
        return "single" if _CHECK_RE.search(self.text) else "no-check"


def _blank_comments(text: str) -> str:
    """``text`` with every ``//`` comment replaced by spaces (offsets and lines kept)."""
    return re.sub(r"//[^\n]*", lambda m: " " * len(m[0]), text)


def _functions(text: str) -> list[tuple[str, int, int, int]]:
    """``(name, header start, body '{', body end)`` of each ``func.func`` in ``text``."""
    out = []
    for h in _FUNC_RE.finditer(text):
        body_open = text.index("{", _balanced_end(text, h.end() - 1))
        out.append((h[1], h.start(), body_open, _balanced_end(text, body_open)))
    return out


def split_cases(file: str, text: str) -> list[Case]:
    """The tests of ``text``: its ``// -----`` sections, each split by test function when it
    holds several functions with checks (the interpreter runs each)."""
    out, start = [], 0
    parts = re.split(r"^// -----[^\n]*$", text, flags=re.MULTILINE)
    for k, part in enumerate(parts):
        part = _blank_comments(part)
        line = 1 + start
        start += part.count("\n")
        tests = [(f[0], line + part.count("\n", 0, f[1])) for f in _functions(part)
                 if _CHECK_RE.search(part, f[2], f[3])]
        out += [Case(file, k, part, at, name) for name, at in tests] or [Case(file, k, part, line)]
    return out


@dataclass(frozen=True)
class Check:
    """One check: ``kind`` (eq, almost_eq, close), the position of the checked value among the
    module's results, and the expected value (an array, or the position of a second result)."""

    kind: str
    actual: int
    expected: object          # np.ndarray or int (a result index)
    tolerance: float = 1e-4
    max_ulp: int = 0
    min_ulp: int = 0


def _balanced_end(text: str, i: int) -> int:
    """Index just past the bracket group opening at ``text[i]``."""
    stack = []
    while i < len(text):
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
        elif c in _OPEN:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    raise HarnessError("unbalanced brackets")


def _statement_end(text: str, i: int) -> int:
    """End of the statement starting at ``i``: the first newline outside brackets."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
        elif c in "<[({" and not (c == "<" and text[i - 1] == "-"):
            depth += 1
        elif c in ">])}" and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
        elif c == "\n" and depth <= 0 and not text[:i].rstrip().endswith(","):
            return i
        i += 1
    return i


def _type_after(text: str, i: int) -> tuple[str, int]:
    """The type after the ``:`` at or after ``i``: (type text, end index)."""
    m = re.compile(r"\s*:\s*").match(text, i)
    if not m:
        raise HarnessError(f"expected ':' and a type in {text[i:i + 40]!r}")
    j = m.end()
    k = re.compile(r"[\w.!]+").match(text, j)
    if not k:
        raise HarnessError(f"expected a type in {text[j:j + 40]!r}")
    end = _balanced_end(text, k.end()) if text.startswith("<", k.end()) else k.end()
    return text[j:end], end


def _parse_check(op: str, stmt: str) -> dict:
    """The parts of one check statement (after ``check.<op>``)."""
    m = re.match(r"\s*(%[\w#$.\-]+)\s*,\s*", stmt)
    if not m:
        raise HarnessError(f"check.{op}: expected the checked value")
    out = {"lhs": m[1]}
    rest = stmt[m.end():]
    tol = re.search(r"tolerance\s*=\s*([-+0-9.eE]+)", rest)
    if tol:
        out["tolerance"] = float(tol[1])
    for key in ("max_ulp_difference", "min_ulp_difference"):
        u = re.search(key + r"\s*=\s*([0-9]+)", rest)
        if u:
            out[key] = int(u[1])
    if op.endswith("_const"):
        d = re.match(r"(dense|array)<", rest)
        if not d:
            raise HarnessError(f"check.{op}: expected a dense<...> literal")
        end = _balanced_end(rest, d.end() - 1)
        out["literal"] = rest[:end]
        out["type"], _ = _type_after(rest, end)
    else:
        r = re.match(r"(%[\w#$.\-]+)", rest)
        if not r:
            raise HarnessError(f"check.{op}: expected a second value")
        out["rhs"] = r[1]
        colon = re.search(r":\s*(?=tensor<|[!\w])", rest)
        if not colon:
            raise HarnessError(f"check.{op}: expected the operand type")
        out["type"], _ = _type_after(rest, colon.start())
    return out


def _one_program(text: str) -> tuple[str, list[str]]:
    """``text`` with ``interpreter.run_parallel`` over one program replaced by a call of that
    program, and the functions whose results fill the infeed queue, in order."""
    queues: list[str] = []

    def call(m):
        programs = re.search(r"programs\s*=\s*\[\[\s*@([\w$.\-]+)\s*\]\]", m[2])
        if programs is None:
            raise HarnessError("run_parallel over several programs")
        feed = re.search(r"infeed\s*=\s*\[([^\]]*)\]", m[2])
        queues.extend(re.findall(r"@([\w$.\-]+)", feed[1]) if feed else [])
        return f"func.call @{programs[1]}{m[1]} :"
    return _RUN_PARALLEL_RE.sub(call, text), queues


def queue_module(case: Case) -> list[str]:
    """For a case that runs one program through ``run_parallel``: one module text per
    function feeding its infeed queue, that function as ``@main`` (the others dropped)."""
    text = case.text
    _, queues = _one_program(text)
    funcs = _functions(text)
    out = []
    for q in queues:
        f = next((f for f in funcs if f[0] == q), None)
        if f is None:
            raise HarnessError(f"no function @{q} for the infeed queue")
        out.append("func.func @main" + text[text.index("(", f[1]):f[3]] + "\n")
    return out


def harness(case: Case, parse_literal) -> tuple[str, list[Check]]:
    """The module text of ``case`` with ``@main`` (its test function) returning the checked
    values, and the checks; other test functions of the section are dropped. A
    ``run_parallel`` over one program becomes a call of that program (see
    :func:`queue_module` for its infeed queue).
    ``parse_literal(text, type)`` gives the numpy value of an expected ``dense<...>`` literal."""
    text = case.text
    funcs = _functions(text)
    tests = [f for f in funcs if _CHECK_RE.search(text, f[2], f[3])]
    test = next((f for f in tests if f[0] == case.func), None)
    if test is None and case.kind == "single-run-parallel":
        tests = [f for f in funcs if "interpreter.run_parallel" in text[f[2]:f[3]]][:1]
        test = tests[0] if tests else None
    if test is None:
        raise HarnessError("no test function with check ops")
    name, head, body_open, body_end = test
    if text[text.index("(", head):_balanced_end(text, text.index("(", head))].strip("() \n"):
        raise HarnessError("the test function takes arguments")
    if name != "main" and any(f[0] == "main" for f in funcs):
        raise HarnessError("another function is called @main")
    results: list[tuple[str, str]] = []    # (value, type)
    checks: list[Check] = []
    body = text[body_open:body_end]
    found = list(_CHECK_RE.finditer(body))

    def result(value: str, ty: str) -> int:
        results.append((value, ty))
        return len(results) - 1

    cuts = []
    if "interpreter.run_parallel" in body:
        body, _ = _one_program(body)
        found = list(_CHECK_RE.finditer(body))
    for f in found:
        end = _statement_end(body, f.end())
        parts = _parse_check(f[1], body[f.end():end])
        cuts.append((f.start(), end))
        kind = {"expect_eq": "eq", "expect_eq_const": "eq", "expect_almost_eq": "almost_eq",
                "expect_almost_eq_const": "almost_eq", "expect_close": "close"}.get(f[1])
        if kind is None:
            raise HarnessError(f"check.{f[1]} is not supported by the harness")
        actual = result(parts["lhs"], parts["type"])
        expected = parse_literal(parts["literal"], parts["type"]) if "literal" in parts \
            else result(parts["rhs"], parts["type"])
        checks.append(Check(kind, actual, expected, parts.get("tolerance", 1e-4),
                            parts.get("max_ulp_difference", 0), parts.get("min_ulp_difference", 0)))
    for s, e in reversed(cuts):
        body = body[:s] + body[e:]
    rets = list(re.finditer(r"\b(?:func\.)?return\b[^\n]*", body))
    if not rets:
        raise HarnessError("the test function has no return")
    r = rets[-1]
    types = ", ".join(t for _, t in results)
    ret = f"func.return {', '.join(v for v, _ in results)} : {types}" if results else "func.return"
    body = body[:r.start()] + ret + body[r.end():]
    pieces, pos = [], 0
    for f in funcs:
        if f is test:
            pieces += [text[pos:f[1]], f"func.func @main() -> ({types}) ", body]
            pos = f[3]
        elif f in tests:          # another test of the section: dropped
            pieces.append(text[pos:f[1]])
            pos = f[3]
    pieces.append(text[pos:])
    return "".join(pieces), checks


# ----------------------------------------------------------------------------- comparisons

def _parts(a: np.ndarray) -> list[np.ndarray]:
    a = np.asarray(a)
    return [a.real, a.imag] if a.dtype.kind == "c" else [a]


def _almost(f: np.ndarray, g: np.ndarray, tol: float) -> np.ndarray:
    """``areApproximatelyEqual`` of StableHLO's reference Element.cpp, elementwise."""
    f, g = f.astype(np.float64), g.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        nan_f, nan_g = np.isnan(f), np.isnan(g)
        finite = np.isfinite(f) & np.isfinite(g)
        close = finite & (np.abs(f - g) <= tol)
        return (f == g) | (nan_f & nan_g) | (~nan_f & ~nan_g & close)


def _ulps(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """ULP distance of same-typed floats (0 for equal bits or two NaNs; huge otherwise
    when either is not finite)."""
    bits = f.dtype.itemsize * 8
    u = np.dtype(f"u{f.dtype.itemsize}")
    mag = np.uint64((1 << (bits - 1)) - 1)
    fi, gi = f.view(u).astype(np.uint64), g.view(u).astype(np.uint64)
    fa, ga = fi & mag, gi & mag
    fneg, gneg = (fi >> np.uint64(bits - 1)) == 1, (gi >> np.uint64(bits - 1)) == 1
    dist = np.where(fneg != gneg, fa + ga, np.maximum(fa, ga) - np.minimum(fa, ga))
    nan = np.isnan(f.astype(np.float64)) & np.isnan(g.astype(np.float64))
    finite = np.isfinite(f.astype(np.float64)) & np.isfinite(g.astype(np.float64))
    return np.where(fi == gi, 0, np.where(nan, 0, np.where(finite, dist, np.iinfo(np.int64).max)))


def compare(check: Check, outputs: list[np.ndarray]) -> str | None:
    """None when ``check`` holds on ``outputs``, else what differs."""
    got = np.asarray(outputs[check.actual])
    want = np.asarray(outputs[check.expected]) if isinstance(check.expected, int) else check.expected
    if got.dtype != want.dtype:
        return f"result {check.actual} has dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"result {check.actual} has shape {got.shape}, expected {want.shape}"
    if check.kind == "eq":
        ok = np.ones(got.shape, bool)
        for a, b in zip(_parts(got), _parts(want)):
            ok &= np.asarray(a == b)
    elif check.kind == "almost_eq":
        ok = np.ones(got.shape, bool)
        for a, b in zip(_parts(got), _parts(want)):
            ok &= _almost(a, b, check.tolerance)
    else:
        d = _ulps(got, want)
        ok = (d >= check.min_ulp) & (d <= check.max_ulp)
    if np.all(ok):
        return None
    bad = np.argwhere(~ok)[0] if got.ndim else ()
    idx = tuple(int(i) for i in bad)
    return (f"result {check.actual} ({check.kind}) at {list(idx)}: got {got[idx]!r}, "
            f"expected {want[idx]!r}")
