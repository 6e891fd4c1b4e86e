"""Tasks: the tunable kernels of a graph, and applying tuned configs back to a schedule.

After default fusion, every root stage of every compute segment is one kernel. Its *stage
graph* computes the stage from the tensors it reads that are materialized (segment inputs
or other root stages); the structural key of that graph is the workload key. Tasks with the
same key (in one module or across modules) are one task.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

import numpy as np

from ..dsl.expr import walk
from ..dsl.ops import Op
from ..dsl.tensor import Graph, Tensor, input_tensors
from ..runtime.module import plan_segments
from ..runtime.targets import Target
from ..schedules.fusion import fuse_default, stage_default
from ..schedules.schedule import Schedule, Stage
from ..schedules.templates.base import Space, Template
from ..schedules.templates.families import classify, templates_for


@dataclass
class Task:
    """One kernel's workload on one target."""

    key: str
    graph: Graph
    family: str
    target: Target
    weight: int = 1
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)

    @property
    def template(self) -> Template:
        return templates_for(self.target)[self.family]

    @property
    def root_op(self):
        return self.graph.outputs[0].op

    def stage(self, s: Schedule) -> Stage:
        return s.stage_of_op(self.root_op)

    @property
    def hardware(self):
        """The target's machine facts with this task's thread count."""
        from dataclasses import replace
        return replace(self.target.hardware, threads=self.threads)

    @property
    def space(self) -> Space:
        s = Schedule(self.graph)
        fuse_default(s)
        return self.template.space(self.stage(s), self.hardware)

    def schedule(self, config: dict | None) -> Schedule:
        """The stage graph scheduled with ``config`` (None: the default schedule)."""
        s = Schedule(self.graph)
        fuse_default(s)
        st = self.stage(s)
        if not config:
            stage_default(s, st, self.target, self.threads)
        else:
            self.template.apply(s, st, config, self.hardware)
        return s

    @property
    def shapes(self) -> dict:
        return {"inputs": [list(t.shape) for t in self.graph.inputs],
                "outputs": [list(t.shape) for t in self.graph.outputs],
                "reduce": [v.extent for v in self.root_op.reduce_axis]}

    @property
    def dtypes(self) -> list[str]:
        return [t.dtype.name for t in self.graph.inputs + self.graph.outputs]

    @property
    def flops(self) -> float:
        """Arithmetic ops per call: nodes of the body times the iteration space."""
        op = self.root_op
        n = 1
        for v in op.axis + op.reduce_axis:
            n *= v.extent
        nodes = sum(1 for e in walk(op.body[0].src if op.is_reduction else op.body)
                    if e.op not in (Op.LOAD, Op.VAR, Op.CONST, Op.CAST))
        return float(n * max(nodes + (1 if op.is_reduction else 0), 1))

    @property
    def bytes(self) -> float:
        return float(sum(t.size * t.dtype.itemsize for t in self.graph.inputs + self.graph.outputs))

    @property
    def description(self) -> str:
        op = self.root_op
        ins = ", ".join(f"{t.dtype}{list(t.shape)}" for t in self.graph.inputs)
        red = f" reduce{[v.extent for v in op.reduce_axis]}" if op.reduce_axis else ""
        return f"{self.family} {op.name}: ({ins}) -> {self.graph.outputs[0].dtype}{list(op.shape)}{red}"

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for t in self.graph.inputs:
            d = t.dtype
            if d.is_float:
                a = rng.standard_normal(t.shape)
            elif d.is_bool:
                a = rng.random(t.shape) < 0.5
            else:
                a = rng.integers(0, 8, size=t.shape)
            out.append(np.require(np.asarray(a).astype(d.np), requirements="C"))
        return out


def workload_key(g: Graph) -> str:
    return hashlib.sha256(repr(g.key).encode()).hexdigest()[:20]


def stage_graph(s: Schedule, st: Stage) -> Graph:
    """The graph computing root stage ``st`` from the materialized tensors it reads."""
    inputs: list[Tensor] = []
    seen: set = set()
    seg_inputs = {(id(t.op), t.value_index) for t in s.graph.inputs}

    def visit(op):
        for t in input_tensors(op):
            k = (id(t.op), t.value_index)
            p = s.stage_of_op(t.op)
            if k in seg_inputs or p is None or p.attach[0] != "inline":
                if k not in seen:
                    seen.add(k)
                    inputs.append(t)
            else:
                visit(p.op)

    visit(st.op)
    return Graph([st.op.output(k) for k in range(st.op.num_outputs)], inputs)


def segment_tasks(g: Graph, target: Target) -> list[tuple[Stage, Task]]:
    """(stage, task) for each root stage of one compute segment's default fusion."""
    s = Schedule(g)
    fuse_default(s)
    out = []
    for st in s.stages.values():
        if st.attach != ("root",):
            continue
        sg = stage_graph(s, st)
        out.append((st, Task(workload_key(sg), sg, classify(st), target)))
    return out


def extract_tasks(outputs, inputs, target: Target) -> list[Task]:
    """The distinct tasks of the graph computing ``outputs`` (weights count repeats)."""
    graph = Graph(list(outputs), inputs)
    tasks: dict[str, Task] = {}
    for item in plan_segments(graph):
        if isinstance(item, tuple):
            outs, ins = item
            for _, t in segment_tasks(Graph(outs, ins), target):
                if t.key in tasks:
                    tasks[t.key].weight += 1
                else:
                    tasks[t.key] = t
    return list(tasks.values())


def tuned_schedule_fn(db, target: Target):
    """A ``schedule_fn`` for CompiledGraph: each root stage takes the best config the database
    holds for its workload on ``target``, else the target's default schedule."""
    def fn(g: Graph) -> Schedule:
        s = Schedule(g)
        fuse_default(s)
        for st in list(s.stages.values()):
            if st.attach != ("root",):
                continue
            key = workload_key(stage_graph(s, st))
            best = db.best(key, target.key) if db is not None else None
            if best is not None and best.config:
                templates_for(target)[classify(st)].apply(s, st, best.config, target.hardware)
            else:
                stage_default(s, st, target)
        return s
    return fn
