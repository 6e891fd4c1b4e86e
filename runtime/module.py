"""Run a whole graph (a lowered HLO module) on a target.

The graph is cut at extern ops (while loops, sort, ...): each segment of compute ops between
them becomes one compiled kernel (one C function running all its loop nests); on the cpu a
while loop whose condition and body are plain compute graphs is one compiled kernel too
(whileloop.py), and so is a scatter (schedules/scatter.py); other extern ops run on the host
and evaluate their sub-computations through compiled code. Extern ops with no
inputs (array constants) are evaluated once, at compile time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..dsl.errors import KernelArgumentError
from ..dsl.tensor import (
    ComputeOp,
    Conditional,
    ExternOp,
    Graph,
    LapackCall,
    Scatter,
    SortCall,
    Tensor,
    input_tensors,
)
from ..schedules.fusion import default_schedule
from ..schedules.schedule import Schedule
from .backends import backend
from .build import Kernel, build
from .program import Program
from .targets import Target, get_target
from .threads import Governor

log = logging.getLogger(__name__)

Key = tuple[int, int]


def _key(t: Tensor) -> Key:
    return (id(t.op), t.value_index)


@dataclass
class _KernelStep:
    kernel: Kernel
    graph: Graph
    inputs: list[Key]
    outputs: list[Key]
    #: output index -> input index whose array the output takes over (a while loop's state
    #: element whose initial value nothing reads afterwards)
    donate: dict | None = None


@dataclass
class _ExternStep:
    op: ExternOp
    inputs: list[Key]


def plan_segments(graph: Graph, eval_constant: Callable | None = None) -> list:
    """Cut ``graph`` at extern ops. Returns, in execution order: a dict of constant values
    (extern ops without inputs, evaluated by ``eval_constant(op)``), ``(outputs, inputs)``
    pairs of compute segments, and the ExternOps between them."""
    phase: dict[int, int] = {id(t.op): 0 for t in graph.inputs}
    externs: list[ExternOp] = []
    ext_phase: dict[int, int] = {}   # the phase after whose segment an extern op runs
    constants: dict[Key, np.ndarray] = {}
    for op in graph.ops:
        p = max((phase[id(t.op)] for t in input_tensors(op)), default=0)
        if isinstance(op, ExternOp) and not op.inputs:
            if eval_constant is not None:
                outs = eval_constant(op)
                for k, (o, d, shp) in enumerate(zip(outs, op.out_dtypes, op.out_shapes)):
                    constants[(id(op), k)] = np.require(np.asarray(o, d.np).reshape(shp), requirements="C")
            phase[id(op)] = 0
        elif isinstance(op, ExternOp):
            externs.append(op)
            ext_phase[id(op)] = p
            phase[id(op)] = p + 1
        elif id(op) not in phase:
            phase[id(op)] = p
    out_keys = {_key(t) for t in graph.outputs}
    plan: list = [constants] if constants else []
    for p in range(max(phase.values(), default=0) + 1):
        seg = [op for op in graph.ops if isinstance(op, ComputeOp) and phase[id(op)] == p]
        if seg:
            plan.append(_segment_io(graph, seg, out_keys))
        plan.extend(op for op in externs if ext_phase[id(op)] == p)
    return plan


def _segment_io(graph: Graph, seg: list[ComputeOp], out_keys: set[Key]):
    ids = {id(op) for op in seg}
    needed_later: set[Key] = set(out_keys)
    for op in graph.ops:
        if id(op) not in ids:
            needed_later.update(_key(t) for t in input_tensors(op))
    outs = [op.output(k) for op in seg for k in range(op.num_outputs) if (id(op), k) in needed_later]
    ins: list[Tensor] = []
    seen: set[Key] = set()
    for op in seg:
        for t in input_tensors(op):
            if id(t.op) not in ids and _key(t) not in seen:
                seen.add(_key(t))
                ins.append(t)
    return outs, ins


class CompiledGraph:
    """``outputs`` computed from ``inputs`` on ``target``; call with numpy arrays.

    ``schedule_fn(graph) -> Schedule`` picks each segment's schedule (default: fused, parallel,
    vectorized loops on the cpu, work-group mappings on devices; a tuning database supplies
    tuned ones).
    """

    def __init__(self, outputs: Sequence[Tensor], inputs: Sequence[Tensor] | None = None,
                 target="cpu", schedule_fn: Callable[[Graph], Schedule] | None = None):
        self.target: Target = get_target(target)
        self.graph = Graph(list(outputs), inputs)
        self.schedule_fn = schedule_fn or (lambda g: default_schedule(g, hw=self.target.hardware))
        self.constants: dict[Key, np.ndarray] = {}
        self.steps: list = []
        self._sub: dict[tuple, CompiledGraph] = {}
        # what a call checks and where it puts each argument, and where the results are
        self._in_specs = [(_key(t), nm, t.dtype.np, tuple(t.shape), t)
                          for t, nm in zip(self.graph.inputs, self.graph.input_names)]
        self._out_keys = [_key(t) for t in self.graph.outputs]
        self._plan()
        self.program = self._program()
        # the thread count of each call, measured against the cores actually free (cpu)
        self.governor = Governor(self.target.threads) if backend(self.target.kind).governs_threads else None

    # ------------------------------------------------------------------ planning
    def _plan(self) -> None:
        items = plan_segments(self.graph, lambda op: op.fn([], self.run))
        for n, item in enumerate(items):
            if isinstance(item, ExternOp):
                later = self._read_after(items, n)
                used = {i for i in range(item.num_outputs) if (id(item), i) in later}
                k = self._compile_extern(item, used)
                if k is not None:
                    ins = [_key(t) for t in item.inputs]
                    for j, a in enumerate(getattr(k, "constant_inputs", ())):   # runtime.nested's tables
                        self.constants[("table", id(item), j)] = a
                        ins.append(("table", id(item), j))
                    self.steps.append(_KernelStep(k, None, ins, [(id(item), i) for i in range(item.num_outputs)],
                                                  self._donations(later, ins, k.in_place)))
                else:
                    self.steps.append(_ExternStep(item, [_key(t) for t in item.inputs]))
            elif isinstance(item, dict):
                self.constants.update(item)
            else:
                outs, ins = item
                g = Graph(outs, ins)
                kernel = build(self.schedule_fn(g), self.target)
                log.debug("segment -> kernel with %d inputs, %d outputs", len(ins), len(outs))
                self.steps.append(_KernelStep(kernel, g, [_key(t) for t in ins], [_key(t) for t in outs]))

    def _program(self, empty: bool = False) -> Program | None:
        """Every step in one C call (``runtime.program``) when all are C kernels (``Kernel``:
        the cpu's); else None (the steps run from Python)."""
        if (not self.steps and not empty) or \
                not all(isinstance(s, _KernelStep) and isinstance(s.kernel, Kernel) for s in self.steps):
            return None
        specs = {k: (tuple(b.shape), b.dtype.np) for s in self.steps
                 for k, b in zip(s.outputs, s.kernel.lowered.args[s.kernel.lowered.num_inputs:])}
        g = self.graph
        specs.update({_key(t): (tuple(t.shape), t.dtype.np) for t in (*g.inputs, *g.outputs)})
        specs.update({k: (a.shape, a.dtype) for k, a in self.constants.items()})
        return Program(self.steps, [_key(t) for t in g.inputs], self._out_keys, self.constants, specs, self.target)

    def _compile_extern(self, op: ExternOp, used: set[int]):
        """A compiled kernel for extern op ``op`` (a while loop, a scatter, a LAPACK call, a sort) where the backend
        has one, else None (the op runs on the host)."""
        b = backend(self.target)
        if op.kind == "while":
            return b.compile_while(op, self.target, self.schedule_fn, used, self._subgraph)
        if isinstance(op.fn, Conditional):
            return b.compile_conditional(op, self.target, self._subgraph)
        if op.kind == "scatter" and isinstance(op.fn, Scatter):
            return b.compile_scatter(op, self.target)
        if isinstance(op.fn, LapackCall):
            return b.compile_lapack(op, self.target)
        if isinstance(op.fn, SortCall):
            return b.compile_sort(op, self.target)
        return None

    def _subgraph(self, outputs: list, inputs: list | None):
        """``outputs`` on ``inputs`` (None: the graph's own) compiled with this graph's target and
        schedules, when it runs as one C call (``runtime.nested`` calls it from its kernels),
        else None."""
        g = CompiledGraph(outputs, inputs, self.target, self.schedule_fn)
        if g.program is None and not g.steps:      # nothing to compute: a program that copies
            g.program = g._program(empty=True)
        return g if g.program is not None else None

    def _read_after(self, items: list, n: int) -> set[Key]:
        """The values read by the steps after ``items[n]``, or returned."""
        keys = {_key(t) for t in self.graph.outputs}
        for item in items[n + 1:]:
            if isinstance(item, ExternOp):
                keys.update(_key(t) for t in item.inputs)
            elif isinstance(item, tuple):
                keys.update(_key(t) for t in item[1])
        return keys

    def _donations(self, later: set[Key], ins: list[Key], in_place: dict | None) -> dict[int, int]:
        """Output -> input of an extern op's kernel whose array the output may take over:
        pairs ``in_place`` allows (None: output i and input i, a while loop's state element or a
        scatter's operand) whose input was made by an earlier compiled kernel (a fresh array of
        this call; not an argument or a constant, which the caller or the module keeps, nor a
        host step's result, which may be either), is not in ``later`` (what later steps read or
        the graph returns), and is taken once by this one."""
        made = {k for step in self.steps if isinstance(step, _KernelStep) for k in step.outputs}
        pairs = {i: i for i in range(len(ins))} if in_place is None else in_place
        return {o: i for o, i in pairs.items()
                if ins[i] in made and ins[i] not in later and ins.count(ins[i]) == 1}

    # ------------------------------------------------------------------ running
    def run(self, outputs: Sequence[Tensor], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Evaluate a sub-computation (for extern ops), compiled once and cached."""
        k = tuple(_key(t) for t in outputs)
        if k not in self._sub:
            self._sub[k] = CompiledGraph(outputs, None, self.target, self.schedule_fn)
        r = self._sub[k](*arrays)
        return list(r) if isinstance(r, tuple) else [r]

    def __call__(self, *arrays):
        gov = self.governor
        return self._call(arrays) if gov is None or not gov.active else gov.run(self._call, arrays)

    def _call(self, arrays):
        g = self.graph
        if len(arrays) != len(g.inputs):
            raise KernelArgumentError(f"expected {len(g.inputs)} inputs "
                                      f"({', '.join(g.input_names)}), got {len(arrays)}")
        values: dict[Key, np.ndarray] = dict(self.constants)
        for (key, nm, npdt, shape, t), a in zip(self._in_specs, arrays):
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            if a.dtype != npdt:
                raise KernelArgumentError(f"input '{nm}' has dtype {a.dtype}, expected {t.dtype}")
            if a.shape != shape:
                raise KernelArgumentError(f"input '{nm}' has shape {a.shape}, expected {t.shape}")
            values[key] = a if a.flags.c_contiguous else np.ascontiguousarray(a)
        if self.program is not None:
            res = tuple(self.program([values[spec[0]] for spec in self._in_specs]))
            return res[0] if len(res) == 1 else res
        for step in self.steps:
            if isinstance(step, _KernelStep):   # values are checked at entry or made by our kernels
                ins = [values[k] for k in step.inputs]
                values.update(zip(step.outputs, step.kernel.run_trusted(ins, step.donate)))
            else:
                op = step.op
                outs = op.fn([values[k] for k in step.inputs], self.run)
                for i, (o, d, shp) in enumerate(zip(outs, op.out_dtypes, op.out_shapes)):
                    values[(id(op), i)] = np.require(np.asarray(o, d.np).reshape(shp), requirements="C")
        res = tuple(values[k] for k in self._out_keys)
        return res[0] if len(res) == 1 else res

    def profile(self, *arrays, repeat: int = 10, min_repeat_ms: float = 20.0) -> list[dict]:
        """Run once on ``arrays`` and time every step on the values it saw: a kernel by its own
        ``time`` (on a device, its launches with the data already there: CUDA events or OpenCL
        profiling), a host step by the wall clock of one call. One dict per step, in order:
        ``step``, ``kind`` ('kernel' or 'host'), ``name``, ``seconds`` (median) and ``times``."""
        g = self.graph
        values: dict[Key, np.ndarray] = dict(self.constants)
        for t, a in zip(g.inputs, arrays):
            values[_key(t)] = np.require(np.asarray(a, t.dtype.np), requirements="C")
        out = []
        for k, step in enumerate(self.steps):
            ins = [values[x] for x in step.inputs]
            if isinstance(step, _KernelStep):
                r = step.kernel.time(*ins, repeat=repeat, min_repeat_ms=min_repeat_ms)
                values.update(zip(step.outputs, step.kernel.run_trusted(ins)))
                out.append({"step": k, "kind": "kernel", "name": step.kernel.lowered.name, "seconds": r.median,
                            "times": list(r.times)})
                continue
            op = step.op
            t0 = time.perf_counter()
            outs = op.fn(ins, self.run)
            dt = time.perf_counter() - t0
            for i, (o, d, shp) in enumerate(zip(outs, op.out_dtypes, op.out_shapes)):
                values[(id(op), i)] = np.require(np.asarray(o, d.np).reshape(shp), requirements="C")
            out.append({"step": k, "kind": "host", "name": f"{op.kind} {op.name}", "seconds": dt, "times": [dt]})
        return out

    @property
    def kernels(self) -> list[Kernel]:
        return [s.kernel for s in self.steps if isinstance(s, _KernelStep)]
