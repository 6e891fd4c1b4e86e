"""Tasks: the tunable kernels of a graph, and applying tuned configs back to a schedule.

After default fusion, every root stage of every compute segment is one kernel. Its *stage
graph* computes the stage from the tensors it reads that are materialized (segment inputs
or other root stages); the structural key of that graph is the workload key. Tasks with the
same key (in one module or across modules) are one task.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass

import numpy as np

from ..dsl.errors import ConfigError, LoweringError, ScheduleError
from ..dsl.expr import const, structural_key, walk
from ..dsl.ops import Op
from ..dsl.tensor import Graph, Tensor, input_tensors
from ..runtime.module import plan_segments
from ..runtime.targets import Target
from ..schedules.fusion import Choice, fuse, stage_default
from ..schedules.rewrites import rewrite
from ..schedules.schedule import Schedule, Stage
from ..schedules.templates.base import Space, Template
from ..schedules.templates.families import classify, templates_for
from .records import LEGACY_PREFIX, plausible_times

log = logging.getLogger(__name__)


@dataclass
class Task:
    """One kernel's workload on one target."""

    key: str
    graph: Graph
    family: str
    target: Target
    weight: int = 1
    threads: int | None = None          # None: the target's

    @property
    def template(self) -> Template:
        return templates_for(self.hardware)[self.family]

    @property
    def root_op(self):
        return self.graph.outputs[0].op

    def stage(self, s: Schedule) -> Stage:
        return s.stage_of_op(self.root_op)

    @property
    def hardware(self):
        """The target's machine facts with this task's thread count."""
        from dataclasses import replace
        hw = self.target.hardware
        return hw if self.threads is None else replace(hw, threads=self.threads)

    @property
    def space(self) -> Space:
        s = Schedule(self.graph)
        fuse(s, self.hardware)
        return self.template.space(self.stage(s), self.hardware)

    def tolerances(self, inputs, expected, tols: list) -> list:
        """``(rtol, atol)`` per output for answers to ``inputs`` (``expected``: the reference's):
        the one policy's ``tols`` for a kernel."""
        return tols

    def register(self, db) -> None:
        """Record this task's workload, target and knob space (to check imported configs
        against) in ``db``; a format-1 entry of the same workload is re-keyed to it first."""
        if db.has_legacy():
            old = legacy_workload_key(self.graph)
            if old is not None:
                db.adopt_legacy(old, self.key)
        db.add_workload(self.key, self.family, self.shapes, self.dtypes, self.description, self.flops, self.bytes,
                        authoritative=True)
        db.add_target(self.target.key, self.target.kind, self.target.provenance)
        db.add_space(self.key, self.target.key, self.space)

    def build_key(self, config: dict | None) -> str:
        """What ``schedule(config)`` depends on, as text: a measurer re-times a config it built
        before (a winner's confirmation, a plan's re-timing) without building it again."""
        return json.dumps(config or {}, sort_keys=True)

    def schedule(self, config: dict | None) -> Schedule:
        """The stage graph scheduled with ``config`` (None: the default schedule)."""
        s = Schedule(self.graph)
        fuse(s, self.hardware)
        st = self.stage(s)
        if not config:
            stage_default(s, st, self.hardware)
        else:
            self.template.apply(s, st, config, self.hardware)
        return s

    def default_point(self) -> dict | None:
        """The point of ``space`` that the default schedule is: the template's own default config
        where the default schedule is that config's schedule (a dot's or convolution's on the
        CPU); None where it is a loop default outside the template's space. A tuner told the
        default's time at this point starts from it (autotune/tune.py)."""
        s = Schedule(self.graph)
        fuse(s, self.hardware)
        st, t, hw = self.stage(s), self.template, self.hardware
        make = getattr(t, "default_config", None)
        if make is None:
            return None
        try:
            c = t.complete(make(st) if hw.work_groups else make(st, hw), self.space)
            self.space.validate(c)
            same = self.schedule(None).to_json() == self.schedule(c).to_json()
        except (ConfigError, ScheduleError, LoweringError) as e:
            log.debug("task %s: its default is no point of its space (%s)", self.key, e)
            return None
        return c if same else None

    @property
    def shapes(self) -> dict:
        """Input and output shapes, and ``reduce``: the reduction extents of the task's largest
        reduction (a dot's K under its fused epilogue, say), [] for none."""
        reds = [op for op in self.graph.compute_ops if op.reduce_axis]
        main = max(reds, key=lambda op: math.prod(v.extent for v in op.axis + op.reduce_axis), default=None)
        return {"inputs": [list(t.shape) for t in self.graph.inputs],
                "outputs": [list(t.shape) for t in self.graph.outputs],
                "reduce": [v.extent for v in main.reduce_axis] if main is not None else []}

    @property
    def dtypes(self) -> list[str]:
        return [t.dtype.name for t in self.graph.inputs + self.graph.outputs]

    @property
    def flops(self) -> float:
        """Arithmetic ops per call: for every compute op of the task's graph (a dot and its
        epilogue, say), the nodes of its body times its iteration space (a multiply-add: 2)."""
        total = 0.0
        for op in self.graph.compute_ops:
            n = 1
            for v in op.axis + op.reduce_axis:
                n *= v.extent
            nodes = sum(1 for e in walk(op.body[0].src if op.is_reduction else op.body)
                        if e.op not in (Op.LOAD, Op.VAR, Op.CONST, Op.CAST))
            total += n * max(nodes + (1 if op.is_reduction else 0), 1)
        return float(total)

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
    """The database key of a workload (format 2): a hash of its structural key, which names
    ops, dtypes and reducers (``dsl.expr.structural_key``), so adding an opcode keeps it."""
    return _hash(_graph_key(g, None))


#: ``Op`` members in the order that numbered them for format-1 keys (schema <= 2); frozen here
#: so those keys can still be recomputed whatever ``Op`` becomes
_FORMAT1_OPS = ("CONST", "VAR", "LOAD", "NEG", "NOT", "ABS", "SIGN", "EXP", "EXPM1", "LOG", "LOG1P", "SQRT",
                "RSQRT", "CBRT", "TANH", "ERF", "SIN", "COS", "TAN", "FLOOR", "CEIL", "ROUND", "ISFINITE",
                "POPCNT", "CLZ", "ADD", "SUB", "MUL", "DIV", "REM", "FLOORDIV", "FLOORMOD", "POW", "ATAN2", "MAX",
                "MIN", "AND", "OR", "XOR", "SHL", "SHRA", "SHRL", "LT", "LE", "GT", "GE", "EQ", "NE", "SELECT",
                "CAST", "BITCAST", "REDUCE")
_FORMAT1 = {name: k + 1 for k, name in enumerate(_FORMAT1_OPS)}


def legacy_workload_key(g: Graph) -> str | None:
    """The format-1 key hlotune gave ``g`` before keys named ops (None if ``g`` uses an op that
    did not exist then: no format-1 key can refer to it)."""
    try:
        return _hash(_graph_key(g, lambda op: _FORMAT1[op.name]))
    except KeyError:
        return None


def _graph_key(g: Graph, opcode) -> tuple:
    """``Graph.key`` with ops keyed by ``opcode`` (their names when None)."""
    roots = [t[tuple(const(0) for _ in t.shape)] if t.shape else t[()] for t in g.outputs]
    return (tuple((tuple(t.shape), t.dtype.name) for t in g.inputs), structural_key(roots, opcode))


def _hash(key: tuple) -> str:
    """The first 20 hex digits of the SHA-256 of ``repr(key)``, the stored key format. That
    text is the key's tree written out: where an inlined stage is read many times (an erfc
    polynomial, a layer's residual chain) it runs to tens of MB and seconds, and fusion plans
    ask for the same stage graphs' keys again and again. So the answer is kept per digest of
    the key's DAG (shared sub-tuples digested once): the text is written out once per
    distinct workload in a process."""
    fp = _dag_digest(key, {})
    out = _KEYS.get(fp)
    if out is None and _tree_nodes(key, {}) > TREE_MAX:
        # a tree too large to write out (a log-step scan reads each step twice: 2^steps leaves):
        # its key is the DAG digest's (no stored key can be of this form's text: none was written)
        out = hashlib.sha256(b"dag:" + fp).hexdigest()[:20]
    if out is None:
        out = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
        if len(_KEYS) >= _KEYS_MAX:
            _KEYS.pop(next(iter(_KEYS)))
        _KEYS[fp] = out
    return out


#: DAG digest of a structural key -> its stored key (oldest dropped first beyond _KEYS_MAX)
_KEYS: dict[bytes, str] = {}
_KEYS_MAX = 4096


#: structural keys whose tree (shared parts counted every time) has more nodes than this are
#: keyed by their DAG digest instead of their text
TREE_MAX = 1 << 22


def _tree_nodes(x, memo: dict) -> int:
    """Nodes of the tree of nested tuples ``x``, shared sub-tuples counted at every use (capped
    just above ``TREE_MAX``)."""
    if not isinstance(x, tuple):
        return 1
    n = memo.get(id(x))
    if n is None:
        n = 1
        for c in x:
            n += _tree_nodes(c, memo)
            if n > TREE_MAX:
                break
        n = memo[id(x)] = min(n, TREE_MAX + 1)
    return n


def _dag_digest(x, memo: dict) -> bytes:
    """A digest of nested tuples ``x`` with each shared sub-tuple digested once (by identity
    while ``x`` is alive); leaves by their ``repr``, with their type."""
    if not isinstance(x, tuple):
        return hashlib.blake2b(f"{type(x).__name__}:{x!r}".encode(), digest_size=16).digest()
    d = memo.get(id(x))
    if d is None:
        h = hashlib.blake2b(b"(", digest_size=16)
        for c in x:
            h.update(_dag_digest(c, memo))
        d = memo[id(x)] = h.digest()
    return d


def stage_graph(s: Schedule, st: Stage) -> Graph:
    """The graph computing root stage ``st`` from the materialized tensors it reads."""
    inputs: list[Tensor] = []
    seen: set = set()
    seg_inputs = {(id(t.op), t.value_index) for t in s.graph.inputs}

    def visit(op):
        for t in input_tensors(op):
            k = (id(t.op), t.value_index)
            p = s.stage_of_op(t.op)
            if k in seg_inputs or p is None or p.is_root:
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
    fuse(s, target.hardware)
    out = []
    for st in s.stages.values():
        if not st.is_root:
            continue
        sg = stage_graph(s, st)
        out.append((st, Task(workload_key(sg), sg, classify(st, s), target)))
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


#: plan decisions that rewrite the graph (schedules/rewrites.py)
REWRITE_KINDS = ("onepass", "online")


def fused_schedule(g: Graph, target: Target, plan: dict):
    """Segment ``g`` rewritten and fused by fusion ``plan``, and a function giving each root
    stage's workload ``(key, stage graph)``, whose tuned configs it takes. A stage that a
    rewrite only rebuilt (it reads a rewritten tensor somewhere upstream) takes the workload of
    its namesake in ``g`` fused by the plan's other decisions: a stage graph's key covers the
    definitions of what it reads, so its own key would be new and miss the kernel's tuning
    (and writing a new key out costs seconds where an inlined stage is read many times)."""
    hw = target.hardware
    g2 = rewrite(g, plan, Choice, hw)[0]
    s = Schedule(g2)
    fuse(s, hw, plan)
    s0 = None
    if g2 is not g:
        s0 = Schedule(g)
        fuse(s0, hw, {kn: v for kn, v in plan.items() if not kn.startswith(REWRITE_KINDS)})

    def workload(name: str) -> tuple[str, Graph]:
        src = s0 if s0 is not None and name in s0.stages and s0.stages[name].is_root else s
        sg = stage_graph(src, src.stage(name))
        return workload_key(sg), sg
    return s, workload


def plan_key(g: Graph) -> str:
    """The workload key of ``g``'s fusion plans (never a kernel's key, even when the segment is
    one kernel)."""
    return hashlib.sha256(("fusion:" + workload_key(g)).encode()).hexdigest()[:20]


def stored_plan(db, g: Graph, target) -> dict:
    """The plan to compile segment ``g`` with: its confirmed winner, else its fastest measured
    plan, else the default plan ({})."""
    if db is None:
        return {}
    key = plan_key(g)
    win = db.winner(key, target.key)
    if win is not None:
        return win["config"]
    best = db.best(key, target.key)
    return best.config if best is not None else {}


def tuned_schedule_fn(db, target: Target, k: int = 8, plans: bool = True):
    """A ``schedule_fn`` for CompiledGraph: the segment is fused by the fusion plan the database
    holds for it (autotune/plans.py; none, or ``plans=False``: default fusion), then each root stage takes the
    fastest of the ``k`` best configs the database holds for its workload on ``target`` that
    still schedules and lowers,
    else the target's default schedule. A stored config that no longer applies (its template
    changed, or the database was edited) or whose times are implausible is skipped with a
    warning. Workloads of format-1 keys are found through ``legacy_workload_key``."""
    hw = target.hardware

    def fn(g: Graph) -> Schedule:
        plan = stored_plan(db, g, target) if plans else {}      # the segment's measured fusion plan
        s, workload = fused_schedule(g, target, plan)
        for name in [n for n, st in s.stages.items() if st.is_root]:
            st = s.stage(name)
            key, sg = workload(name)
            task = Task(key, sg, classify(st, s), target)
            tuned = False
            for config in _stored_configs(db, task, k) if db is not None else ():
                if not config:
                    break                   # the default schedule measured fastest
                mark = s.to_json()
                try:
                    task.schedule(config).lower()
                    task.template.apply(s, st, config, hw)
                    tuned = True
                    break
                except (ConfigError, ScheduleError, LoweringError) as e:
                    log.warning("tuned config %s of workload %s (%s) no longer applies on %s: %s; trying the "
                                "next best", config, task.key, task.description, target, e)
                    s = Schedule.from_json(s.graph, mark)     # (a rewriting plan's graph, not g)
                    st = s.stage(name)
            if not tuned:
                stage_default(s, st, hw)
        return s
    return fn


def _stored_configs(db, task: Task, k: int) -> list[dict]:
    """The configs to try for ``task``, best first: its confirmed winner (autotune/winners.py;
    ``{}``, the default schedule, when no candidate was surely faster), then the configs of the
    ``k`` fastest trials in ``db`` (under its format-1 key too, while the database has such
    keys); trials with implausible times are left out with a warning."""
    keys = [task.key]
    if db.has_legacy():
        old = legacy_workload_key(task.graph)
        keys += [LEGACY_PREFIX + old] if old else []
    trials = []
    for key in keys:
        for t in db.top_k(key, task.target.key, k):
            if plausible_times(t.times):
                trials.append(t)
            else:
                log.warning("ignoring trial %s of workload %s: implausible times %s", t.id, key, t.times[:4])
    ranked = [t.config for t in sorted(trials, key=lambda t: t.median)[:k]]
    win = db.winner(task.key, task.target.key)   # confirmed by re-timing: it decides first
    return ranked if win is None else [win["config"]] + [c for c in ranked if c != win["config"]]
