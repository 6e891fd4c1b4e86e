"""StableHLO ops as HLO instructions: the second half of :mod:`.stablehlo`.

The StableHLO parser builds a small tree of MLIR ops (:class:`MlirOp` in :class:`Region`s of
:class:`Func`s) whose attributes carry their generic MLIR names (a pretty-printed op's keywords
are renamed to those). :func:`to_hlo_module` turns that tree into the HLO AST of :mod:`.ast` the
way XLA converts StableHLO, with attribute values in the formats :mod:`.parser` produces, so that
the HLO handlers lower it unchanged:

* each ``func.func`` becomes a computation (``@main`` the entry, ``return`` the root, a tuple
  when it returns several values); ``func.call`` becomes ``call``;
* an op with several results becomes one tuple-shaped instruction plus ``get-tuple-element``s;
* the regions of ``reduce``/``reduce_window``/``sort``/``scatter``/``map`` become scalar
  computations (``to_apply``); those of ``while``/``case``/``if`` become computations taking one
  tuple parameter, which also carries the values the region uses from outside it;
* every op without an HLO equivalent that hlotune lowers raises :class:`UnsupportedOpError`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from ..dsl.errors import HloParseError, InternalError, UnsupportedOpError
from . import stablehlo_types as _types  # quantized types
from .ast import Computation, HloModule, Instruction, Shape, TupleShape
from .stablehlo_ir import CONVERTERS as _HANDLERS
from .stablehlo_ir import TERMINATORS, DenseAttr, Func, MlirModule, MlirOp, Region
from .stablehlo_ops import _free_values, hlo_opcode_table

__all__ = ["SUPPORTED", "TERMINATORS", "DenseAttr", "Func", "MlirModule", "MlirOp", "Region",
           "hlo_opcode_table", "to_hlo_module"]


SUPPORTED = frozenset(_HANDLERS) | TERMINATORS


# ----------------------------------------------------------------------------- converter

class _Comp:
    """One HLO computation being built; ``values`` maps SSA names to (instruction, shape)."""

    def __init__(self, name: str, line: int):
        self.name, self.line = name, line
        self.instrs: list[Instruction] = []
        self.taken: set[str] = set()
        self.values: dict[str, tuple[str, Shape]] = {}
        self.n_params = 0

    def add(self, opcode: str, shape: Shape, operands=(), attrs=None, tok=None, hint: str = "",
            literal=None) -> tuple[str, Shape]:
        base = hint if opcode == "parameter" else f"{opcode}.{hint}" if hint else opcode
        base = re.sub(r"[^\w.\-]", ".", base)
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}.{k}"
        self.taken.add(name)
        line, col = (tok.line, tok.col) if tok is not None else (0, 0)
        self.instrs.append(Instruction(name, opcode, shape, tuple(operands), attrs or {}, literal,
                                       False, line, col))
        return name, shape

    def param(self, shape: Shape, tok, hint: str) -> tuple[str, Shape]:
        self.n_params += 1
        return self.add("parameter", shape, (), {"parameter_number": self.n_params - 1}, tok, hint)

    def finish(self, root: str, is_entry: bool = False) -> Computation:
        instrs = tuple(dataclasses.replace(i, is_root=True) if i.name == root else i
                       for i in self.instrs)
        params = tuple(i for i in instrs if i.opcode == "parameter")
        return Computation(self.name, params, instrs, root, is_entry, self.line)


class _Converter:
    def __init__(self, module: MlirModule, error: Callable, file: str | None):
        self.module, self.error, self.file = module, error, file
        self.funcs: dict[str, Func] = {}
        self.comps: list[Computation] = []
        self.comp_names: set[str] = set()
        self.current: MlirOp | None = None   # the op being converted (to locate internal errors)

    def run(self) -> HloModule:
        for f in self.module.funcs:
            if f.name in self.funcs:
                raise self.error(f"redefinition of function @{f.name}", f.tok)
            self.funcs[f.name] = f
        if not self.funcs:
            raise self.error("no func.func in the module")
        entry = "main" if "main" in self.funcs else next(iter(self.funcs))
        if entry != "main" and len(self.funcs) > 1:
            raise self.error("several functions and none is @main (the entry)", self.module.funcs[1].tok)
        self.comp_names |= set(self.funcs)
        for f in self.funcs.values():
            self.function(f, f.name == entry)
        name = self.module.name or "module"
        return HloModule(name, tuple(self.comps), entry, self.module.attrs, self.file)

    # -------------------------------------------------------------- computations
    def function(self, f: Func, is_entry: bool) -> None:
        comp = _Comp(f.name, f.tok.line)
        for name, shape, tok in f.args:
            self.define(comp, name, comp.param(shape, tok, name), tok)
        root = self.block(comp, f.body)
        if len(root) != len(f.result_types):
            raise self.error(f"@{f.name} returns {len(root)} value(s) but its type says "
                             f"{len(f.result_types)}", f.body.ops[-1].tok)
        for k, ((_, shape), declared) in enumerate(zip(root, f.result_types)):
            if shape != declared:
                raise self.error(f"@{f.name} returns {shape} as result {k}, but its type says "
                                 f"{declared}", f.body.ops[-1].tok)
        self.comps.append(comp.finish(self.root(comp, f.body.ops[-1], root, False), is_entry))

    def region(self, region: Region, name: str, packed=None, passthrough: bool = False) -> str:
        """A computation from ``region``: parameters are its arguments, or (``packed``: the
        captured ``[(name, (instr, shape))]``) one tuple of its arguments and the captures;
        ``passthrough`` appends the captures to the root tuple (a while body)."""
        comp = _Comp(self.unique_comp(name), region.tok.line)
        if packed is None:
            for arg, shape, tok in region.args:
                self.define(comp, arg, comp.param(shape, tok, arg), tok)
        else:
            names = [(a, s, t) for a, s, t in region.args] + [(c, v[1], region.tok) for c, v in packed]
            p = comp.param(TupleShape(tuple(s for _, s, _ in names)), region.tok, "state")
            for k, (arg, shape, tok) in enumerate(names):
                gte = comp.add("get-tuple-element", shape, [p[0]], {"index": k}, tok, arg)
                self.define(comp, arg, gte, tok)
        root = self.block(comp, region)
        if passthrough:
            root = root + [comp.values[c] for c, _ in packed]
        self.comps.append(comp.finish(self.root(comp, region.ops[-1], root, passthrough)))
        return comp.name

    def scalar_region(self, comp: _Comp, op: MlirOp, k: int = 0) -> str:
        """The ``to_apply`` computation of a reducer/comparator/combiner region."""
        if len(op.regions) <= k:
            raise self.error(f"'{op.name}' needs a region (its reducer or comparator)", op.tok)
        free = _free_values([op.regions[k]])
        if free:
            raise self.unsupported(op, f"its region uses %{free[0][0]}, defined outside it")
        return self.region(op.regions[k], self.comp_name(comp, op))

    def block(self, comp: _Comp, region: Region) -> list[tuple[str, Shape]]:
        """Convert the ops of ``region`` into ``comp``; the values its return gives."""
        if not region.ops or region.ops[-1].name not in TERMINATORS:
            raise self.error("region does not end with a return", region.end)
        for op in region.ops[:-1]:
            if op.name in TERMINATORS:
                raise self.error("return before the end of the region", op.tok)
            self.convert(comp, op)
        return self.operands(comp, region.ops[-1])

    def root(self, comp: _Comp, tok_op: MlirOp, values, force_tuple: bool) -> str:
        if len(values) == 1 and not force_tuple:
            return values[0][0]
        return comp.add("tuple", TupleShape(tuple(s for _, s in values)), [n for n, _ in values],
                        None, tok_op.tok, "ret")[0]

    def convert(self, comp: _Comp, op: MlirOp) -> None:
        self.current = op
        values = _types.convert_quantized(self, comp, op) if _types.involves_quantized(self, comp, op) \
            else _HANDLERS[op.name](self, comp, op)
        if len(values) != len(op.results):
            raise self.error(f"'{op.name}' gives {len(values)} value(s) but defines "
                             f"{len(op.results)}", op.tok)
        for (name, tok), v in zip(op.results, values):
            self.define(comp, name, v, tok)
        for alias, target in op.aliases.items():
            comp.values[alias] = comp.values[target]

    # -------------------------------------------------------------- values
    def define(self, comp: _Comp, name: str, value, tok) -> None:
        if name in comp.values:
            raise self.error(f"redefinition of %{name}", tok)
        comp.values[name] = value

    def operands(self, comp: _Comp, op: MlirOp, n: int | None = None) -> list[tuple[str, Shape]]:
        if n is not None and len(op.operands) != n:
            raise self.error(f"'{op.name}' takes {n} operand(s), got {len(op.operands)}", op.tok)
        types = op.operand_types
        if types is not None and len(types) != len(op.operands):
            raise self.error(f"'{op.name}' has {len(op.operands)} operand(s) but its type lists "
                             f"{len(types)}", op.tok)
        out = []
        for k, (name, tok) in enumerate(op.operands):
            if name not in comp.values:
                raise self.error(f"use of undefined value %{name}", tok)
            value = comp.values[name]
            if types is not None and value[1] != types[k]:
                raise self.error(f"%{name} has type {value[1]}, but '{op.name}' declares its "
                                 f"operand {k} as {types[k]}", tok)
            out.append(value)
        return out

    def captures(self, comp: _Comp, op: MlirOp) -> list[tuple[str, tuple[str, Shape]]]:
        """The outside values ``op``'s regions use (each becomes part of a tuple parameter)."""
        out = []
        for name, tok in _free_values(op.regions):
            if name not in comp.values:
                raise self.error(f"use of undefined value %{name}", tok)
            out.append((name, comp.values[name]))
        return out

    def callee(self, op: MlirOp, name) -> str:
        if not isinstance(name, str) or name not in self.funcs:
            raise self.error(f"call to unknown function @{name}", op.tok)
        f = self.funcs[name]
        if len(f.args) != len(op.operands) or len(f.result_types) != len(op.results):
            raise self.error(f"call of @{name} with {len(op.operands)} argument(s) and "
                             f"{len(op.results)} result(s); it has {len(f.args)} and "
                             f"{len(f.result_types)}", op.tok)
        return name

    # -------------------------------------------------------------- emitting
    @staticmethod
    def hint(op: MlirOp) -> str:
        return op.results[0][0].replace("#", ".") if op.results else ""

    def comp_name(self, comp: _Comp, op: MlirOp) -> str:
        return f"{comp.name}.{op.name.split('.')[-1]}.{self.hint(op) or 'op'}"

    def unique_comp(self, name: str) -> str:
        base, k = name, 0
        while name in self.comp_names:
            k += 1
            name = f"{base}.{k}"
        self.comp_names.add(name)
        return name

    def one_result(self, op: MlirOp) -> list[Shape]:
        if len(op.result_types) != 1:
            raise self.error(f"'{op.name}' has one result, not {len(op.result_types)}", op.tok)
        return op.result_types

    def emit(self, comp: _Comp, op: MlirOp, opcode: str, attrs=None, operands=None, literal=None,
             variadic: bool = False) -> list[tuple[str, Shape]]:
        """One instruction for ``op``; several results: a tuple and its get-tuple-elements."""
        if operands is None:
            operands = [n for n, _ in self.operands(comp, op)]
        types = op.result_types if variadic else self.one_result(op)
        if len(types) == 1:
            return [comp.add(opcode, types[0], operands, attrs, op.tok, self.hint(op), literal)]
        tup = comp.add(opcode, TupleShape(tuple(types)), operands, attrs, op.tok, self.hint(op))
        return self.unpack(comp, op, tup, len(types))

    def unpack(self, comp: _Comp, op: MlirOp, tup, n: int) -> list[tuple[str, Shape]]:
        return [comp.add("get-tuple-element", tup[1].elements[k], [tup[0]], {"index": k}, op.tok,
                         f"{self.hint(op)}.{k}") for k in range(n)]

    def tuple_of(self, comp: _Comp, op: MlirOp, values) -> tuple[str, Shape]:
        return comp.add("tuple", TupleShape(tuple(s for _, s in values)), [n for n, _ in values],
                        None, op.tok, self.hint(op))

    def unsupported(self, op: MlirOp, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(op.name, line=op.tok.line, file=self.file, detail=detail)


def to_hlo_module(module: MlirModule, error: Callable[..., HloParseError],
                  file: str | None) -> HloModule:
    """The HLO module of a parsed StableHLO module; ``error(msg, tok)`` makes located errors."""
    cv = _Converter(module, error, file)
    try:
        return cv.run()
    except (HloParseError, UnsupportedOpError):
        raise
    except Exception as e:  # noqa: BLE001  (a converter bug: reported as one, with the op it was on)
        op = cv.current
        raise InternalError(f"converting StableHLO op '{op.name if op else 'module'}'", e,
                            line=op.tok.line if op else None, file=file) from e
