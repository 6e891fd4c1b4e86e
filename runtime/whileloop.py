"""``while`` loops compiled whole for the cpu target.

A ``while`` extern op (``dsl.tensor.WhileLoop``) becomes one C source: the condition and body
functions, each scheduled like any segment, and a driver. A condition or body holding extern
ops (a sort, a LAPACK call, a conditional, an inner loop) is compiled as a graph of its own and
called through ``runtime.nested``'s address table, when all its steps are C kernels. The loop's
``LoopState`` sorts the state elements:

- *kept* (the body passes them through: a scan's inputs, weights): read from the input array
  itself, never copied inside the loop;
- *updated* (the body's output is a dynamic-update-slice of the element itself: a scan's
  stacked outputs, a KV cache): kept in the output array, the body computes only the region
  and its corner, and the driver writes the region in place after the body (every read of the
  old value happened inside the body call, so nothing is read after it is overwritten).
  When the body also reads the element's new value (a decode step attends over the KV cache
  it just extended) and reads the old value nowhere else, the region is written *first*: a
  function computing the regions and corners runs before the body, the driver writes them in
  place, and the body reads the element itself where it read the updated value (one load
  instead of a select between the region and the old value at every read, as XLA updates in
  place);
- *swapped* (everything else): two buffers, the body writes the next value, then they swap::

    cur = inputs                       (kept: the input; updated: copied into the output once)
    while (cond(cur[cond_pos...])) {
        pre(cur[pre_pos...]) -> regions and corners (updated first); write them
        body(cur[body_pos...]) -> nxt (swapped), regions and corners (updated)
        write each region into its element; swap(cur, nxt)
    }
    outputs = cur                      (only the outputs someone reads)

``runtime.module`` may hand a dead input's own array over as the output of the same element,
and then nothing is copied at all. An iteration costs two C calls instead of two trips through
Python. A loop whose condition or body has a host step runs on the host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..dsl.rewrite import replace
from ..dsl.tensor import ExternOp, Graph, WhileLoop, input_tensors
from ..schedules.loops import Buffer, LoweredFunc, Seq, extern_name
from ..schedules.lower import lower
from .build import Kernel, check_scratch
from .codegen.c import CRenderer
from .cpu import Library, compile_c
from .nested import CALL_HELPER, NestedKernel, Subgraph, program_call, table_buffer
from .targets import Target

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Plan:
    """The compiled body: ``graph`` (its outputs, distinct tensors) and ``pos`` (the state
    element of each of its inputs); per state element its kind (``swap``: computed into ``nxt``
    and swapped, ``kept``: never written, ``update``: a region written in place after the body,
    or before it when in ``first``); ``src[i]``: for a swapped element the output it takes;
    ``updates``: (k, region output, start outputs) written after the body; ``pre``: the graph
    computing the regions and corners written before the body (None: none is), ``pre_pos`` its
    inputs' state elements and ``first`` (k, region output, start outputs) of ``pre``."""

    graph: Graph
    pos: list[int]
    kind: list[str]
    src: dict
    updates: list
    pre: Graph | None = None
    pre_pos: tuple = ()
    first: tuple = ()


def _reads(op, t) -> bool:
    return any(x.op is t.op and x.value_index == t.value_index for x in input_tensors(op))


def _written_first(loop: WhileLoop, outs: list, upd: dict) -> list[int]:
    """The updated elements whose new value the body reads (besides returning it) while it reads
    the old value only to make the new one: theirs can be written before the body runs."""
    g = Graph(outs)
    ops = g.compute_ops
    out = []
    for k in sorted(upd):
        new, old = loop.body_outs[k], loop.state.params[k]
        if not any(t is new for t in outs) and any(_reads(op, new) for op in ops) and \
                all(op is new.op for op in ops if _reads(op, old)) and not g.extern_ops:
            out.append(k)
    return out


def _region_outs(upd: dict, ks) -> list:
    """The region and corner outputs of updated elements ``ks``, each tensor once, in order."""
    return list(dict.fromkeys(t for k in ks for t in (upd[k][0], *upd[k][1])))


def _writes(outs: list, upd: dict, ks) -> list:
    """(k, region output, corner outputs) of updated elements ``ks``, as positions in ``outs``."""
    return [(k, outs.index(upd[k][0]), [outs.index(t) for t in upd[k][1]]) for k in ks]


def _plan(loop: WhileLoop) -> _Plan:
    st = loop.state
    n = len(loop.body_outs)
    kept = set(st.kept) if st else set()
    upd = {k: (reg, starts) for k, reg, starts in st.updates} if st else {}
    kind = ["kept" if i in kept else "update" if i in upd else "swap" for i in range(n)]
    swapped = [loop.body_outs[i] for i in range(n) if kind[i] == "swap"]
    first = _written_first(loop, list(dict.fromkeys(swapped + _region_outs(upd, sorted(upd)))), upd) if st else []
    later = [k for k in sorted(upd) if k not in first]
    outs = list(dict.fromkeys(swapped + _region_outs(upd, later)))
    src = {i: outs.index(loop.body_outs[i]) for i in range(n) if kind[i] == "swap"}
    updates = _writes(outs, upd, later)
    graph = Graph(outs)
    if not st:
        return _Plan(graph, list(loop.body_pos), kind, src, updates)
    where = {id(p.op): k for k, p in enumerate(st.params)}
    pre, pre_pos, written = None, (), ()
    if first:
        # the body reads the element itself where it read its new value: written before it runs
        graph = replace(graph, {loop.body_outs[k]: st.params[k] for k in first})
        pre_outs = _region_outs(upd, first)
        pre = Graph(pre_outs)
        pre_pos = tuple(where[id(t.op)] for t in pre.inputs)
        written = tuple(_writes(pre_outs, upd, first))
    pos = [where[id(t.op)] for t in graph.inputs]
    return _Plan(graph, pos, kind, src, updates, pre, pre_pos, written)


def _write_region(shape, reg_shape, dst: str, reg: str, starts: list[str], t: str) -> list[str]:
    """C lines writing the row-major region ``reg`` (shape ``reg_shape``) into ``dst`` (shape
    ``shape``) at the corner ``starts`` (already clamped), one contiguous last-axis row at a
    time."""
    rank = len(shape)
    lines = [f"  {{ long long {', '.join(f'o{d} = (long long){s}[0]' for d, s in enumerate(starts))};"]
    for d in range(rank - 1):
        lines.append(f"    for (long long i{d} = 0; i{d} < {reg_shape[d]}LL; ++i{d})")
    at, src = "0", "0"
    for d in range(rank - 1):
        at, src = f"({at}) * {shape[d]}LL + o{d} + i{d}" if d else f"o{d} + i{d}", \
            f"({src}) * {reg_shape[d]}LL + i{d}" if d else f"i{d}"
    if rank > 1:
        at, src = f"({at}) * {shape[-1]}LL", f"({src}) * {reg_shape[-1]}LL"
    at = f"{at} + o{rank - 1}"
    lines.append(f"      memcpy({dst} + {at}, {reg} + {src}, {reg_shape[-1]} * sizeof({t}));")
    return lines + ["  }"]


def _driver(r: CRenderer, fn: LoweredFunc, calls: dict[str, Callable[[list[str]], str]], ct: str,
            bouts: list[Buffer], pouts: list[Buffer], loop: WhileLoop, plan: _Plan, used: set[int]) -> str:
    """The C driver. Swapped elements ping-pong between ``cur``/``nxt`` and are copied out at
    the end; kept ones are read from the input itself; updated ones live in their output
    array from the start (filled from the input unless it is the same array: a donated
    input). Outputs outside ``used`` are not written. ``calls[name](args)``: C calling the
    'cond' (into ``hl_go`` of C type ``ct``), the 'pre' (into ``pouts``: the regions written
    before the body) and the 'body' (into ``bouts``), nonzero when they failed."""
    n = len(loop.body_outs)
    ins, outs = fn.args[:n], fn.args[fn.num_inputs:]
    iname = [r.name(b, b.name) for b in ins]
    oname = [r.name(b, b.name) for b in outs]
    ty = [r.ctype(b.dtype, storage=True) for b in ins]
    size = [f"{max(b.size, 1)} * sizeof({t})" for b, t in zip(ins, ty)]
    oty = [r.ctype(b.dtype, storage=True) for b in bouts]
    first = {j: i for i, j in sorted(plan.src.items(), reverse=True)}      # output j -> first element it sets
    obuf = [f"nxt{first[j]}" if j in first else f"tmp{j}" for j in range(len(bouts))]
    lines = [r.signature(fn) + " {", "  int hl_status = 0;"]
    allocs = []
    for i, t in enumerate(ty):
        if plan.kind[i] == "kept":        # read only: the input itself
            lines.append(f"  {t}* cur{i} = ({t}*){iname[i]};")
        elif plan.kind[i] == "update":    # written in place: its output array
            lines.append(f"  {t}* cur{i} = {oname[i]};")
        else:
            lines += [f"  {t}* cur{i} = ({t}*)hl_alloc({size[i]});", f"  {t}* nxt{i} = ({t}*)hl_alloc({size[i]});"]
            allocs += [f"cur{i}", f"nxt{i}"]
    for j, b in enumerate(bouts):
        if j not in first:
            lines.append(f"  {oty[j]}* tmp{j} = ({oty[j]}*)hl_alloc({max(b.size, 1)} * sizeof({oty[j]}));")
            allocs.append(f"tmp{j}")
    for j, b in enumerate(pouts):
        t = r.ctype(b.dtype, storage=True)
        lines.append(f"  {t}* pre{j} = ({t}*)hl_alloc({max(b.size, 1)} * sizeof({t}));")
        allocs.append(f"pre{j}")
    if allocs:   # out of memory: free what was had and return the status (MemoryError)
        lines.append(f"  if (!({' && '.join(allocs)})) {{ {' '.join(f'free({b});' for b in allocs)} return 1; }}")
    for i in range(n):
        if plan.kind[i] == "swap":
            lines.append(f"  memcpy(cur{i}, {iname[i]}, {size[i]});")
        elif plan.kind[i] == "update":
            lines.append(f"  if ((const void*)cur{i} != (const void*){iname[i]}) memcpy(cur{i}, {iname[i]}, {size[i]});")
    cargs = [f"cur{k}" for k in loop.cond_pos] + ["hl_go"]
    bargs = [f"cur{k}" for k in plan.pos] + obuf
    lines += [f"  {ct} hl_go[1];", "  for (;;) {",
              f"    if ({calls['cond'](cargs)}) {{ hl_status = 1; break; }}", "    if (!hl_go[0]) break;"]
    if plan.pre is not None:      # regions whose new value the body reads: written before it
        pargs = [f"cur{k}" for k in plan.pre_pos] + [f"pre{j}" for j in range(len(pouts))]
        lines.append(f"    if ({calls['pre'](pargs)}) {{ hl_status = 1; break; }}")
        for k, reg, starts in plan.first:
            lines += ["  " + x for x in _write_region(ins[k].shape, pouts[reg].shape, f"cur{k}", f"pre{reg}",
                                                       [f"pre{s}" for s in starts], ty[k])]
    lines.append(f"    if ({calls['body'](bargs)}) {{ hl_status = 1; break; }}")
    for i, j in plan.src.items():
        if first[j] != i:
            lines.append(f"    memcpy(nxt{i}, nxt{first[j]}, {size[i]});")
    for k, reg, starts in plan.updates:       # after the body: every read of cur{k} is done
        lines += ["  " + x for x in _write_region(ins[k].shape, bouts[reg].shape, f"cur{k}", obuf[reg],
                                                   [obuf[s] for s in starts], ty[k])]
    for i, t in enumerate(ty):
        if plan.kind[i] == "swap":
            lines.append(f"    {{ {t}* s = cur{i}; cur{i} = nxt{i}; nxt{i} = s; }}")
    lines.append("  }")
    for i in sorted(used):
        if plan.kind[i] != "update":
            lines.append(f"  if ((const void*){oname[i]} != (const void*)cur{i}) memcpy({oname[i]}, cur{i}, {size[i]});")
    lines += [f"  free({b});" for b in allocs]
    return "\n".join(lines + ["  return hl_status;", "}"])


def build_while(op: ExternOp, target: Target, schedule_fn: Callable[[Graph], object],
                used=None, subgraph: Subgraph | None = None) -> Kernel | None:
    """One compiled kernel running while loop ``op`` (inputs: the initial state, outputs: the
    final state; ``used``: the outputs anyone reads, None: all), or None when it cannot be
    compiled whole (then it runs on the host). A condition or body with extern ops is compiled
    by ``subgraph`` as a graph the kernel calls (``runtime.nested``), when that runs in C."""
    loop = op.fn
    if not isinstance(loop, WhileLoop) or len(loop.cond_outs) != 1:
        return None
    plan = _plan(loop)
    if not plan.graph.outputs:
        return None
    cg, bg = Graph(list(loop.cond_outs)), plan.graph
    if cg.outputs[0].shape not in ((), (1,)):
        return None
    base = extern_name(op)
    state = [Buffer(f"s{i}", d, tuple(shp), "arg") for i, (d, shp) in enumerate(zip(op.out_dtypes, op.out_shapes))]
    res = [Buffer(f"r{i}", b.dtype, b.shape, "arg") for i, b in enumerate(state)]
    nested = [g for g in (cg, bg) if g.extern_ops]
    if nested and subgraph is None:
        return None
    graphs = [subgraph(list(g.outputs), list(g.inputs)) for g in nested]
    if any(g is None for g in graphs):
        return None
    table = [table_buffer(len(graphs))] if graphs else []
    fn = LoweredFunc("hl_while", tuple(state + table + res), len(state) + len(table), Seq(()))
    r = CRenderer(target.hardware)
    tname = r.name(table[0], table[0].name) if table else ""
    funcs, calls = [], {}
    parts = [(cg, "cond"), *([(plan.pre, "pre")] if plan.pre is not None else []), (bg, "body")]
    for g, suffix in parts:
        if g.extern_ops:       # graph j of the table: the j-th with extern ops
            j = [x for x in (cg, bg) if x.extern_ops].index(g)
            k = len(g.inputs)
            calls[suffix] = lambda a, j=j, k=k: program_call(tname, j, a[:k], a[k:])
            continue
        lf = lower(schedule_fn(g), f"{base}_{suffix}")
        check_scratch(lf)
        funcs.append(r.function(lf))     # first: they decide which vector types are declared
        calls[suffix] = lambda a, name=lf.name: f"{name}({', '.join(a)})"
    ct = r.ctype(cg.outputs[0].dtype, storage=True)
    bouts = [Buffer(f"o{j}", t.dtype, tuple(t.shape)) for j, t in enumerate(bg.outputs)]
    pouts = [Buffer(f"p{j}", t.dtype, tuple(t.shape)) for j, t in enumerate(plan.pre.outputs)] \
        if plan.pre is not None else []
    used = set(range(len(state))) if used is None else set(used)
    driver = _driver(r, fn, calls, ct, bouts, pouts, loop, plan, used)
    src = "\n".join([r.preamble(fn), *r.vector_types.values(), *([CALL_HELPER] if graphs else []), *funcs, driver,
                     r.postamble(fn)])
    log.debug("while '%s': compiled whole (%d state elements, %d kept, %d updated in place, %d of them "
              "before the body%s)", op.name, len(state), plan.kind.count("kept"), plan.kind.count("update"),
              len(plan.first),
              f", {len(graphs)} graph(s) with extern ops called" if graphs else "")
    lib = Library(compile_c(src, target.compiler))
    return NestedKernel(fn, src, lib, target, graphs) if graphs else Kernel(fn, src, lib, target)


__all__ = ["build_while"]
