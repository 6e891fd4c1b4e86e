"""Collectives on one device, and the ops hlotune refuses with a reason.

A module runs on one replica and one partition: every replica group holds that one device, so
``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-broadcast`` and
``collective-reduce`` return their operands unchanged (a reduction over one participant is its value; gathering or
scattering over a group of one is the identity), and ``collective-permute`` copies its operand
when the device sends to itself and gives zeros when nothing is sent to it. Their async
``-start``/``-done`` halves do the same. A module configured for several replicas or
partitions, or a group naming another device, raises :class:`UnsupportedOpError`; so do
``send``/``recv``, which need a peer device.

``infeed`` and ``outfeed`` are the host's queues, as XLA's client has them
(``transfer_to_infeed``/``transfer_from_outfeed``): each ``infeed`` reads the next queued value
(in program order) and each ``outfeed`` queues its operand. hlotune lowers the k-th infeed to
parameters ``infeed.k...`` after the entry parameters and each outfeed's operand to outputs after
the entry results; ``hlotune.CompiledModule`` fills them from its ``infeed`` queue and moves them
to its ``outfeed`` queue. A feed runs once per call, so one inside a while body, a conditional
branch or a reducer (which run any number of times) is refused.
https://openxla.org/xla/operation_semantics#allreduce
"""

from __future__ import annotations

import re

from ...dsl.expr import const
from ...dsl.tensor import PlaceholderOp, placeholder
from .common import dtype_of, ew, flatten, load, unsupported

#: module attributes that give the replica and partition counts (HLO header, StableHLO)
_COUNT_KEYS = ("replica_count", "num_partitions", "mhlo.num_replicas", "mhlo.num_partitions")

#: opcode -> why hlotune cannot run it
REFUSED = {
    "send": "point-to-point transfer to another device; a module runs on one device",
    "send-done": "point-to-point transfer to another device; a module runs on one device",
    "recv": "point-to-point transfer from another device; a module runs on one device",
    "recv-done": "point-to-point transfer from another device; a module runs on one device",
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


def _feed_once(ctx, instr) -> None:
    if ctx.nested:
        raise unsupported(ctx, instr, "a feed inside a while body, a conditional branch or a reducer "
                                      "runs any number of times; hlotune queues one value per feed and "
                                      "call (feed the entry computation, or the computations it calls)")


def lower_infeed(ctx, instr, operands):
    """``infeed``: the next value of the host's infeed queue, as parameters ``infeed.k...``
    (one per leaf of the data shape): ``(data, token)``.
    https://openxla.org/xla/operation_semantics#infeed"""
    _feed_once(ctx, instr)
    shape = instr.shape
    if not shape.is_tuple or len(shape.elements) != 2:
        raise unsupported(ctx, instr, f"an infeed returns (data, token), got {shape}")
    k = len(ctx.infeeds)
    leaves = []

    def make(s, name):
        if s.is_tuple:
            return tuple(make(e, f"{name}.{j}") for j, e in enumerate(s.elements))
        if s.is_token:
            return ()
        t = placeholder(s.dims, dtype_of(ctx, instr, s), name)
        leaves.append(t)
        return t
    data = make(shape.elements[0], f"infeed.{k}")
    ctx.infeeds.append((shape.elements[0], leaves))
    return (data, ())


def lower_outfeed(ctx, instr, operands):
    """``outfeed(data, token)``: ``data`` goes to the host's outfeed queue (outputs after the
    entry results); a token. https://openxla.org/xla/operation_semantics#outfeed"""
    _feed_once(ctx, instr)
    data = operands[0]
    shape = ctx.operand_instr(instr, 0).shape
    leaves = [ew(instr, t.shape, lambda *i, t=t: load(t, i)) if isinstance(t.op, PlaceholderOp) else t
              for t in flatten(data if isinstance(data, tuple) else (data,))]
    ctx.outfeeds.append((shape, leaves))
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
HANDLERS.update({"after-all": lower_after_all, "create-token": lower_after_all, "infeed": lower_infeed,
                 "outfeed": lower_outfeed})

__all__ = ["HANDLERS", "REFUSED"]
