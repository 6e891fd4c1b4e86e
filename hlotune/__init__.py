"""hlotune: HLO in, tuned kernels out.

Public API: the DSL (``hlotune.dsl``), ``Schedule``, ``build``; modules: ``load_hlo``,
``compile``, ``tune``, ``report``, ``export_library``/``load_library`` (a tuned module as a
library that runs without Python or a compiler); from TensorFlow/Keras and PyTorch:
``from_tensorflow``, ``from_keras``, ``from_torch``; from JAX: ``jit`` (hlotune's ``jax.jit``) and ``jax_op``
(tuned kernels inside the user's ``jax.jit``); errors in ``hlotune.errors``.
"""

from __future__ import annotations

import logging

from . import dsl
from .dsl import errors
from .dsl.errors import (
    CompileError,
    ConfigError,
    DSLError,
    HloParseError,
    HlotuneError,
    KernelArgumentError,
    ScheduleError,
    UnsupportedOpError,
)
from .runtime.build import Kernel, build
from .runtime.targets import Target, get_target
from .schedules.schedule import Schedule

_LAZY = {"load_hlo": "api", "compile": "api", "tune": "api", "report": "api", "Module": "api",
         "CompiledModule": "api", "jit": "api", "jax_op": "jaxop", "export_library": "api", "load_library": "api",
         "from_tensorflow": "frameworks", "from_keras": "frameworks", "from_torch": "frameworks"}


def __getattr__(name):
    # the HLO front-end (and JAX) load on first use, so `import hlotune` stays light
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'hlotune' has no attribute '{name}'")


def _version() -> str:
    """pyproject.toml's version, as installed (the one source of the version)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("hlotune")
    except PackageNotFoundError:     # run from a source tree that was never installed
        return "0+unknown"


logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = _version()
__all__ = [
    "CompileError",
    "CompiledModule",
    "ConfigError",
    "DSLError",
    "HloParseError",
    "HlotuneError",
    "Kernel",
    "KernelArgumentError",
    "Module",
    "Schedule",
    "ScheduleError",
    "Target",
    "UnsupportedOpError",
    "build",
    "compile",
    "dsl",
    "errors",
    "export_library",
    "from_keras",
    "from_tensorflow",
    "from_torch",
    "get_target",
    "jax_op",
    "jit",
    "load_hlo",
    "load_library",
    "report",
    "tune",
]
