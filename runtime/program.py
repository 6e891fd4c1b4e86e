"""A compiled graph's whole program as one C call (cpu target).

When every step of a ``CompiledGraph`` is a compiled C kernel (no host step), a small driver
library runs them in order: it allocates the intermediate buffers, calls each kernel's
``hl_run`` through a pointer, and copies out the outputs no kernel wrote (an input, a constant,
a repeated value). The kernels' entries and the constants' addresses are arguments of every
call, never state of the library: graphs of one structure share one driver (a library is
loaded once per process). A call costs one trip through ctypes instead of one per kernel (each
about 10 us of Python: argument packing, output allocation), which is what separates a decode
step or a small solve from XLA's dispatch. The kernels themselves are the
cached libraries the steps already loaded; the driver holds no kernel code, so it compiles in
well under a second and is cached like any kernel.

A step's donation (an output that may take over a dead input's array) becomes an alias of
that input's buffer.
"""

from __future__ import annotations

import ctypes
import logging
import math

import numpy as np

from ..dsl.errors import ResourceError
from .cpu import compile_c

log = logging.getLogger(__name__)


def _nbytes(shape, dtype) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize


def driver_source(steps, inputs: list, outputs: list, constants: list, specs: dict) -> str:
    """C of ``hl_program(inputs, outputs, segs, consts)`` running ``steps`` (``_KernelStep``s with
    ``inputs``/``outputs`` keys and ``donate``; ``segs[n]`` is step n's ``hl_run``) on graph
    ``inputs`` and ``constants`` (keys in order) into graph ``outputs``; ``specs[key]`` = (shape,
    numpy dtype). It returns 0, n + 1 when step n could not allocate, -1 when the driver could
    not."""
    where = {k: f"inputs[{i}]" for i, k in enumerate(inputs)}
    for c, k in enumerate(constants):
        where.setdefault(k, f"hl_const[{c}]")
    out_of: dict = {}
    for j, k in enumerate(outputs):
        out_of.setdefault(k, j)
    body, temps = [], []
    for n, step in enumerate(steps):
        donate = step.donate or {}
        for o, k in enumerate(step.outputs):
            if k in where:
                continue
            if k in out_of:
                where[k] = f"outputs[{out_of[k]}]"
            elif o in donate and where[step.inputs[donate[o]]].startswith("t"):
                where[k] = where[step.inputs[donate[o]]]       # takes over a dead temporary
            else:
                where[k] = f"t{len(temps)}"
                temps.append((where[k], max(1, _nbytes(*specs[k]))))
        args = ", ".join(where[k] for k in (*step.inputs, *step.outputs))
        body += [f"  {{ void* a[] = {{{args}}};", f"    if (hl_seg[{n}](a)) {{ status = {n + 1}; goto done; }} }}"]
    for j, k in enumerate(outputs):
        size = _nbytes(*specs[k])
        if where[k] != f"outputs[{j}]" and size:
            body.append(f"  memcpy(outputs[{j}], {where[k]}, {size});")
    lines = ["#include <stdlib.h>", "#include <string.h>", "typedef int (*hl_seg_t)(void**);",
             "static void* hl_alloc(size_t n) { void* p = NULL; return posix_memalign(&p, 64, n) ? NULL : p; }",
             "int hl_program(void** inputs, void** outputs, void** segs, void** hl_const) {",
             "  int status = 0;", "  hl_seg_t* hl_seg = (hl_seg_t*)segs;"]
    lines += [f"  void* {name} = hl_alloc({size});" for name, size in temps]
    if temps:
        lines.append(f"  if (!({' && '.join(n for n, _ in temps)})) {{ status = -1; goto done; }}")
    lines += body + ["done:"] + [f"  free({name});" for name, _ in temps] + ["  return status;", "}", ""]
    return "\n".join(lines)


class Program:
    """The driver of a graph whose steps are all C kernels: ``Program(...)(arrays)`` returns the
    output arrays (fresh), given the graph's checked input arrays in order."""

    def __init__(self, steps, inputs: list, outputs: list, constants: dict, specs: dict, target):
        self._consts = [np.ascontiguousarray(a) for a in constants.values()]   # kept alive: bound by address
        src = driver_source(steps, inputs, outputs, list(constants), specs)
        self._lib = ctypes.CDLL(str(compile_c(src, target.compiler)))
        # passed on every call, never kept in the library: graphs of one structure share it
        segs = [ctypes.cast(s.kernel._lib.lib.hl_run, ctypes.c_void_p).value for s in steps]
        self._segs = (ctypes.c_void_p * max(1, len(segs)))(*segs)
        self._const_ptrs = (ctypes.c_void_p * max(1, len(self._consts)))(*[a.ctypes.data for a in self._consts])
        self._run = self._lib.hl_program
        self._run.argtypes, self._run.restype = [ctypes.POINTER(ctypes.c_void_p)] * 4, ctypes.c_int
        self._kernels = [s.kernel for s in steps]          # their libraries stay loaded
        self._outs = [specs[k] for k in outputs]
        self._in_t = ctypes.c_void_p * max(1, len(inputs))
        self._out_t = ctypes.c_void_p * max(1, len(outputs))

    def pointers(self) -> tuple[int, int, int]:
        """The addresses a compiled caller needs to run this program itself (``runtime.nested``):
        ``hl_program``, its kernels' entries and its constants. They stay valid while this
        object lives."""
        return (ctypes.cast(self._run, ctypes.c_void_p).value, ctypes.addressof(self._segs),
                ctypes.addressof(self._const_ptrs))

    def __call__(self, arrays) -> list[np.ndarray]:
        outs = [np.empty(shape, d) for shape, d in self._outs]
        status = self._run(self._in_t(*[a.ctypes.data for a in arrays]), self._out_t(*[o.ctypes.data for o in outs]),
                           self._segs, self._const_ptrs)
        if status:
            what = "the module's intermediate buffers" if status < 0 else \
                f"kernel {self._kernels[status - 1].lowered.name}'s scratch buffers"
            raise ResourceError(f"kernel memory: {what} could not be allocated")
        return outs


__all__ = ["Program", "driver_source"]
