"""``ragged-dot`` (``chlo.ragged_dot``) and ``chlo.scan``.

ragged-dot is a dot_general whose lhs has one ragged dimension cut into consecutive groups of
``group_sizes`` (``[g]``, or ``[b..., g]`` per leading lhs dims); as StableHLO's decomposition:

* mode 1, the ragged dim is an lhs free dim (``[b,m,k] x [g,b,k,n] -> [b,m,n]``): row m uses the
  rhs of its group (the rhs group dim is dropped); rows past the last group are 0;
* mode 2, the ragged dim is contracted (``[b,m,k] x [b,k,n] -> [g,b,m,n]``): one product per
  group over that group's k;
* mode 3, the ragged dim is a batch dim: the plain dot_general.

scan applies its body along ``dimension`` (from the end with ``is_reverse``) to the inputs'
slices and the carries, stacking the outputs and returning the last carries; it runs as an
extern op calling the compiled body once per step.
https://openxla.org/stablehlo/generated/chlo#chloragged_dot
"""

from __future__ import annotations

import numpy as np

from ...dsl import dtypes as dt
from ...dsl.expr import binary, cast, const, select
from ...dsl.ops import Op
from ...dsl.tensor import compute, reduce_axis
from ...dsl.tensor import sum as dsl_sum
from .common import as_index, dims_of, dtype_of, flatten, ints, load, unsupported
from .control import _extern_result, _positions


def _dims(ctx, instr):
    keys = ("lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims",
            "lhs_ragged_dims", "rhs_group_dims")
    return [ints(instr, k) for k in keys]


def _group_ids(instr, gs, length: int):
    """gid[b..., p]: how many groups end at or before position p (g: past the last group)."""
    *bshape, g = gs.shape
    j = reduce_axis(g, "j")
    ends = compute(gs.shape, lambda *i: dsl_sum(select(binary(Op.LE, j, i[-1]), cast(load(gs, i[:-1] + (j,)),
                                                                                    dt.index), 0), axis=j),
                   name=f"{instr.name}.ends", tag=instr.opcode)
    k = reduce_axis(g, "k")
    return compute(tuple(bshape) + (length,),
                   lambda *i: dsl_sum(select(binary(Op.LE, ends[i[:-1] + (k,)], i[-1]), const(1, dt.index),
                                             const(0, dt.index)), axis=k),
                   name=f"{instr.name}.group", tag=instr.opcode)


def lower_ragged_dot(ctx, instr, operands):
    """``ragged-dot(lhs, rhs, group_sizes)`` in its three modes (module docstring):
    https://openxla.org/stablehlo/generated/chlo#chloragged_dot"""
    lhs, rhs, gs = operands
    lb, rb, lc, rc, lr, rg = _dims(ctx, instr)
    if len(lr) != 1 or len(rg) > 1 or len(lb) != len(rb) or len(lc) != len(rc) or not gs.dtype.is_int:
        raise unsupported(ctx, instr, "needs one lhs ragged dim, at most one rhs group dim, matching "
                                      "batch/contracting dims and integer group sizes")
    r = lr[0]
    g = gs.shape[-1] if gs.shape else 0
    mode = 3 if r in lb else 2 if r in lc else 1
    if (mode == 1) != bool(rg) or len(gs.shape) - 1 > len(lhs.shape) or \
            any(gs.shape[d] != lhs.shape[d] for d in range(len(gs.shape) - 1)):
        raise unsupported(ctx, instr, f"group sizes {list(gs.shape)} and dimension numbers do not "
                                      f"fit lhs {list(lhs.shape)} / rhs {list(rhs.shape)} (mode {mode})")
    lfree = [d for d in range(len(lhs.shape)) if d not in lb and d not in lc]
    rfree = [d for d in range(len(rhs.shape)) if d not in rb and d not in rc and d not in rg]
    out = dims_of(instr)
    lead = 1 if mode == 2 else 0
    want = ((g,) if mode == 2 else ()) + tuple(lhs.shape[d] for d in lb) + \
        tuple(lhs.shape[d] for d in lfree) + tuple(rhs.shape[d] for d in rfree)
    if out != want:
        raise unsupported(ctx, instr, f"the result is {list(want)} in mode {mode}, declared {list(out)}")
    out_dtype = dtype_of(ctx, instr)
    gid = _group_ids(instr, gs, lhs.shape[r]) if mode != 3 else None
    ks = [reduce_axis(lhs.shape[d], f"c{d}") for d in lc]
    nb = len(gs.shape) - 1

    def f(*o):
        li, ri = [None] * len(lhs.shape), [None] * len(rhs.shape)
        pos = lead
        for a, b in zip(lb, rb):
            li[a] = ri[b] = o[pos]
            pos += 1
        for d in lfree:
            li[d] = o[pos]
            pos += 1
        for d in rfree:
            ri[d] = o[pos]
            pos += 1
        for k, a, b in zip(ks, lc, rc):
            li[a] = ri[b] = k
        term = load(lhs, li) * load(rhs, ri) if mode == 3 else None
        if mode != 3:
            grp = load(gid, li[:nb] + [li[r]])
            if mode == 1:
                ri[rg[0]] = binary(Op.MIN, grp, const(g - 1, dt.index))
                ok = binary(Op.LT, grp, const(g, dt.index))
            else:
                ok = binary(Op.EQ, grp, as_index(o[0]))
            prod = load(lhs, li) * load(rhs, ri)
            term = select(ok, prod, const(0, prod.dtype))
        term = cast(term, out_dtype)
        return dsl_sum(term, axis=ks) if ks else term
    return compute(out, f, name=instr.name, tag=instr.opcode)


def lower_scan(ctx, instr, operands):
    """``chlo.scan(inputs..., inits...)``, ``dimension``, ``is_reverse``, ``to_apply`` (the body
    taking input slices and carries, giving outputs and carries): outputs stacked along
    ``dimension``, then the final carries: https://openxla.org/stablehlo/generated/chlo#chloscan"""
    n_in = int(instr.attr("num_inputs", 0))
    dim = int(instr.attr("dimension", 0))
    reverse = instr.attr("is_reverse", False) is True
    leaves = [s for s in (instr.shape.elements if instr.shape.is_tuple else (instr.shape,))]
    ins, inits = list(operands[:n_in]), list(operands[n_in:])
    n_out = len(leaves) - len(inits)
    if n_out < 0 or any(dim >= len(t.shape) for t in ins):
        raise unsupported(ctx, instr, "takes inputs with the scan dimension and returns outputs "
                                      "and one carry per init")
    length = ins[0].shape[dim] if ins else leaves[0].dims[dim] if n_out else 0
    ph, outs, _ = ctx.subgraph(instr.attr("to_apply"))
    pos = _positions(ph, outs)
    if len(outs) != n_out + len(inits):
        raise unsupported(ctx, instr, f"the body returns {len(outs)} values, the op {len(leaves)}")

    def run_scan(arrays, run):
        xs, carry = [np.asarray(a) for a in arrays[:n_in]], [np.asarray(a) for a in arrays[n_in:]]
        stacks = [np.zeros(tuple(s.dims), s.numpy_dtype) for s in leaves[:n_out]]
        steps = range(length - 1, -1, -1) if reverse else range(length)
        for t in steps:
            args = [np.take(x, t, axis=dim) for x in xs] + carry
            res = run(outs, [args[p] for p in pos])
            for s, v in zip(stacks, res[:n_out]):
                idx = [slice(None)] * s.ndim
                idx[dim] = t
                s[tuple(idx)] = v
            carry = [np.asarray(v) for v in res[n_out:]]
        return tuple(stacks) + tuple(carry)
    return _extern_result(ctx, instr, "scan", flatten(tuple(operands)), run_scan,
                          (("dimension", dim), ("reverse", reverse), ("body", instr.attr("to_apply"))))


HANDLERS = {"ragged-dot": lower_ragged_dot, "chlo.scan": lower_scan}

__all__ = ["HANDLERS"]
