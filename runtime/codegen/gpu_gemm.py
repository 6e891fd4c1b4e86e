"""CUDA source of a MatmulKernel (schedules/gpu_gemm.py): one block per ``bm x bn`` output tile.

Index semantics: the block's tile starts at row ``m0 = tile_m * bm`` and column ``n0 = tile_n *
bn`` of batch ``b`` (blocks are numbered batch-major, then in groups of ``group_m`` row tiles);
K is walked in slices ``[k0, k0 + bk)``. Each slice of A (``bm x bk``) and B (``bk x bn``) is
copied into shared memory, elements outside ``[0, M) x [0, K)`` (``[0, K) x [0, N)``) as zeros:

* direct operands are copied as vectors: with ``cp.async`` into a ring of ``stages`` buffers
  (sm_80+, the copy of slice ``k + stages - 1`` overlapping the product of slice ``k``), else
  through registers into two buffers (the next slice's loads issued before this slice's product);
* other operands are evaluated element by element (an inlined producer, a convolution's window),
  through registers into two buffers.

The product of a slice: FMA kernels give each thread ``tm x tn`` outputs (rows and columns in
groups of up to 16 bytes, strided across the block so that a warp's shared-memory reads are
contiguous); tensor-core kernels give each warp a ``wm x wn`` tile of ``m16n8k16`` ``mma.sync``
products fed by ``ldmatrix`` (``.trans`` for tiles stored k-outer). Results are stored with
bounds guards. The PTX helpers are plain functions (``hl_cp_async``, ``hl_ldsm_x4``,
``hl_mma_16816``, ...) so that runtime/cuda_emu.py can run the same source on a CPU.
"""

from __future__ import annotations

import math

from ...dsl import dtypes as dt
from ...dsl.expr import IterVar
from ...schedules.gpu_gemm import GemmPlan, gemm_plan
from ...schedules.loops import MatmulKernel

#: device helpers every gemm kernel uses (PTX on the device; runtime/cuda_emu.py defines them on a CPU)
GEMM_HELPERS = r"""
#ifndef HL_EMULATE
#define HL_DYN_SHARED(name) extern __shared__ __align__(128) unsigned char name[]
static __device__ __forceinline__ unsigned hl_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void hl_cp_async(void* dst, const void* src, int bytes, int valid) {
#if __CUDA_ARCH__ >= 800
  unsigned s = hl_smem_addr(dst);
  int n = valid ? bytes : 0;
  if (bytes == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(n));
  else if (bytes == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(s), "l"(src), "r"(n));
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(n));
#else
  for (int i = 0; i < bytes; ++i) ((unsigned char*)dst)[i] = valid ? ((const unsigned char*)src)[i] : 0;
#endif
}
static __device__ __forceinline__ void hl_cp_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> static __device__ __forceinline__ void hl_cp_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
#endif
}
static __device__ __forceinline__ void hl_ldsm_x4(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hl_smem_addr(p)));
}
static __device__ __forceinline__ void hl_ldsm_x4_trans(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hl_smem_addr(p)));
}
static __device__ __forceinline__ void hl_mma_16816_bf16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
static __device__ __forceinline__ void hl_mma_16816_f16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
"""

#: CUDA vector types by byte count (copies of raw bits)
_RAW = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}
_FLOATV = {(4, 4): "float4", (4, 2): "float2", (8, 2): "double2"}
_LANES = "xyzw"


def _decompose(r, group: tuple[IterVar, ...], flat: str) -> list[str]:
    """Declarations of ``group``'s variables from their flattened index ``flat`` (row-major)."""
    out, inner = [], 1
    exts = [v.extent for v in group]
    for i in reversed(range(len(group))):
        v = group[i]
        e = flat if inner == 1 else f"({flat} / {inner}LL)"
        if i > 0:
            e = f"({e} % {exts[i]}LL)"
        out.append(f"const long long {r.name(v, v.name)} = {e};")
        inner *= exts[i]
    return out[::-1]


class GemmWriter:
    """Writes one MatmulKernel's kernel body with renderer ``r`` (a CUDARenderer: names, types
    and expressions come from it) for a device of compute capability ``cc``."""

    def __init__(self, r, node: MatmulKernel, cc: int | None):
        self.r, self.node = r, node
        self.plan: GemmPlan = gemm_plan(node, cc)
        self.p = self.plan.params
        self.B, self.M, self.N, self.K = self.plan.sizes
        self.out: list[str] = []

    # ------------------------------------------------------------------ helpers
    def emit(self, depth: int, *lines: str) -> None:
        self.out.extend("  " * depth + ln for ln in lines)

    @property
    def stype(self) -> str:
        """The shared tiles' element type."""
        return "unsigned short" if self.p.mma else self.r.ctype(self.plan.form.acc)

    @property
    def acc_t(self) -> str:
        return self.r.ctype(self.plan.form.acc)

    def _ld(self, which: str) -> int:
        return (self.plan.tile_a if which == "a" else self.plan.tile_b)[1]

    def _tile_elems(self, which: str) -> int:
        return math.prod(self.plan.tile_a if which == "a" else self.plan.tile_b)

    def _k_major_tile(self, which: str) -> bool:
        return self.plan.a_k_major if which == "a" else self.plan.b_k_major

    def sidx(self, which: str, mn: str, k: str) -> str:
        """The shared-tile offset of element (row/column ``mn``, ``k``) within one stage."""
        ld = self._ld(which)
        return f"({mn}) * {ld} + ({k})" if self._k_major_tile(which) else f"({k}) * {ld} + ({mn})"

    def _operand(self, which: str):
        pl = self.plan
        return (pl.a, pl.vec_a, self.node.m, self.M, self.p.bm, "hl_m0") if which == "a" else \
            (pl.b, pl.vec_b, self.node.n, self.N, self.p.bn, "hl_n0")

    def _value(self, which: str) -> str:
        """The operand's value as stored in shared memory (its bits for tensor-core tiles)."""
        op = self._operand(which)[0]
        if not self.p.mma:
            return f"({self.acc_t})({self.r.expr(op.expr)})"
        inner = op.expr.src[0]        # the 16-bit value the f32 factor converts from
        v = self.r.expr(inner)
        if inner.dtype is dt.bfloat16:
            return f"(unsigned short)(__float_as_uint({v}) >> 16)"
        return f"__half_as_ushort(__float2half_rn({v}))"

    # ------------------------------------------------------------------ fills
    def _fill_shape(self, which: str):
        """(chunks, vector width, k-fastest) of one operand slice's copy."""
        op, vec, _, _, bmn, _ = self._operand(which)
        kfast = op.k_major if op.direct else which == "a"
        return bmn * self.p.bk // vec, vec, kfast

    def _chunk_pos(self, which: str, c: str) -> tuple[str, str]:
        """(row/column, k) within the slice of chunk ``c`` (its first element)."""
        _, vec, kfast = self._fill_shape(which)
        bmn = self._operand(which)[4]
        if kfast:
            per = self.p.bk // vec
            return f"({c} / {per})", f"(({c} % {per}) * {vec})"
        per = bmn // vec
        return f"(({c} % {per}) * {vec})", f"({c} / {per})"

    def _gaddr(self, which: str, mn: str, k: str) -> str:
        op = self._operand(which)[0]
        base = f"hl_{which}base"
        buf = self.r.name(op.buffer, op.buffer.name)
        return f"({buf} + {base} + ({mn}) * {op.mn_stride}LL + ({k}) * {op.k_stride}LL)"

    def fill_async(self, d: int, which: str, stage: str, kt: str) -> None:
        """Issue the cp.async copies of ``which``'s slice ``kt`` into ring buffer ``stage``."""
        chunks, vec, _ = self._fill_shape(which)
        op, _, _, ext, _, org = self._operand(which)
        t = self.p.threads
        nbytes = vec * self.plan.item
        self.emit(d, "#pragma unroll", f"for (int hl_i = 0; hl_i < {-(-chunks // t)}; ++hl_i) {{")
        self.emit(d + 1, f"const int hl_c = hl_i * {t} + hl_tid;")
        if chunks % t:
            self.emit(d + 1, f"if (hl_c < {chunks}) {{")
        self.emit(d + 1, f"const int hl_r = {self._chunk_pos(which, 'hl_c')[0]}, hl_q = {self._chunk_pos(which, 'hl_c')[1]};",
                  f"const long long hl_gm = {org} + hl_r, hl_gk = (long long)({kt}) * {self.p.bk} + hl_q;",
                  f"const int hl_ok = hl_gm < {ext} && hl_gk < {self.K};",
                  f"hl_cp_async(hl_{which}s + ({stage}) * {self._tile_elems(which)} + {self.sidx(which, 'hl_r', 'hl_q')}, "
                  f"hl_ok ? (const void*){self._gaddr(which, 'hl_gm', 'hl_gk')} : (const void*){self.r.name(op.buffer, op.buffer.name)}, "
                  f"{nbytes}, hl_ok);")
        if chunks % t:
            self.emit(d + 1, "}")
        self.emit(d, "}")

    def regs_decl(self, which: str) -> None:
        chunks, vec, _ = self._fill_shape(which)
        n = -(-chunks // self.p.threads)
        self.emit(1, f"{self._vtype(which)} hl_{which}r[{n}];")

    def _vtype(self, which: str) -> str:
        _, vec, _ = self._fill_shape(which)
        if vec == 1:
            return self.stype
        if self.p.mma:
            return _RAW[vec * 2]
        return _FLOATV[(self.plan.item, vec)]

    def load_regs(self, d: int, which: str, kt: str) -> None:
        """Load ``which``'s slice ``kt`` into this thread's registers (zeros outside the matrix)."""
        chunks, vec, _ = self._fill_shape(which)
        op, _, group, ext, _, org = self._operand(which)
        t = self.p.threads
        vt = self._vtype(which)
        self.emit(d, "#pragma unroll", f"for (int hl_i = 0; hl_i < {-(-chunks // t)}; ++hl_i) {{")
        self.emit(d + 1, f"const int hl_c = hl_i * {t} + hl_tid;")
        pos = self._chunk_pos(which, "hl_c")
        self.emit(d + 1, f"const int hl_r = {pos[0]}, hl_q = {pos[1]};",
                  f"const long long hl_gm = {org} + hl_r, hl_gk = (long long)({kt}) * {self.p.bk} + hl_q;",
                  f"{vt} hl_v;")
        self.emit(d + 1, f"hl_v = {self._zero(vt) if vec > 1 else '0'};")
        cond = f"hl_gm < {ext} && hl_gk < {self.K}" + (f" && hl_c < {chunks}" if chunks % t else "")
        self.emit(d + 1, f"if ({cond}) {{")
        if op.direct:
            self.emit(d + 2, f"hl_v = *(const {vt}*){self._gaddr(which, 'hl_gm', 'hl_gk')};")
        else:
            self.emit(d + 2, *_decompose(self.r, group, "hl_gm"), *_decompose(self.r, self.node.k, "hl_gk"),
                      f"hl_v = {self._value(which)};")
        self.emit(d + 1, "}", f"hl_{which}r[hl_i] = hl_v;")
        self.emit(d, "}")

    @staticmethod
    def _zero(vt: str) -> str:
        return {"uint4": "make_uint4(0, 0, 0, 0)", "uint2": "make_uint2(0, 0)", "unsigned int": "0u",
                "float4": "make_float4(0.f, 0.f, 0.f, 0.f)", "float2": "make_float2(0.f, 0.f)",
                "double2": "make_double2(0.0, 0.0)"}[vt]

    def store_regs(self, d: int, which: str, stage: str) -> None:
        """Store this thread's registers of ``which`` into shared buffer ``stage``."""
        chunks, vec, kfast = self._fill_shape(which)
        t = self.p.threads
        base = f"(hl_{which}s + ({stage}) * {self._tile_elems(which)})"
        self.emit(d, "#pragma unroll", f"for (int hl_i = 0; hl_i < {-(-chunks // t)}; ++hl_i) {{")
        self.emit(d + 1, f"const int hl_c = hl_i * {t} + hl_tid;")
        if chunks % t:
            self.emit(d + 1, f"if (hl_c < {chunks}) {{")
        pos = self._chunk_pos(which, "hl_c")
        self.emit(d + 1, f"const int hl_r = {pos[0]}, hl_q = {pos[1]};")
        same = vec == 1 or self.p.mma or (kfast == self._k_major_tile(which))
        if same:     # the vector lies along the tile's rows: one store
            vt = self._vtype(which)
            self.emit(d + 1, f"*({vt}*)({base} + {self.sidx(which, 'hl_r', 'hl_q')}) = hl_{which}r[hl_i];")
        else:        # transpose: the vector's lanes go to consecutive k rows
            for j in range(vec):
                mn, k = ("hl_r", f"hl_q + {j}") if kfast else (f"hl_r + {j}", "hl_q")
                self.emit(d + 1, f"{base}[{self.sidx(which, mn, k)}] = hl_{which}r[hl_i].{_LANES[j]};")
        if chunks % t:
            self.emit(d + 1, "}")
        self.emit(d, "}")

    # ------------------------------------------------------------------ products
    def simt_setup(self) -> None:
        p = self.p
        self.ra = min(p.tm, 16 // self.plan.item)
        self.rb = min(p.tn, 16 // self.plan.item)
        self.emit(1, f"const int hl_tx = hl_tid % {p.bn // p.tn}, hl_ty = hl_tid / {p.bn // p.tn};",
                  f"{self.acc_t} hl_acc[{p.tm}][{p.tn}];",
                  "#pragma unroll", f"for (int i = 0; i < {p.tm}; ++i)", "#pragma unroll",
                  f"  for (int j = 0; j < {p.tn}; ++j) hl_acc[i][j] = 0;")

    def simt_row(self, i: int) -> str:
        """Tile row of the thread's ``i``-th accumulator row."""
        p, ra = self.p, self.ra
        return f"({i // ra} * {p.bm // p.tm} + hl_ty) * {ra} + {i % ra}"

    def simt_col(self, j: int) -> str:
        p, rb = self.p, self.rb
        return f"({j // rb} * {p.bn // p.tn} + hl_tx) * {rb} + {j % rb}"

    def simt_product(self, d: int, stage: str) -> None:
        p = self.p
        at, bt = f"hl_as + ({stage}) * {self._tile_elems('a')}", f"hl_bs + ({stage}) * {self._tile_elems('b')}"
        lda, ldb = self._ld("a"), self._ld("b")
        self.emit(d, "#pragma unroll", f"for (int hl_kk = 0; hl_kk < {p.bk}; ++hl_kk) {{")
        self.emit(d + 1, f"{self.acc_t} hl_a[{p.tm}], hl_b[{p.tn}];")
        for which, n, r, ld, t, pos in (("a", p.tm, self.ra, lda, at, self.simt_row),
                                        ("b", p.tn, self.rb, ldb, bt, self.simt_col)):
            for g in range(n // r):
                src = f"({t})[hl_kk * {ld} + {pos(g * r)}]"
                if r == 1:
                    self.emit(d + 1, f"hl_{which}[{g}] = {src};")
                else:
                    vt = _FLOATV[(self.plan.item, r)]
                    self.emit(d + 1, f"{{ const {vt} hl_w = *(const {vt}*)&{src};",
                              *[f"  hl_{which}[{g * r + j}] = hl_w.{_LANES[j]};" for j in range(r)], "}")
        self.emit(d + 1, "#pragma unroll", f"for (int i = 0; i < {p.tm}; ++i)", "#pragma unroll",
                  f"  for (int j = 0; j < {p.tn}; ++j) hl_acc[i][j] = fma(hl_a[i], hl_b[j], hl_acc[i][j]);")
        self.emit(d, "}")

    def mma_setup(self) -> None:
        p = self.p
        mi, ni = p.wm // 16, p.wn // 8
        self.emit(1, "const int hl_warp = hl_tid / 32, hl_lane = hl_tid % 32;",
                  f"const int hl_wm = hl_warp / {p.bn // p.wn}, hl_wn = hl_warp % {p.bn // p.wn};",
                  f"float hl_acc[{mi}][{ni}][4];", "#pragma unroll", f"for (int i = 0; i < {mi}; ++i)",
                  "#pragma unroll", f"  for (int j = 0; j < {ni}; ++j)", "#pragma unroll",
                  "    for (int c = 0; c < 4; ++c) hl_acc[i][j][c] = 0.f;")

    def mma_product(self, d: int, stage: str) -> None:
        p = self.p
        mi, ni = p.wm // 16, p.wn // 8
        half = "bf16" if self.plan.form.half is dt.bfloat16 else "f16"
        at, bt = f"hl_as + ({stage}) * {self._tile_elems('a')}", f"hl_bs + ({stage}) * {self._tile_elems('b')}"
        lda, ldb = self._ld("a"), self._ld("b")
        self.emit(d, "#pragma unroll", f"for (int hl_ks = 0; hl_ks < {p.bk // 16}; ++hl_ks) {{")
        self.emit(d + 1, f"unsigned hl_fa[{mi}][4], hl_fb[{ni}][2];")
        self.emit(d + 1, "#pragma unroll", f"for (int i = 0; i < {mi}; ++i) {{",
                  f"  const int hl_m = hl_wm * {p.wm} + i * 16;")
        if self.plan.a_k_major:     # [m][k]: rows are m; lane l gives row l % 16 at k + (l / 16) * 8
            self.emit(d + 2, f"hl_ldsm_x4(hl_fa[i], {at} + (hl_m + hl_lane % 16) * {lda} + hl_ks * 16 + "
                             "(hl_lane / 16) * 8);")
        else:                       # [k][m]: rows are k, transposed into the row-major fragment
            self.emit(d + 2, f"hl_ldsm_x4_trans(hl_fa[i], {at} + (hl_ks * 16 + hl_lane % 8 + (hl_lane / 16) * 8) * "
                             f"{lda} + hl_m + ((hl_lane / 8) % 2) * 8);")
        self.emit(d + 1, "}")
        self.emit(d + 1, "#pragma unroll", f"for (int j = 0; j < {ni}; j += 2) {{",
                  f"  const int hl_n = hl_wn * {p.wn} + j * 8;", "  unsigned hl_r4[4];")
        if self.plan.b_k_major:     # [n][k]: rows are n, the fragment's column-major layout as is
            self.emit(d + 2, f"hl_ldsm_x4(hl_r4, {bt} + (hl_n + hl_lane % 8 + (hl_lane / 16) * 8) * {ldb} + "
                             "hl_ks * 16 + ((hl_lane / 8) % 2) * 8);")
        else:                       # [k][n]: rows are k, transposed
            self.emit(d + 2, f"hl_ldsm_x4_trans(hl_r4, {bt} + (hl_ks * 16 + hl_lane % 16) * {ldb} + hl_n + "
                             "(hl_lane / 16) * 8);")
        self.emit(d + 2, "hl_fb[j][0] = hl_r4[0]; hl_fb[j][1] = hl_r4[1];",
                  "hl_fb[j + 1][0] = hl_r4[2]; hl_fb[j + 1][1] = hl_r4[3];")
        self.emit(d + 1, "}")
        self.emit(d + 1, "#pragma unroll", f"for (int i = 0; i < {mi}; ++i)", "#pragma unroll",
                  f"  for (int j = 0; j < {ni}; ++j) hl_mma_16816_{half}(hl_acc[i][j], hl_fa[i], hl_fb[j]);")
        self.emit(d, "}")

    # ------------------------------------------------------------------ stores
    def store_out(self, d: int, row: str, col: str, val: str) -> None:
        """Guarded store of accumulator ``val`` at tile position (``row``, ``col``)."""
        node, r = self.node, self.r
        self.emit(d, f"{{ const long long hl_gm = hl_m0 + {row}, hl_gn = hl_n0 + {col};",
                  f"  if (hl_gm < {self.M} && hl_gn < {self.N}) {{")
        idx = r.expr(r.flat_index(node.out, node.out_index))
        self.emit(d + 2, *_decompose(r, node.m, "hl_gm"), *_decompose(r, node.n, "hl_gn"),
                  f"{r.name(node.out, node.out.name)}[{idx}] = {r.cast(val, self.plan.form.acc, node.out.dtype)};")
        self.emit(d, "  }", "}")

    def simt_store(self) -> None:
        p = self.p
        for i in range(p.tm):
            for j in range(p.tn):
                self.store_out(1, self.simt_row(i), self.simt_col(j), f"hl_acc[{i}][{j}]")

    def mma_store(self) -> None:
        p = self.p
        self.emit(1, "#pragma unroll", f"for (int i = 0; i < {p.wm // 16}; ++i)", "#pragma unroll",
                  f"for (int j = 0; j < {p.wn // 8}; ++j)", "#pragma unroll", "for (int c = 0; c < 4; ++c) {")
        self.store_out(2, f"hl_wm * {p.wm} + i * 16 + hl_lane / 4 + (c / 2) * 8",
                       f"hl_wn * {p.wn} + j * 8 + (hl_lane % 4) * 2 + (c % 2)", "hl_acc[i][j][c]")
        self.emit(1, "}")

    # ------------------------------------------------------------------ kernel
    def body(self) -> list[str]:
        p, pl, r = self.p, self.plan, self.r
        tiles_m, tiles_n = pl.tiles
        g = max(1, min(p.group_m, tiles_m))
        kt_n = -(-self.K // p.bk)
        self.emit(1, f"/* gpu_gemm: batch {self.B}, M {self.M}, N {self.N}, K {self.K}; {dict(p.items())}; "
                     f"{'cp.async ' + str(pl.stages) + ' stages' if pl.async_copy else 'register-staged ' + str(pl.stages)}"
                     f"; A {'direct x' + str(pl.vec_a) if pl.a.direct else 'evaluated'}, "
                     f"B {'direct x' + str(pl.vec_b) if pl.b.direct else 'evaluated'} */",
                  "HL_DYN_SHARED(hl_smem);",
                  f"{self.stype}* hl_as = ({self.stype}*)hl_smem;",
                  f"{self.stype}* hl_bs = hl_as + {pl.stages * self._tile_elems('a')};",
                  "const int hl_tid = threadIdx.x;",
                  f"const long long hl_blk = blockIdx.x, hl_bt = hl_blk / {tiles_m * tiles_n}, "
                  f"hl_t = hl_blk % {tiles_m * tiles_n};",
                  f"const long long hl_grp = hl_t / {g * tiles_n}, hl_first = hl_grp * {g};",
                  f"const long long hl_gsz = {tiles_m} - hl_first < {g} ? {tiles_m} - hl_first : {g};",
                  f"const long long hl_m0 = (hl_first + (hl_t % {g * tiles_n}) % hl_gsz) * {p.bm};",
                  f"const long long hl_n0 = ((hl_t % {g * tiles_n}) / hl_gsz) * {p.bn};")
        self.emit(1, *_decompose(r, self.node.batch, "hl_bt"))
        for which, op in (("a", pl.a), ("b", pl.b)):
            if op.direct:
                self.emit(1, f"const long long hl_{which}base = {r.expr(op.base)};")
        (self.mma_setup if p.mma else self.simt_setup)()
        product = self.mma_product if p.mma else self.simt_product
        if pl.async_copy:
            s = pl.stages
            self.emit(1, "#pragma unroll", f"for (int hl_s = 0; hl_s < {s - 1}; ++hl_s) {{",
                      f"  if (hl_s < {kt_n}) {{")
            self.fill_async(3, "a", "hl_s", "hl_s")
            self.fill_async(3, "b", "hl_s", "hl_s")
            self.emit(1, "  }", "  hl_cp_commit();", "}")
            self.emit(1, f"for (int hl_kt = 0; hl_kt < {kt_n}; ++hl_kt) {{", f"  hl_cp_wait<{s - 2}>();",
                      "  __syncthreads();", f"  {{ const int hl_nk = hl_kt + {s - 1};",
                      f"    if (hl_nk < {kt_n}) {{")
            self.fill_async(3, "a", f"hl_nk % {s}", "hl_nk")
            self.fill_async(3, "b", f"hl_nk % {s}", "hl_nk")
            self.emit(1, "    }", "    hl_cp_commit();", "  }")
            product(2, f"hl_kt % {s}")
            self.emit(1, "}")
        elif pl.stages == 1:
            self.regs_decl("a")
            self.regs_decl("b")
            self.emit(1, f"for (int hl_kt = 0; hl_kt < {kt_n}; ++hl_kt) {{")
            for which in ("a", "b"):
                self.load_regs(2, which, "hl_kt")
                self.store_regs(2, which, "0")
            self.emit(2, "__syncthreads();")
            product(2, "0")
            self.emit(2, "__syncthreads();")
            self.emit(1, "}")
        else:
            self.regs_decl("a")
            self.regs_decl("b")
            for which in ("a", "b"):
                self.load_regs(1, which, "0")
                self.store_regs(1, which, "0")
            self.emit(1, "__syncthreads();", f"for (int hl_kt = 0; hl_kt < {kt_n}; ++hl_kt) {{",
                      f"  if (hl_kt + 1 < {kt_n}) {{")
            self.load_regs(3, "a", "hl_kt + 1")
            self.load_regs(3, "b", "hl_kt + 1")
            self.emit(1, "  }")
            product(2, "hl_kt & 1")
            self.emit(1, f"  if (hl_kt + 1 < {kt_n}) {{")
            self.store_regs(3, "a", "(hl_kt + 1) & 1")
            self.store_regs(3, "b", "(hl_kt + 1) & 1")
            self.emit(1, "  }", "  __syncthreads();", "}")
        (self.mma_store if p.mma else self.simt_store)()
        return self.out


def render_gemm(r, node: MatmulKernel, cc: int | None) -> list[str]:
    """The body lines of MatmulKernel ``node``'s kernel (see the module docstring)."""
    return GemmWriter(r, node, cc).body()


__all__ = ["GEMM_HELPERS", "GemmWriter", "render_gemm"]
