"""Lower a parsed HLO module to tensor expressions of the DSL.

``lower_module(module)`` turns the entry computation into ``dsl.placeholder`` parameters and
output tensors; every HLO instruction becomes one ``dsl.compute`` (named after it) or, for
control flow and ops without a loop-nest form (while, conditional, sort, TopK, scatter, array
constants), a ``dsl.extern`` op. ``call`` and ``fusion`` are inlined. Values of tuple shape are
python tuples of tensors. The numpy reference evaluator defines what the result means; the
semantics followed are XLA's (https://openxla.org/xla/operation_semantics).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..dsl.errors import HlotuneError, InternalError, UnsupportedOpError
from ..dsl.expr import Expr, walk
from ..dsl.ops import Op
from ..dsl.tensor import PlaceholderOp, Tensor, placeholder
from .ast import Computation, HloModule, Instruction
from .cse import Fingerprints, cse_key
from .handlers import (
    chlo,
    collective,
    common,
    control,
    custom_call,
    dot_conv,
    elementwise,
    fft,
    indexing,
    linalg,
    normalize,
    ragged,
    random,
    reduce,
    select_scatter,
    shape,
    types,
)
from .verify import verify_module

__all__ = ["HANDLERS", "LowerContext", "LoweredModule", "lower_computation", "lower_module"]

log = logging.getLogger(__name__)

#: opcode -> handler ``(ctx, instr, operands) -> Tensor | tuple``.
HANDLERS: dict[str, Callable] = {
    **elementwise.HANDLERS, **shape.HANDLERS, **indexing.HANDLERS, **dot_conv.HANDLERS,
    **reduce.HANDLERS, **control.HANDLERS, **chlo.HANDLERS, **types.HANDLERS,
    **random.HANDLERS, **collective.HANDLERS, **linalg.HANDLERS, **custom_call.HANDLERS,
    **select_scatter.HANDLERS, **normalize.HANDLERS, **fft.HANDLERS,
    **ragged.HANDLERS,
}


@dataclass(frozen=True)
class LoweredModule:
    """The entry computation as tensors: ``params`` in parameter order (tuple-shaped parameters
    give one placeholder per leaf), ``outputs`` the flattened root."""

    params: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    tuple_result: bool
    module: HloModule
    #: data shape of each ``infeed`` in program order; their leaves are the last parameters
    infeed: tuple = ()
    #: data shape of each ``outfeed`` in program order; their leaves are the last outputs
    outfeed: tuple = ()


class LowerContext:
    """State of one lowering: the module, and caches of sub-computations lowered once."""

    def __init__(self, module: HloModule):
        self.module = module
        self.file = module.source_file
        self._scalar_fns: dict[str, tuple] = {}
        self._graphs: dict[str, tuple] = {}
        self.comp: Computation | None = None   # the computation whose instruction is lowered
        #: dynamic-update-slice results -> (operand, update, clamped start expressions)
        self.updates: dict = {}
        #: how many while loops enclose what is being lowered
        self.loop_depth = 0
        #: how many sub-computations lowered on their own (loop bodies, branches, reducers)
        #: enclose what is being lowered; feeds are refused there
        self.nested = 0
        #: (data shape, leaf placeholders) of each infeed, and (data shape, leaf tensors) of
        #: each outfeed, in program order (see ``handlers.collective``)
        self.infeeds: list[tuple] = []
        self.outfeeds: list[tuple] = []
        self._effects: dict[str, bool] = {}
        #: common subexpressions (frontend/cse.py): key -> (value, the operand values of the key)
        self.cse: dict[tuple, tuple] = {}
        self.fingerprints = Fingerprints(module)

    def operand_instr(self, instr: Instruction, k: int) -> Instruction:
        """The instruction defining operand ``k`` of ``instr`` (for its shape and layout)."""
        return self.comp.by_name[instr.operands[k]]

    def computation(self, name) -> Computation:
        if isinstance(name, tuple):
            name = name[0]
        return self.module.computation(name)

    def lower_called(self, name, args: Sequence) -> object:
        """Inline the computation ``name`` with ``args`` as its parameters (call, fusion)."""
        return lower_computation(self.module, self.computation(name), args, self)

    def param_values(self, comp: Computation) -> tuple[list, list[Tensor]]:
        """Fresh placeholders for the parameters of ``comp``: (values, flat placeholders)."""
        flat: list[Tensor] = []

        def make(shape, name, instr):
            if shape.is_token:
                return ()           # a token orders side effects and holds no data
            if shape.is_tuple:
                return tuple(make(s, f"{name}.{k}", instr) for k, s in enumerate(shape.elements))
            t = placeholder(shape.dims, common.dtype_of(self, instr, shape), name)
            flat.append(t)
            return t

        values = [make(p.shape, p.name, p) for p in comp.params]
        return values, flat

    def subgraph(self, name) -> tuple[list[Tensor], list[Tensor], object]:
        """The computation ``name`` lowered once on fresh placeholders:
        (flat placeholders, flat outputs, the root value). An output that is a parameter is
        copied, so that every output is computed."""
        comp = self.computation(name)
        if comp.name not in self._graphs:
            values, flat = self.param_values(comp)
            self.nested += 1
            try:
                root = lower_computation(self.module, comp, values, self)
            finally:
                self.nested -= 1
            outs = [common.ew(comp.root_instruction, o.shape, lambda *i, o=o: o[i])
                    if isinstance(o.op, PlaceholderOp) else o for o in common.flatten(root)]
            self._graphs[comp.name] = (flat, outs, root)
        return self._graphs[comp.name]

    def scalar_fn(self, name, instr: Instruction) -> Callable[[Sequence[Expr]], tuple[Expr, ...]]:
        """The scalar computation ``name`` (a reducer, a map function) as a function from
        parameter expressions to result expressions."""
        comp = self.computation(name)
        if comp.name not in self._scalar_fns:
            for p in comp.params:
                if p.shape.is_tuple or p.shape.dims:
                    raise common.unsupported(self, instr, f"computation '{comp.name}' must take "
                                                          "scalar parameters")
            values, flat = self.param_values(comp)
            self.nested += 1
            try:
                root = lower_computation(self.module, comp, values, self)
            finally:
                self.nested -= 1
            self._scalar_fns[comp.name] = (flat, common.flatten(root))
        flat, outs = self._scalar_fns[comp.name]

        def fn(args: Sequence[Expr]) -> tuple[Expr, ...]:
            mapping = {p.op: a for p, a in zip(flat, args)}
            res = tuple(common.inline(o[()], mapping) for o in outs)
            given = {id(x) for x in walk(list(args)) if x.op is Op.LOAD}
            for r in res:
                if any(x.op is Op.LOAD and id(x) not in given for x in walk([r])):
                    raise common.unsupported(self, instr, f"computation '{comp.name}' is not "
                                                          "elementwise on scalars")
            return res
        return fn

    def has_effects(self, instr: Instruction) -> bool:
        """Whether ``instr`` is an infeed or outfeed, or inlines a computation holding one: it
        is lowered even when its result is unused, in program order."""
        if instr.opcode in ("infeed", "outfeed"):
            return True
        if instr.opcode not in ("call", "fusion"):
            return False
        name = instr.attr("to_apply") or instr.attr("calls")
        name = name[0] if isinstance(name, tuple) else name
        if not isinstance(name, str) or name not in self._effects:
            self._effects[name] = False         # recursion guard
            comp = self.computation(name) if isinstance(name, str) else None
            self._effects[name] = comp is not None and any(self.has_effects(i) for i in comp.instructions)
        return self._effects[name]


def lower_computation(module: HloModule, computation: Computation, arg_tensors: Sequence,
                      ctx: LowerContext | None = None):
    """Lower ``computation`` with ``arg_tensors`` (one value per parameter: a Tensor or a tuple)
    and return the value of its root (a Tensor or a nested tuple of Tensors)."""
    ctx = ctx or LowerContext(module)
    if len(arg_tensors) != len(computation.params):
        raise UnsupportedOpError("call", file=ctx.file, line=computation.line or None,
                                 detail=f"computation '{computation.name}' takes "
                                        f"{len(computation.params)} arguments, got {len(arg_tensors)}")
    values: dict[str, object] = {p.name: a for p, a in zip(computation.params, arg_tensors)}
    by_name = computation.by_name
    # iterative post-order from the root and from each side effect (infeed, outfeed), which
    # come first in program order: only those and live instructions are lowered
    effects = [i.name for i in computation.instructions if ctx.has_effects(i)]
    stack: list[tuple[str, bool]] = [(n, False) for n in [computation.root, *reversed(effects)]]
    while stack:
        name, ready = stack.pop()
        if name in values:
            continue
        instr = by_name[name]
        if not ready:
            stack.append((name, True))
            stack.extend((o, False) for o in reversed(instr.operands) if o not in values)
            continue
        handler = HANDLERS.get(instr.opcode)
        if handler is None:
            raise UnsupportedOpError(instr.opcode, line=instr.line or None, file=ctx.file,
                                     detail=f"instruction '{instr.name}' in computation "
                                            f"'{computation.name}'")
        ctx.comp = computation
        args = [values[o] for o in instr.operands]
        key = cse_key(instr, args, ctx.has_effects(instr), (ctx.nested, ctx.loop_depth), ctx.fingerprints)
        if key is not None and key in ctx.cse:
            values[name] = ctx.cse[key][0]
            log.debug("%s = %s: the value of an identical instruction", name, instr.opcode)
            continue
        try:
            values[name] = handler(ctx, instr, args)
        except HlotuneError:
            raise
        except Exception as e:   # the module was verified: a handler bug, reported as one
            raise InternalError(f"lowering '{instr.opcode}' instruction '{instr.name}'", e, line=instr.line or None,
                                file=ctx.file) from e
        if key is not None:
            ctx.cse[key] = (values[name], args)      # args: the identities in the key stay taken
        log.debug("lowered %s = %s", name, instr.opcode)
    return values[computation.root]


def lower_module(module: HloModule) -> LoweredModule:
    """Verify (:mod:`.verify`) and lower the entry computation of ``module`` to placeholders
    and output tensors."""
    verify_module(module)
    ctx = LowerContext(module)
    entry = module.entry_computation
    values, flat = ctx.param_values(entry)
    root = lower_computation(module, entry, values, ctx)
    outs = tuple(common.flatten(root))
    feeds_in = [t for _, leaves in ctx.infeeds for t in leaves]
    feeds_out = tuple(t for _, leaves in ctx.outfeeds for t in leaves)
    return LoweredModule(tuple(flat) + tuple(feeds_in), outs + feeds_out, isinstance(root, tuple), module,
                         tuple(s for s, _ in ctx.infeeds), tuple(s for s, _ in ctx.outfeeds))


#: opcodes that run as extern ops (host implementations), not loop nests
EXTERN_OPS = ("while", "conditional", "sort", "scatter", "custom-call", "constant (arrays over 16 elements)",
              "topk", "rng", "rng-bit-generator", "cholesky", "triangular-solve", "fft", "chlo.scan")
