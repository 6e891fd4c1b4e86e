"""hlotune: HLO in, tuned kernels out.

Public API: the DSL (``hlotune.dsl``), ``Schedule``, ``build``; errors in ``hlotune.errors``.
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


def __getattr__(name):
    # the HLO front-end loads on first use, so `import hlotune` stays light
    if name in ("load_hlo", "compile", "tune", "report", "Module", "CompiledModule"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'hlotune' has no attribute '{name}'")

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"
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
    "get_target",
    "load_hlo",
    "report",
    "tune",
]
