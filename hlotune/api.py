"""The public entry points for HLO (and StableHLO) modules: ``load_hlo`` and ``compile``."""

from __future__ import annotations

import collections
import math
import os
from dataclasses import dataclass

import numpy as np

from .frontend.shapecheck import leaves as shape_leaves
from .runtime.module import CompiledGraph

__all__ = ["CompiledModule", "Module", "check_tune_args", "compile", "jit", "load_hlo", "report", "tolerance",
           "tune"]


@dataclass
class Module:
    """A parsed HLO module lowered to tensor expressions.

    ``params``: the entry parameters as placeholders (in parameter order), then one per leaf of
    each infeed's data (``infeed.k...``, in program order); ``outputs``: the entry result
    flattened, then the leaves of each outfeed's data; ``tuple_result``: whether the result is a
    tuple. ``CompiledModule`` feeds the infeed parameters from its queue and queues the outfeed
    outputs.
    """

    name: str
    hlo: object
    lowered: object
    source: str | None = None
    #: a framework's name for each parameter (None: the HLO's name alone), e.g. a weight's path
    param_names: tuple | None = None
    #: parameter index -> its value, for a framework model's weights (hlotune/frameworks.py):
    #: calls then give only the other parameters, positional; a bound one may be passed by name
    bound: dict | None = None

    @property
    def params(self):
        return self.lowered.params

    @property
    def outputs(self):
        return self.lowered.outputs

    @property
    def tuple_result(self) -> bool:
        return self.lowered.tuple_result

    @property
    def infeed(self) -> tuple:
        """The data shape of each ``infeed``, in the order the module reads its queue."""
        return self.lowered.infeed

    @property
    def outfeed(self) -> tuple:
        """The data shape of each ``outfeed``, in the order the module writes its queue."""
        return self.lowered.outfeed

    @property
    def n_entry_params(self) -> int:
        """The entry parameters (``params`` less the infeed leaves)."""
        return len(self.params) - sum(len(shape_leaves(s)) for s in self.infeed)

    @property
    def n_entry_outputs(self) -> int:
        """The entry result's leaves (``outputs`` less the outfeed leaves)."""
        return len(self.outputs) - sum(len(shape_leaves(s)) for s in self.outfeed)

    @property
    def ops(self):
        """The entry computation's instructions."""
        return self.hlo.entry_computation.instructions

    @property
    def signature(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.params[:self.n_entry_params])
        outs = ", ".join(f"{t.dtype}{list(t.shape)}" for t in self.outputs[:self.n_entry_outputs])
        text = f"{self.name}({ins}) -> ({outs})" if self.tuple_result else f"{self.name}({ins}) -> {outs}"
        for what, shapes in (("infeed", self.infeed), ("outfeed", self.outfeed)):
            if shapes:
                text += f"; {what} " + ", ".join(str(s) for s in shapes)
        return text

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random arrays matching the entry parameters (ints in [0, 8), bools random)."""
        rng = np.random.default_rng(seed)
        out = []
        for k, t in enumerate(self.params):
            if self.bound and k in self.bound:      # a framework model's weight: its own value
                out.append(self.bound[k])
                continue
            d = t.dtype
            if d.is_float:
                a = rng.standard_normal(t.shape).astype(d.np)
            elif d.is_bool:
                a = rng.random(t.shape) < 0.5
            else:
                a = rng.integers(0, 8, size=t.shape).astype(d.np)
            out.append(np.asarray(a, d.np))
        return out

    def param_keys(self) -> list[list[str]]:
        """The names each parameter answers to (npz keys, keyword arguments): ``argK``, its
        name, and its name without JAX's ``.N`` suffix (``x.1`` -> ``x``) where that is unique."""
        import re
        names = [t.name for t in self.params]
        short = [re.sub(r"\.\d+$", "", n) for n in names]
        given = self.param_names or (None,) * len(names)
        keys = []
        for k, (n, s, g) in enumerate(zip(names, short, given)):
            ks = [f"arg{k}", *([g] if g else []), n]
            if s != n and short.count(s) == 1 and s not in names:
                ks.append(s)
            keys.append(list(dict.fromkeys(ks)))
        return keys

    def bind(self, args, named: dict) -> list:
        """One value per parameter from positional ``args`` and keyword ``named`` (see
        ``param_keys``); Python numbers for scalar parameters become arrays of their dtype.
        KernelArgumentError for a parameter given twice or not at all, or an unknown name."""
        from .dsl.errors import KernelArgumentError
        if self.bound and len(args) + len(self.bound) <= len(self.params):
            # positional arguments fill the unbound parameters in order; bound ones come from
            # their values unless given by name
            free = [k for k in range(len(self.params)) if k not in self.bound]
            keys = self.param_keys()
            byname = {k for k, ks in enumerate(keys) for name in named if name in ks}
            named = {**{f"arg{k}": v for k, v in self.bound.items() if k not in byname},
                     **{f"arg{free[i]}": a for i, a in enumerate(args)}, **named}
            args = ()
        if not named and len(args) == len(self.params) and all(isinstance(a, np.ndarray) for a in args):
            return list(args)       # the common call: one array per parameter, in order (checked at entry)
        keys = self.param_keys()
        if len(args) > len(keys):
            raise KernelArgumentError(f"{self.name} takes {len(keys)} parameters, got {len(args)} positional arguments")
        values = list(args) + [None] * (len(keys) - len(args))
        given = [k < len(args) for k in range(len(keys))]
        owner = {key: k for k, ks in enumerate(keys) for key in ks}
        for name, v in named.items():
            if name not in owner:
                raise KernelArgumentError(f"{self.name} has no parameter '{name}'; parameters: "
                                          f"{', '.join('/'.join(ks) for ks in keys)}")
            k = owner[name]
            if given[k]:
                raise KernelArgumentError(f"parameter {k} ({self.params[k].name}) is given twice")
            values[k], given[k] = v, True
        for k, (t, v) in enumerate(zip(self.params, values)):
            if not given[k]:
                raise KernelArgumentError(f"no value for parameter {k} ({t.name}: {t.dtype}{list(t.shape)})")
            if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
                if t.shape:
                    raise KernelArgumentError(f"parameter {t.name} is {t.dtype}{list(t.shape)}, not a scalar; got {v!r}")
                try:
                    a = np.asarray(v, t.dtype.np)
                except (OverflowError, ValueError) as e:
                    raise KernelArgumentError(f"{v!r} is not a {t.dtype} for parameter {t.name}: {e}") from None
                if (t.dtype.is_int or t.dtype.is_bool) and a.item() != v:   # floats round; integers are exact
                    raise KernelArgumentError(f"{v!r} is not a {t.dtype} for parameter {t.name}")
                values[k] = a
        return values

    def __repr__(self) -> str:
        return f"Module({self.signature})"


_TEXT_START = ("HloModule", "module", "func.func", "#")


def _is_path(path_or_text) -> bool:
    """A path (``os.PathLike``), or a one-line str without the braces every module has that
    does not start as module text does."""
    if isinstance(path_or_text, os.PathLike):
        return True
    if not isinstance(path_or_text, str):
        return False
    s = path_or_text.strip()
    return "{" not in s and "\n" not in s and not s.startswith(_TEXT_START)


def load_hlo(path_or_text, *example_args, **example_kwargs) -> Module:
    """Parse and lower a module: XLA HLO text or StableHLO text (MLIR, as
    ``jax.jit(f).lower(x).as_text()`` prints it), given as a path (``.hlo``, ``.mlir``, ...) or
    as the text itself (str or UTF-8 bytes); the format is told from the text (see
    ``frontend.read``). A file that is missing, unreadable or not UTF-8 text, and any module
    that is malformed, raise ``HloParseError``. A JAX function with example arguments, or a
    ``jax.stages.Lowered``, is lowered by JAX first (the ``jax`` extra; see ``hlotune.jaxbridge``)."""
    from .jaxbridge import is_jax_input, jax_hlo_text
    if is_jax_input(path_or_text):
        return load_hlo(jax_hlo_text(path_or_text, *example_args, **example_kwargs))
    if example_args or example_kwargs:
        from .dsl.errors import ConfigError
        raise ConfigError("example arguments are for JAX functions; module text or a path takes none")
    from .dsl.errors import HloParseError
    from .frontend.lower import lower_module
    from .frontend.read import load_module_file, parse_module_text
    file = None
    if _is_path(path_or_text):
        file = os.fspath(path_or_text)
        if not os.path.isfile(file):
            what = "is not a file" if os.path.exists(file) else "does not exist"
            raise HloParseError(f"module file '{file}' {what} (give a path to HLO or StableHLO "
                                "text, or the text itself)", file=file)
        hlo = load_module_file(file)
    elif isinstance(path_or_text, (str, bytes, bytearray)):
        hlo = parse_module_text(path_or_text)
    else:
        raise HloParseError(f"expected a module path or text, got {type(path_or_text).__name__}")
    lowered = lower_module(hlo)
    return Module(hlo.name, hlo, lowered, file)


def _feed_leaves(value, shape, top: bool = True) -> list:
    """The leaf arrays of one queued infeed value for data ``shape`` (a tuple of one element
    may be given as that element)."""
    from .dsl.errors import KernelArgumentError
    if shape.is_tuple:
        if top and len(shape.elements) == 1 and not isinstance(value, (tuple, list)):
            value = (value,)
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.elements):
            raise KernelArgumentError(f"an infeed value for {shape} is a tuple of {len(shape.elements)}, "
                                      f"got {type(value).__name__}")
        return [x for v, e in zip(value, shape.elements) for x in _feed_leaves(v, e, False)]
    return [value if isinstance(value, np.ndarray) else np.asarray(value, shape.numpy_dtype)]


def _feed_value(leaves: list, shape, top: bool = True):
    """The value of one outfeed from its leaf arrays (consumed from ``leaves``); a tuple of one
    element is that element."""
    if not shape.is_tuple:
        return leaves.pop(0)
    v = tuple(_feed_value(leaves, e, False) for e in shape.elements)
    return v[0] if top and len(v) == 1 else v


class CompiledModule:
    """A module compiled for a target; call it with one array per entry parameter, positional
    or by keyword (any name ``Module.param_keys`` gives it); a Python number may stand for a
    scalar parameter (converted to its dtype, as JAX does for weakly typed scalars). Returns one
    array, or a tuple for a tuple result.

    A module with ``infeed``s reads one value per infeed and call from the queue ``infeed``
    (append values before the call; a tuple for a tuple of data), and each ``outfeed`` appends
    its data to the queue ``outfeed`` (XLA's ``transfer_to_infeed``/``transfer_from_outfeed``).
    Infeed values may instead be given as the ``infeed.k...`` parameters."""

    def __init__(self, module: Module, target="cpu", schedule_fn=None):
        self.module = module
        self.graph = CompiledGraph(module.outputs, module.params, target, schedule_fn)
        self.target = self.graph.target
        self.infeed: collections.deque = collections.deque()
        self.outfeed: collections.deque = collections.deque()

    def __call__(self, *arrays, **named):
        m = self.module
        n_feeds = len(m.infeed)
        take = n_feeds and len(arrays) + len(named) + len(m.bound or ()) <= m.n_entry_params
        if take:
            from .dsl.errors import KernelArgumentError
            if len(self.infeed) < n_feeds:
                raise KernelArgumentError(f"{m.name} reads {n_feeds} value(s) from its infeed queue, which "
                                          f"holds {len(self.infeed)}: append them to .infeed before the call")
            leaves = [x for v, s in zip(list(self.infeed)[:n_feeds], m.infeed) for x in _feed_leaves(v, s)]
            named = {**named, **{f"arg{m.n_entry_params + j}": a for j, a in enumerate(leaves)}}
        r = self.graph(*m.bind(arrays, named))
        for _ in range(n_feeds if take else 0):     # read only by a call that ran
            self.infeed.popleft()
        if m.outfeed:
            r = list(r) if isinstance(r, tuple) else [r]
            fed = r[m.n_entry_outputs:]
            self.outfeed.extend(_feed_value(fed, s) for s in m.outfeed)
            r = tuple(r[:m.n_entry_outputs])
            if len(r) == 1 and not m.tuple_result:
                r = r[0]
        if m.tuple_result and not isinstance(r, tuple):
            return (r,)
        return r

    @property
    def kernels(self):
        return self.graph.kernels


def _db(db, create: bool = True):
    """A Database from a path (``create=False``: one that must exist) or a Database."""
    from .autotune.database import Database
    if db is None or isinstance(db, Database):
        return db
    return Database(db, create=create)


def compile(module, target="cpu", db=None, threads: int | None = None) -> CompiledModule:
    """Compile ``module`` (a Module, path, HLO text or ``jax.stages.Lowered``) for ``target``
    (for a JAX function, ``hlotune.jit``). With ``db`` (a path or
    Database), each kernel uses the best configuration tuned for it on this target; kernels
    the database does not know get the default schedule; ``db`` must exist. ``threads``: CPU
    threads (default ``$HLOTUNE_THREADS``, else every core); part of the target's key, so
    configs tuned with another thread count do not apply."""
    from .runtime.targets import get_target
    if not isinstance(module, Module):
        module = load_hlo(module)
    t = get_target(target, threads)
    fn = None
    if db is not None:
        from .autotune.task import tuned_schedule_fn
        fn = tuned_schedule_fn(_db(db, create=False), t)
    return CompiledModule(module, t, fn)


def export_library(module, out, db=None, threads: int | None = None):
    """Write ``module`` (as ``compile`` takes it), with the kernels ``db`` tuned for this cpu, as
    a library folder ``out`` that runs without Python or a compiler: the shared library, a C
    header with one entry point, a C example and a manifest (runtime/export.py). A module with
    host-only ops is refused (ExportError, naming them). Returns the folder."""
    from .runtime.export import export_library as _export
    c = compile(module, "cpu", db=db, threads=threads)
    return _export(c.graph, out, name=c.module.name, input_names=[t.name for t in c.module.params])


def load_library(folder):
    """An exported library folder (``export_library``) loaded for calls on numpy arrays; no
    compiler needed. ExportError when the folder is no export or this CPU lacks the
    instructions it was built with."""
    from .runtime.export import load_library as _load
    return _load(folder)


def tune(module, *example_args, target="cpu", trials: int | None = 64, db="tuning.db", tuner: str = "bayes",
         seed: int = 0, progress: bool = True, example_kwargs: dict | None = None, remeasure: bool = False,
         threads: int | None = None, budget=None, **options):
    """Tune every kernel of ``module`` on ``target`` with ``trials`` measurements in all, or
    within ``budget`` (seconds, or text as ``"90s"``, ``"5m"``, ``"1h"``; then ``trials=None``
    sets no cap on trials), the batches going to the tasks where they pay most
    (autotune/scheduler.py); every trial goes into ``db`` (SQLite path or Database) as it
    finishes. Re-running the same call
    resumes. ``module``: a Module, path or text, a ``jax.stages.Lowered``, or a JAX function
    followed by example arguments (and ``example_kwargs``). Returns one result per task (see
    ``autotune.tune.TaskResult``); the database records the module's name for each of its tasks
    (reports name kernels by it). Arguments are checked (``check_tune_args``) before anything is
    loaded or measured. ``dask=`` (a scheduler address or Client) measures on a Dask cluster,
    ``security=`` (a ``distributed.security.Security`` or a spec, see
    ``autotune.cluster.security``) secures it with TLS. ``remeasure=True`` measures no new config:
    it re-times each task's finalists already in ``db`` on this machine and stores the winners
    again (autotune/winners.py). ``threads``: as in ``compile``."""
    from .autotune.tune import tune_graph
    from .runtime.targets import get_target
    if budget is not None:
        options["budget"] = parse_duration(budget)
    check_tune_args(1 if remeasure or (trials is None and budget is not None) else trials, tuner, seed, **options)
    target = get_target(target, threads)
    if remeasure:
        trials = 0
        options.setdefault("plan_share", 0.0)
    if not isinstance(module, Module):
        module = load_hlo(module, *example_args, **(example_kwargs or {}))
    elif example_args or example_kwargs:
        from .dsl.errors import ConfigError
        raise ConfigError("example arguments are for JAX functions; a Module takes none")
    from .autotune.task import workload_key
    from .dsl.tensor import Graph
    key = module.name + ":" + workload_key(Graph(module.outputs, module.params))
    database = _db(db)
    results = tune_graph(module.outputs, module.params, target, trials, database, tuner, seed,
                         progress=progress, module_key=key, **options)
    for r in results:
        database.name_workload(r.task.key, module.name)
    return results


def parse_duration(value) -> float:
    """Seconds from a positive number or text: ``"300"``, ``"90s"``, ``"5m"``, ``"1.5h"``; anything
    else raises ConfigError naming ``budget``."""
    from .dsl.errors import ConfigError
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    try:
        if isinstance(value, str):
            text = value.strip().lower()
            scale = units.get(text[-1:], None)
            v = float(text[:-1] if scale else text) * (scale or 1.0)
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
            v = float(value)
        else:
            raise ValueError
    except (ValueError, IndexError):
        v = math.nan
    if not math.isfinite(v) or v <= 0:
        raise ConfigError(f"budget must be a positive duration such as 300, '90s', '5m' or '1h', got {value!r}",
                          "budget")
    return v


def check_tune_args(trials=64, tuner="bayes", seed=0, **options) -> None:
    """Raise ConfigError naming the argument unless ``trials`` (and ``batch``, ``repeat``) is a
    positive int, ``tuner`` is registered, ``seed`` is in [0, 2^32), ``timeout``,
    ``min_repeat_ms`` are positive finite numbers and ``cold`` is True, False or "auto"."""
    import math

    from .autotune.tune import check_cold
    from .autotune.tuners import TUNERS
    from .dsl.errors import ConfigError

    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    for name, v in (("trials", trials), ("batch", options.get("batch", 1)), ("repeat", options.get("repeat", 1))):
        if not is_int(v) or v < 1:
            raise ConfigError(f"{name} must be a positive integer, got {v!r}", name)
    if tuner not in TUNERS:
        raise ConfigError(f"unknown tuner {tuner!r}; expected one of {sorted(TUNERS)}", "tuner")
    if not is_int(seed) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed must be an integer in [0, 2^32), got {seed!r}", "seed")
    check_cold(options.get("cold", "auto"))
    for name in ("timeout", "min_repeat_ms"):
        v = options.get(name, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ConfigError(f"{name} must be a positive number, got {v!r}", name)


def report(db="tuning.db"):
    """pandas reports of a tuning database (see ``autotune.report.Report``), which must exist."""
    from .autotune.report import Report
    return Report(_db(db, create=False))


def tolerance(dtype, scale: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) for outputs of ``dtype`` whose largest magnitude is ``scale``: the one policy
    of ``hlotune.dsl.tolerance`` (the tuner's answer gate and ``run --check`` use it too)."""
    from .dsl.tolerance import tolerance as policy
    return policy(dtype, scale)


def jit(f, db=None, target="cpu", static_argnums=(), static_argnames=()):
    """``f`` (a JAX function) compiled by hlotune on its first call per input signature: lowered
    with JAX, compiled for ``target`` with the tuned configs of ``db`` (a path or Database, which
    must exist; None: default schedules), cached per signature. Takes numpy and JAX arrays (JAX
    CPU arrays and DLPack objects without copies), Python scalars (weakly typed, as JAX) and
    keyword arguments; ``static_argnums``/``static_argnames`` as ``jax.jit``. Returns numpy
    arrays in ``f``'s output structure (dicts keep ``f``'s key order); see ``jaxbridge.JitFunction``."""
    from .jaxbridge import JitFunction
    return JitFunction(f, load_hlo, compile, db, target, static_argnums, static_argnames)
