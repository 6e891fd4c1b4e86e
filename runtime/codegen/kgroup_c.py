"""K-group micro-kernels in C: one instruction per vector for several K steps (schedules/kgroups.py).

The register tile's term is ``acc(A[..]) * acc(B[..])`` inside a reduction loop ``p`` of the
kind's group size: A does not depend on the vector variable ``v`` (one group, broadcast), B has
lane stride ``size`` along ``v`` and both have stride 1 along ``p`` (panels packed as
``[..][lanes][size]``). Each group of A is one 32-bit word, each vector of B ``lanes`` words:

- bf16 pairs into f32: ``vdpbf16ps`` (AVX512-BF16: the pair's products summed into f32, input
  and result subnormals flushed to zero); else each pair widened exactly (bf16 is f32's top
  half) in two multiply-adds, k first.
- int8 quads into int32: ``vpdpbusd`` (AVX512-VNNI, u8 x s8, wrapping); s8 x s8 enters as
  ``(a + 128) x b`` with ``128 * sum(b)`` kept per column chunk in a compensation register and
  subtracted when the tile is stored; else each byte widened exactly and multiplied-added.

Which one compiles is the C preprocessor's choice (the instruction's macro), so a kernel built
for a machine without the instruction stays exact, only slower.
"""

from __future__ import annotations

from ...dsl.expr import Expr, IterVar, walk
from ...dsl.ops import Op
from ...schedules.kgroups import GroupKind, group_kind
from ...schedules.loops import For

#: per vector width: (float type, integer type, intrinsic prefix, AVX-512VL needed)
_X86 = {16: ("__m512", "__m512i", "_mm512", False), 8: ("__m256", "__m256i", "_mm256", True),
        4: ("__m128", "__m128i", "_mm", True)}
#: the intrinsics' header, once per file, on x86 only
X86_INTRINSICS = ("#ifndef HL_X86_INTRINSICS\n#define HL_X86_INTRINSICS\n#if defined(__x86_64__) || defined(__i386__)\n"
                  "#include <immintrin.h>\n#endif\n#endif\n")
_MACRO = {"avx512bf16": "__AVX512BF16__", "avx512vnni": "__AVX512VNNI__"}


def _vars(e: Expr) -> set:
    return {x.arg for x in walk([e]) if x.op is Op.VAR}


def group_operands(term: Expr, v: IterVar) -> tuple[Expr, Expr]:
    """The loads ``(A, B)`` of a group term ``acc(A) * acc(B)``: A does not depend on ``v``."""
    a, b = (x.src[0] for x in term.src)
    return (a, b) if v not in _vars(a) else (b, a)


def match_group(term: Expr, v: IterVar, p: For, d, flat_index, lane_stride) -> GroupKind | None:
    """The kind whose instruction takes ``term`` (accumulating in ``d``) a whole iteration of
    loop ``p`` at a time along vector variable ``v`` (module docstring), or None."""
    if (term.op is not Op.MUL or p.extent.op is not Op.CONST
            or any(x.op is not Op.CAST or x.dtype is not d or x.src[0].op is not Op.LOAD for x in term.src)):
        return None
    a, b = group_operands(term, v)
    kind = group_kind(d, a.dtype, b.dtype)
    if kind is None or p.extent.arg != kind.size or v in _vars(a):
        return None
    fa, fb = flat_index(a.arg, a.src), flat_index(b.arg, b.src)
    ok = lane_stride(fb, v) == kind.size and lane_stride(fa, p.var) == 1 and lane_stride(fb, p.var) == 1
    return kind if ok else None


def word_helpers(lanes: int) -> str:
    """``hl_u32x<lanes>``: ``lanes`` 32-bit words (groups), loaded by ``hl_vld_u32x<lanes>``;
    ``hl_vld_word``: one word (A's group)."""
    common = X86_INTRINSICS + (
        "#ifndef HL_WORD_HELPERS\n#define HL_WORD_HELPERS\n"
        "HL_INLINE uint32_t hl_vld_word(const void* p) { uint32_t w; __builtin_memcpy(&w, p, 4); return w; }\n"
        "HL_INLINE float hl_bits_f32(uint32_t w) { float f; __builtin_memcpy(&f, &w, 4); return f; }\n#endif\n")
    if lanes == 1:
        return common + "typedef uint32_t hl_u32x1;\n#define hl_vld_u32x1 hl_vld_word\n"
    return (common + f"typedef uint32_t hl_u32x{lanes} __attribute__((vector_size({4 * lanes})));\n"
            f"typedef uint32_t hl_u32x{lanes}u __attribute__((vector_size({4 * lanes}), aligned(1), may_alias));\n"
            f"HL_INLINE hl_u32x{lanes} hl_vld_u32x{lanes}(const void* p) {{ return *(const hl_u32x{lanes}u*)p; }}\n")


def _fallback(kind: GroupKind, vt: str, lanes: int) -> str:
    """The exact portable step: each group's elements widened and multiplied-added, k first."""
    if kind.name == "bf16":
        lo, hi = ("(b << 16)", "(b & 0xFFFF0000u)")
        if lanes == 1:
            lo, hi = f"hl_bits_f32{lo}", f"hl_bits_f32{hi}"
        else:
            lo, hi = f"({vt}){lo}", f"({vt}){hi}"
        return f"  return acc + hl_bits_f32(a << 16) * {lo} + hl_bits_f32(a & 0xFFFF0000u) * {hi};\n"
    iv = "int32_t" if lanes == 1 else vt

    def byte(x, signed, k, vec):
        if signed:      # arithmetic shift of the byte moved to the top
            return f"(({iv})({x} << {24 - 8 * k}) >> 24)" if vec else f"((int32_t)({x} << {24 - 8 * k}) >> 24)"
        return f"({iv})(({x} >> {8 * k}) & 0xFFu)" if vec else f"(int32_t)(({x} >> {8 * k}) & 0xFFu)"
    sa, sb = kind.a.name == "int8", kind.b.name == "int8"
    terms = " + ".join(f"{byte('a', sa, k, False)} * {byte('b', sb, k, True)}" for k in range(4))
    return f"  return acc + {terms};\n"


def group_helpers(kind: GroupKind, d, lanes: int) -> str:
    """``hl_vdot_<kind>_<acc>x<lanes>(acc, a, b)``: ``acc`` plus the products of A's group ``a``
    (one word) with each lane's group of ``b`` (``hl_u32x<lanes>``); for a compensated kind also
    ``hl_vcomp_<kind>_<acc>x<lanes>(c, b)``, the running ``128 * sum(b)`` the instruction's form
    needs (unchanged, zero, in the fallback)."""
    sfx = f"{'f32' if d.name == 'float32' else 'i32'}x{lanes}"
    vt = f"hl_{sfx}"
    w = f"hl_u32x{lanes}"
    name = f"{kind.name}_{sfx}"
    out = f"HL_INLINE {vt} hl_vdot_{name}({vt} acc, uint32_t a, {w} b) {{\n"
    comp = f"HL_INLINE {vt} hl_vcomp_{name}({vt} c, {w} b) {{\n" if kind.compensate else ""
    x86 = _X86.get(lanes)
    if x86 is not None:
        ft, it, pre, vl = x86
        need = f"defined({_MACRO[kind.isa]})" + (" && defined(__AVX512VL__)" if vl else "")
        bcast = f"{pre}_set1_epi32((int){'(a ^ 0x80808080u)' if kind.compensate else 'a'})"
        if kind.name == "bf16":
            step = f"({vt}){pre}_dpbf16_ps(({ft})acc, ({ft}bh){bcast}, ({ft}bh)b)"
        elif kind.name == "s8u8":       # the unsigned operand is B's vector
            step = f"({vt}){pre}_dpbusd_epi32(({it})acc, ({it})b, {bcast})"
        else:
            step = f"({vt}){pre}_dpbusd_epi32(({it})acc, {bcast}, ({it})b)"
        out += f"#if {need}\n  return {step};\n#else\n" + _fallback(kind, vt, lanes) + "#endif\n"
        if comp:
            comp += (f"#if {need}\n  return ({vt}){pre}_dpbusd_epi32(({it})c, {pre}_set1_epi32((int)0x80808080u), "
                     f"({it})b);\n#else\n  (void)b;\n  return c;\n#endif\n")
    else:
        out += _fallback(kind, vt, lanes)
        if comp:
            comp += "  (void)b;\n  return c;\n"
    return out + "}\n" + (comp + "}\n" if comp else "")


def compensated(kind: GroupKind | None) -> bool:
    return kind is not None and kind.compensate


__all__ = ["X86_INTRINSICS", "compensated", "group_helpers", "group_operands", "match_group", "word_helpers"]
