"""Compiled kernels that call whole compiled graphs (cpu target): the branches of a
``conditional``, and the condition and body of a ``while`` loop whose graphs hold extern ops
(a sort, a LAPACK call, a scatter, an inner loop).

Each such graph is compiled as a ``CompiledGraph`` whose steps are all C kernels, so it has a
``Program`` (``runtime.program``): one C function running every step. The calling kernel gets
a table of addresses as its last input, three per graph (``hl_program``, its kernels' entries,
its constants: ``Program.pointers``), and calls a graph through it::

    hl_call_program(table, j, inputs, outputs)    /* graph j: 0, or nonzero when it failed */

The table is a constant of the enclosing graph (``NestedKernel.constant_inputs``), never state
of the library, so graphs of one structure share one library. The addresses live as long as
the kernel (it holds the graphs): such a kernel runs only in the process that built it and
cannot be exported.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ..dsl import dtypes as dt
from ..dsl.tensor import Conditional, ExternOp
from ..schedules.loops import Buffer, LoweredFunc, Seq, extern_args, extern_name
from .build import Kernel
from .codegen.c import CRenderer
from .cpu import Library, compile_c
from .targets import Target

log = logging.getLogger(__name__)

#: C of ``hl_call_program``: graph ``j`` of address table ``t`` on ``in`` into ``out``
CALL_HELPER = """typedef int (*hl_prog_t)(void**, void**, void**, void**);
static inline int hl_call_program(const uint64_t* t, int j, void** in, void** out) {
  return ((hl_prog_t)(uintptr_t)t[3 * j])(in, out, (void**)(uintptr_t)t[3 * j + 1], (void**)(uintptr_t)t[3 * j + 2]);
}"""

#: ``subgraph(outputs, inputs)``: the enclosing runtime's compiled graph of ``outputs`` (on
#: ``inputs``, None: the graph's own) when all its steps are C kernels, else None
Subgraph = Callable[[list, list | None], object]


def table_buffer(graphs: int) -> Buffer:
    """The argument holding the address table of ``graphs`` graphs."""
    return Buffer("hl_table", dt.uint64, (3 * max(graphs, 1),), "arg")


def program_call(table: str, j: int, ins: list[str], outs: list[str]) -> str:
    """C calling graph ``j`` of ``table`` (an expression, nonzero when it failed)."""
    def arr(xs):
        return f"(void*[]){{{', '.join(f'(void*){x}' for x in xs) or '0'}}}"
    return f"hl_call_program({table}, {j}, {arr(ins)}, {arr(outs)})"


class NestedKernel(Kernel):
    """A kernel calling compiled graphs through the address table it takes as its last input
    (``constant_inputs``: the arrays the enclosing graph appends to its inputs)."""

    def __init__(self, fn: LoweredFunc, source: str, lib: Library, target: Target, graphs: list):
        super().__init__(fn, source, lib, target)
        self.graphs = graphs                     # keeps every address in the table alive
        table = [p for g in graphs for p in g.program.pointers()]
        self.constant_inputs = (np.array(table or [0, 0, 0], np.uint64),)


def build_conditional(op: ExternOp, target: Target, subgraph: Subgraph) -> NestedKernel | None:
    """A kernel running conditional extern op ``op`` (``dsl.tensor.Conditional``): its index
    picks one branch, compiled as a graph, or None when a branch has a host step."""
    spec = op.fn
    if not isinstance(spec, Conditional):
        return None
    graphs = [subgraph(list(outs), None) for outs, _, _ in spec.branches]
    if any(g is None for g in graphs):
        return None
    name = extern_name(op)
    ins, outs = extern_args(op)
    table = table_buffer(len(graphs))
    fn = LoweredFunc(name, (*ins, table, *outs), len(ins) + 1, Seq(()))
    r = CRenderer(target.hardware)
    n = {b: r.name(b, b.name) for b in (*ins, table, *outs)}
    pick = f"({n[ins[0]]}[0] ? 0 : 1)" if spec.is_pred else f"(long long){n[ins[0]]}[0]"
    last = len(spec.branches) - 1
    body = [f"  long long k = {pick};", f"  if (k < 0 || k > {last}) k = {last};", "  switch (k) {"]
    for j, (_, pos, (lo, _)) in enumerate(spec.branches):
        call = program_call(n[table], j, [n[ins[lo + p]] for p in pos], [n[o] for o in outs])
        body.append(f"    case {j}: return {call} ? 1 : 0;")
    body += ["  }", "  return 0;"]
    src = "\n".join([r.preamble(fn), CALL_HELPER, r.signature(fn) + " {", *body, "}", r.postamble(fn)])
    log.debug("conditional '%s': %d branches compiled", op.name, len(graphs))
    k = NestedKernel(fn, src, Library(compile_c(src, target.compiler)), target, graphs)
    k.in_place = {}
    return k


__all__ = ["CALL_HELPER", "NestedKernel", "Subgraph", "build_conditional", "program_call", "table_buffer"]
