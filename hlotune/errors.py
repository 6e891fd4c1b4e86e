"""Every error hlotune raises on purpose, importable as ``hlotune.errors`` as the package docstring
says; they are defined once, in ``hlotune.dsl.errors`` (the one errors module of every layer)."""

from .dsl.errors import (
    ClusterError,
    CompileError,
    ConfigError,
    DataFileError,
    DeviceError,
    DSLError,
    ExportError,
    HloParseError,
    HlotuneError,
    InternalError,
    KernelArgumentError,
    LoweringError,
    MissingDependencyError,
    ResourceError,
    RunLockedError,
    ScheduleError,
    TargetError,
    UnsupportedOpError,
)

__all__ = [
    "ClusterError",
    "CompileError",
    "ConfigError",
    "DSLError",
    "DataFileError",
    "DeviceError",
    "ExportError",
    "HloParseError",
    "HlotuneError",
    "InternalError",
    "KernelArgumentError",
    "LoweringError",
    "MissingDependencyError",
    "ResourceError",
    "RunLockedError",
    "ScheduleError",
    "TargetError",
    "UnsupportedOpError",
]
