"""The HLO verifier's rules: opcode -> ``rule(v, ins, operand_shapes)``, which raises
:class:`~.shapecheck.Invalid` when the declared shape or an attribute of ``ins`` disagrees with
what XLA's shape inference gives (https://openxla.org/xla/operation_semantics). ``v`` is the
:class:`~.verify.Verifier` (for called computations)."""

from __future__ import annotations

import math
import re

from .ast import ArrayShape, TupleShape
from .shapecheck import (
    array,
    bits,
    check,
    dim_list,
    expect,
    ints,
    is_float,
    is_int,
    n_operands,
    one_int,
    plain,
    scalar,
)

__all__ = ["RULES"]

UNARY = ("negate", "abs", "sign", "not", "exponential", "exponential-minus-one", "log",
         "log-plus-one", "sqrt", "rsqrt", "cbrt", "tanh", "erf", "sine", "cosine", "tan", "floor",
         "ceil", "round-nearest-even", "round-nearest-afz", "is-finite", "popcnt",
         "count-leading-zeros", "logistic")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
          "atan2", "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical")
_COMPLEX_PART = {"c64": "f32", "c128": "f64"}


def _tuple_or_one(shapes):
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


# ----------------------------------------------------------------------------- elementwise

def unary(v, ins, ops):
    """Same shape as the operand (is-finite: pred; abs of complex: its real type)."""
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    et = x.element_type
    if ins.opcode == "is-finite":
        check(is_float(et), f"needs a floating-point operand, got {plain(x)}")
        et = "pred"
    elif ins.opcode == "abs":
        et = _COMPLEX_PART.get(et, et)
    expect(ins, ArrayShape(et, x.dims))


def _same(a, b, what: str) -> None:
    check(plain(a) == plain(b), f"{what} differ: {plain(a)} and {plain(b)}")


def binary(v, ins, ops):
    """Operands of one shape and element type; the result has it (compare: pred)."""
    n_operands(ops, 2)
    a, b = array(ops[0], "the lhs"), array(ops[1], "the rhs")
    _same(a, b, "the operand shapes")
    expect(ins, ArrayShape("pred" if ins.opcode == "compare" else a.element_type, a.dims))


def select(v, ins, ops):
    """``select(pred, on_true, on_false)``: a pred of the result's dims (or a scalar pred)."""
    n_operands(ops, 3)
    p, a, b = array(ops[0], "the predicate"), array(ops[1], "on_true"), array(ops[2], "on_false")
    check(p.element_type == "pred", f"the predicate must be pred, got {plain(p)}")
    _same(a, b, "on_true and on_false")
    check(p.rank == 0 or p.dims == a.dims, f"the predicate {plain(p)} does not fit {plain(a)}")
    expect(ins, a)


def clamp(v, ins, ops):
    """``clamp(min, x, max)``: bounds of x's type, each x's shape or a scalar."""
    n_operands(ops, 3)
    lo, x, hi = array(ops[0], "min"), array(ops[1], "the operand"), array(ops[2], "max")
    for b, what in ((lo, "min"), (hi, "max")):
        check(b.element_type == x.element_type and (b.rank == 0 or b.dims == x.dims),
              f"{what} {plain(b)} does not fit the operand {plain(x)}")
    expect(ins, x)


def convert(v, ins, ops):
    """Same dimensions, any element type."""
    n_operands(ops, 1)
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    expect(ins, ArrayShape(out.element_type, x.dims))


def bitcast_convert(v, ins, ops):
    """Same dims for equal widths; a narrower type adds a last dimension of the ratio."""
    n_operands(ops, 1)
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    bi, bo = (1 if t == "pred" else bits(t) for t in (x.element_type, out.element_type))  # XLA's BitWidth
    if bi == bo:
        dims = x.dims
    elif bo < bi:
        dims = x.dims + (bi // bo,)
    else:
        check(x.rank >= 1 and x.dims[-1] == bo // bi, f"cannot bitcast {plain(x)} to "
                                                        f"{out.element_type}")
        dims = x.dims[:-1]
    expect(ins, ArrayShape(out.element_type, dims))


def reduce_precision(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    check(is_float(x.element_type), f"needs a floating-point operand, got {plain(x)}")
    check(one_int(ins, "exponent_bits", 8) >= 1 and one_int(ins, "mantissa_bits", 23) >= 0,
          "needs exponent_bits >= 1 and mantissa_bits >= 0")
    expect(ins, x)


def map_(v, ins, ops):
    """Operands of the result's dims; ``to_apply`` maps their scalars to the result's."""
    check(len(ops) >= 1, "takes at least one operand")
    out = array(ins.shape, "the result")
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops)]
    for k, x in enumerate(xs):
        check(x.dims == out.dims, f"operand {k} {plain(x)} does not have the result's dimensions")
    v.scalar_fn(ins, [x.element_type for x in xs], [out.element_type])


# ----------------------------------------------------------------------------- data movement

def constant(v, ins, ops):
    n_operands(ops, 0)
    lit = ins.literal
    if lit is None:
        return                              # elided: lowering refuses it
    for s, a in zip(leaves_of(ins.shape), lit if ins.shape.is_tuple else (lit,)):
        check(tuple(getattr(a, "shape", ())) == s.dims, f"literal of shape {list(a.shape)} does "
                                                        f"not fit {plain(s)}")


def leaves_of(shape):
    return list(shape.elements) if shape.is_tuple else [shape]


def iota(v, ins, ops):
    n_operands(ops, 0)
    out = array(ins.shape, "the result")
    check(out.rank >= 1, "needs a result of rank >= 1")
    d = one_int(ins, "iota_dimension", 0)
    check(0 <= d < out.rank, f"iota_dimension {d} is outside [0, {out.rank})")


def broadcast(v, ins, ops):
    """``dimensions[k]``: the result dimension operand dimension k becomes (same size)."""
    n_operands(ops, 1)
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    dims = dim_list(ins, "dimensions", out.rank, ())
    check(len(dims) == x.rank, f"'dimensions' {list(dims)} must name one result dimension per "
                               f"operand dimension ({x.rank})")
    for k, d in enumerate(dims):
        check(x.dims[k] == out.dims[d], f"operand dimension {k} ({x.dims[k]}) does not match "
                                        f"result dimension {d} ({out.dims[d]})")
    check(out.element_type == x.element_type, f"changes the element type: {plain(x)} -> "
                                              f"{plain(out)}")


def reshape(v, ins, ops):
    n_operands(ops, 1)
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    check(math.prod(x.dims) == math.prod(out.dims), f"changes the element count: {plain(x)} -> "
                                                    f"{plain(out)}")
    check(out.element_type == x.element_type, f"changes the element type: {plain(x)} -> "
                                              f"{plain(out)}")


def bitcast(v, ins, ops):
    """The buffer is reinterpreted: its byte size stays."""
    n_operands(ops, 1)
    x, out = array(ops[0], "the operand"), array(ins.shape, "the result")
    check(math.prod(x.dims) * bits(x.element_type) == math.prod(out.dims) * bits(out.element_type),
          f"changes the byte size: {plain(x)} -> {plain(out)}")


def transpose(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    perm = dim_list(ins, "dimensions", x.rank)
    check(len(perm) == x.rank, f"'dimensions' {list(perm)} is not a permutation of {x.rank} dims")
    expect(ins, ArrayShape(x.element_type, tuple(x.dims[p] for p in perm)))


def reverse(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    dim_list(ins, "dimensions", x.rank)
    expect(ins, x)


def slice_(v, ins, ops):
    """``[start:limit:stride]`` per dim: 0 <= start <= limit <= dim, stride >= 1."""
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    sl = ins.attr("slice")
    check(isinstance(sl, tuple) and len(sl) == x.rank and all(
        isinstance(r, tuple) and len(r) == 3 and all(isinstance(n, int) for n in r) for r in sl),
        f"needs one [start:limit:stride] per operand dimension ({x.rank})")
    dims = []
    for k, ((start, limit, stride), n) in enumerate(zip(sl, x.dims)):
        check(0 <= start <= limit <= n, f"slice [{start}:{limit}] of dimension {k} (size {n}) "
                                        "needs 0 <= start <= limit <= size")
        check(stride >= 1, f"slice stride {stride} of dimension {k} must be >= 1")
        dims.append(-(-(limit - start) // stride))
    expect(ins, ArrayShape(x.element_type, tuple(dims)))


def copy(v, ins, ops):
    n_operands(ops, 1)
    expect(ins, ops[0])


def concatenate(v, ins, ops):
    check(len(ops) >= 1, "takes at least one operand")
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops)]
    d = one_int(ins, "dimensions")
    first = xs[0]
    check(0 <= d < first.rank, f"dimension {d} is outside [0, {first.rank})")
    for k, x in enumerate(xs):
        check(x.element_type == first.element_type and x.rank == first.rank and all(
            a == b for j, (a, b) in enumerate(zip(x.dims, first.dims)) if j != d),
            f"operand {k} {plain(x)} does not fit operand 0 {plain(first)} outside dimension {d}")
    dims = list(first.dims)
    dims[d] = sum(x.dims[d] for x in xs)
    expect(ins, ArrayShape(first.element_type, tuple(dims)))


def pad(v, ins, ops):
    """``lo_hi_interior`` per dim: size ``lo + hi + n + (n - 1) * interior`` >= 0."""
    n_operands(ops, 2)
    x, pv = array(ops[0], "the operand"), scalar(ops[1], "the padding value")
    check(pv.element_type == x.element_type, f"padding value {plain(pv)} is not of the operand's "
                                             f"type {x.element_type}")
    cfg = ins.attr("padding")
    check(isinstance(cfg, tuple) and len(cfg) == x.rank,
          f"needs one lo_hi_interior padding per operand dimension ({x.rank})")
    dims = []
    for k, ((lo, hi, interior), n) in enumerate(zip(cfg, x.dims)):
        check(interior >= 0, f"interior padding {interior} of dimension {k} is negative")
        size = lo + hi + n + max(n - 1, 0) * interior
        check(size >= 0, f"padding {lo}_{hi}_{interior} leaves dimension {k} negative ({size})")
        dims.append(size)
    expect(ins, ArrayShape(x.element_type, tuple(dims)))


def get_dimension_size(v, ins, ops):
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    d = one_int(ins, "dimensions")
    check(0 <= d < x.rank, f"dimension {d} is outside [0, {x.rank})")
    expect(ins, ArrayShape("s32", ()))


# ----------------------------------------------------------------------------- indexing

def _start_indices(ops, rank: int) -> None:
    """One integer scalar per dimension (or the older form: one integer vector)."""
    starts = [array(s, f"start index {k}") for k, s in enumerate(ops)]
    if len(starts) == 1 and starts[0].rank == 1:
        check(starts[0].dims == (rank,), f"the start index vector must be [{rank}]")
    else:
        check(len(starts) == rank, f"needs {rank} start indices, got {len(starts)}")
        check(all(s.rank == 0 for s in starts), "start indices must be scalars")
    check(all(is_int(s.element_type) for s in starts), "start indices must be integers")


def dynamic_slice(v, ins, ops):
    check(len(ops) >= 1, "takes an operand and start indices")
    x = array(ops[0], "the operand")
    _start_indices(ops[1:], x.rank)
    out = array(ins.shape, "the result")
    sizes = ints(ins, "dynamic_slice_sizes", out.dims)
    check(len(sizes) == x.rank, f"needs one slice size per operand dimension ({x.rank})")
    for k, (z, n) in enumerate(zip(sizes, x.dims)):
        check(0 <= z <= n, f"slice size {z} of dimension {k} exceeds its size {n}")
    expect(ins, ArrayShape(x.element_type, tuple(sizes)), "its slice sizes")


def dynamic_update_slice(v, ins, ops):
    check(len(ops) >= 2, "takes an operand, an update and start indices")
    x, u = array(ops[0], "the operand"), array(ops[1], "the update")
    check(u.element_type == x.element_type and u.rank == x.rank and all(
        a <= b for a, b in zip(u.dims, x.dims)), f"update {plain(u)} does not fit in {plain(x)}")
    _start_indices(ops[2:], x.rank)
    expect(ins, x)


def _index_vector(ind, ins, n_index: int):
    """The batch dimensions of ``ind`` (all but ``index_vector_dim``)."""
    ivd = one_int(ins, "index_vector_dim", ind.rank)
    check(0 <= ivd <= ind.rank, f"index_vector_dim {ivd} is outside [0, {ind.rank}]")
    size = ind.dims[ivd] if ivd < ind.rank else 1
    check(size == n_index, f"the index vector has {size} element(s) but {n_index} dimension(s) "
                           "are indexed")
    check(is_int(ind.element_type), f"indices must be integers, got {plain(ind)}")
    return ivd, [k for k in range(ind.rank) if k != ivd]


def _batching(ins, x, ind, ivd, okey: str, ikey: str, taken) -> tuple:
    obd, ibd = dim_list(ins, okey, x.rank, ()), dim_list(ins, ikey, ind.rank, ())
    check(len(obd) == len(ibd), f"'{okey}' and '{ikey}' differ in length")
    check(not set(obd) & set(taken), f"'{okey}' overlaps the indexed or collapsed dimensions")
    for o, i in zip(obd, ibd):
        check(i != ivd, f"'{ikey}' contains index_vector_dim {ivd}")
        check(x.dims[o] == ind.dims[i], f"batching dimension {o} ({x.dims[o]}) and indices "
                                        f"dimension {i} ({ind.dims[i]}) differ")
    return obd


def gather(v, ins, ops):
    """Output = offset dims (slice sizes of the kept operand dims) and batch dims (indices)."""
    n_operands(ops, 2)
    x, ind = array(ops[0], "the operand"), array(ops[1], "the indices")
    array(ins.shape, "the result")
    sim = dim_list(ins, "start_index_map", x.rank)
    ivd, ind_batch = _index_vector(ind, ins, len(sim))
    csd = dim_list(ins, "collapsed_slice_dims", x.rank, (), sorted_=True)
    obd = _batching(ins, x, ind, ivd, "operand_batching_dims", "start_indices_batching_dims", csd)
    ss = ints(ins, "slice_sizes")
    check(len(ss) == x.rank, f"needs one slice size per operand dimension ({x.rank})")
    for k, (z, n) in enumerate(zip(ss, x.dims)):
        check(0 <= z <= n, f"slice size {z} of dimension {k} exceeds its size {n}")
        check(z <= 1 or (k not in csd and k not in obd), f"collapsed or batching dimension {k} "
                                                         f"has slice size {z} (at most 1)")
    kept = [k for k in range(x.rank) if k not in csd and k not in obd]
    rank = len(kept) + len(ind_batch)
    od = dim_list(ins, "offset_dims", rank, sorted_=True)
    check(len(od) == len(kept), f"'offset_dims' names {len(od)} dimensions, the slice keeps "
                                f"{len(kept)}")
    dims, offs, bats = [], iter(ss[k] for k in kept), iter(ind.dims[k] for k in ind_batch)
    for k in range(rank):
        dims.append(next(offs) if k in od else next(bats))
    expect(ins, ArrayShape(x.element_type, tuple(dims)), "its operand, indices and slice sizes")


def scatter(v, ins, ops):
    """N operands of one shape, indices, N updates of window dims that fit in the operand."""
    check(len(ops) >= 3 and len(ops) % 2 == 1, "takes N operands, indices and N updates")
    n = (len(ops) - 1) // 2
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops[:n])]
    ind = array(ops[n], "the indices")
    ups = [array(s, f"update {k}") for k, s in enumerate(ops[n + 1:])]
    x, u = xs[0], ups[0]
    for k in range(n):
        check(xs[k].dims == x.dims and ups[k].dims == u.dims, "operands (updates) differ in shape")
        check(ups[k].element_type == xs[k].element_type, f"update {k} is not of operand {k}'s type")
    sdod = dim_list(ins, "scatter_dims_to_operand_dims", x.rank)
    ivd, ind_batch = _index_vector(ind, ins, len(sdod))
    iwd = dim_list(ins, "inserted_window_dims", x.rank, (), sorted_=True)
    ibd = _batching(ins, x, ind, ivd, "input_batching_dims", "scatter_indices_batching_dims", iwd)
    uwd = dim_list(ins, "update_window_dims", u.rank, sorted_=True)
    window = [k for k in range(x.rank) if k not in iwd and k not in ibd]
    check(len(uwd) == len(window), f"'update_window_dims' names {len(uwd)} dimensions, the "
                                   f"operand has {len(window)} window dimensions")
    check(u.rank == len(uwd) + len(ind_batch), f"update {plain(u)} needs rank "
                                               f"{len(uwd) + len(ind_batch)}")
    for m, k in enumerate(window):
        check(u.dims[uwd[m]] <= x.dims[k], f"update window dimension {uwd[m]} ({u.dims[uwd[m]]}) "
                                           f"exceeds operand dimension {k} ({x.dims[k]})")
    scat = [k for k in range(u.rank) if k not in uwd]
    for k, j in zip(scat, ind_batch):
        check(u.dims[k] == ind.dims[j], f"update dimension {k} ({u.dims[k]}) differs from "
                                        f"indices dimension {j} ({ind.dims[j]})")
    types = [s.element_type for s in xs]
    v.scalar_fn(ins, types + types, types)
    expect(ins, _tuple_or_one(xs))


# ----------------------------------------------------------------------------- dot, convolution

def dot(v, ins, ops):
    """Result dims: batch, lhs free, rhs free; batch and contracting sizes agree."""
    n_operands(ops, 2)
    a, b, out = array(ops[0], "the lhs"), array(ops[1], "the rhs"), array(ins.shape, "the result")
    lb, lc = dim_list(ins, "lhs_batch_dims", a.rank, ()), dim_list(ins, "lhs_contracting_dims", a.rank, ())
    rb, rc = dim_list(ins, "rhs_batch_dims", b.rank, ()), dim_list(ins, "rhs_contracting_dims", b.rank, ())
    check(len(lb) == len(rb) and len(lc) == len(rc), "lhs and rhs batch/contracting dims differ "
                                                     "in number")
    check(not set(lb) & set(lc) and not set(rb) & set(rc), "a dimension is both batch and "
                                                           "contracting")
    for kind, ls, rs in (("batch", lb, rb), ("contracting", lc, rc)):
        for p, q in zip(ls, rs):
            check(a.dims[p] == b.dims[q], f"{kind} dimension lhs {p} ({a.dims[p]}) and rhs {q} "
                                          f"({b.dims[q]}) differ")
    dims = [a.dims[d] for d in lb] + [n for d, n in enumerate(a.dims) if d not in lb and d not in lc] + \
        [n for d, n in enumerate(b.dims) if d not in rb and d not in rc]
    expect(ins, ArrayShape(out.element_type, tuple(dims)))


def window_dims(ins, base, kernel=None) -> list[int]:
    """Output extents of ``ins``'s window (size, stride, pad, dilations; XLA's defaults where
    absent) sliding over ``base``; a convolution's window size must be its ``kernel``'s."""
    win = ins.attr("window") or {}
    n = len(base)
    f = {k: tuple(win.get(k, (d,) * n)) for k, d in (
        ("size", 1), ("stride", 1), ("pad", (0, 0)), ("lhs_dilate", 1), ("rhs_dilate", 1),
        ("window_reversal", False))}
    for k, val in f.items():
        check(len(val) == n, f"window field '{k}' has {len(val)} dims, expected {n}")
    out = []
    for k in range(n):
        z, s, (lo, hi) = f["size"][k], f["stride"][k], f["pad"][k]
        ld, rd = f["lhs_dilate"][k], f["rhs_dilate"][k]
        check(min(z, s, ld, rd) >= 1, f"window dimension {k} needs size, stride and dilations >= 1")
        check(kernel is None or z == kernel[k], f"window size {z} of spatial dimension {k} differs "
                                                f"from the kernel's {kernel and kernel[k]}")
        padded = (base[k] - 1) * ld + 1 + lo + hi if base[k] else lo + hi
        span = (z - 1) * rd + 1
        out.append(0 if padded < span else (padded - span) // s + 1)
    return out


def _labels(ins, ranks):
    raw = ins.attr("dim_labels")
    m = re.fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", raw) if isinstance(raw, str) else None
    check(m is not None, f"malformed dim_labels {raw!r}")
    n = len(m[1]) - 2
    for part, rank, letters in zip(m.groups(), ranks, ("bf", "io", "bf")):
        check(len(part) == rank and sorted(part) == sorted(letters + "".join(map(str, range(n)))),
              f"dim_labels part {part!r} does not fit a rank-{rank} array with {n} spatial dims")
    return m.groups(), n


def convolution(v, ins, ops):
    """Output: batch (lhs batch / batch_group_count), feature (kernel output features), and
    window extents over the input's spatial dims."""
    n_operands(ops, 2)
    a, b, out = array(ops[0], "the lhs"), array(ops[1], "the rhs"), array(ins.shape, "the result")
    (ll, rl, ol), n = _labels(ins, (a.rank, b.rank, out.rank))
    fgc, bgc = one_int(ins, "feature_group_count", 1), one_int(ins, "batch_group_count", 1)
    check(fgc >= 1 and bgc >= 1, "group counts must be >= 1")
    cin, cout = b.dims[rl.index("i")], b.dims[rl.index("o")]
    check(a.dims[ll.index("f")] == cin * fgc, f"input features {a.dims[ll.index('f')]} != kernel "
                                               f"input features {cin} x feature_group_count {fgc}")
    check(cout % fgc == 0 and cout % bgc == 0, f"kernel output features {cout} are not a multiple "
                                               "of the group counts")
    check(a.dims[ll.index("b")] % bgc == 0, "the batch is not a multiple of batch_group_count")
    spatial = [str(s) for s in range(n)]
    ksize = tuple(b.dims[rl.index(s)] for s in spatial)
    sp = window_dims(ins, [a.dims[ll.index(s)] for s in spatial], ksize)
    dims = [0] * out.rank
    dims[ol.index("b")], dims[ol.index("f")] = a.dims[ll.index("b")] // bgc, cout
    for s, e in zip(spatial, sp):
        dims[ol.index(s)] = e
    expect(ins, ArrayShape(out.element_type, tuple(dims)), "its operands and window")


# ----------------------------------------------------------------------------- reductions

def _reduce_operands(ops):
    check(len(ops) >= 2 and len(ops) % 2 == 0, "takes N operands and N init values")
    n = len(ops) // 2
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops[:n])]
    inits = [scalar(s, f"init value {k}") for k, s in enumerate(ops[n:])]
    for k, (x, i) in enumerate(zip(xs, inits)):
        check(x.dims == xs[0].dims, f"operand {k} {plain(x)} differs from operand 0 {plain(xs[0])}")
        check(i.element_type == x.element_type, f"init value {k} {plain(i)} is not of operand "
                                                f"{k}'s type")
    return xs, [i.element_type for i in inits]


def reduce(v, ins, ops):
    xs, types = _reduce_operands(ops)
    dims = dim_list(ins, "dimensions", xs[0].rank)
    keep = tuple(n for d, n in enumerate(xs[0].dims) if d not in dims)
    v.scalar_fn(ins, types + types, types)
    expect(ins, _tuple_or_one([ArrayShape(t, keep) for t in types]))


def reduce_window(v, ins, ops):
    xs, types = _reduce_operands(ops)
    check(ins.attr("window") is not None or xs[0].rank == 0, "needs a window")
    dims = tuple(window_dims(ins, xs[0].dims))
    v.scalar_fn(ins, types + types, types)
    expect(ins, _tuple_or_one([ArrayShape(t, dims) for t in types]), "its operands and window")


# ----------------------------------------------------------------------------- calls, control

def call(v, ins, ops):
    """The called computation takes the operands and returns the result."""
    comp = v.called(ins, "to_apply" if ins.opcode == "call" else "calls")
    v.signature(comp, ops, ins.shape, "computation")


def tuple_(v, ins, ops):
    expect(ins, TupleShape(tuple(ops)))


def get_tuple_element(v, ins, ops):
    n_operands(ops, 1)
    t = ops[0]
    check(t.is_tuple, f"needs a tuple operand, got {plain(t)}")
    k = ins.attr("index")
    check(isinstance(k, int) and 0 <= k < len(t.elements), f"index {k!r} is outside the "
                                                           f"{len(t.elements)}-tuple")
    expect(ins, t.elements[k], "its operand and index")


def identity(v, ins, ops):
    """optimization-barrier (one operand), add-dependency (value, token)."""
    n_operands(ops, 1 if ins.opcode == "optimization-barrier" else 2)
    expect(ins, ops[0])


def device_id(v, ins, ops):
    n_operands(ops, 0)
    check(plain(ins.shape) == ArrayShape("u32", ()), f"is declared {plain(ins.shape)}, not u32[]")


def while_(v, ins, ops):
    """condition: state -> pred[]; body: state -> state; the result is the state."""
    n_operands(ops, 1)
    state = ops[0]
    v.signature(v.called(ins, "condition"), [state], ArrayShape("pred", ()), "condition")
    v.signature(v.called(ins, "body"), [state], state, "body")
    expect(ins, state, "its init")


def conditional(v, ins, ops):
    """A pred (two branches) or s32 index; branch k takes operand k + 1, returns the result."""
    names = ins.attr("branch_computations")
    if names is None:
        names = (ins.attr("true_computation"), ins.attr("false_computation"))
    names = (names,) if isinstance(names, str) else tuple(names)
    check(len(names) >= 1, "needs at least one branch")
    check(len(ops) == len(names) + 1, f"takes an index and one operand per branch "
                                      f"({len(names) + 1}), got {len(ops)}")
    idx = scalar(ops[0], "the branch index")
    check(idx.element_type in ("pred", "s32"), f"the branch index must be pred[] or s32[], got "
                                               f"{plain(idx)}")
    check(idx.element_type == "s32" or len(names) == 2, "a pred index needs two branches")
    for name, arg in zip(names, ops[1:]):
        v.signature(v.computation(name), [arg], ins.shape, "branch")


def sort(v, ins, ops):
    """Operands of one shape sorted along ``dimensions``; the comparator gives pred[]."""
    check(len(ops) >= 1, "takes at least one operand")
    xs = [array(s, f"operand {k}") for k, s in enumerate(ops)]
    rank = xs[0].rank
    check(rank >= 1, "cannot sort a scalar")
    check(all(x.dims == xs[0].dims for x in xs), "operands differ in shape")
    d = one_int(ins, "dimensions", 0)
    check(-rank <= d < rank, f"dimension {d} is outside [0, {rank})")
    v.scalar_fn(ins, [x.element_type for x in xs for _ in (0, 1)], ["pred"])
    expect(ins, _tuple_or_one(xs))


def custom_call(v, ins, ops):
    """Only TopK lowers: (values, s32 indices) of the largest k along the last dimension."""
    if ins.attr("custom_call_target") != "TopK":
        return
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    check(x.rank >= 1, "TopK needs an operand of rank >= 1")
    check(ins.shape.is_tuple and len(ins.shape.elements) == 2, "TopK returns (values, indices)")
    k = array(ins.shape.elements[0], "the values").dims[-1:] or (0,)
    check(k[0] <= x.dims[-1], f"k = {k[0]} exceeds the last dimension ({x.dims[-1]})")
    dims = x.dims[:-1] + k
    expect(ins, TupleShape((ArrayShape(x.element_type, dims), ArrayShape("s32", dims))))


def parameter(v, ins, ops):
    n_operands(ops, 0)


RULES = {op: unary for op in UNARY}
RULES.update({op: binary for op in BINARY + ("compare",)})
RULES.update({
    "select": select, "clamp": clamp, "convert": convert, "bitcast-convert": bitcast_convert,
    "reduce-precision": reduce_precision, "map": map_, "constant": constant, "iota": iota,
    "broadcast": broadcast, "reshape": reshape, "bitcast": bitcast, "transpose": transpose,
    "reverse": reverse, "slice": slice_, "copy": copy, "concatenate": concatenate, "pad": pad,
    "get-dimension-size": get_dimension_size, "dynamic-slice": dynamic_slice,
    "dynamic-update-slice": dynamic_update_slice, "gather": gather, "scatter": scatter,
    "dot": dot, "convolution": convolution, "reduce": reduce, "reduce-window": reduce_window,
    "call": call, "fusion": call, "tuple": tuple_, "get-tuple-element": get_tuple_element,
    "optimization-barrier": identity, "add-dependency": identity, "replica-id": device_id,
    "partition-id": device_id, "while": while_, "conditional": conditional, "sort": sort,
    "custom-call": custom_call, "parameter": parameter,
})


# ----------------------------------------------------------------------------- complex parts

def complex_(v, ins, ops):
    """``complex(real, imag)``: two f32 (f64) operands of one shape give c64 (c128)."""
    n_operands(ops, 2)
    a, b = array(ops[0], "the real part"), array(ops[1], "the imaginary part")
    _same(a, b, "the parts")
    part = {v_: k for k, v_ in _COMPLEX_PART.items()}
    check(a.element_type in part, f"the parts must be f32 or f64, got {plain(a)}")
    expect(ins, ArrayShape(part[a.element_type], a.dims))


def complex_part(v, ins, ops):
    """``real``/``imag``: a complex's part type (of a real operand: its own type)."""
    n_operands(ops, 1)
    x = array(ops[0], "the operand")
    check(is_float(x.element_type) or x.element_type in _COMPLEX_PART,
          f"needs a float or complex operand, got {plain(x)}")
    expect(ins, ArrayShape(_COMPLEX_PART.get(x.element_type, x.element_type), x.dims))


RULES.update({"complex": complex_, "real": complex_part, "imag": complex_part})

# the ops added for JAX programs (CHLO functions, random numbers, linear algebra, collectives, ...)
from .verify_ops import RULES as _OPS_RULES

RULES.update(_OPS_RULES)
