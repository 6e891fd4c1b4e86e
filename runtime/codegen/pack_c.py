"""Transposing pack copies in C: the gemm template's A panels, found in the loop IR and rendered as
one call of a helper that transposes 16 K steps of all rows at a time in vector registers.

The pattern (``cache_read`` of an A operand in panels, schedules/templates/gemm.py)::

    for k in range(K):                        # any extent
      for r in range(R):                      # constant, 2 <= R <= 16 or a multiple of 8
        [for g in range(G):]                  # K groups: G elements make one 32-bit word
          P[base + (k * R + r) * G + g] = cond(r) ? A[row(r) + k * G + g] : 0

``cond`` (optional: the zero padding of rows past the operand's end) may not depend on ``k``
or ``g``; ``row(r)`` is any index of ``r`` and outer loops; the value may also be an exact
widening of f16, bf16 or 8-bit integer A to f32 or int32 P (``G`` 1). Each row's address and condition are evaluated once
(rows whose condition fails are never read), then ``hl_pack_t_<kind>_<R>`` copies ``K`` words of
every row. For ``R`` not a multiple of 8, with AVX-512: 16 words per row into R vectors and out
as R vectors of the transposed block, each gathered by masked permutes; elsewhere, and for the
last ``K % 16``, one word at a time. Element order and values are exactly the loop's. ``R`` a multiple of 8 (8- and 16-row A
panels, and B operands stored transposed, as a PyTorch ``Linear`` weight ``[out, in]`` or the
``W^T`` of a gradient, packed into panels of ``nr`` columns; the rows loop may be the vectorized
one) transposes blocks of words in registers by in-lane unpacks and lane shuffles: 16 x 16
with AVX-512 (64 shuffles per block, a quarter of the masked permutes), 8 x 8 with AVX2 (and
for an 8-row remainder or a K tail of 8 or more), and stores their rows ``R`` words apart.

The copy the loop did one element at a time (with the row condition per element) took 5% of an
fp32 matmul 1024's time and 7% of a bf16 one's on an AMD EPYC (perf, default schedules).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dsl import dtypes as dt
from ...dsl.expr import Expr, IterVar, substitute
from ...dsl.ops import Op
from ...schedules.loops import Buffer, For, LoopKind, Store
from .kgroup_c import X86_INTRINSICS
from .microkernel import _SCALAR, lane_invariant, lane_stride

#: (source, destination) types a pack widens exactly: helper kind
_WIDEN = {(dt.float16, dt.float32): "f16f32", (dt.bfloat16, dt.float32): "bf16f32",
          (dt.int8, dt.int32): "s8i32", (dt.uint8, dt.int32): "u8i32",
          (dt.int8, dt.float32): "s8f32", (dt.uint8, dt.float32): "u8f32"}
LANES = 16
#: widest panel the helper transposes (the gemm template's widest ``nr``)
MAX_ROWS = 256


@dataclass(frozen=True)
class PackCopy:
    """A matched transposing copy: loops ``k`` (outer), ``r`` (rows) and optional ``g`` (the
    elements of one word), ``store`` into P, ``load`` of A, ``cond`` (None: every row) and the
    helper ``kind``: 'w32' (32-bit words as they are) or a widening (``_WIDEN``)."""

    k: For
    r: For
    g: For | None
    store: Store
    load: Expr
    cond: Expr | None
    kind: str

    @property
    def rows(self) -> int:
        return self.r.extent.arg


def _const(f: For) -> int | None:
    return f.extent.arg if f.extent.op is Op.CONST else None


def match_pack(loop: For, flat_index) -> PackCopy | None:
    """The transposing copy rooted at loop ``loop`` (module docstring), or None."""
    if loop.kind not in _SCALAR or loop.reduction or not isinstance(loop.body, For):
        return None
    r = loop.body
    g = r.body if isinstance(r.body, For) else None
    s = (g.body if g is not None else r.body)
    rows = _const(r)
    if (not isinstance(s, Store) or r.kind not in (*_SCALAR, LoopKind.VECTORIZE) or r.reduction
            or rows is None or not (2 <= rows <= LANES or (rows % 8 == 0 and rows <= MAX_ROWS))):
        return None
    if g is not None and (g.kind not in _SCALAR or g.reduction or _const(g) is None):
        return None
    value, cond = s.value, None
    if value.op is Op.SELECT and value.src[2].op is Op.CONST and value.src[2].arg == 0:
        cond, value = value.src[0], value.src[1]
    widen = None
    if value.op is Op.CAST and value.src[0].op is Op.LOAD:
        widen = _WIDEN.get((value.src[0].dtype, value.dtype))
        if widen is None or g is not None:
            return None
        value = value.src[0]
    if value.op is not Op.LOAD or not isinstance(value.arg, Buffer) or value.arg is s.buffer:
        return None
    dst, src = s.buffer, value.arg
    size = _const(g) if g is not None else 1
    if widen is None and (src.dtype is not dst.dtype or size * dst.dtype.itemsize != 4):
        return None
    if widen is not None and dst.dtype.itemsize != 4:
        return None
    inner = [loop.var] + ([g.var] if g is not None else [])
    if cond is not None and not all(lane_invariant(cond, v) for v in inner):
        return None
    fd, fs = flat_index(dst, s.indices), flat_index(src, value.src)
    if lane_stride(fd, loop.var) != rows * size or lane_stride(fd, r.var) != size or lane_stride(fs, loop.var) != size:
        return None
    if g is not None and (lane_stride(fd, g.var) != 1 or lane_stride(fs, g.var) != 1):
        return None
    return PackCopy(loop, r, g, s, value, cond, widen or "w32")


def _load(kind: str, p: str, k: str) -> tuple[str, str]:
    """(AVX-512 vector of 16 words from row pointer ``p`` at word ``k``, one word as uint32_t)."""
    if kind == "w32":
        return (f"_mm512_loadu_si512((const void*)((const uint32_t*){p} + {k}))",
                f"hl_pack_word((const hl_pack_u32*){p} + {k})")
    if kind == "f16f32":
        return (f"_mm512_castps_si512(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)((const uint16_t*){p} + {k}))))",
                f"hl_pack_f32bits(hl_f16bits_to_f32(((const hl_pack_u16*){p})[{k}]))")
    if kind == "bf16f32":
        return (f"_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)((const uint16_t*){p} + {k}))), 16)",
                f"((uint32_t)((const hl_pack_u16*){p})[{k}] << 16)")
    signed = kind[0] == "s"
    ints = f"_mm512_cvtep{'i' if signed else 'u'}8_epi32(_mm_loadu_si128((const __m128i*)((const uint8_t*){p} + {k})))"
    one = f"((const {'int8_t' if signed else 'uint8_t'}*){p})[{k}]"     # char types alias anything
    if kind.endswith("i32"):
        return ints, f"(uint32_t)(int32_t){one}"
    return f"_mm512_castps_si512(_mm512_cvtepi32_ps({ints}))", f"hl_pack_f32bits((float){one})"


def _load8(kind: str, p: str, k: str) -> str:
    """AVX2 vector of 8 words from row pointer ``p`` at word ``k`` (F16C for f16)."""
    if kind == "w32":
        return f"_mm256_loadu_si256((const __m256i*)((const uint32_t*){p} + {k}))"
    if kind == "f16f32":
        return f"_mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*){p} + {k}))))"
    if kind == "bf16f32":
        return f"_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)((const uint16_t*){p} + {k}))), 16)"
    ints = (f"_mm256_cvtep{'i' if kind[0] == 's' else 'u'}8_epi32("
            f"_mm_loadl_epi64((const __m128i*)((const uint8_t*){p} + {k})))")
    return ints if kind.endswith("i32") else f"_mm256_castps_si256(_mm256_cvtepi32_ps({ints}))"


_WORD_HELPERS = ("#ifndef HL_PACK_WORD\n#define HL_PACK_WORD\n"
                 "typedef uint32_t hl_pack_u32 __attribute__((may_alias));\n"
                 "typedef uint16_t hl_pack_u16 __attribute__((may_alias));\n"
                 "HL_INLINE uint32_t hl_pack_word(const hl_pack_u32* p) { uint32_t w; __builtin_memcpy(&w, p, 4); return w; }\n"
                 "HL_INLINE uint32_t hl_pack_f32bits(float f) { uint32_t w; __builtin_memcpy(&w, &f, 4); return w; }\n"
                 "#endif\n")


def _transpose16(v: str, t: str) -> list[str]:
    """C statements transposing the 16 x 16 block of 32-bit words in vectors ``v``0..15 (row
    ``r``: words 0..15 of row r) so that ``v``j holds word j of rows 0..15: 32-bit then 64-bit
    unpacks within 128-bit lanes (word ``4L + i`` of four rows in lane L), then two rounds of
    lane shuffles gathering lane L of four such vectors; ``t`` names the temporaries."""
    out = []
    for i in range(0, 16, 2):
        out.append(f"const __m512i {t}a{i} = _mm512_unpacklo_epi32({v}{i}, {v}{i + 1}), "
                   f"{t}a{i + 1} = _mm512_unpackhi_epi32({v}{i}, {v}{i + 1});")
    for q in range(0, 16, 4):       # rows q..q+3: word 4L+i in u[q + i]
        out.append(f"const __m512i {t}b{q} = _mm512_unpacklo_epi64({t}a{q}, {t}a{q + 2}), "
                   f"{t}b{q + 1} = _mm512_unpackhi_epi64({t}a{q}, {t}a{q + 2}), "
                   f"{t}b{q + 2} = _mm512_unpacklo_epi64({t}a{q + 1}, {t}a{q + 3}), "
                   f"{t}b{q + 3} = _mm512_unpackhi_epi64({t}a{q + 1}, {t}a{q + 3});")
    for i in range(4):              # words i, i+4, i+8, i+12 of all rows
        for imm, off in ((0x88, 0), (0xDD, 4)):
            out.append(f"const __m512i {t}x{i}_{off} = _mm512_shuffle_i32x4({t}b{i}, {t}b{i + 4}, {imm:#04x}), "
                       f"{t}y{i}_{off} = _mm512_shuffle_i32x4({t}b{i + 8}, {t}b{i + 12}, {imm:#04x});")
            out.append(f"{v}{i + off} = _mm512_shuffle_i32x4({t}x{i}_{off}, {t}y{i}_{off}, 0x88); "
                       f"{v}{i + off + 8} = _mm512_shuffle_i32x4({t}x{i}_{off}, {t}y{i}_{off}, 0xdd);")
    return out


def _transpose8(v: str, t: str) -> list[str]:
    """C statements transposing the 8 x 8 block of 32-bit words in AVX2 vectors ``v``0..7 (row
    ``r``: words 0..7 of row r) so that ``v``j holds word j of rows 0..7: 32-bit and 64-bit
    unpacks within 128-bit lanes (words j and j + 4 of four rows), then one lane permute."""
    out = [f"const __m256i {t}a{i} = _mm256_unpacklo_epi32({v}{i}, {v}{i + 1}), "
           f"{t}a{i + 1} = _mm256_unpackhi_epi32({v}{i}, {v}{i + 1});" for i in range(0, 8, 2)]
    for q in (0, 4):
        out.append(f"const __m256i {t}b{q} = _mm256_unpacklo_epi64({t}a{q}, {t}a{q + 2}), "
                   f"{t}b{q + 1} = _mm256_unpackhi_epi64({t}a{q}, {t}a{q + 2}), "
                   f"{t}b{q + 2} = _mm256_unpacklo_epi64({t}a{q + 1}, {t}a{q + 3}), "
                   f"{t}b{q + 3} = _mm256_unpackhi_epi64({t}a{q + 1}, {t}a{q + 3});")
    for j in range(4):
        out.append(f"{v}{j} = _mm256_permute2x128_si256({t}b{j}, {t}b{j + 4}, 0x20); "
                   f"{v}{j + 4} = _mm256_permute2x128_si256({t}b{j}, {t}b{j + 4}, 0x31);")
    return out


def _block8(kind: str, rows: int, c: str, k: str) -> list[str]:
    """One 8 x 8 block in a C scope: rows ``c``.. ``c + 7`` and words ``k``.. ``k + 7``."""
    lines = [f"__m256i w{r} = ok[{c} + {r}] ? {_load8(kind, f'rows[{c} + {r}]', k)} : _mm256_setzero_si256();"
             for r in range(8)]
    lines += _transpose8("w", "s")
    lines += [f"_mm256_storeu_si256((__m256i*)(dst + ({k} + {j}) * {rows} + {c}), w{j});" for j in range(8)]
    return ["{", *("  " + x for x in lines), "}"]


def _wide_helper(kind: str, rows: int) -> str:
    """``hl_pack_t_<kind>_<rows>`` for ``rows`` a multiple of 8: with AVX-512, each 16 x 16 block
    of words (16 rows, 16 K steps) transposed in registers (an 8-row remainder as two 8 x 8
    blocks); with AVX2, and for a K tail of 8 or more, 8 x 8 blocks; its rows stored ``rows``
    words apart; ``ok``: a flag per row (0: the row is past the operand's end and packs as zeros)."""
    name = f"hl_pack_t_{kind}_{rows}"
    vec, word = _load(kind, "rows[c + {r}]", "k")[0], _load(kind, "rows[{r}]", "k")[1]
    full = rows - rows % LANES
    body = [f"HL_INLINE void {name}(hl_pack_u32* __restrict__ dst, const void* const* rows, const uint8_t* ok, int64_t n) {{",
            "  int64_t k = 0;"]
    if full:
        body += ["#if defined(__AVX512F__)", f"  for (; k + {LANES} <= n; k += {LANES}) {{",
                 f"    for (int c = 0; c < {full}; c += {LANES}) {{"]
        for r in range(LANES):
            body.append(f"      __m512i v{r} = ok[c + {r}] ? {vec.format(r=r)} : _mm512_setzero_si512();")
        body += ["      " + line for line in _transpose16("v", "t")]
        for j in range(LANES):
            body.append(f"      _mm512_storeu_si512((void*)(dst + (k + {j}) * {rows} + c), v{j});")
        body.append("    }")
        if full != rows:
            for half in ("k", "k + 8"):
                body += ["    " + line for line in _block8(kind, rows, str(full), half)]
        body += ["  }", "#endif"]
    body += ["#if defined(__AVX2__)" + (" && defined(__F16C__)" if kind == "f16f32" else ""),
             "  for (; k + 8 <= n; k += 8)", f"    for (int c = 0; c < {rows}; c += 8)"]
    body += ["      " + line for line in _block8(kind, rows, "c", "k")]
    body += ["#endif",
             f"  for (; k < n; ++k)\n    for (int r = 0; r < {rows}; ++r)",
             f"      dst[k * {rows} + r] = ok[r] ? {word.format(r='r')} : 0u;",
             "}"]
    return "\n".join(body) + "\n"


def pack_helper(kind: str, rows: int) -> str:
    """C of ``hl_pack_t_<kind>_<rows>(dst, row pointers, row flags, n)``: ``dst[k * rows + r]`` =
    word ``k`` of row ``r`` (0 where row ``r``'s flag is clear: bit ``r`` of a mask, or byte
    ``r`` of an array where ``rows`` is a multiple of 8), ``k < n``."""
    if rows % 8 == 0:
        return X86_INTRINSICS + _WORD_HELPERS + _wide_helper(kind, rows)
    name = f"hl_pack_t_{kind}_{rows}"
    vec, word = _load(kind, "rows[{r}]", "k")
    out = [X86_INTRINSICS, _WORD_HELPERS,
           (f"HL_INLINE void {name}(hl_pack_u32* __restrict__ dst, const void* const* rows, uint32_t ok, int64_t n) {{\n"
           "  int64_t k = 0;\n#if defined(__AVX512F__)\n")]
    for j in range(rows):
        lanes = [(LANES * j + lane) // rows for lane in range(LANES)]
        out.append(f"  const __m512i ix{j} = _mm512_setr_epi32({', '.join(map(str, lanes))});\n")
    out.append(f"  for (; k + {LANES} <= n; k += {LANES}) {{\n")
    for r in range(rows):
        out.append(f"    const __m512i v{r} = (ok >> {r} & 1u) ? {vec.format(r=r)} : _mm512_setzero_si512();\n")
    for j in range(rows):
        expr = "_mm512_setzero_si512()"
        for r in range(rows):
            mask = sum(1 << lane for lane in range(LANES) if (LANES * j + lane) % rows == r)
            if mask:
                expr = f"_mm512_mask_permutexvar_epi32({expr}, (__mmask16){mask:#06x}, ix{j}, v{r})"
        out.append(f"    _mm512_storeu_si512((void*)(dst + k * {rows} + {LANES * j}), {expr});\n")
    out.append("  }\n#endif\n"
               f"  for (; k < n; ++k)\n    for (int r = 0; r < {rows}; ++r)\n"
               f"      dst[k * {rows} + r] = (ok >> r & 1u) ? {word.format(r='r')} : 0u;\n}}\n")
    return "".join(out)


class PackPrinter:
    """Renders a matched PackCopy with a C renderer ``rd`` (names, expressions, flat indices)."""

    def __init__(self, rd, pc: PackCopy):
        self.rd, self.pc = rd, pc

    def helper(self) -> tuple[str, str]:
        key = f"pack_t_{self.pc.kind}_{self.pc.rows}"
        return key, pack_helper(self.pc.kind, self.pc.rows)

    def lines(self, depth: int) -> list[str]:
        rd, pc = self.rd, self.pc
        pad = "  " * depth
        at0: dict[IterVar, int] = {pc.k.var: 0, **({pc.g.var: 0} if pc.g is not None else {})}
        rv = rd.name(pc.r.var, pc.r.var.name)
        src = pc.load.arg
        sname = rd.name(src, src.name)
        row = rd.expr(substitute(rd.flat_index(src, pc.load.src), at0))
        ok = "1" if pc.cond is None else rd.expr(substitute(pc.cond, at0))
        dst = rd.name(pc.store.buffer, pc.store.buffer.name)
        base = rd.expr(substitute(rd.flat_index(pc.store.buffer, pc.store.indices), {**at0, pc.r.var: 0}))
        wide = pc.rows % 8 == 0     # register transposes, a flag per row (wider than a 16-bit mask)
        return [pad + "{",
                f"{pad}  const void* hl_pk_rows[{pc.rows}];",
                f"{pad}  uint8_t hl_pk_ok[{pc.rows}];" if wide else f"{pad}  uint32_t hl_pk_ok = 0;",
                f"{pad}  for ({rd.int64_type} {rv} = 0; {rv} < {pc.rows}; ++{rv}) {{",
                f"{pad}    const uint32_t hl_pk_in = ({ok}) ? 1u : 0u;",
                f"{pad}    hl_pk_ok[{rv}] = (uint8_t)hl_pk_in;" if wide else f"{pad}    hl_pk_ok |= hl_pk_in << {rv};",
                f"{pad}    hl_pk_rows[{rv}] = hl_pk_in ? (const void*)&{sname}[{row}] : (const void*){sname};",
                f"{pad}  }}",
                (f"{pad}  hl_pack_t_{pc.kind}_{pc.rows}((hl_pack_u32*)&{dst}[{base}], hl_pk_rows, hl_pk_ok, "
                f"{rd.expr(pc.k.extent)});"),
                pad + "}"]


__all__ = ["PackCopy", "PackPrinter", "match_pack", "pack_helper"]
