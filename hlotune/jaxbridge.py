"""From JAX to hlotune: lowering JAX functions and ``Lowered`` objects, and ``hlotune.jit``.

A call's *signature* is what JAX compiles for: the pytree structure of the arguments, each
array leaf's shape, dtype and weak type, the type of each Python scalar (JAX makes it a weakly
typed parameter: ``float`` -> f32, ``int`` -> i32, ``bool`` -> pred, whatever its value) and the
values of static arguments. Functions are lowered with ``keep_unused=True``, so module
parameter k is leaf k of ``(args, kwargs)`` without the static ones, flattened as JAX does.
JAX is optional (the ``jax`` extra); without it these functions raise MissingDependencyError.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .dsl.errors import ConfigError, HlotuneError, KernelArgumentError, MissingDependencyError

log = logging.getLogger(__name__)

_SCALARS = (bool, int, float, complex)


def require_module(name: str, extra: str, package: str | None = None):
    """Module ``name``, or MissingDependencyError naming ``package`` and the extra installing it."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise MissingDependencyError(package or name, extra) from e


def jax_module():
    """``jax``, or MissingDependencyError naming the extra that installs it."""
    return require_module("jax", "jax")


def is_lowered(obj) -> bool:
    """Whether ``obj`` is a ``jax.stages.Lowered`` (told without importing JAX)."""
    t = type(obj)
    return t.__name__ == "Lowered" and t.__module__.split(".")[0] == "jax"


def is_jax_input(obj) -> bool:
    """Whether ``obj`` is a JAX function or a ``Lowered`` rather than module text, a path or a
    Module (callables that are not modules are taken for JAX functions)."""
    if isinstance(obj, (str, bytes, bytearray, os.PathLike)) or hasattr(obj, "lowered"):
        return False
    return is_lowered(obj) or callable(obj)


# ---------------------------------------------------------------------------- arguments
@dataclass(frozen=True)
class Call:
    """One call's arguments: the dynamic leaves (host arrays or Python scalars), their tree,
    the static arguments and the signature key."""

    leaves: tuple
    tree: object
    static: tuple
    key: tuple
    weak: tuple

    @classmethod
    def of(cls, args: Sequence, kwargs: dict, static_argnums: tuple[int, ...], static_argnames: tuple[str, ...],
           host: bool = True) -> Call:
        """Split and flatten a call. ``host``: array leaves become numpy arrays without copies
        where they can (numpy as is, JAX CPU arrays and DLPack objects as views); otherwise
        (JAX tracers inside a jitted program) leaves stay as given."""
        jax = jax_module()
        nums = set(static_argnums)
        static = (tuple((i, a) for i, a in enumerate(args) if i in nums),
                  tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames)))
        dyn = (tuple(a for i, a in enumerate(args) if i not in nums),
               {k: v for k, v in kwargs.items() if k not in static_argnames})
        leaves, tree = jax.tree_util.tree_flatten(dyn)
        weak = tuple(_weak(x) for x in leaves)
        leaves = tuple(_host(x, tree, k) if host else _traced(x, tree, k) for k, x in enumerate(leaves))
        try:
            key = (tree, static, tuple(_leaf_key(x, w) for x, w in zip(leaves, weak)))
            hash(key)
        except TypeError as e:
            raise KernelArgumentError(f"static arguments must be hashable, as for jax.jit: {e}") from None
        return cls(leaves, tree, static, key, weak)

    def abstract(self) -> tuple[tuple, dict]:
        """(args, kwargs) to lower with: leaves as ShapeDtypeStructs (a Python scalar as its
        weak type, whatever its value), static arguments as given."""
        jax = jax_module()
        sds = []
        for x, w in zip(self.leaves, self.weak):
            if isinstance(x, _SCALARS):
                d = jax.dtypes.canonicalize_dtype(np.dtype(type(x)))
                sds.append(jax.ShapeDtypeStruct((), d, weak_type=not isinstance(x, bool)))
            else:
                sds.append(jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=w))
        return self.rebuild(sds)

    def rebuild(self, leaves) -> tuple[tuple, dict]:
        """(args, kwargs) of this call with its dynamic leaves replaced by ``leaves``."""
        jax = jax_module()
        dyn_args, kwargs = jax.tree_util.tree_unflatten(self.tree, list(leaves))
        args, it = [], iter(dyn_args)
        fixed = dict(self.static[0])
        for i in range(len(dyn_args) + len(fixed)):
            args.append(fixed[i] if i in fixed else next(it))
        return tuple(args), {**kwargs, **dict(self.static[1])}


def _host(x, tree, k: int):
    """Leaf ``k`` as a numpy array (a view where the layout allows) or a Python scalar."""
    if isinstance(x, _SCALARS):
        return x
    a = None
    if isinstance(x, np.ndarray):
        a = x
    elif hasattr(x, "__dlpack__") and not hasattr(x, "__array__"):
        try:
            a = np.from_dlpack(x)
        except (RuntimeError, TypeError, ValueError, BufferError):
            a = None
    elif hasattr(x, "__array__") or isinstance(x, np.generic):
        a = np.asarray(x)                      # JAX CPU arrays: a read-only view of the buffer
    if a is None or a.dtype.kind in "OSUVMm":
        raise _not_an_array(x, tree, k)
    return a


def _traced(x, tree, k: int):
    """Leaf ``k`` of a call inside a JAX program: a Python scalar, or anything with a shape and dtype."""
    if isinstance(x, _SCALARS) or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    raise _not_an_array(x, tree, k)


def _not_an_array(x, tree, k: int) -> KernelArgumentError:
    what = type(x).__name__ + (f" of {x.dtype}" if isinstance(x, np.ndarray) else "")
    return KernelArgumentError(f"argument leaf {k} of {tree} is a {what}, not an array or a number; make it "
                               "static (static_argnums= / static_argnames=) or pass an array")


def _weak(x) -> bool:
    """Whether JAX array or tracer ``x`` is weakly typed (Python scalars are, and say so by type)."""
    w = getattr(x, "weak_type", None)
    if w is None:
        w = getattr(getattr(x, "aval", None), "weak_type", False)
    return bool(w)


def _leaf_key(x, weak: bool) -> tuple:
    if isinstance(x, _SCALARS):
        return ("scalar", type(x).__name__)
    return (tuple(x.shape), str(np.dtype(x.dtype)), weak)


# ---------------------------------------------------------------------------- lowering
@dataclass(frozen=True)
class Lowering:
    """A function lowered by JAX: its HLO text and output tree (``key_orders``: the key order
    of each plain dict in ``f``'s output, which JAX's pytrees sort)."""

    text: str
    in_tree: object
    out_tree: object
    out_avals: tuple
    key_orders: object = None


def hlo_text(lowered) -> str:
    """The HLO text of a ``jax.stages.Lowered`` with every constant's literal printed (XLA's
    default printer elides those of more than a few elements as ``{...}``, which no reader can
    take back: a function closing over a numpy array would lose it)."""
    comp = lowered.compiler_ir("hlo")
    try:
        return comp.as_hlo_text(print_large_constants=True)
    except TypeError:       # a jaxlib whose printer takes no options: its default text
        return comp.as_hlo_text()


def lower(f, args: Sequence = (), kwargs: dict | None = None, static_argnums=(), static_argnames=()) -> Lowering:
    """Lower JAX function ``f`` for ``args``/``kwargs`` (arrays, ShapeDtypeStructs, scalars),
    or take a ``Lowered`` as it is (then no arguments)."""
    jax = jax_module()
    kwargs = kwargs or {}
    orders: dict = {}
    if is_lowered(f):
        if args or kwargs:
            raise ConfigError("a jax.stages.Lowered carries its arguments: give no example arguments with it")
        lowered = f
    elif callable(f):
        @functools.wraps(f)
        def traced(*a, **k):
            out = f(*a, **k)
            orders["out"] = key_orders(out)
            return out
        lowered = jax.jit(traced, static_argnums=static_argnums, static_argnames=static_argnames,
                          keep_unused=True).lower(*args, **kwargs)
    else:
        raise ConfigError(f"expected a JAX function or a jax.stages.Lowered, got {type(f).__name__}")
    text = hlo_text(lowered)
    outs = tuple(jax.tree_util.tree_leaves(lowered.out_info))
    return Lowering(text, lowered.in_tree, lowered.out_tree, outs, orders.get("out"))


def jax_hlo_text(f, *args, **kwargs) -> str:
    """The HLO text of JAX function ``f`` lowered for ``args``/``kwargs``, or of a ``Lowered``."""
    if not is_lowered(f):
        call = Call.of(args, kwargs, (), ())
        args, kwargs = call.abstract()
    return lower(f, args, kwargs).text


def key_orders(out):
    """The key order of every plain dict in ``out`` (lists and tuples walked), else None."""
    if type(out) is dict:
        return ("dict", tuple((k, key_orders(v)) for k, v in out.items()))
    if type(out) in (list, tuple):
        kids = tuple(key_orders(v) for v in out)
        return ("seq", kids) if any(k is not None for k in kids) else None
    return None


def reorder(obj, orders):
    """``obj`` (rebuilt by JAX's tree_unflatten, dict keys sorted) with each plain dict's keys in
    ``orders``."""
    if orders is None:
        return obj
    kind, items = orders
    if kind == "dict" and type(obj) is dict:
        return {k: reorder(obj[k], o) for k, o in items}
    if kind == "seq" and type(obj) in (list, tuple):
        return type(obj)(reorder(v, o) for v, o in zip(obj, items))
    return obj


# ---------------------------------------------------------------------------- hlotune.jit
@dataclass(frozen=True)
class _Compiled:
    compiled: object            # api.CompiledModule
    lowering: Lowering
    dtypes: tuple               # parameter dtypes (numpy)


class JitFunction:
    """``f`` compiled by hlotune per call signature (see the module docstring); call it like
    ``f``. Returns numpy arrays in ``f``'s own output structure."""

    def __init__(self, f: Callable, load: Callable, compile: Callable, db=None, target="cpu", static_argnums=(),
                 static_argnames=()):
        if not callable(f):
            raise ConfigError(f"hlotune.jit takes a function, got {type(f).__name__}")
        self.f, self.db, self.target = f, db, target
        self._load, self._compile_module = load, compile     # hlotune.api's load_hlo and compile
        self.static_argnums = _argnums(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self._cache: dict[tuple, _Compiled] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        call = Call.of(args, kwargs, self.static_argnums, self.static_argnames)
        entry = self._entry(call)
        ins = host_inputs(call, entry.dtypes)
        outs = entry.compiled(*ins)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        # never hand back an input or a cached constant as an output: the caller may write to it
        ids = {id(x) for x in ins} | {id(c) for c in entry.compiled.graph.constants.values()}
        outs = [o.copy() if id(o) in ids else o for o in outs]
        jax = jax_module()
        return reorder(jax.tree_util.tree_unflatten(entry.lowering.out_tree, outs), entry.lowering.key_orders)

    def module(self, *args, **kwargs):
        """The hlotune Module lowered for these arguments (compiled and cached as a call would)."""
        return self._entry(Call.of(args, kwargs, self.static_argnums, self.static_argnames)).compiled.module

    @property
    def signatures(self) -> list[tuple]:
        """The signature keys compiled so far."""
        return list(self._cache)

    def _entry(self, call: Call) -> _Compiled:
        with self._lock:
            if call.key not in self._cache:
                self._cache[call.key] = self._compile(call)
            return self._cache[call.key]

    def _compile(self, call: Call) -> _Compiled:
        args, kwargs = call.abstract()
        lw = lower(self.f, args, kwargs, self.static_argnums, self.static_argnames)
        m = self._load(lw.text)
        check_lowering(lw, call, m)
        log.info("hlotune.jit(%s): compiling %s", getattr(self.f, "__name__", "f"), m.signature)
        return _Compiled(self._compile_module(m, target=self.target, db=self.db), lw,
                         tuple(p.dtype.np for p in m.params))


def host_inputs(call: Call, dtypes) -> list[np.ndarray]:
    """The call's leaves as arrays of the parameters' ``dtypes`` (converted as JAX converts:
    float64 to a float32 parameter, a Python scalar to its weak type; no copy when they match)."""
    out = []
    for k, (x, d) in enumerate(zip(call.leaves, dtypes)):
        try:
            out.append(np.asarray(x, d))
        except (OverflowError, ValueError, TypeError) as e:
            raise KernelArgumentError(f"argument leaf {k} ({x!r:.40}) cannot be a {np.dtype(d)} parameter: {e}") from None
    return out


def check_lowering(lw: Lowering, call: Call, module) -> None:
    """HlotuneError unless the module's parameters and outputs are the call's leaves and the
    function's output leaves one for one (shapes and dtypes)."""
    if lw.in_tree != call.tree or len(module.params) != len(call.leaves):
        raise HlotuneError(f"JAX lowered {len(module.params)} parameters for {len(call.leaves)} argument leaves "
                           f"({lw.in_tree} vs {call.tree})")
    got = [(tuple(t.shape), np.dtype(t.dtype.np)) for t in module.outputs]
    want = [(tuple(a.shape), np.dtype(a.dtype)) for a in lw.out_avals]
    if got != want:
        raise HlotuneError(f"the module's outputs {got} are not the function's output leaves {want}")


def _argnums(nums) -> tuple[int, ...]:
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    for n in nums:
        if not isinstance(n, int) or n < 0:
            raise ConfigError(f"static_argnums must be non-negative ints, got {n!r}", "static_argnums")
    return nums


__all__ = ["Call", "JitFunction", "Lowering", "is_jax_input", "is_lowered", "jax_hlo_text", "jax_module", "lower"]
