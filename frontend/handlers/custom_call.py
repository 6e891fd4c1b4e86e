"""``custom-call``: the targets that JAX programs on the CPU contain, by name.

* ``TopK``: the k largest along the last dimension (XLA's own target);
* ``lapack_*_ffi``: jnp.linalg's LAPACK kernels (:mod:`.linalg`);
* sharding annotations (``Sharding``, ``SPMDFullToShardShape``, ``SPMDShardToFullShape``,
  ``annotate_device_placement``, ``LayoutConstraint``): the identity on one device;
* host callbacks (``xla_python_cpu_callback``, ...) and anything else: refused, naming the
  target and why. https://openxla.org/xla/operation_semantics#customcall
"""

from __future__ import annotations

from .common import ew, load, unsupported
from .control import top_k
from .linalg import is_lapack_target, lower_lapack

#: targets that only annotate a value (placement, sharding, layout): the identity on one device
IDENTITY_TARGETS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                              "annotate_device_placement", "LayoutConstraint",
                              "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
                              "MoveToHost", "MoveToDevice"})
_CALLBACKS = ("xla_python_cpu_callback", "xla_ffi_python_cpu_callback", "xla_python_gpu_callback",
              "xla_ffi_partitioned_python_cpu_callback")


def _identity(ctx, instr, operands):
    if len(operands) != 1 or instr.shape.is_tuple or tuple(instr.shape.dims) != operands[0].shape:
        raise unsupported(ctx, instr, f"{instr.attr('custom_call_target')} annotates one value and "
                                      "returns it with its shape")
    (x,) = operands
    return ew(instr, x.shape, lambda *i: load(x, i))


def lower_custom_call(ctx, instr, operands):
    """``custom-call`` by ``custom_call_target``: TopK, JAX's LAPACK kernels (``lapack_*_ffi``)
    and sharding annotations (the identity on one device); others raise UnsupportedOpError:
    https://openxla.org/xla/operation_semantics#customcall"""
    target = str(instr.attr("custom_call_target"))
    if target == "TopK":
        if len(operands) != 1:
            raise unsupported(ctx, instr, "TopK takes one operand")
        return top_k(ctx, instr, operands[0])
    if target in IDENTITY_TARGETS:
        return _identity(ctx, instr, operands)
    if is_lapack_target(target):
        return lower_lapack(ctx, instr, operands)
    if target in _CALLBACKS:
        raise unsupported(ctx, instr, f"custom_call_target={target!r} calls back into the Python "
                                      "process that traced the program, which a compiled module "
                                      "does not have")
    raise unsupported(ctx, instr, f"custom_call_target={target!r} is not a target hlotune knows "
                                  "(TopK, lapack_*_ffi, sharding annotations)")


HANDLERS = {"custom-call": lower_custom_call}

__all__ = ["HANDLERS", "IDENTITY_TARGETS"]
