"""Shape and type verification of a parsed HLO module, as XLA's ``HloVerifier``.

Every instruction's declared shape is checked against what its operands and attributes imply,
before anything is lowered: a module that lies about a shape (``f32[12] add(f32[4], f32[4])``)
would otherwise give kernels that read or write out of bounds. The rules follow XLA's shape
inference (https://openxla.org/xla/operation_semantics): elementwise operands agree, slice and
window bounds lie in their operands, dot/convolution/gather/scatter dimension numbers fit,
called computations (``to_apply``, ``calls``, while ``condition``/``body``, branches) take and
return the shapes their callers pass and expect, and neither computations nor instructions form
cycles. Opcodes without a rule here have no lowering (``UnsupportedOpError`` if they are used).

A violation is an :class:`HloParseError` naming the instruction, located at its line and column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..dsl.errors import HloParseError, HlotuneError, InternalError
from .ast import ArrayShape, Computation, HloModule, Instruction, Shape, TupleShape
from .shapecheck import Invalid, bits, check, leaves, plain
from .textparse import caret_context
from .verify_rules import RULES

__all__ = ["MAX_BYTES", "RULES", "Verifier", "verify_module"]

#: no array may hold this many bytes or more (XLA: a shape's byte size must fit in int64)
MAX_BYTES = 1 << 62


# ----------------------------------------------------------------------------- the verifier

class Verifier:
    """Checks one module; ``rule(v, ins, operand_shapes)`` raises :class:`Invalid`."""

    def __init__(self, module: HloModule, lines: list[str] | None = None):
        self.module, self.lines = module, lines

    def computation(self, name) -> Computation:
        if isinstance(name, tuple):
            check(len(name) == 1, f"expected one computation, got {list(name)}")
            name = name[0]
        check(isinstance(name, str), f"expected a computation name, got {name!r}")
        try:
            return self.module.computation(name)
        except KeyError:
            raise Invalid(f"calls unknown computation '{name}'") from None

    def called(self, ins: Instruction, key: str) -> Computation:
        name = ins.attr(key)
        check(name is not None, f"needs the attribute '{key}'")
        return self.computation(name)

    def signature(self, comp: Computation, args: Sequence[Shape], result: Shape | None,
                  role: str) -> None:
        """``comp`` takes ``args`` and (unless None) returns ``result``."""
        check(len(comp.params) == len(args), f"{role} '{comp.name}' takes {len(comp.params)} "
                                             f"parameter(s), but {len(args)} are passed")
        for k, (p, a) in enumerate(zip(comp.params, args)):
            check(plain(p.shape) == plain(a), f"{role} '{comp.name}' parameter {k} is "
                                              f"{plain(p.shape)}, but {plain(a)} is passed")
        if result is not None:
            check(plain(comp.result_shape) == plain(result),
                  f"{role} '{comp.name}' returns {plain(comp.result_shape)}, expected {plain(result)}")

    def scalar_fn(self, ins: Instruction, params: Sequence[str], results: Sequence[str],
                  key: str = "to_apply") -> None:
        """``ins``'s ``key`` computation maps scalars of ``params`` types to ``results`` (one
        scalar, or a tuple of them when there are several)."""
        comp = self.called(ins, key)
        ret = [ArrayShape(t, ()) for t in results]
        self.signature(comp, [ArrayShape(t, ()) for t in params],
                       ret[0] if len(ret) == 1 else TupleShape(tuple(ret)), "computation")

    def error(self, ins: Instruction, msg: str) -> HloParseError:
        ctx = caret_context(self.lines, ins.line, ins.column) if self.lines else ""
        return HloParseError(f"'{ins.opcode}' instruction '{ins.name}' {msg}",
                             file=self.module.source_file, line=ins.line, column=ins.column,
                             context=ctx)

    def run(self) -> None:
        self.acyclic_calls()
        for comp in self.module.computations:
            self.acyclic(comp)
            for ins in comp.instructions:
                try:
                    self.instruction(comp, ins)
                except Invalid as e:
                    raise self.error(ins, str(e)) from None
                except HlotuneError:
                    raise
                except Exception as e:  # noqa: BLE001  (a rule that did not foresee a form: a bug)
                    raise InternalError(f"verifying '{ins.opcode}' instruction '{ins.name}'", e,
                                        line=ins.line or None, file=self.module.source_file) from e

    def instruction(self, comp: Computation, ins: Instruction) -> None:
        for leaf in leaves(ins.shape):
            n = math.prod(leaf.dims)
            check(n * max(bits(leaf.element_type), 8) < MAX_BYTES * 8,
                  f"has shape {plain(leaf)}, whose size overflows 2^62 bytes")
        rule = RULES.get(ins.opcode)
        if rule is not None:
            rule(self, ins, [comp.by_name[o].shape for o in ins.operands])

    def acyclic(self, comp: Computation) -> None:
        """No instruction depends on itself (XLA's text allows any order of definition)."""
        state: dict[str, int] = {}      # 1: on the stack, 2: done
        by_name = comp.by_name
        for start in comp.instructions:
            if start.name in state:
                continue
            stack = [(start.name, iter(start.operands))]
            state[start.name] = 1
            while stack:
                name, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[name] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    raise self.error(by_name[nxt], f"depends on itself (through '{name}')")
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(by_name[nxt].operands)))

    def acyclic_calls(self) -> None:
        """No computation calls itself, directly or not (lowering inlines calls)."""
        edges: dict[str, list[tuple[str, Instruction]]] = {}
        for comp in self.module.computations:
            out = edges.setdefault(comp.name, [])
            for ins in comp.instructions:
                for key, v in ins.attrs.items():
                    if key in _CALL_KEYS:
                        out.extend((n, ins) for n in ((v,) if isinstance(v, str) else v)
                                   if isinstance(n, str))
        state: dict[str, int] = {}
        for root, calls in edges.items():
            if root in state:
                continue
            stack = [(root, iter(calls))]
            state[root] = 1
            while stack:
                name, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[name] = 2
                    stack.pop()
                    continue
                callee, ins = nxt
                if state.get(callee) == 1:
                    raise self.error(ins, f"calls computation '{callee}', which calls back into "
                                          f"'{name}' (recursion is not allowed)")
                if callee not in state and callee in edges:
                    state[callee] = 1
                    stack.append((callee, iter(edges[callee])))


_CALL_KEYS = frozenset({"to_apply", "calls", "condition", "body", "true_computation",
                        "false_computation", "branch_computations"})


def verify_module(module: HloModule, lines: list[str] | None = None) -> HloModule:
    """Check every instruction of ``module`` (see the module docstring); returns ``module``.
    ``lines`` (the source text's lines) add a caret context to errors."""
    Verifier(module, lines).run()
    return module
