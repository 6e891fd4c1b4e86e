"""The GPU dialect base: prints the kernels of ``schedules/gpu_lower.py`` (which splits kernels,
maps loops onto thread indices and checks bindings) as C-family source.

Subclasses (opencl.py, cuda.py) differ only in strings: how a ThreadIndex reads the work-item's
``global``/``group``/``local`` index, pointer and kernel qualifiers, the barrier, type names and
their op tables. 'shared' buffers are declared at kernel scope (one per work-group); per-work-item
scratch is ``base + work_item * size`` of a host-allocated buffer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...dsl import dtypes as dt
from ...dsl.errors import TargetError
from ...dsl.expr import walk
from ...dsl.ops import Op
from ...schedules.gpu_lower import GpuLimits, Kernel, Launch, Scratch, lower_gpu
from ...schedules.loops import (
    Allocate,
    Buffer,
    For,
    LoopKind,
    LoweredFunc,
    Stmt,
    ThreadIndex,
    stmt_exprs,
    walk_stmts,
)
from .cstyle import CStyleRenderer
from .helpers import multiplies_16bit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Program:
    """The source of a LoweredFunc and the launches that run it, in order; ``scratch``: the
    buffers the host allocates (root intermediates, then per-work-item scratch)."""

    source: str
    launches: tuple[Launch, ...]
    scratch: tuple[Scratch, ...]


def used_dtypes(fn: LoweredFunc) -> set:
    """Every dtype of a buffer or value in ``fn``."""
    out = {b.dtype for b in fn.args}
    for s in walk_stmts(fn.body):
        if isinstance(s, Allocate):
            out.add(s.buffer.dtype)
        out.update(e.dtype for e in walk(stmt_exprs(s)))
    return out


class GPURenderer(CStyleRenderer):
    """Prints GPU kernels; ``limits`` are checked by the lowering pass."""

    barrier = ""
    index_type = "long"              # loop and id variables
    shared_qualifier = ""
    no_contract = ""                 # a line before kernels rounding 16-bit products, if needed
    fp16 = fp64 = True

    def __init__(self, limits: GpuLimits):
        super().__init__()
        self.limits = limits
        self._kernel: Kernel | None = None
        self._scratch: dict[int, Scratch] = {}

    @property
    def device(self) -> str:
        return self.limits.device

    # ------------------------------------------------------------------ dialect strings
    def thread_index(self, axis: str, d: int) -> str:
        """The work-item's 'global', 'group' or 'local' index in dimension ``d``."""
        raise NotImplementedError

    def global_ptr(self, t: str, name: str) -> str:
        raise NotImplementedError

    def kernel_head(self, name: str, params: list[str], lsize) -> str:
        raise NotImplementedError

    def check_types(self, fn: LoweredFunc) -> None:
        """TargetError for an element type this dialect does not render."""
        for d in sorted(used_dtypes(fn), key=lambda d: d.name):
            fam = self.family(d)
            if fam is not None and fam not in self.type_families:
                raise TargetError(f"{d} kernels are not supported by the {type(self).__name__[:-8]} backend; "
                                  "use the cpu target")
            if d is dt.complex128 and not self.fp64:
                raise TargetError(f"complex128 kernels need the cl_khr_fp64 extension, which {self.device} lacks")

    # ------------------------------------------------------------------ statements
    def loop_pragma(self, f: For) -> list[str]:
        if f.kind is LoopKind.UNROLL:
            ext = f.extent.arg if f.extent.op is Op.CONST else None
            return [f"#pragma unroll {min(ext, 64) if ext else 8}"]
        return []

    def stmt(self, s: Stmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, ThreadIndex):
            v = self.name(s.var, s.var.name)
            return [pad + "{", f"{pad}  {self.index_type} {v} = {self.thread_index(s.axis, s.dim)};",
                    *self.stmt(s.body, depth + 1), pad + "}"]
        if isinstance(s, Allocate) and s.buffer.scope == "shared":
            return self.stmt(s.body, depth)        # declared at kernel scope
        if isinstance(s, Allocate) and id(s.buffer) in self._scratch:
            b, sc = s.buffer, self._scratch[id(s.buffer)]
            t = self.ctype(b.dtype, storage=True)
            n, base = self.name(b, b.name), self.name(sc, b.name + "_scratch")
            wid = self.name(self._kernel.work_item, self._kernel.work_item.name)
            return [pad + "{", f"{pad}  {self.global_ptr(t, n)} = {base} + {wid} * {b.size};",
                    *self.stmt(s.body, depth + 1), pad + "}"]
        if isinstance(s, For) and s.kind is LoopKind.PARALLEL:
            log.debug("%s: parallel loop '%s' is not at the root of its nest; it runs serially in each "
                      "work-item", type(self).__name__, s.var.name)
        return super().stmt(s, depth)

    # ------------------------------------------------------------------ kernels
    def kernel(self, fn: LoweredFunc, k: Kernel) -> str:
        """The source of one kernel."""
        self._kernel, self._scratch = k, {id(sc.buffer): sc for sc in k.item_scratch}
        body = self.stmt(k.body, 1)
        head = [f"  {self.shared_qualifier}{self.ctype(b.dtype, True)} {self.name(b, b.name)}[{max(b.size, 1)}];"
                for b in k.shared]
        params = []
        for a in k.launch.args:
            b = a if isinstance(a, Buffer) else a.buffer
            const = "const " if isinstance(a, Buffer) and fn.args.index(a) < fn.num_inputs else ""
            item = not isinstance(a, Buffer) and id(b) in self._scratch
            nm = self.name(a, b.name + "_scratch") if item else self.name(b, b.name)
            params.append(self.global_ptr(const + self.ctype(b.dtype, True), nm))
        return "\n".join([self.kernel_head(k.launch.name, params, k.launch.local_size), *head, *body, "}", ""])

    def program(self, fn: LoweredFunc) -> Program:
        """Render ``fn`` as kernels plus launches (see schedules/gpu_lower.py)."""
        self.check_types(fn)
        for b in fn.args:
            self.name(b, b.name)
        gp = lower_gpu(fn, self.limits)
        sources = [self.kernel(fn, k) for k in gp.kernels]
        if self.no_contract and multiplies_16bit(fn):     # its rounded 16-bit products must not fuse into multiply-adds
            sources.insert(0, self.no_contract)
        return Program("\n".join([self.preamble(fn), *sources]), tuple(k.launch for k in gp.kernels), gp.scratch)

    def render(self, fn: LoweredFunc) -> str:
        return self.program(fn).source


__all__ = ["GPURenderer", "Program", "used_dtypes"]
