"""Targets: where kernels run, with a stable key and provenance for the tuning database.

``cpu`` is the host CPU through the system C compiler; ``opencl[:platform:device]`` and
``cuda[:N]`` name device backends.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass, field, replace
from functools import cache

from ..dsl.errors import TargetError
from .cpu import CCompiler


@cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@cache
def cpu_identity() -> str:
    """The CPU's vendor, family and model numbers as the OS gives them (x86: 'AuthenticAMD 25
    17'; Arm: implementer and part): machines whose model name is the same (virtual machines often
    say only 'AMD EPYC') are told apart by them; the machine's architecture where the OS says
    nothing."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip() and fields:
                    break                       # the first processor's block is enough
                k, _, v = line.partition(":")
                fields.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    parts = [fields[k] for k in ("vendor_id", "cpu family", "model", "CPU implementer", "CPU part") if fields.get(k)]
    return " ".join(parts) or platform.machine()


def hlotune_version() -> str:
    """The installed hlotune's version (pyproject.toml's, through the package metadata: the one
    version source)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("hlotune")
    except PackageNotFoundError:
        return "unknown"


def default_threads() -> int:
    """Threads kernels run on: ``$HLOTUNE_THREADS`` when set, else every core."""
    env = os.environ.get("HLOTUNE_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise TargetError(f"HLOTUNE_THREADS={env!r}: expected a positive integer")
        return int(env)
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Target:
    """A backend and device. ``key`` identifies it in the database; ``provenance`` says what ran."""

    kind: str
    device: str = ""
    compiler: CCompiler = field(default_factory=CCompiler)
    threads: int = field(default_factory=lambda: default_threads())

    @property
    def provenance(self) -> dict:
        """What ran: the compiler, the CPU (model name, ``cpu_identity``) and the ``Hardware``
        its kernels were compiled for (vector ISA, registers, caches)."""
        return {"kind": self.kind, "device": self.device, "compiler": self.compiler.cc,
                "compiler_version": self.compiler.version, "flags": list(self.compiler.flags),
                "cpu_model": cpu_model(), "cpu_id": cpu_identity(), "hardware": self.hardware.as_dict(),
                "host": platform.node(), "threads": self.threads, "hlotune_version": hlotune_version()}

    @property
    def hardware(self):
        """The device's facts as plain data (``schedules.hardware.Hardware``) for templates and
        renderers (its backend says what they are: vector ISA, registers, caches, threads, limits)."""
        from .backends import backend
        return backend(self.kind).hardware(self)

    @property
    def key(self) -> str:
        """The target's identity in the database: compiler, flags, threads and the CPU (model
        name, vendor/family/model numbers and the vector ISA the flags reach), so that two machines
        with one model name but other cores never share records."""
        p = self.provenance
        ident = {k: p[k] for k in ("kind", "device", "compiler_version", "flags", "cpu_model", "cpu_id", "threads")}
        ident["isa"] = p["hardware"]["isa"]
        return f"{self.kind}-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]

    def __str__(self) -> str:
        return self.kind if not self.device else f"{self.kind}:{self.device}"


def get_target(spec, threads: int | None = None) -> Target:
    """``'cpu'``, ``'opencl[:P:D|:NAME]'`` (or a Target) -> Target; unknown or unavailable
    targets raise TargetError. ``threads`` (default ``$HLOTUNE_THREADS``, else every core) is
    part of the target's key: tuning logs made with another thread count do not apply."""
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise TargetError(f"threads={threads!r}: expected a positive integer")
    if isinstance(spec, Target):
        return spec if threads is None or threads == spec.threads else replace(spec, threads=threads)
    from .backends import backend
    return backend(spec).target(str(spec).strip(), threads)
