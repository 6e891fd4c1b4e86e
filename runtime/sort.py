"""``sort`` and ``topk`` compiled into C for the cpu target (``dsl.tensor.SortCall``).

Each row along the sorted dim (every other index fixed) is sorted on its own, rows in parallel:

1. every key of every element becomes an unsigned integer ordered as the key
   (``key_bits``: floats through the sign-magnitude flip of IEEE totalOrder, -0 and +0 and all
   NaNs first made equal where the key compares as ``<`` does; signed integers with the sign bit
   flipped; descending keys complemented);
2. a stable LSD radix sort of the row's indices, 8 bits a pass, from the least significant byte
   of the last key to the most significant of the first (lexicographic order, ties keep the
   lower index); a pass whose byte is one value for the whole row is skipped, so a 16-bit float
   widened to 32 bits costs two passes; rows of at most 32 elements use an insertion sort;
3. the first ``take`` positions gathered from every operand (and the indices, for ``topk``).

O(n) per row; scratch (keys and two index arrays) is allocated once per call and per thread.
"""

from __future__ import annotations

import logging
import math

from ..dsl import dtypes as dt
from ..dsl.expr import AxisKind, IterVar
from ..dsl.tensor import ExternOp, SortCall
from ..schedules.loops import Buffer, LoweredFunc, Seq, extern_args, extern_name
from .build import Kernel
from .codegen.c import CRenderer, team_lines
from .cpu import Library, compile_c
from .targets import Target

log = logging.getLogger(__name__)

#: rows up to this long are sorted by insertion (the radix passes' histograms cost more)
INSERTION_MAX = 32
#: a call parallelizes over rows when there are several and this many elements in all
PARALLEL_ELEMENTS = 1 << 14

_HELPERS = r"""
typedef long long hl_ix;
/* one stable counting pass over byte ``shift`` of key[]: src -> dst; 0 when every element
   has the same byte (nothing moves, src stays the result) */
static int hl_radix_pass(const uint64_t* restrict key, int shift, hl_ix n, const int32_t* restrict src,
                         int32_t* restrict dst) {
  hl_ix cnt[256] = {0};
  for (hl_ix i = 0; i < n; ++i) cnt[(key[src[i]] >> shift) & 255]++;
  for (int d = 0; d < 256; ++d) if (cnt[d] == n) return 0;
  hl_ix sum = 0;
  for (int d = 0; d < 256; ++d) { hl_ix c = cnt[d]; cnt[d] = sum; sum += c; }
  for (hl_ix i = 0; i < n; ++i) { int32_t j = src[i]; dst[cnt[(key[j] >> shift) & 255]++] = j; }
  return 1;
}
/* whether element a's keys order strictly before b's (keys: nkeys rows of n) */
static inline int hl_key_less(const uint64_t* key, int nkeys, hl_ix n, int32_t a, int32_t b) {
  for (int k = 0; k < nkeys; ++k) {
    uint64_t x = key[k * n + a], y = key[k * n + b];
    if (x != y) return x < y;
  }
  return 0;
}
/* the stable sorting permutation of the row's keys in perm (tmp: scratch of n) */
static void hl_sort_row(const uint64_t* key, int nkeys, const int* bytes, hl_ix n, int32_t* perm,
                        int32_t* tmp) {
  for (hl_ix i = 0; i < n; ++i) perm[i] = (int32_t)i;
  if (n <= INSERTION_MAX) {
    for (hl_ix i = 1; i < n; ++i) {
      int32_t v = perm[i];
      hl_ix j = i;
      while (j > 0 && hl_key_less(key, nkeys, n, v, perm[j - 1])) { perm[j] = perm[j - 1]; --j; }
      perm[j] = v;
    }
    return;
  }
  int32_t* src = perm;
  int32_t* dst = tmp;
  for (int k = nkeys - 1; k >= 0; --k)
    for (int b = 0; b < bytes[k]; ++b)
      if (hl_radix_pass(key + k * n, 8 * b, n, src, dst)) { int32_t* t = src; src = dst; dst = t; }
  if (src != perm) memcpy(perm, src, n * sizeof(int32_t));
}
static inline uint64_t hl_flip(uint64_t b, int bits) {   /* sign-magnitude -> ordered unsigned */
  uint64_t sign = 1ULL << (bits - 1), mask = bits == 64 ? ~0ULL : (sign << 1) - 1;
  return ((b & sign) ? ~b : (b | sign)) & mask;
}
static inline uint64_t hl_fkey32(float v) {     /* '<' order: -0 = +0, every NaN equal and last */
  uint32_t b;
  if (v != v) b = 0x7fc00000u; else { if (v == 0.0f) v = 0.0f; memcpy(&b, &v, 4); }
  return hl_flip(b, 32);
}
static inline uint64_t hl_fkey64(double v) {
  uint64_t b;
  if (v != v) b = 0x7ff8000000000000ULL; else { if (v == 0.0) v = 0.0; memcpy(&b, &v, 8); }
  return hl_flip(b, 64);
}
""".replace("INSERTION_MAX", str(INSERTION_MAX))


def _compilable(spec: SortCall, op: ExternOp) -> bool:
    """Whether the kernel can compute ``op``: keys of real types at most 64 bits (16-bit and small
    floats compare through float32), operands whole bytes, a rank >= 1, a row under 2**31."""
    shape = tuple(op.inputs[0].shape)
    if not shape or shape[spec.dim] >= 1 << 31 or any(x.dtype.bits < 8 for x in op.inputs):
        return False
    for k in spec.keys:
        d = k.fn.dtype
        if d.is_complex or d.is_sub_byte or (k.total and op.inputs[k.operand].dtype.is_complex):
            return False
    return True


def _key_lines(r: CRenderer, spec: SortCall, ins: list[Buffer], at: IterVar) -> tuple[list[str], list[int]]:
    """C computing ``hl_key[k * n + i]`` for every key of element ``i`` (at flat offset ``at``)
    and each key's width in bytes."""
    lines, widths = [], []
    atn = r.name(at, "at")
    for k, key in enumerate(spec.keys):
        b = ins[key.operand]
        store = f"hl_key[{k} * n + i]"
        if key.total:        # the element's own bits in totalOrder
            src = b.dtype
            bits = src.itemsize * 8
            ut = f"uint{bits}_t" if bits > 8 else "uint8_t"
            val = f"{{ {ut} bits_; memcpy(&bits_, &{r.name(b, b.name)}[{atn}], {src.itemsize}); u = bits_; }}"
            if src.is_float:
                conv = f"u = hl_flip(u, {bits});"
            elif src.kind == "i":
                conv = f"u ^= 1ULL << {bits - 1};"
            else:
                conv = ""
            lines += [f"      {{ uint64_t u; {val} {conv}", *_finish(key, bits, store), "      }"]
            widths.append(bits // 8)
            continue
        alias = Buffer(b.name, b.dtype, (b.size,), "arg")
        r.names[id(alias)] = r.name(b, b.name)
        var = r.name(key.var, key.var.name)
        d = key.fn.dtype
        head = f"      {{ {r.ctype(key.var.dtype)} {var} = {r.load(alias.load([at.var]))}; "
        val = r.expr(key.fn)
        if d.is_float:
            bits = 64 if d is dt.float64 else 32
            conv = f"uint64_t u = hl_fkey{bits}(({'double' if bits == 64 else 'float'})({val}));"
        elif d is dt.bool_:
            bits, conv = 8, f"uint64_t u = ({val}) ? 1 : 0;"
        else:
            bits = d.bits
            if d.kind == "u":
                conv = f"uint64_t u = (uint64_t)(uint{bits}_t)({val});"
            else:
                conv = f"uint64_t u = ((uint64_t)(uint{bits}_t)({val})) ^ (1ULL << {bits - 1});"
        lines += [head + conv, *_finish(key, bits, store), "      }"]
        widths.append(bits // 8)
    return lines, widths


def _finish(key, bits: int, store: str) -> list[str]:
    mask = "~0ULL" if bits == 64 else f"((1ULL << {bits}) - 1)"
    return [f"        {store} = {'(~u) & ' + mask if key.descending else 'u'};"]


def sort_source(op: ExternOp, target: Target) -> tuple[LoweredFunc, str]:
    """The lowered signature and the C source of extern op ``op`` (its ``fn`` a SortCall)."""
    spec: SortCall = op.fn
    name = extern_name(op)
    ins, outs = extern_args(op)
    fn = LoweredFunc(name, tuple(ins + outs), len(ins), Seq(()))
    r = CRenderer(target.hardware)
    for b in ins + outs:
        r.name(b, b.name)
    shape = ins[0].shape
    n, take = shape[spec.dim], spec.take
    inner, rows = math.prod(shape[spec.dim + 1:]), math.prod(shape) // max(shape[spec.dim], 1)
    at = IterVar("at", 0, AxisKind.DATA, dt.index)
    keys, widths = _key_lines(r, spec, ins, at)
    nk = len(spec.keys)
    atn = r.name(at, "at")
    gather = [f"      {r.name(o, o.name)}[ob + i * {inner}LL] = {r.name(x, x.name)}[base + (hl_ix)hl_perm[i] * {inner}LL];"
              for x, o in zip(ins, outs)]
    if spec.indices:
        gather.append(f"      {r.name(outs[-1], outs[-1].name)}[ob + i * {inner}LL] = hl_perm[i];")
    threads = target.hardware.threads
    par = (f"  #pragma omp parallel num_threads(hl_team) if ({rows}LL > 1 && {rows * n}LL >= {PARALLEL_ELEMENTS})"
           if threads > 1 else "")
    per = f"({nk * n} * sizeof(uint64_t) + {2 * n} * sizeof(int32_t))"
    body = [
        f"  const hl_ix n = {n}, rows = {rows};",
        "  if (rows == 0 || n == 0) return 0;",
        f"  const int bytes[{nk}] = {{{', '.join(map(str, widths))}}};",
        f"  char* hl_scratch = (char*)hl_alloc({threads} * {per});",
        "  if (!hl_scratch) return 1;",
        *(team_lines(threads) if threads > 1 else []),
        par,
        "  {",
        "    int t = 0;" if threads <= 1 else "    int t = omp_get_thread_num();",
        f"    uint64_t* hl_key = (uint64_t*)(hl_scratch + t * {per});",
        f"    int32_t* hl_perm = (int32_t*)(hl_key + {nk * n});",
        f"    int32_t* hl_tmp = hl_perm + {n};",
        *([f"    #pragma omp for schedule(dynamic, {max(1, 4096 // max(n, 1))})"] if threads > 1 else []),
        "    for (hl_ix row = 0; row < rows; ++row) {",
        f"      const hl_ix base = (row / {inner}LL) * n * {inner}LL + row % {inner}LL;",
        f"      const hl_ix ob = (row / {inner}LL) * {take}LL * {inner}LL + row % {inner}LL;",
        f"      for (hl_ix i = 0; i < n; ++i) {{ const hl_ix {atn} = base + i * {inner}LL;",
        *keys,
        "      }",
        f"      hl_sort_row(hl_key, {nk}, bytes, n, hl_perm, hl_tmp);",
        f"      for (hl_ix i = 0; i < {take}; ++i) {{",
        *gather,
        "      }",
        "    }",
        "  }",
        "  free(hl_scratch);",
        "  return 0;",
    ]
    omp = "#include <omp.h>\n" if threads > 1 else ""
    src = "\n".join([r.preamble(fn), omp + _HELPERS, r.signature(fn) + " {", *body, "}", r.postamble(fn)])
    return fn, src


def build_sort(op: ExternOp, target: Target) -> Kernel | None:
    """A kernel computing ``op`` (a SortCall extern op) in C, or None when it has no compiled form
    here (then it runs on the host)."""
    spec = op.fn
    if not isinstance(spec, SortCall) or not _compilable(spec, op):
        return None
    fn, src = sort_source(op, target)
    log.debug("%s '%s': compiled radix sort of %d key(s)", op.kind, op.name, len(spec.keys))
    k = Kernel(fn, src, Library(compile_c(src, target.compiler)), target)
    k.in_place = {}
    return k


__all__ = ["build_sort", "sort_source"]
