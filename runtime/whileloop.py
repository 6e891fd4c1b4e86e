"""``while`` loops compiled whole for the cpu target.

A ``while`` extern op (``dsl.tensor.WhileLoop``) whose condition and body are plain compute
graphs (no extern ops inside) becomes one C source: the condition and body functions, each
scheduled like any segment, and a driver that keeps the state in two buffers per element and
swaps them after each body call::

    cur = copy(inputs)
    while (cond(cur[cond_pos...]))  { body(cur[body_pos...]) -> nxt;  swap(cur, nxt) }
    outputs = copy(cur)

so an iteration costs two C calls instead of two trips through Python (``fori_loop`` with 10
iterations: see results/corpus_cpu.md). Other loops keep running on the host.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from ..dsl.tensor import ExternOp, Graph, WhileLoop
from ..schedules.loops import Buffer, LoweredFunc, Seq
from ..schedules.lower import lower
from .build import Kernel, check_scratch
from .codegen.c import CRenderer
from .cpu import Library, compile_c
from .targets import Target

log = logging.getLogger(__name__)


def _driver(r: CRenderer, fn: LoweredFunc, cfn: LoweredFunc, bfn: LoweredFunc, loop: WhileLoop,
            uniq: list) -> str:
    n = fn.num_inputs
    ins, outs = fn.args[:n], fn.args[n:]
    ty = [r.ctype(b.dtype, storage=True) for b in ins]
    size = [f"{max(b.size, 1)} * sizeof({t})" for b, t in zip(ins, ty)]
    first = {}                       # body output k -> the first state element it sets
    for i, t in enumerate(loop.body_outs):
        first.setdefault(uniq.index(t), i)
    lines = [r.signature(fn) + " {", "  int hl_status = 0;"]
    for i, t in enumerate(ty):
        lines += [f"  {t}* cur{i} = ({t}*)hl_alloc({size[i]});", f"  {t}* nxt{i} = ({t}*)hl_alloc({size[i]});"]
    bufs = [f"{c}{i}" for i in range(len(ty)) for c in ("cur", "nxt")]
    if bufs:   # out of memory: free what was had and return the status (MemoryError)
        lines.append(f"  if (!({' && '.join(bufs)})) {{ {' '.join(f'free({b});' for b in bufs)} return 1; }}")
    lines += [f"  memcpy(cur{i}, {r.name(b, b.name)}, {size[i]});" for i, b in enumerate(ins)]
    cout = cfn.args[cfn.num_inputs]
    ct = r.ctype(cout.dtype, storage=True)
    cargs = [f"cur{k}" for k in loop.cond_pos] + ["hl_go"]
    bargs = [f"cur{k}" for k in loop.body_pos] + [f"nxt{first[k]}" for k in range(len(uniq))]
    lines += [f"  {ct} hl_go[1];", "  for (;;) {",
              f"    if ({cfn.name}({', '.join(cargs)})) {{ hl_status = 1; break; }}", "    if (!hl_go[0]) break;",
              f"    if ({bfn.name}({', '.join(bargs)})) {{ hl_status = 1; break; }}"]
    for i, t in enumerate(loop.body_outs):
        k = first[uniq.index(t)]
        if k != i:
            lines.append(f"    memcpy(nxt{i}, nxt{k}, {size[i]});")
    for i, t in enumerate(ty):
        lines.append(f"    {{ {t}* s = cur{i}; cur{i} = nxt{i}; nxt{i} = s; }}")
    lines.append("  }")
    for i, b in enumerate(outs):
        lines += [f"  memcpy({r.name(b, b.name)}, cur{i}, {size[i]});", f"  free(cur{i}); free(nxt{i});"]
    return "\n".join(lines + ["  return hl_status;", "}"])


def build_while(op: ExternOp, target: Target, schedule_fn: Callable[[Graph], object]) -> Kernel | None:
    """One compiled kernel running while loop ``op`` (inputs: the initial state, outputs: the
    final state), or None when it cannot be compiled whole (then it runs on the host)."""
    loop = op.fn
    if not isinstance(loop, WhileLoop) or len(loop.cond_outs) != 1:
        return None
    uniq = list(dict.fromkeys(loop.body_outs))
    cg, bg = Graph(list(loop.cond_outs)), Graph(uniq)
    if cg.extern_ops or bg.extern_ops or cg.outputs[0].shape not in ((), (1,)):
        return None
    base = "hl_" + re.sub(r"[^0-9a-zA-Z_]", "_", op.name)
    cfn = lower(schedule_fn(cg), f"{base}_cond")
    bfn = lower(schedule_fn(bg), f"{base}_body")
    check_scratch(cfn)
    check_scratch(bfn)
    state = [Buffer(f"s{i}", d, tuple(shp), "arg") for i, (d, shp) in enumerate(zip(op.out_dtypes, op.out_shapes))]
    res = [Buffer(f"r{i}", b.dtype, b.shape, "arg") for i, b in enumerate(state)]
    fn = LoweredFunc("hl_while", tuple(state + res), len(state), Seq(()))
    r = CRenderer(target.hardware)
    funcs = [r.function(cfn), r.function(bfn)]     # first: they decide which vector types are declared
    src = "\n".join([r.preamble(fn), *r.vector_types.values(), *funcs, _driver(r, fn, cfn, bfn, loop, uniq),
                     r.postamble(fn)])
    log.debug("while '%s': compiled whole (%d state elements)", op.name, len(state))
    return Kernel(fn, src, Library(compile_c(src, target.compiler)), target)


__all__ = ["build_while"]
