"""Models from TensorFlow, Keras 3 and PyTorch as hlotune modules.

Each framework prints XLA's own HLO of the model, and ``load_hlo`` lowers it:

- TensorFlow: ``tf.function(jit_compile=True)``'s compiler IR at stage ``hlo``. A Keras model runs
  as ``model.stateless_call(trainable, non_trainable, *args)``, so its weights are parameters of
  the module, not resource variables.
- PyTorch: through ``torch.export``'s maintained path into JAX, torchax (``torchax.extract_jax``:
  the module's parameters and buffers as a named dict, and a JAX function of them and the
  inputs), then ``jax.jit(...).lower``. (torch_xla's StableHLO export needs torch_xla's own
  build of torch, pinned to one version, and an XLA runtime: several GB more than torchax's pure
  Python on top of torch and jax.)
- Keras 3 on the JAX backend lowers its ``stateless_call`` with JAX; on the torch backend
  ``torch.export`` traces ``stateless_call`` and torchax interprets the exported graph into JAX.

Weights travel as named parameters and are bound to the module (``Module.bound``): calls take
only the example arguments' counterparts, positional, and any weight may be passed by name to
replace it. ``weights="constants"`` folds them into the module instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import numpy as np

from .api import Module, load_hlo
from .dsl.errors import ConfigError, HloParseError, UnsupportedOpError
from .jaxbridge import hlo_text, require_module

__all__ = ["from_keras", "from_tensorflow", "from_torch"]

_WEIGHTS = ("inputs", "constants")


def _check_weights(weights: str) -> None:
    if weights not in _WEIGHTS:
        raise ConfigError(f"weights must be one of {list(_WEIGHTS)}, got {weights!r}", "weights")


def _bind(m: Module, names: list[str], values: list, nargs: int) -> Module:
    """``m`` with its first ``len(names)`` parameters named and bound to ``values`` (the rest:
    ``nargs`` example arguments)."""
    if len(m.params) != len(names) + nargs:
        raise UnsupportedOpError("parameters", kind="framework module", detail=f"its HLO has {len(m.params)} "
                                 f"parameters for {len(names)} weights and {nargs} arguments")
    bound = {k: np.asarray(v) for k, v in enumerate(values)}
    return replace(m, param_names=tuple(names) + (None,) * (len(m.params) - len(names)), bound=bound)


# ------------------------------------------------------------------ TensorFlow / Keras

def _tf():
    return require_module("tensorflow", "tensorflow")


def _hlo_text(ir) -> str:
    """A TF compiler IR's HLO text with every constant's literal printed (TF's own printer elides
    large ones): its serialized module printed by jaxlib's XLA where jax is installed."""
    try:
        from jax._src.lib import xla_client
        return xla_client.XlaComputation(ir(stage="hlo_serialized")).as_hlo_text(print_large_constants=True)
    except Exception:  # noqa: BLE001  (no jax, or a jaxlib that cannot read this proto: TF's own text)
        return ir(stage="hlo")


def _tf_hlo(tf, fn, args) -> tuple[str, list]:
    """XLA's HLO of ``fn`` on ``args`` and the values of the tensors it captures (TF passes them
    as the last parameters)."""
    f = fn if hasattr(fn, "experimental_get_compiler_ir") else \
        tf.function(tf.autograph.experimental.do_not_convert(fn), jit_compile=True)
    try:
        concrete = f.get_concrete_function(*args)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"TensorFlow could not trace the function on the example arguments: {e}") from None
    resources = [c for c in concrete.captured_inputs if c.dtype == tf.resource]
    if resources:
        names = [getattr(v, "name", "?") for v in concrete.variables] or ["?"]
        raise UnsupportedOpError("tf.Variable", kind="TensorFlow input", detail=f"the function reads TF resource "
                                 f"variables ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}): pass a "
                                 "Keras model (its weights become named parameters) or pass the variables' values "
                                 "as arguments")
    try:
        text = _hlo_text(f.experimental_get_compiler_ir(*args))
    except Exception as e:  # noqa: BLE001  (TF's errors: an op XLA cannot compile, an unbounded shape)
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        op = re.search(r"No registered '(\w+)' OpKernel", str(e)) or re.search(r"op (?:type )?'?(\w+)'?", msg)
        raise UnsupportedOpError(op[1] if op else "tensorflow", kind="TensorFlow op", detail=f"XLA cannot compile "
                                 f"it: {msg[:300]} (use ops XLA supports, and give every dimension a size)") from None
    return text, [np.asarray(c.numpy()) for c in concrete.captured_inputs]


def from_tensorflow(fn_or_model, *example_args, weights: str = "inputs") -> Module:
    """XLA's own HLO of a TensorFlow function or a Keras model (``tf.function(jit_compile=True)``)
    on ``example_args``, as a module to tune, compile and run on numpy inputs. A Keras model's
    weights are named parameters bound to it (``weights="constants"``: folded in)."""
    _check_weights(weights)
    keras = _keras_model(fn_or_model)
    if keras is not None:
        return from_keras(fn_or_model, *example_args, weights=weights)
    tf = _tf()
    args = [tf.constant(np.asarray(a)) for a in example_args]
    text, captured = _tf_hlo(tf, fn_or_model, args)
    try:
        m = load_hlo(text)
    except HloParseError as e:
        if "dynamic dimensions" not in str(e):
            raise
        raise _dynamic_dims(e, "TensorFlow op with a data-dependent shape") from None
    if not captured:
        return m
    # captured tensors follow the arguments: bound to their values, named captured<k>
    if len(m.params) != len(args) + len(captured):
        raise UnsupportedOpError("parameters", kind="framework module", detail=f"its HLO has {len(m.params)} "
                                 f"parameters for {len(args)} arguments and {len(captured)} captured tensors")
    bound = {len(args) + k: v for k, v in enumerate(captured)}
    return replace(m, param_names=(None,) * len(args) + tuple(f"captured{k}" for k in range(len(captured))),
                   bound=bound)


def _keras_model(obj):
    try:
        import keras
    except ImportError:
        return None
    return obj if isinstance(obj, keras.Model) else None


def from_keras(model, *example_args, weights: str = "inputs") -> Module:
    """A Keras 3 model through its backend: TensorFlow (``from_tensorflow``), JAX (its
    ``stateless_call`` lowered by JAX) or torch (``stateless_call`` exported by ``torch.export``,
    then torchax's interpreter of the exported aten graph into JAX); weights named by their Keras
    paths."""
    _check_weights(weights)
    import keras
    backend = keras.backend.backend()
    tvars, nvars = list(model.trainable_variables), list(model.non_trainable_variables)
    names = [v.path for v in tvars + nvars]
    tw = [np.asarray(keras.ops.convert_to_numpy(v.value)) for v in tvars]
    nw = [np.asarray(keras.ops.convert_to_numpy(v.value)) for v in nvars]
    args = [np.asarray(a) for a in example_args]

    def run(tw_, nw_, *xs):
        y, _ = model.stateless_call(list(tw_), list(nw_), *xs, training=False)
        return y
    if backend == "tensorflow":
        tf = _tf()
        if weights == "constants":
            return from_tensorflow(lambda *xs: run(tw, nw, *xs), *args)
        cw = [tf.constant(w) for w in tw], [tf.constant(w) for w in nw]
        m = load_hlo(_tf_hlo(tf, run, [*cw, *[tf.constant(a) for a in args]])[0])
    elif backend == "jax":
        import jax
        if weights == "constants":
            return load_hlo(hlo_text(jax.jit(lambda *xs: run(tw, nw, *xs), keep_unused=True).lower(*args)))
        m = load_hlo(hlo_text(jax.jit(run, keep_unused=True).lower(tw, nw, *args)))
    elif backend == "torch":
        # torchax cannot run Keras's layers eagerly (they move tensors to Keras's own device),
        # but torch.export traces them into an aten graph that torchax interprets
        k = len(tw) + len(nw)
        m = load_hlo(_exported_hlo(lambda *a: run(a[:len(tw)], a[len(tw):k], *a[k:]), [*tw, *nw, *args],
                                   fixed=k if weights == "constants" else 0))
        if weights == "constants":
            return m
    else:
        raise ConfigError(f"Keras backend {backend!r}: hlotune takes tensorflow, jax or torch", "KERAS_BACKEND")
    return _bind(m, names, tw + nw, len(args))


# ------------------------------------------------------------------ PyTorch

def _torchax():
    require_module("torch", "torch")
    return require_module("torchax", "torch")


def from_torch(module, *example_args, weights: str = "inputs") -> Module:
    """XLA's HLO of a ``torch.nn.Module`` on ``example_args`` (tensors or arrays), through
    torchax and JAX, as a module to tune, compile and run on numpy inputs; its parameters and
    buffers are named parameters bound to it (``weights="constants"``: folded in). A
    data-dependent branch (Python control flow on a tensor's value) is refused: write it with
    ``torch.where`` or ``torch.cond``."""
    _check_weights(weights)
    torchax = _torchax()
    import jax
    import torch
    module.eval()
    state, jfn = torchax.extract_jax(module)
    names = sorted(state)             # jax flattens a dict by its sorted keys
    values = [np.asarray(state[k]) for k in names]
    args = tuple(np.asarray(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a) for a in example_args)
    try:
        if weights == "constants":
            text = hlo_text(jax.jit(lambda *xs: jfn(state, xs), keep_unused=True).lower(*args))
        else:
            text = hlo_text(jax.jit(lambda st, *xs: jfn(st, xs), keep_unused=True).lower(dict(zip(names, values)), *args))
    except (jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError) as e:
        raise _data_dependent(e) from None
    except (NotImplementedError, RuntimeError, TypeError, AssertionError) as e:     # torchax asserts too
        raise _torch_op_error(e, "torchax cannot lower it: ") from e
    m = load_hlo(text)
    return m if weights == "constants" else _bind(m, names, values, len(args))


def _exported_hlo(fn, args: list, fixed: int = 0) -> str:
    """XLA's HLO of ``fn(*args)`` (a function of torch tensors) through ``torch.export`` and
    torchax's interpreter of the exported graph; the first ``fixed`` arguments are folded in as
    constants, the others are the module's parameters in order."""
    _torchax()
    import jax
    import torch
    from torchax.export import exported_program_to_jax

    class _Fn(torch.nn.Module):          # the function as a module with no parameters of its own
        def forward(self, *a):
            return fn(*a)
    targs = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in args)
    try:
        exported = torch.export.export(_Fn(), targs)
    except Exception as e:      # torch's tracer fails with its own errors, and with IndexError on some
        chain = f"{e!r} {e.__context__!r} {e.__cause__!r}"
        if "DataDependent" in chain or "data-dependent" in chain or "data dependent" in chain:
            raise _data_dependent(e) from None
        raise UnsupportedOpError("torch.export", kind="PyTorch tracer", detail=f"torch.export could not trace the "
                                 f"model ({type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''})") from e
    try:
        state, jfn = exported_program_to_jax(exported)
        consts = [np.asarray(a) for a in args[:fixed]]
        lowered = jax.jit(lambda *xs: jfn(state, (*consts, *xs)), keep_unused=True).lower(*args[fixed:])
    except (jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError) as e:
        raise _data_dependent(e) from None
    except (NotImplementedError, RuntimeError, TypeError, AssertionError) as e:   # torch.export's and torchax's
        if "data-dependent" in str(e) or "data dependent" in str(e):
            raise _data_dependent(e) from None
        raise _torch_op_error(e, f"torch.export or torchax cannot lower it ({type(e).__name__}): ") from e
    return hlo_text(lowered)


def _torch_op_error(e: Exception, how: str) -> UnsupportedOpError:
    """A PyTorch op the JAX path cannot lower, named by the aten op in ``e``'s message."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    op = re.search(r"(aten[.:][\w.]+)", str(e))
    return UnsupportedOpError(op[1] if op else "torch", kind="PyTorch op", detail=f"{how}{first[:300]}")


#: what JAX says when an op's result shape would depend on the data (nonzero, unique, masks)
_SHAPE_FROM_DATA = re.compile(r"size argument of (jnp\.\w+)|first argument of (jnp\.\w+)\(\)|"
                              r"(boolean indices) must be concrete")


def _data_dependent(e: Exception) -> UnsupportedOpError:
    """The PyTorch construct JAX could not trace: a shape that depends on the data (no bound,
    so nothing static to compile) or a Python branch on a tensor's value."""
    m = _SHAPE_FROM_DATA.search(str(e))
    if m is not None:
        what = next(g for g in m.groups() if g)
        return UnsupportedOpError(what, kind="PyTorch op with a data-dependent shape", detail="its result's shape "
                                  "depends on the tensor's values and has no bound, so there is no static shape to "
                                  "compile; pad to a fixed size (torch.where with a fill value, or topk)")
    return UnsupportedOpError("data-dependent branch", kind="PyTorch construct", detail="the module branches on a "
                              "tensor's value in Python; write it with torch.where or torch.cond")


def _dynamic_dims(e: HloParseError, kind: str) -> UnsupportedOpError:
    """A framework's HLO with a dynamic dimension (a shape bounded but known only at run time:
    TF's tf.unique, tf.where, boolean masks) as the op that made it."""
    inst = re.search(r"^\s*([A-Za-z_]\w*?)(?:[._]\d+)*\s*=", str(e), re.MULTILINE)
    return UnsupportedOpError(inst[1] if inst else "dynamic shape", kind=kind, detail="its result's shape depends "
                              f"on the data (a dynamic dimension in XLA's HLO: {str(e).splitlines()[0][:200]}); "
                              "hlotune compiles static shapes only: pad to a fixed size")


def _quiet_tf() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


_quiet_tf()
