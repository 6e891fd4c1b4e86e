"""Backends by device kind: the one place where a kind ('cpu', 'opencl', 'cuda') is mapped to
the object that renders, compiles, loads, measures and describes its kernels.

Adding a device: a module with a ``Backend`` subclass (see ``base.py``) and one line in
``BUILTIN`` (or ``register(MyBackend())`` at run time, as tests/test_backends.py does).
"""

from __future__ import annotations

from importlib import import_module

from ...dsl.errors import TargetError
from .base import Backend, Runner

#: kind -> "module:class" of the backends that ship with hlotune (imported on first use)
BUILTIN = {"cpu": ".cpu:CPUBackend", "opencl": ".opencl:OpenCLBackend", "cuda": ".cuda:CUDABackend"}

_REGISTRY: dict[str, Backend] = {}
_ALIASES: dict[str, str] = {}


def register(b: Backend) -> Backend:
    """Make backend ``b`` available under its kind and aliases (replacing one of that kind)."""
    _REGISTRY[b.kind] = b
    for a in b.aliases:
        _ALIASES[a] = b.kind
    return b


def kinds() -> tuple[str, ...]:
    """Every kind a target may have."""
    return tuple(dict.fromkeys([*BUILTIN, *_REGISTRY]))


def backend(x) -> Backend:
    """The backend of ``x``: a kind (or alias), a target spec ``kind[:...]`` or a Target."""
    kind = getattr(x, "kind", None) or str(x).strip().split(":")[0].lower()
    kind = _ALIASES.get(kind, kind)
    if kind not in _REGISTRY and kind in BUILTIN:
        mod, cls = BUILTIN[kind].split(":")
        register(getattr(import_module(mod, __name__), cls)())
    if kind not in _REGISTRY:
        raise TargetError(f"unknown target '{x}'; expected one of {', '.join(kinds())} (e.g. 'cpu', "
                          "'opencl[:P:D|:NAME]', 'cuda[:N]')")
    return _REGISTRY[kind]


__all__ = ["BUILTIN", "Backend", "Runner", "backend", "kinds", "register"]
