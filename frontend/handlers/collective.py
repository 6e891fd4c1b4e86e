"""Collectives on one device, and the ops hlotune refuses with a reason.

A module runs on one replica and one partition: every replica group holds that one device, so
``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-broadcast`` and
``collective-reduce`` return their operands unchanged (a reduction over one participant is its value; gathering or
scattering over a group of one is the identity), and ``collective-permute`` copies its operand
when the device sends to itself and gives zeros when nothing is sent to it. Their async
``-start``/``-done`` halves do the same. A module configured for several replicas or
partitions, or a group naming another device, raises :class:`UnsupportedOpError`; so do
``send``/``recv``, ``infeed``/``outfeed`` and host callbacks, which need a peer device or a
host stream that a compiled module does not have.
https://openxla.org/xla/operation_semantics#allreduce
"""

from __future__ import annotations

import re

from ...dsl.expr import const
from .common import dtype_of, ew, flatten, load, unsupported

#: module attributes that give the replica and partition counts (HLO header, StableHLO)
_COUNT_KEYS = ("replica_count", "num_partitions", "mhlo.num_replicas", "mhlo.num_partitions")

#: opcode -> why hlotune cannot run it
REFUSED = {
    "send": "point-to-point transfer to another device; a module runs on one device",
    "send-done": "point-to-point transfer to another device; a module runs on one device",
    "recv": "point-to-point transfer from another device; a module runs on one device",
    "recv-done": "point-to-point transfer from another device; a module runs on one device",
    "infeed": "reads a host-to-device stream that a compiled module has no host side for; pass "
              "the data as a parameter",
    "outfeed": "writes a device-to-host stream that a compiled module has no host side for; "
               "return the data as a result",
}


def _single_device(ctx, instr) -> None:
    """Refuse a module set up for several devices, or a group naming another device."""
    for key in _COUNT_KEYS:
        v = ctx.module.attrs.get(key)
        if v is not None and str(v).strip().isdigit() and int(v) > 1:
            raise unsupported(ctx, instr, f"the module runs on {key.split('.')[-1]}={v}: "
                                          "collectives over several devices are not supported "
                                          "(hlotune runs a module on one device)")
    for key in ("replica_groups", "source_target_pairs"):
        groups = instr.attr(key)
        ids = set(re.findall(r"\d+", groups)) if isinstance(groups, str) else \
            set(map(str, _ints(groups)))
        if key == "replica_groups" and isinstance(groups, str) and "<=" in groups:
            ids = set(re.findall(r"\d+", groups.split("<=")[0]))   # iota form [groups,size]<=[n]
            ids = {"0"} if ids <= {"1"} else ids
        if ids - {"0"}:
            raise unsupported(ctx, instr, f"{key}={_text(groups)} names devices other than 0: "
                                          "collectives over several devices are not supported "
                                          "(hlotune runs a module on one device)")


def _ints(v) -> list[int]:
    if v is None:
        return []
    if isinstance(v, (tuple, list)):
        return [x for item in v for x in _ints(item)]
    return [int(v)] if isinstance(v, int) else []


def _text(v) -> str:
    return v if isinstance(v, str) else str(v).replace("(", "{").replace(")", "}").replace(",}", "}")


def lower_identity_collective(ctx, instr, operands):
    """``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
    ``collective-broadcast`` (and async ``-start``/``-done``) over a group of one device: the
    operands: https://openxla.org/xla/operation_semantics#allreduce"""
    _single_device(ctx, instr)
    leaves = flatten(tuple(operands))
    shapes = _leaf_shapes(instr.shape)
    if instr.opcode.endswith("-start") and len(shapes) == 2 * len(leaves):
        shapes = shapes[len(leaves):]      # all-gather-start: (operands, results)
    if len(shapes) != len(leaves) or any(tuple(s.dims) != t.shape for s, t in zip(shapes, leaves)):
        raise unsupported(ctx, instr, f"on one device the result has the operands' shapes, got "
                                      f"{instr.shape} for {[list(t.shape) for t in leaves]}")
    outs = tuple(ew(instr, t.shape, lambda *i, t=t: load(t, i)) for t in leaves)
    return outs[0] if not instr.shape.is_tuple else outs


def lower_done(ctx, instr, operands):
    """An async ``-done`` half: the result its ``-start`` produced."""
    (start,) = operands
    if isinstance(start, tuple) and not instr.shape.is_tuple:
        return start[-1] if instr.opcode != "collective-permute-done" else start[1]
    return start


def lower_collective_permute(ctx, instr, operands):
    """``collective-permute`` with ``source_target_pairs`` on one device: a copy when {0,0} is
    a pair, zeros when no source sends to device 0:
    https://openxla.org/xla/operation_semantics#collectivepermute"""
    _single_device(ctx, instr)
    x = operands[0]
    pairs = _ints(instr.attr("source_target_pairs"))
    sent = len(pairs) >= 2
    shape = [s for s in _leaf_shapes(instr.shape) if tuple(s.dims) == x.shape]
    if not shape:
        raise unsupported(ctx, instr, f"the result {instr.shape} does not have the operand's shape")
    out = ew(instr, x.shape, (lambda *i: load(x, i)) if sent else (lambda *i: const(0, x.dtype)))
    if not instr.shape.is_tuple:
        return out
    # collective-permute-start: (operand, result, context scalars...)
    rest = [ew(instr, s.dims, lambda *i: 0, dtype_of(ctx, instr, s)) for s in instr.shape.elements[2:]]
    return (x, out, *rest)


def _leaf_shapes(shape) -> list:
    return [x for s in shape.elements for x in _leaf_shapes(s)] if shape.is_tuple else [shape]


def lower_after_all(ctx, instr, operands):
    """``after-all``/``create-token``: a token, which orders side effects and holds no data (an
    empty tuple): https://openxla.org/xla/operation_semantics#afterall"""
    return ()


def _refuse(reason: str):
    def handler(ctx, instr, operands):
        raise unsupported(ctx, instr, reason)
    handler.__doc__ = f"Refused: {reason}."
    return handler


_IDENTITY = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-broadcast",
             "collective-reduce", "all-reduce-start", "all-gather-start")
HANDLERS = {op: lower_identity_collective for op in _IDENTITY}
HANDLERS.update({"all-reduce-done": lower_done, "all-gather-done": lower_done,
                 "collective-permute": lower_collective_permute,
                 "collective-permute-start": lower_collective_permute,
                 "collective-permute-done": lower_done})
HANDLERS.update({op: _refuse(why) for op, why in REFUSED.items()})
HANDLERS.update({"after-all": lower_after_all, "create-token": lower_after_all})

__all__ = ["HANDLERS", "REFUSED"]
