"""hlotune: HLO in, tuned kernels out.

Public API: the DSL (``hlotune.dsl``), ``Schedule``, ``build``; errors in ``hlotune.errors``.
"""

from __future__ import annotations

import logging

from .dsl import errors
from .dsl.errors import (CompileError, ConfigError, DSLError, HloParseError, HlotuneError,
                         KernelArgumentError, ScheduleError, UnsupportedOpError)
from .runtime.build import Kernel, build
from .runtime.targets import Target, get_target
from .schedules.schedule import Schedule

from . import dsl  # noqa: E402  (hlotune.dsl)

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"
__all__ = ["dsl", "errors", "Schedule", "build", "Kernel", "Target", "get_target", "HlotuneError",
           "DSLError", "ScheduleError", "CompileError", "KernelArgumentError", "HloParseError",
           "UnsupportedOpError", "ConfigError"]
