"""The C-family renderer base: loop-nest IR -> C-like source.

Backends (C/OpenMP, OpenCL, CUDA) subclass ``CStyleRenderer`` and differ in strings, the
``code_for_op`` table entries they override and capability attributes. 16-bit floats are
held as ``float`` in registers and rounded after every op (as XLA:CPU does); they are stored
as ``uint16_t`` (bf16) or the backend's half type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

import ml_dtypes
import numpy as np

from ...dsl import dtypes as dt
from ...dsl.dtypes import DType
from ...dsl.errors import LoweringError
from ...dsl.expr import Expr, binary
from ...dsl.ops import Op
from ...schedules.bounds import simplify
from ...schedules.loops import Allocate, Assign, Barrier, Buffer, For, If, Let, LoweredFunc, Seq, Stmt, Store
from .cse import shared

_CMP = {Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.EQ: "==", Op.NE: "!="}
_ARITH = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*"}
_BIT = {Op.AND: "&", Op.OR: "|", Op.XOR: "^"}
#: float ops whose result is one of their operands' values (or its negation): in a narrow float
#: type, exact without rounding when every operand already holds a value of that type
_PICK = frozenset({Op.MAX, Op.MIN, Op.NEG, Op.ABS})
_FMATH = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p", Op.SQRT: "sqrt",
          Op.CBRT: "cbrt", Op.TANH: "tanh", Op.ERF: "erf", Op.SIN: "sin", Op.COS: "cos", Op.TAN: "tan",
          Op.FLOOR: "floor", Op.CEIL: "ceil", Op.ROUND: "rint", Op.ABS: "fabs", Op.ATAN2: "atan2",
          Op.POW: "pow", Op.REM: "fmod"}


def _held(e: Expr) -> bool:
    """Whether ``e`` (a float expression) renders as a value its own type holds exactly: every
    narrow float op rounds its result, loads and casts hold their type's values; a constant only
    where it is one of them, a pick (``_PICK``, a select) where its operands are."""
    if e.op is Op.CONST:
        v = float(np.asarray(e.arg, dtype=e.dtype.np))
        return math.isnan(v) or v == float(e.arg)
    if e.op in _PICK:
        return all(_held(x) for x in e.src)
    if e.op is Op.SELECT:
        return _held(e.src[1]) and _held(e.src[2])
    return True


#: the prefix of every identifier made from a user's name (tensor, buffer, axis). C, OpenCL and
#: CUDA have no keyword, macro, type or library name starting with it (``linux``, ``M_PI``,
#: ``HUGE_VAL``, ``float4``, ``main`` all collide unprefixed), and the renderers' own names
#: (``hl_*``, ``args``, ``cur0``, ...) do not either.
USER_PREFIX = "v_"


class CStyleRenderer:
    """Renders a LoweredFunc. Subclasses set the strings and capabilities below."""

    kernel_prefix = ""
    arg_qualifier = ""              # e.g. "__global " for OpenCL
    restrict = "__restrict__"
    local_array_attr = ""
    half_type = "_Float16"           # storage type of float16
    float_suffix = "f"
    int64_type = "int64_t"
    ll_suffix, ull_suffix = "LL", "ULL"   # 64-bit integer literals

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.temps: dict[int, str] = {}     # id(node) -> its temporary, while one statement renders
        self.n_temps = 0
        self.arm_depth = 0                  # how many select arms (or guards) enclose what renders now

    # ------------------------------------------------------------------ names and types
    def name(self, obj, hint: str) -> str:
        """A unique C identifier for ``obj``: :data:`USER_PREFIX` and ``hint`` with every other
        character than ``[0-9a-zA-Z]`` (and runs of them) as one ``_`` (C++ reserves ``__``)."""
        k = id(obj)
        if k not in self.names:
            base = USER_PREFIX + re.sub(r"[^0-9a-zA-Z]+", "_", hint).strip("_")
            nm, n = base, 0
            while nm in self.used:
                n += 1
                nm = f"{base}_{n}"
            self.used.add(nm)
            self.names[k] = nm
        return self.names[k]

    def ctype(self, d: DType, storage: bool = False) -> str:
        """C type of a value (``storage``: of an array element)."""
        special = self.extra_ctype(d, storage)
        if special is not None:
            return special
        if d is dt.bfloat16:
            return "uint16_t" if storage else "float"
        if d is dt.float16:
            return self.half_type if storage else "float"
        return {"float32": "float", "float64": "double", "bool": "bool", "int8": "int8_t",
                "int16": "int16_t", "int32": "int32_t", "int64": self.int64_type, "uint8": "uint8_t",
                "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}[d.name]

    # ------------------------------------------------------------------ types beyond C's
    #: which of 'complex', 'sub_byte' (int2/int4/uint2/uint4) and 'small_float' (float8/6/4)
    #: the backend renders (typehelpers.py); the others raise LoweringError naming the type
    type_families: frozenset = frozenset()
    #: C types of complex64/complex128 values and buffers
    complex_ctypes: Mapping[str, str] = MappingProxyType({"complex64": "float _Complex",
                                                          "complex128": "double _Complex"})
    #: how the decode tables of small floats are declared
    table_qualifier = "static const"
    #: complex helpers are compiled without fused multiply-adds (``a*c - b*d`` fused changes which
    #: overflows give NaN): the qualifier of such a helper ('' : the backend's inline) and what
    #: defines it
    exact_helper_qualifier = ""
    exact_helper_defs = ""

    @staticmethod
    def family(d: DType) -> str | None:
        return "complex" if d.is_complex else "sub_byte" if d.is_sub_byte else \
            "small_float" if d.format is not None else None

    def extra_ctype(self, d: DType, storage: bool) -> str | None:
        """The C type of a complex, sub-byte or small-float ``d`` (None for other types): small
        floats and sub-byte integers are stored one per byte, held as float / 8-bit integers."""
        fam = self.family(d)
        if fam is None:
            return None
        if fam not in self.type_families:
            raise LoweringError(f"{type(self).__name__}: element type {d} is not supported by this "
                                "backend; use the cpu target")
        if fam == "complex":
            return self.complex_ctypes[d.name]
        if storage:
            return self.ctype(dt.uint8)
        return "float" if fam == "small_float" else self.ctype(dt.int8 if d.kind == "i" else dt.uint8)

    def complex_make(self, re: str, im: str, d: DType) -> str:
        """A complex value from its parts (C: GCC's ``__builtin_complex``)."""
        t = self.ctype(d.component)
        return f"__builtin_complex(({t})({re}), ({t})({im}))"

    def complex_part(self, s: str, part: str) -> str:
        """The real ('re') or imaginary ('im') part of complex ``s``."""
        return f"(__{'real' if part == 're' else 'imag'}__ ({s}))"

    def complex_convert(self, s: str, d: DType) -> str:
        return f"(({self.ctype(d)})({s}))"

    @staticmethod
    def suffix(d: DType) -> str:
        """Helper-function suffix of a dtype."""
        if d.is_complex:
            return f"c{d.bits}"
        if d.format is not None:
            return "f32"
        return {"float32": "f32", "float64": "f64", "bfloat16": "f32", "float16": "f32"}.get(
            d.name, d.name.replace("int", "i").replace("ui", "u").replace("bool", "b"))

    # ------------------------------------------------------------------ expressions
    def const(self, v, d: DType) -> str:
        if d.is_bool:
            return "1" if v else "0"
        if d.is_complex:
            c = complex(v)
            return self.complex_make(self.const(c.real, d.component), self.const(c.imag, d.component), d)
        if d.is_float:
            if math.isnan(v):
                return "NAN"
            if math.isinf(v):
                return "INFINITY" if v > 0 else "(-INFINITY)"
            if d is dt.float64:
                return repr(float(v))
            r = repr(float(np.float32(v)))
            return f"{r}{self.float_suffix}" if ("." in r or "e" in r) else f"{r}.0{self.float_suffix}"
        v = int(v)
        t = self.ctype(d)
        info = ml_dtypes.iinfo(d.np)
        if d.kind == "i" and v == info.min:
            return f"(({t})({v + 1}) - 1)"
        if d.kind == "i" and d.bits == 64 and -(2**31) < v < 2**31:
            return str(v) if v >= 0 else f"({v})"
        if d.bits == 64:
            return f"(({t}){v}{self.ull_suffix if d.kind == 'u' else self.ll_suffix})"
        return f"(({t}){v}{'u' if d.kind == 'u' else ''})"

    def round16(self, s: str, d: DType) -> str:
        """``s`` (a float) rounded to ``d`` when ``d`` is a float narrower than 32 bits."""
        if d is dt.bfloat16:
            return f"hl_round_bf16({s})"
        if d is dt.float16:
            return f"hl_round_f16({s})"
        if d.format is not None:
            return f"hl_round_{d.name}({s})"
        return s

    def flat_index(self, buf: Buffer, idx) -> Expr:
        flat = None
        stride = 1
        for i, n in reversed(list(zip(idx, buf.shape))):
            term = binary(Op.MUL, i, stride)
            flat = term if flat is None else binary(Op.ADD, term, flat)
            stride *= n
        return simplify(flat) if flat is not None else Expr(Op.CONST, dt.index, (), 0)

    def load(self, e: Expr) -> str:
        buf: Buffer = e.arg
        s = f"{self.name(buf, buf.name)}[{self.expr(self.flat_index(buf, e.src))}]"
        if buf.dtype is dt.bfloat16:
            return f"hl_bf16_to_f32({s})"
        if buf.dtype is dt.float16:
            return self.half_load(s)
        if buf.dtype.format is not None:
            return f"hl_{buf.dtype.name}_to_f32({s})"
        if buf.dtype.is_sub_byte:
            return f"hl_load_{self.suffix(buf.dtype)}({s})"
        return s

    def expr(self, e: Expr) -> str:
        temp = self.temps.get(id(e))
        if temp is not None:
            return temp
        op, d = e.op, e.dtype
        if op is Op.CONST:
            return self.const(e.arg, d)
        if op is Op.VAR:
            return self.name(e.arg, e.arg.name)
        if op is Op.LOAD:
            return self.load(e)
        if op is Op.SELECT:
            return self.select(e)
        a = [self.expr(s) for s in e.src]
        sd = e.src[0].dtype if e.src else d
        if op is Op.COMPLEX:
            return self.complex_make(a[0], a[1], d)
        if op in (Op.REAL, Op.IMAG):
            return self.complex_part(a[0], "re" if op is Op.REAL else "im") if sd.is_complex else \
                (a[0] if op is Op.REAL else self.const(0.0, d))
        if sd.is_complex and op not in (Op.SELECT, Op.CAST, Op.BITCAST):   # typehelpers.py
            return f"hl_{op.name.lower()}_{self.suffix(sd)}({', '.join(a)})"
        if op in _CMP:
            return f"({a[0]} {_CMP[op]} {a[1]})"
        if op is Op.CAST:
            return self.cast(a[0], sd, d)
        if op is Op.BITCAST:
            return self.bitcast(a[0], sd, d)
        if sd.is_float:
            if op in (Op.MAX, Op.MIN):    # max(x, -inf) is x, NaN included
                edge = -math.inf if op is Op.MAX else math.inf
                for x, y in ((e.src[0], 1), (e.src[1], 0)):
                    if x.op is Op.CONST and x.arg == edge:
                        return a[y]
            if op in _PICK and d.bits <= 16 and all(_held(x) for x in e.src):
                return self.float_op(op, a, sd)
            return self.round16(self.float_op(op, a, sd), d)
        return self.int_op(op, a, sd, e)

    def unrounded(self, e: Expr) -> str:
        """``e`` (a float narrower than 32 bits, about to be converted to its stored form, which
        rounds once) without its own final rounding: rounding to nearest even twice gives what
        rounding once does, so the store's conversion alone is enough."""
        if id(e) in self.temps or not e.dtype.is_float or e.dtype.bits > 16 or not e.src:
            return self.expr(e)
        sd = e.src[0].dtype
        if not sd.is_float or sd.is_complex or e.op in _CMP or e.op in _PICK or e.op in (
                Op.SELECT, Op.CAST, Op.BITCAST, Op.LOAD, Op.COMPLEX, Op.REAL, Op.IMAG):
            return self.expr(e)
        return self.float_op(e.op, [self.expr(x) for x in e.src], sd)

    def select(self, e: Expr) -> str:
        """``cond ? a : b``; the arms render with ``arm_depth`` raised (they run conditionally)."""
        c = self.expr(e.src[0])
        self.arm_depth += 1
        try:
            return f"({c} ? {self.expr(e.src[1])} : {self.expr(e.src[2])})"
        finally:
            self.arm_depth -= 1

    def float_op(self, op: Op, a: list[str], d: DType) -> str:
        f = "" if d is dt.float64 else "f"
        if op in _ARITH:
            return f"({a[0]} {_ARITH[op]} {a[1]})"
        if op is Op.DIV:
            return f"({a[0]} / {a[1]})"
        if op is Op.NEG:
            return f"(-{a[0]})"
        if op in _FMATH:
            return f"{_FMATH[op]}{f}({', '.join(a)})"
        if op is Op.RSQRT:
            one = "1.0" if d is dt.float64 else f"1.0{self.float_suffix}"
            return f"({one} / sqrt{f}({a[0]}))"
        if op in (Op.MAX, Op.MIN, Op.SIGN, Op.FLOORDIV, Op.FLOORMOD):
            return f"hl_{op.name.lower()}_{'f64' if d is dt.float64 else 'f32'}({', '.join(a)})"
        if op is Op.ISFINITE:
            return f"isfinite({a[0]})"
        raise LoweringError(f"{type(self).__name__}: no rendering of {op.name} on {d}")

    def int_op(self, op: Op, a: list[str], d: DType, e: Expr) -> str:
        t = self.ctype(d)
        narrow = d.bits < 32 and not d.is_bool
        sfx = self.suffix(d)
        if op in _ARITH:
            r = f"({a[0]} {_ARITH[op]} {a[1]})"
        elif op in _BIT:
            r = f"({a[0]} {_BIT[op]} {a[1]})"
        elif op in (Op.DIV, Op.REM):
            c = e.src[1]
            if c.op is Op.CONST and c.arg > 0:
                r = f"({a[0]} {'/' if op is Op.DIV else '%'} {a[1]})"
            else:
                r = f"hl_{op.name.lower()}_{sfx}({a[0]}, {a[1]})"
        elif op in (Op.FLOORDIV, Op.FLOORMOD, Op.SHL, Op.SHRA, Op.SHRL, Op.POW, Op.CLZ, Op.POPCNT,
                    Op.ABS, Op.SIGN):
            r = f"hl_{op.name.lower()}_{sfx}({', '.join(a)})"
        elif op is Op.MAX:
            r = f"({a[0]} > {a[1]} ? {a[0]} : {a[1]})"
        elif op is Op.MIN:
            r = f"({a[0]} < {a[1]} ? {a[0]} : {a[1]})"
        elif op is Op.NEG:
            r = f"(-{a[0]})" if not d.is_bool else a[0]
        elif op is Op.NOT:
            r = f"(!{a[0]})" if d.is_bool else f"(~{a[0]})"
        else:
            raise LoweringError(f"{type(self).__name__}: no rendering of {op.name} on {d}")
        if d.is_sub_byte:
            return f"hl_wrap_{sfx}({r})"
        return f"(({t}){r})" if narrow and op not in (Op.CLZ, Op.POPCNT) else r

    def cast(self, s: str, src: DType, d: DType) -> str:
        if src.is_complex:      # to complex: each part; to a real type: the real part
            if d.is_complex:
                return self.complex_convert(s, d)
            return self.cast(self.complex_part(s, "re"), src.component, d)
        if d.is_complex:
            comp = d.component
            return self.complex_make(self.cast(s, src, comp), self.const(0.0, comp), d)
        if src.format is not None:      # a small float's value is a float
            src = dt.float32
        if d.is_bool:
            return f"({s} != 0)"
        if d.is_int and src.is_float:
            return f"hl_f2i_{self.suffix(d)}({s})"
        if d.format is not None:        # one rounding, from double where the source needs it
            if src is dt.float64 or (src.is_int and src.bits > 16 and self.has_double):
                return f"hl_round_{d.name}_f64((double)({s}))"
            return self.round16(f"((float)({s}))", d)
        if d.is_float:
            if d.bits == 16 and src is dt.float64:  # round once, not through float
                return self.round16(f"hl_f64_to_f32_odd({s})", d)
            return self.round16(f"(({self.ctype(d)}){s})", d)
        if d.is_sub_byte:
            return f"hl_wrap_{self.suffix(d)}({s})"
        return f"(({self.ctype(d)}){s})"

    #: whether double is available for exact intermediate conversions
    has_double = True

    def bitcast(self, s: str, src: DType, d: DType) -> str:
        if src is d:
            return s
        if src.bits < 8 or d.bits < 8 or src.format is not None or d.format is not None:
            return self.bits_cast(s, src, d)
        if src is dt.bfloat16:
            s, src = f"hl_f32_to_bf16({s})", dt.uint16
        if src is dt.float16:
            s, src = f"hl_f32_to_f16bits({s})", dt.uint16
        if d is dt.bfloat16:
            return f"hl_bf16_to_f32(({self.ctype(dt.uint16)}){self.bitcast(s, src, dt.uint16)})"
        if d is dt.float16:
            return f"hl_f16bits_to_f32({self.bitcast(s, src, dt.uint16)})"
        if src is d:
            return s
        return f"hl_bitcast_{self.suffix(src)}_{self.suffix(d)}({s})"

    def bits_cast(self, s: str, src: DType, d: DType) -> str:
        """Bitcast involving a type under 8 bits or a small float, through its code (the low
        ``bits`` of a byte)."""
        u8 = self.ctype(dt.uint8)
        if src.format is not None:
            code = f"hl_enc_{src.name}_f32({s})"
        elif src.is_sub_byte or src.bits == 8:
            code = f"(({u8})(({s}) & {(1 << src.bits) - 1}))"
        else:
            raise LoweringError(f"bitcast from {src} to {d}")
        if d.format is not None:
            return f"hl_{d.name}_to_f32({code})"
        if d.is_sub_byte:
            return f"hl_wrap_{self.suffix(d)}({code})"
        return f"(({self.ctype(d)}){code})"

    # ------------------------------------------------------------------ statements
    def moved(self, e: Expr, d: DType) -> str | None:
        """``e`` in the stored form of bfloat16 ``d`` when it only moves stored values (a load
        of a ``d`` buffer, +0, a select of such), else None: packing copies skip the round trip
        through f32 (which is exact, but scalar)."""
        if e.op is Op.LOAD and e.arg.dtype is d:
            return f"{self.name(e.arg, e.arg.name)}[{self.expr(self.flat_index(e.arg, e.src))}]"
        if e.op is Op.CONST and e.arg == 0 and math.copysign(1.0, float(e.arg)) > 0:
            return "0"
        if e.op is Op.SELECT:
            a, b = self.moved(e.src[1], d), self.moved(e.src[2], d)
            if a is not None and b is not None:
                return f"({self.expr(e.src[0])} ? {a} : {b})"
        return None

    def half_load(self, ref: str) -> str:
        """The float value of the float16 element ``ref``."""
        return f"((float){ref})"

    def half_store(self, ref: str, v: str) -> str:
        """The statement storing float ``v`` rounded to float16 into element ``ref``."""
        return f"{ref} = (({self.half_type}){v});"

    def store(self, s: Store) -> str:
        buf = s.buffer
        raw = self.moved(s.value, buf.dtype) if buf.dtype is dt.bfloat16 else None
        if raw is not None:
            return f"{self.name(buf, buf.name)}[{self.expr(self.flat_index(buf, s.indices))}] = {raw};"
        narrow = buf.dtype in (dt.bfloat16, dt.float16) and s.value.dtype is buf.dtype
        v = self.unrounded(s.value) if narrow else self.expr(s.value)
        if buf.dtype is dt.float16:
            return self.half_store(f"{self.name(buf, buf.name)}[{self.expr(self.flat_index(buf, s.indices))}]", v)
        if buf.dtype is dt.bfloat16:
            v = f"hl_f32_to_bf16({v})"
        elif buf.dtype.format is not None:
            v = f"hl_enc_{buf.dtype.name}_f32({v})"
        elif buf.dtype.is_sub_byte:
            v = f"(({self.ctype(dt.uint8)})(({v}) & {(1 << buf.dtype.bits) - 1}))"
        return f"{self.name(buf, buf.name)}[{self.expr(self.flat_index(buf, s.indices))}] = {v};"

    #: the work-group barrier statement ('' where there are no work-groups)
    barrier = ""

    def loop_pragma(self, f: For) -> list[str]:
        return []

    def allocate(self, a: Allocate, pad: str) -> tuple[list[str], list[str]]:
        """Lines that open and close buffer ``a.buffer``'s lifetime."""
        b = a.buffer
        t = self.ctype(b.dtype, storage=True)
        return [f"{pad}{t} {self.name(b, b.name)}[{max(b.size, 1)}]{self.local_array_attr};"], []

    def with_temps(self, value: Expr, pad: str, line) -> list[str]:
        """``line()`` (one statement computing ``value``), after declaring value's shared
        subexpressions (cse.py) as constants, in a block of their own."""
        defs = []
        try:
            for rep, ids in shared(value):
                name = f"hl_t{self.n_temps}"
                self.n_temps += 1
                defs.append(f"{pad}  const {self.ctype(rep.dtype)} {name} = {self.expr(rep)};")
                self.temps.update(dict.fromkeys(ids, name))
            text = line()
        finally:
            self.temps.clear()
        return [pad + "{", *defs, f"{pad}  {text}", pad + "}"] if defs else [pad + text]

    def stmt(self, s: Stmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, Seq):
            return [ln for x in s.stmts for ln in self.stmt(x, depth)]
        if isinstance(s, Store):
            return self.with_temps(s.value, pad, lambda: self.store(s))
        if isinstance(s, For):
            v = self.name(s.var, s.var.name)
            head = [pad + p for p in self.loop_pragma(s)]
            return head + [f"{pad}for ({self.int64_type} {v} = 0; {v} < {self.expr(s.extent)}; ++{v}) {{",
                           *self.stmt(s.body, depth + 1), pad + "}"]
        if isinstance(s, If):
            return [f"{pad}if ({self.expr(s.cond)}) {{", *self.stmt(s.then, depth + 1), pad + "}"]
        if isinstance(s, Assign):
            return self.with_temps(s.value, pad, lambda: f"{self.name(s.var, s.var.name)} = {self.expr(s.value)};")
        if isinstance(s, Let):
            t = self.ctype(s.var.dtype)
            return [pad + "{", f"{pad}  {t} {self.name(s.var, s.var.name)} = {self.expr(s.value)};",
                    *self.stmt(s.body, depth + 1), pad + "}"]
        if isinstance(s, Allocate):
            open_, close = self.allocate(s, pad + "  ")
            return [pad + "{", *open_, *self.stmt(s.body, depth + 1), *close, pad + "}"]
        if isinstance(s, Barrier):
            return [pad + self.barrier] if self.barrier else []
        raise LoweringError(f"cannot render statement {s!r}")

    def signature(self, fn: LoweredFunc) -> str:
        params = []
        for k, b in enumerate(fn.args):
            const = "const " if k < fn.num_inputs else ""
            params.append(f"{self.arg_qualifier}{const}{self.ctype(b.dtype, True)}* {self.restrict} "
                          f"{self.name(b, b.name)}")
        return f"{self.kernel_prefix}{self.return_type} {fn.name}({', '.join(params)})"

    #: what a function returns (C: an int status, nonzero when scratch could not be allocated)
    return_type = "void"

    def prologue(self, fn: LoweredFunc) -> list[str]:
        """Lines opening a function's body."""
        return []

    def epilogue(self, fn: LoweredFunc) -> list[str]:
        """Lines closing a function's body."""
        return []

    def function(self, fn: LoweredFunc) -> str:
        """The definition of ``fn`` alone (no preamble): several may share one source."""
        for b in fn.args:
            self.name(b, b.name)
        return "\n".join([self.signature(fn) + " {", *self.prologue(fn), *self.stmt(fn.body, 1),
                          *self.epilogue(fn), "}"])

    def render(self, fn: LoweredFunc) -> str:
        """The full source of ``fn``."""
        return "\n".join([self.preamble(fn), self.function(fn), self.postamble(fn)])

    def preamble(self, fn: LoweredFunc) -> str:
        return ""

    def postamble(self, fn: LoweredFunc) -> str:
        return ""


__all__ = ["USER_PREFIX", "CStyleRenderer"]
