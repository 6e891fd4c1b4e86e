"""Helper functions for the element types C has no arithmetic for, emitted only for the types
(and complex ops) a function uses:

* floats under 16 bits (float8/float6/float4): a table of each code's float32 bits (decoding) and
  an encoder rounding a float or double to nearest even with the format's rules for overflow,
  NaN, infinity and zero (``FloatFormat``, bit-exact with ml_dtypes), plus ``hl_round_<type>``
  used after every op (values are held as float and rounded, as XLA:CPU computes them in f32);
* sub-byte integers: one per byte (the low bits, as ml_dtypes stores them), held sign- or
  zero-extended in 8 bits, wrapped after every op; shifts, popcount, clz and saturating float
  conversion at their own width, the rest through the 8-bit helpers;
* complex ops: one function per op and type, printed from its formula (dsl/complexmath.py) by
  the backend's own renderer, so it computes exactly what the reference does.
"""

from __future__ import annotations

import struct

from ...dsl.complexmath import formula
from ...dsl.dtypes import DType, FloatFormat
from ...dsl.expr import walk
from ...dsl.ops import GroupOp, Op
from ...schedules.loops import Allocate, LoweredFunc, stmt_exprs, walk_stmts
from .helpers import HelperTypes

__all__ = ["complex_ops", "float_table", "type_helpers", "used_types"]

#: complex ops rendered as a helper call (COMPLEX/REAL/IMAG, SELECT and CAST are inline)
_FORMULA_OPS = GroupOp.Complex


def used_types(fn: LoweredFunc) -> set[DType]:
    """Every dtype of a buffer or value in ``fn``."""
    out = {b.dtype for b in fn.args}
    for s in walk_stmts(fn.body):
        if isinstance(s, Allocate):
            out.add(s.buffer.dtype)
        out.update(e.dtype for e in walk(stmt_exprs(s)))
        out.update(x.dtype for e in walk(stmt_exprs(s)) for x in e.src)
    return out


def complex_ops(fn: LoweredFunc) -> set[tuple[Op, DType]]:
    """The (op, complex operand type) pairs ``fn`` computes through formulas."""
    out = set()
    for s in walk_stmts(fn.body):
        for e in walk(stmt_exprs(s)):
            if e.src and e.src[0].dtype.is_complex and e.op in _FORMULA_OPS:
                out.add((e.op, e.src[0].dtype))
    return out


def type_helpers(renderer, fn: LoweredFunc, ty: HelperTypes, fp64: bool = True) -> str:
    """The helpers ``fn`` needs for its complex, sub-byte and sub-16-bit float types."""
    types = used_types(fn)
    out = []
    for d in sorted((d for d in types if d.format is not None), key=lambda d: d.name):
        out.append(small_float_helpers(d, ty, fp64, renderer.table_qualifier))
    for d in sorted((d for d in types if d.is_sub_byte), key=lambda d: d.name):
        out.append(sub_byte_helpers(d, ty))
    cops = sorted(complex_ops(fn), key=lambda k: (k[1].name, k[0].name))
    if cops:     # without fused multiply-adds, so special values are the reference's
        out.append(renderer.exact_helper_defs)
    for op, d in cops:
        out.append(complex_helper(type(renderer)(), op, d, renderer.exact_helper_qualifier or ty.inline))
    return "".join(out)


# ----------------------------------------------------------------------------- small floats

def float_table(fmt: FloatFormat) -> list[int]:
    """The float32 bits of every code of ``fmt`` (NaNs as ml_dtypes gives them: quiet, with the
    code's sign; the FNUZ NaN is negative, e8m0's positive)."""
    n = 1 << fmt.bits
    sign_bit = 0 if fmt.nan == "e8m0" else 1 << (fmt.bits - 1)
    out = []
    for code in range(n):
        neg, mag = bool(code & sign_bit), code & ~sign_bit & (n - 1)
        if _is_nan(fmt, code, mag, neg):
            bits = 0xFFC00000 if neg or fmt.nan == "fnuz" else 0x7FC00000
        elif fmt.inf and mag == (((1 << fmt.ebits) - 1) << fmt.mbits):
            bits = 0xFF800000 if neg else 0x7F800000
        else:
            bits = struct.unpack("<I", struct.pack("<f", (-1.0 if neg else 1.0) * fmt.value(mag)))[0]
        out.append(bits)
    return out


def _is_nan(fmt: FloatFormat, code: int, mag: int, neg: bool) -> bool:
    top = (1 << (fmt.ebits + fmt.mbits)) - 1
    if fmt.nan == "ieee":
        return mag >> fmt.mbits == (1 << fmt.ebits) - 1 and mag & ((1 << fmt.mbits) - 1) != 0
    if fmt.nan == "fn":
        return mag == top
    if fmt.nan == "fnuz":
        return neg and mag == 0
    if fmt.nan == "e8m0":
        return code == 0xFF
    return False


def _special_codes(fmt: FloatFormat) -> dict[str, str]:
    """C expressions (over ``sign``) of the codes for NaN, infinity, overflow and zero."""
    s = 1 << (fmt.bits - 1)
    nan = {"ieee": f"sign | {(((1 << fmt.ebits) - 1) << fmt.mbits) | (1 << (fmt.mbits - 1)) if fmt.mbits else 0}",
           "fn": f"sign | {(1 << (fmt.bits - 1)) - 1}", "fnuz": f"{s}", "e8m0": "255",
           "none": f"(sign ? 0 : {s})"}[fmt.nan]
    inf_code = ((1 << fmt.ebits) - 1) << fmt.mbits
    overflow = f"sign | {inf_code}" if fmt.inf else f"sign | {fmt.max_code}" if fmt.nan == "none" else nan
    zero = "0" if fmt.nan == "fnuz" else "255" if fmt.nan == "e8m0" else "sign"
    return {"nan": nan, "inf": overflow, "overflow": overflow, "zero": zero}


def small_float_helpers(d: DType, ty: HelperTypes, fp64: bool, table_qualifier: str) -> str:
    """Decode table, encoders from float (and double) and the rounding of ``d``."""
    fmt = d.format
    u8, u32, inl = ty.unsigned(8), ty.unsigned(32), ty.inline
    tab = ", ".join(f"0x{b:08x}u" for b in float_table(fmt))
    out = [f"{table_qualifier} {u32} hl_tab_{d.name}[{1 << fmt.bits}] = {{{tab}}};\n",
           (f"{inl} float hl_{d.name}_to_f32({u8} c) {{ return hl_bitcast_u32_f32(hl_tab_{d.name}"
            f"[c & {(1 << fmt.bits) - 1}]); }}\n")]
    floats = [("f32", "float", ty.floats["f32"][1])] + ([("f64", "double", ty.floats["f64"][1])]
                                                        if fp64 and "f64" in ty.floats else [])
    sp = _special_codes(fmt)
    sign = "0" if fmt.nan == "e8m0" else str(1 << (fmt.bits - 1))
    for sfx, t, f in floats:
        neg_guard = "  if (signbit(x) || x == 0) return 255;   /* no sign, no zero */\n" if fmt.nan == "e8m0" else ""
        tiny = "  if (n == 0) return 0;   /* below 2^-127: the smallest code */\n" if fmt.nan == "e8m0" else ""
        code = (f"  int code = q + {fmt.bias};   /* a power of two: the code is its exponent */" if fmt.nan == "e8m0"
                else f"  int field = n < {1 << fmt.mbits} ? 0 : q + {fmt.mbits + fmt.bias};\n"
                     f"  int code = (field << {fmt.mbits}) | ((int)n - (field ? {1 << fmt.mbits} : 0));")
        out.append(f"""/* {t} -> {d.name}: round to nearest even ({fmt.ebits} exponent, {fmt.mbits} mantissa bits) */
{inl} {u8} hl_enc_{d.name}_{sfx}({t} x) {{
  int sign = signbit(x) ? {sign} : 0;
  if (isnan(x)) return ({u8})({sp['nan']});
{neg_guard}  if (isinf(x)) return ({u8})({sp['inf']});
  if (x == 0) return ({u8})({sp['zero']});
  int e; frexp{f}(fabs{f}(x), &e); e -= 1;
  int q = (e < {fmt.emin} ? {fmt.emin} : e) - {fmt.mbits};
  {t} n = rint{f}(ldexp{f}(fabs{f}(x), -q));
{tiny}  if (n >= {1 << (fmt.mbits + 1)}) {{ n = n * 0.5{'f' if t == 'float' else ''}; q += 1; }}
{code}
  if (code > {fmt.max_code}) return ({u8})({sp['overflow']});
  return ({u8})({'code ? sign | code : 0' if fmt.nan == 'fnuz' else 'sign | code'});
}}
{inl} float hl_round_{d.name}{'' if sfx == 'f32' else '_f64'}({t} x) {{ return hl_{d.name}_to_f32(hl_enc_{d.name}_{sfx}(x)); }}
""")
    return "".join(out)


# ----------------------------------------------------------------------------- sub-byte integers

def sub_byte_helpers(d: DType, ty: HelperTypes) -> str:
    """Wrapping, loads and the XLA integer helpers of a sub-byte integer type."""
    bits, signed = d.bits, d.kind == "i"
    s = ("i" if signed else "u") + str(bits)
    base = ("i" if signed else "u") + "8"
    t, u8, i64 = ty.ints[base][0], ty.unsigned(8), ty.ints["i64"][0]
    mask, half = (1 << bits) - 1, 1 << (bits - 1)
    lo, hi = (-half, half - 1) if signed else (0, mask)
    wrap = f"(({t})((((x) & {mask}) ^ {half}) - {half}))" if signed else f"(({t})((x) & {mask}))"
    inl = ty.inline
    out = [f"{inl} {t} hl_wrap_{s}({i64} x) {{ return {wrap}; }}\n",
           f"{inl} {t} hl_load_{s}({u8} c) {{ return hl_wrap_{s}(c); }}\n"]
    for op in ("div", "rem", "floordiv", "floormod", "pow", "abs", "sign"):
        args = "a" if op in ("abs", "sign") else "a, b"
        params = f"{t} a" if op in ("abs", "sign") else f"{t} a, {t} b"
        out.append(f"{inl} {t} hl_{op}_{s}({params}) {{ return hl_wrap_{s}(hl_{op}_{base}({args})); }}\n")
    sra = "(a < 0 ? -1 : 0)" if signed else "0"
    out.append(f"""{inl} {t} hl_shl_{s}({t} a, {t} b) {{ return (b < 0 || b >= {bits}) ? 0 : hl_wrap_{s}((({i64})(a & {mask})) << b); }}
{inl} {t} hl_shrl_{s}({t} a, {t} b) {{ return (b < 0 || b >= {bits}) ? 0 : hl_wrap_{s}((a & {mask}) >> b); }}
{inl} {t} hl_shra_{s}({t} a, {t} b) {{ return (b < 0 || b >= {bits}) ? {sra} : ({t})(a >> b); }}
{inl} {t} hl_popcnt_{s}({t} a) {{ {t} n = 0; for (int k = 0; k < {bits}; ++k) n += (a >> k) & 1; return n; }}
{inl} {t} hl_clz_{s}({t} a) {{ {t} n = 0; for (int k = {bits - 1}; k >= 0 && !((a >> k) & 1); --k) ++n; return n; }}
{inl} {t} hl_f2i_{s}({ty.f2i_arg} x) {{ if (x != x) return 0; if (x <= {lo}) return {lo}; if (x >= {hi}) return {hi}; return ({t})x; }}
""")
    return "".join(out)


# ----------------------------------------------------------------------------- complex formulas

def complex_helper(r, op: Op, d: DType, inline: str) -> str:
    """``hl_<op>_<c64|c128>``: the formula of ``op`` on ``d`` printed by renderer ``r``."""
    f = formula(op, d)
    ct, ft = r.ctype(d), r.ctype(d.component)
    names = "ab"[:f.arity]
    params = ", ".join(f"{ct} {n}" for n in names)
    lines = []
    for k, n in enumerate(names):
        for p, part in zip(f.params[2 * k:2 * k + 2], ("re", "im")):
            lines.append(f"  {ft} {r.name(p, p.name)} = {r.complex_part(n, part)};")
    for var, e in f.steps:
        lines.append(f"  {r.ctype(var.dtype)} {r.name(var, var.name)} = {r.expr(e)};")
    res = [r.expr(e) for e in f.results]
    value = r.complex_make(res[0], res[1], d) if len(res) == 2 else res[0]
    rt = ct if len(res) == 2 else r.ctype(f.result_dtype)
    return "\n".join([f"{inline} {rt} hl_{op.name.lower()}_{r.suffix(d)}({params}) {{", *lines,
                      f"  return {value};", "}", ""])
