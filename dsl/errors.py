"""Every error hlotune raises on purpose. One module, imported by every layer.

Messages name the object at fault and, where there is one, the remedy.
"""

from __future__ import annotations


class HlotuneError(Exception):
    """Base class of all errors raised by hlotune on purpose."""


class DSLError(HlotuneError, ValueError):
    """A tensor expression is malformed (bad shape, dtype, index arity, reducer use)."""


class ScheduleError(HlotuneError):
    """A schedule step breaks a rule; the message names the axis or stage and the rule."""


class LoweringError(HlotuneError):
    """A graph plus schedule cannot be lowered to a loop nest."""


class CompileError(HlotuneError):
    """The backend compiler rejected generated code; ``log`` holds its output."""

    def __init__(self, message: str, log: str = "", source: str = ""):
        super().__init__(message)
        self.log = log
        self.source = source


class KernelArgumentError(HlotuneError, ValueError):
    """A kernel was called with an argument of the wrong shape, dtype or count."""


class HloParseError(HlotuneError, ValueError):
    """HLO text could not be parsed; carries file, line, column and the text around it."""

    def __init__(self, message: str, *, file: str | None = None, line: int = 0,
                 column: int = 0, context: str = ""):
        self.reason = message
        self.file = file
        self.line = line
        self.column = column
        self.context = context
        where = f"{file or '<hlo>'}:{line}:{column}"
        text = f"{where}: {message}"
        if context:
            text += "\n" + context
        super().__init__(text)


class UnsupportedOpError(HlotuneError, NotImplementedError):
    """An HLO opcode (or an attribute form of it) that hlotune cannot lower."""

    def __init__(self, opcode: str, *, line: int | None = None, file: str | None = None,
                 detail: str = "", kind: str = "HLO op"):
        self.opcode = opcode
        self.line = line
        self.file = file
        where = f" at {file or '<hlo>'}:{line}" if line else ""
        msg = f"unsupported {kind} '{opcode}'{where}"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


class ConfigError(HlotuneError, ValueError):
    """A tuning configuration is invalid; the message names the knob."""

    def __init__(self, message: str, knob: str | None = None):
        self.knob = knob
        super().__init__(message)


class DataFileError(HlotuneError, ValueError):
    """A data file (npz arrays, a tuning database or log) is missing, unreadable, corrupt or of
    an unknown version; the message names the file and what to do."""


class TargetError(HlotuneError, ValueError):
    """An unknown or unavailable target/device."""


class DeviceError(HlotuneError, RuntimeError):
    """A device runtime call failed (allocation, launch, copy); the message names the kernel."""


class ResourceError(HlotuneError, MemoryError):
    """A kernel or run would need more of a resource (memory, scratch) than the machine has; the
    message says how much of what."""


class InternalError(HlotuneError):
    """An unexpected exception inside hlotune: a bug, not the input's fault. ``where`` says what
    hlotune was doing (an op, a stage), ``line`` where in the input, ``original`` the exception's
    type; the CLI exits with code 3 on it."""

    def __init__(self, where: str, original: BaseException, *, line: int | None = None, file: str | None = None):
        self.where = where
        self.line = line
        self.file = file
        self.original = type(original).__name__
        at = f" at {file or '<input>'}:{line}" if line else ""
        super().__init__(f"internal error while {where}{at}: {self.original}: {original} (this is a bug in "
                         "hlotune; please report it with the input)")


class MissingDependencyError(HlotuneError, ImportError):
    """An optional dependency is missing; the message says which extra installs it."""

    def __init__(self, package: str, extra: str = ""):
        how = f"pip install 'hlotune[{extra}]'" if extra else f"pip install {package}"
        super().__init__(f"{package} is not installed: {how}")


class RunLockedError(HlotuneError):
    """The same tuning run is already being measured into this database by another process."""


class ClusterError(HlotuneError):
    """A Dask cluster cannot be used as given (address, security options); the message says why."""


class ExportError(HlotuneError):
    """A module cannot be exported as a library (it has host-only ops, listed), or an exported
    library cannot run here (a folder that is no export, a CPU without its instructions)."""
