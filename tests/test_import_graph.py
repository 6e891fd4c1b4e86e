"""The package's import graph, read with ``ast`` (imports inside functions included): the layers
import one way (frontend and schedules use dsl; runtime uses those; autotune uses all of them;
hlotune sits on top) and no module imports, directly or through others, a module that imports
it back."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: top folder -> its package name, and the layers each may import
PACKAGES = {"dsl": "hlotune.dsl", "frontend": "hlotune.frontend", "schedules": "hlotune.schedules",
            "runtime": "hlotune.runtime", "autotune": "hlotune.autotune", "hlotune": "hlotune"}
ALLOWED = {"dsl": {"dsl"}, "frontend": {"frontend", "dsl"}, "schedules": {"schedules", "dsl"},
           "runtime": {"runtime", "schedules", "dsl"},
           "autotune": {"autotune", "runtime", "schedules", "frontend", "dsl"},
           "hlotune": set(PACKAGES)}


def _modules() -> dict[str, Path]:
    out = {}
    for top, pkg in PACKAGES.items():
        for f in (ROOT / top).rglob("*.py"):
            rel = f.relative_to(ROOT / top).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = f
    return out


def _layer(mod: str) -> str:
    rest = mod.removeprefix("hlotune.")
    head = rest.split(".")[0] if mod != "hlotune" else "hlotune"
    return head if head in PACKAGES and mod.startswith(PACKAGES[head]) else "hlotune"


def _imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """The hlotune modules ``mod`` imports anywhere in its file (resolving relative imports)."""
    is_pkg = path.name == "__init__.py"
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for stmt in block.body for n in ast.walk(stmt)}      # never run: no runtime edge
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            for n in names:     # 'from . import x' imports the module x
                if n in known:
                    out.add(n)
                    break
            else:
                if target in known:
                    out.add(target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
    out.discard(mod)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def test_layers_import_one_way():
    bad = [(m, d) for m, deps in _graph().items() for d in deps if _layer(d) not in ALLOWED[_layer(m)]]
    assert not bad, "\n".join(f"{m} imports {d} ({_layer(m)} may not use {_layer(d)})" for m, d in sorted(bad))


def test_no_import_cycles_not_even_inside_functions():
    g = _graph()
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def strong(v, counter=[0]):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    import sys
    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            strong(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
