"""``build(schedule, target)``: lower, render, compile, load; returns a callable kernel."""

from __future__ import annotations

import os

import numpy as np

from ..dsl.errors import KernelArgumentError, ResourceError
from ..schedules.loops import LoweredFunc
from ..schedules.lower import lower
from ..schedules.schedule import Schedule
from .codegen.c import heap_bytes
from .cpu import Library
from .targets import Target, get_target
from .timing import TimingResult, measure


class KernelBase:
    """What every backend's kernel shares: the lowered function, its source, and argument
    checking (``prepare``: inputs converted where safe, outputs allocated when not given).

    ``in_place``: output -> the input whose own array ``run_trusted`` may be given as that output
    (None: output i may be input i's array: a while loop's state, a scatter's operand)."""

    in_place: dict | None = None

    def __init__(self, fn: LoweredFunc, source: str, target: Target):
        self.lowered = fn
        self.source = source
        self.target = target
        self.inputs = fn.args[:fn.num_inputs]
        self.outputs = fn.args[fn.num_inputs:]

    def _check(self, k: int, a, buf, is_out: bool) -> np.ndarray:
        what = f"{'output' if is_out else 'input'} '{buf.name}' (argument {k})"
        if not isinstance(a, np.ndarray):
            if is_out:
                raise KernelArgumentError(f"{what} must be a numpy array, got {type(a).__name__}")
            a = np.asarray(a)
            if a.dtype != buf.dtype.np:
                a = a.astype(buf.dtype.np) if a.dtype.kind in "iufb" and np.can_cast(a, buf.dtype.np, "same_kind") else a
        if a.dtype != buf.dtype.np:
            raise KernelArgumentError(f"{what} has dtype {a.dtype}, expected {buf.dtype}")
        if tuple(a.shape) != tuple(buf.shape):
            raise KernelArgumentError(f"{what} has shape {tuple(a.shape)}, expected {tuple(buf.shape)}")
        if not a.flags.c_contiguous:
            if is_out:
                raise KernelArgumentError(f"{what} must be C-contiguous")
            a = np.ascontiguousarray(a)
        if is_out and not a.flags.writeable:
            raise KernelArgumentError(f"{what} is read-only")
        return a

    def prepare(self, args) -> tuple[list[np.ndarray], list[np.ndarray]]:
        nin, nout = len(self.inputs), len(self.outputs)
        if len(args) not in (nin, nin + nout):
            raise KernelArgumentError(f"kernel '{self.lowered.name}' takes {nin} inputs "
                                      f"({', '.join(b.name for b in self.inputs)}) and optionally "
                                      f"{nout} outputs, got {len(args)} arguments")
        ins = [self._check(k, a, b, False) for k, (a, b) in enumerate(zip(args, self.inputs))]
        if len(args) == nin:
            outs = [np.empty(b.shape, b.dtype.np) for b in self.outputs]
        else:
            outs = [self._check(nin + k, a, b, True) for k, (a, b) in enumerate(zip(args[nin:], self.outputs))]
        return ins, outs

    def run_trusted(self, ins, donate: dict | None = None) -> tuple:
        """Run on inputs the caller already checked; returns the outputs as a tuple
        (``donate`` is a hint this kernel does not take)."""
        r = self(*ins)
        return r if isinstance(r, tuple) else (r,)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.lowered.name}, target={self.target})"


class Kernel(KernelBase):
    """A compiled CPU kernel: call it on numpy arrays (inputs, optionally then outputs).

    With only the inputs given, outputs are allocated and returned (one array, or a tuple).
    ``.source`` is the generated code; ``.time(*args)`` measures it.
    """

    def __init__(self, fn: LoweredFunc, source: str, lib: Library, target: Target):
        super().__init__(fn, source, target)
        self._lib = lib
        self._out_specs = [(b.shape, b.dtype.np) for b in self.outputs]

    def run_trusted(self, ins, donate: dict | None = None) -> tuple:
        """Run on inputs already known to be C-contiguous arrays of the right dtype and shape
        (the module runtime's own values); returns fresh outputs, except that output ``k`` is
        input ``donate[k]``'s own array (a value nobody reads afterwards)."""
        donate = donate or {}
        outs = [ins[donate[k]] if k in donate else np.empty(shape, d) for k, (shape, d) in enumerate(self._out_specs)]
        self._lib.entry(self._lib.pack(list(ins) + outs))
        return tuple(outs)

    def __call__(self, *args):
        ins, outs = self.prepare(args)
        ptrs = self._lib.pack(ins + outs)
        self._lib.entry(ptrs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def time(self, *args, repeat: int = 10, min_repeat_ms: float = 50.0, number: int | None = None) -> TimingResult:
        """Seconds per call: ``repeat`` repeats of ``number`` calls each (chosen so a repeat
        lasts ``min_repeat_ms``); every repeat is kept."""
        ins, outs = self.prepare(args)
        ptrs = self._lib.pack(ins + outs)
        return measure(lambda n: self._lib.bench(ptrs, n), repeat, min_repeat_ms, number)


def memory_bytes() -> int:
    """Physical memory of this machine (no kernel may need more scratch than that)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):   # not POSIX: no static limit
        return 1 << 62


def check_scratch(fn: LoweredFunc) -> None:
    """MemoryError before compiling a CPU kernel whose heap scratch exceeds physical memory
    (smaller shortfalls fail at run time: the kernel returns a status, see ``Library``)."""
    need = heap_bytes(fn)
    if need > memory_bytes():
        raise ResourceError(f"kernel '{fn.name}' needs {need / 2**30:.1f} GiB of scratch buffers; "
                          f"this machine has {memory_bytes() / 2**30:.1f} GiB of memory")


def build(schedule, target="cpu", name: str = "kernel") -> KernelBase:
    """Compile ``schedule`` (a Schedule, or output tensors: then an unscheduled one) for
    ``target`` (``cpu``, ``opencl[:P:D|:NAME]`` or a Target)."""
    if not isinstance(schedule, Schedule):
        schedule = Schedule(schedule)
    from .backends import backend
    t = get_target(target)
    return backend(t).build(lower(schedule, name), t)
