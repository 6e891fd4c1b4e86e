"""The host CPU: C with OpenMP and GNU vector extensions, compiled by the system C compiler to a
shared library loaded with ctypes; timed by an in-C loop around the kernel."""

from __future__ import annotations

from pathlib import Path

from ...dsl.errors import TargetError
from ...schedules.loops import extern_name
from ...schedules.scatter import scatter_func
from ..build import Kernel, check_scratch
from ..codegen.c import render_c
from ..cpu import CCompiler, Library, compile_c
from ..isa import detect
from ..nested import build_conditional
from ..sort import build_sort
from ..targets import Target, cpu_identity, cpu_model, default_threads
from ..timing import measure
from .base import Backend, Runner


class LibraryRunner(Runner):
    """A compiled kernel library in the measurement worker."""

    def __init__(self, lib: Library):
        self.lib = lib
        self.ptrs = None

    def run(self, ins, outs) -> None:
        self.ptrs = self.lib.pack(list(ins) + list(outs))
        self.lib.entry(self.ptrs)

    def time(self, repeat, min_repeat_ms, number, warmup_ms, stop=None, cold=None):
        if not cold:
            return measure(lambda n: self.lib.bench(self.ptrs, n), repeat, min_repeat_ms, number,
                           warmup_ms=warmup_ms, stop=stop)
        sets = [self.ptrs] + [self.lib.pack(list(ins) + list(outs)) for ins, outs in cold]
        turn = 0

        def run_n(n: int) -> float:     # one call per set in turn, each timed in C
            nonlocal turn
            total = 0.0
            for _ in range(n):
                total += self.lib.bench(sets[turn], 1)
                turn = (turn + 1) % len(sets)
            return total
        return measure(run_n, repeat, min_repeat_ms, number, warmup_ms=warmup_ms, stop=stop)


class CPUBackend(Backend):
    kind = "cpu"
    aliases = ("c", "llvm", "host")
    governs_threads = True
    cold_inputs = True

    def target(self, spec: str, threads: int | None = None) -> Target:
        if ":" in spec.strip():
            raise TargetError(f"target '{spec}': the cpu target takes no device (use 'cpu' and threads=)")
        return Target("cpu", cpu_model(), threads=threads or default_threads())

    def hardware(self, target=None):
        """The vector ISA as the compiler targets it with its flags, the caches, the threads."""
        cc = target.compiler if target is not None else CCompiler()
        return detect(cc.cc, tuple(cc.flags), target.threads if target is not None else default_threads())

    def build(self, fn, target) -> Kernel:
        check_scratch(fn)
        src = render_c(fn, self.hardware(target))
        return Kernel(fn, src, Library(compile_c(src, target.compiler)), target)

    def compile_scatter(self, op, target):
        return self.build(scatter_func(op, extern_name(op)), target)

    def compile_lapack(self, op, target):
        from ..lapack import build_lapack
        return build_lapack(op, target)

    def compile_sort(self, op, target):
        return build_sort(op, target)

    def compile_while(self, op, target, schedule_fn, used=None, subgraph=None):
        from ..whileloop import build_while
        return build_while(op, target, schedule_fn, used, subgraph)

    def compile_conditional(self, op, target, subgraph):
        return build_conditional(op, target, subgraph)

    def prepare(self, fn, target, timeout: float) -> dict:
        check_scratch(fn)
        return {"so": str(compile_c(render_c(fn, self.hardware(target)), target.compiler, timeout=timeout))}

    def runner(self, req: dict, cache: dict) -> Runner:
        return LibraryRunner(Library(Path(req["so"])))

    def describe(self) -> list[str]:
        t = self.target("cpu")
        hw = t.hardware
        return [f"cpu: {t.device} ({cpu_identity()})",
                f"  compiler {t.compiler.cc} ({t.compiler.version}), {t.threads} threads, key {t.key}",
                f"  vector ISA {', '.join(hw.isa) or 'none detected'} ({hw.vector_bytes * 8}-bit vectors, "
                f"{hw.vector_regs} registers), L1d {hw.l1d >> 10} KiB, L2 {hw.l2 >> 10} KiB, L3 {hw.l3 >> 20} MiB"]


__all__ = ["CPUBackend", "LibraryRunner"]
