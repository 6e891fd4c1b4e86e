"""``hlotune.jax_op``: hlotune's compiled CPU kernels as an op inside the user's own ``jax.jit``.

Per call signature (as ``hlotune.jit``, see jaxbridge.py) the function is lowered by JAX,
compiled by hlotune for the cpu (tuned configs from ``db=``) and handed to the FFI shim
(runtime/ffi.py) as a plan; the op is an XLA custom call (``jax.ffi.ffi_call``) to the shim's
``hlotune_call`` handler whose result shapes and dtypes are the function's own (JAX's abstract
evaluation of ``f``), so it composes with everything around it in the jitted program. ``vmap``
runs it once per batch element. Gradients are JAX's own: the backward pass differentiates
``f`` with JAX (XLA's kernels), the forward pass runs hlotune's. A module with a step that runs
on the host (a sort or while loop hlotune does not compile whole), or compiled for a device
rather than the cpu, runs through ``jax.pure_callback`` instead, with a warning.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .dsl.errors import ConfigError
from .jaxbridge import Call, Lowering, check_lowering, jax_module, lower, reorder

log = logging.getLogger(__name__)

_REGISTERED: dict[str, object] = {}
_REG_LOCK = threading.Lock()


def ffi_shim():
    """The shim library, built and registered with JAX as the cpu FFI target ``hlotune_call``
    (once per process)."""
    jax = jax_module()
    from .runtime.ffi import HANDLER, shim
    with _REG_LOCK:
        if HANDLER not in _REGISTERED:
            lib = shim(jax.ffi.include_dir())
            jax.ffi.register_ffi_target(HANDLER, jax.ffi.pycapsule(getattr(lib, HANDLER)), platform="cpu")
            _REGISTERED[HANDLER] = lib
        return _REGISTERED[HANDLER]


@dataclass(frozen=True)
class _Op:
    """One signature's compiled module and how the op calls it (``plan``: the FFI plan id,
    None when it runs through a host callback)."""

    compiled: object
    lowering: Lowering
    dtypes: tuple
    outs: tuple                 # jax.ShapeDtypeStruct per output leaf
    plan: int | None


class JaxOp:
    """``f`` as an op for JAX programs (see the module docstring and ``jax_op``)."""

    def __init__(self, f: Callable, db=None, target="cpu", static_argnums=(), static_argnames=()):
        from .jaxbridge import _argnums
        from .runtime.targets import get_target
        if not callable(f):
            raise ConfigError(f"hlotune.jax_op takes a function, got {type(f).__name__}")
        self.f, self.db, self.target = f, db, get_target(target)
        self.static_argnums = _argnums(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self._cache: dict[tuple, _Op] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        jax = jax_module()
        import jax.numpy as jnp
        call = Call.of(args, kwargs, self.static_argnums, self.static_argnames, host=False)
        op = self._entry(call)
        # Python scalars as weakly typed arrays: f's own derivative sees the same promotions
        leaves = [jnp.asarray(x) for x in call.leaves]
        outs = self._differentiable(op, call)(*leaves)
        return reorder(jax.tree_util.tree_unflatten(op.lowering.out_tree, list(outs)), op.lowering.key_orders)

    @property
    def signatures(self) -> list[tuple]:
        return list(self._cache)

    def uses_ffi(self, *args, **kwargs) -> bool:
        """Whether the op runs these arguments through the FFI handler (else a host callback)."""
        return self._entry(Call.of(args, kwargs, self.static_argnums, self.static_argnames, host=False)).plan is not None

    def _entry(self, call: Call) -> _Op:
        with self._lock:
            if call.key not in self._cache:
                self._cache[call.key] = self._compile(call)
            return self._cache[call.key]

    def _compile(self, call: Call) -> _Op:
        jax = jax_module()
        from .api import compile, load_hlo
        from .runtime.ffi import Plan, unsupported
        args, kwargs = call.abstract()
        lw = lower(self.f, args, kwargs, self.static_argnums, self.static_argnames)
        m = load_hlo(lw.text)
        check_lowering(lw, call, m)
        cm = compile(m, target=self.target, db=self.db)
        outs = tuple(jax.ShapeDtypeStruct(tuple(t.shape), t.dtype.np) for t in m.outputs)
        why = unsupported(cm.graph)
        plan = None
        if why is None:
            plan = Plan.of(cm.graph).register(ffi_shim())
            log.info("jax_op(%s): %s as FFI plan %d (%d kernels)", getattr(self.f, "__name__", "f"), m.signature,
                     plan, len(cm.kernels))
        else:
            log.warning("jax_op(%s): %s runs through a host callback, not the FFI handler: %s",
                        getattr(self.f, "__name__", "f"), m.name, why)
        return _Op(cm, lw, tuple(p.dtype.np for p in m.params), outs, plan)

    def _forward(self, op: _Op, leaves):
        """The op's outputs (flat) on JAX values ``leaves``, cast to the parameters' dtypes."""
        jax = jax_module()
        ins = [x.astype(d) if x.dtype != d else x for x, d in zip(leaves, op.dtypes)]
        if op.plan is not None:
            from .runtime.ffi import HANDLER
            call = jax.ffi.ffi_call(HANDLER, list(op.outs), vmap_method="sequential")
            return tuple(call(*ins, plan=np.int64(op.plan)))

        def host(*arrays):
            r = op.compiled(*arrays)
            return tuple(r) if isinstance(r, tuple) else (r,)
        return tuple(jax.pure_callback(host, list(op.outs), *ins, vmap_method="sequential"))

    def _differentiable(self, op: _Op, call: Call):
        """The flat forward with a custom VJP: the backward pass is JAX's derivative of ``f``."""
        jax = jax_module()

        def f_flat(*leaves):
            args, kwargs = call.rebuild(leaves)
            return tuple(jax.tree_util.tree_leaves(self.f(*args, **kwargs)))

        @jax.custom_vjp
        def run(*leaves):
            return self._forward(op, leaves)

        def fwd(*leaves):
            return self._forward(op, leaves), leaves

        def bwd(leaves, cts):
            return jax.vjp(f_flat, *leaves)[1](tuple(cts))

        run.defvjp(fwd, bwd)
        return run


def jax_op(f: Callable, db=None, target="cpu", static_argnums=(), static_argnames=()) -> JaxOp:
    """``f`` (a JAX function) as an op usable inside the user's own ``jax.jit``: its compiled
    hlotune CPU kernels (tuned configs from ``db``, a path or Database that must exist) run as
    an XLA FFI custom call, with ``f``'s result shapes and dtypes. Compiled once per input
    signature (at trace time). The handler is thread-safe; kernels run on the target's threads.
    Gradients come from JAX's derivative of ``f`` (the backward pass runs XLA's kernels)."""
    return JaxOp(f, db, target, static_argnums, static_argnames)


__all__ = ["JaxOp", "ffi_shim", "jax_op"]
