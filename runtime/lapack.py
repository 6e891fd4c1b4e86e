"""LAPACK and BLAS calls compiled into C for the cpu target (``dsl.tensor.LapackCall``).

The kernel calls the routines scipy ships (``scipy.linalg.cython_blas`` / ``cython_lapack``:
the same OpenBLAS that numpy and XLA:CPU's own LAPACK calls use) through function pointers
handed to the library once it is loaded (``hl_lapack_bind``), so a solve costs one C call and no
copies into Fortran order made by Python. Arrays stay row-major; a row-major matrix read as
column-major is its transpose, so:

- ``trsm`` solves the transposed system in place on the output, a copy of b: ``op(a) x = b`` is
  ``x^T op(a)^T = b^T``, the side and the triangle swap and the transposition stays;
- ``potrf`` factors a copy with the triangle swapped: the upper factor of a^T read row-major is
  the lower factor of a;
- ``getrf`` has no such identity (the LU of a^T is not that of a): the matrix is transposed into
  a column-major scratch and back, O(mn) next to the O(mn min(m, n)) factorization; so are
  ``syevd`` (eigh: LAPACK reads the triangle JAX names, as on the host) and ``gesdd`` (SVD), whose
  vectors come back transposed, with workspaces asked of the routine once per call.

Batches (leading dims) are one call per matrix. Complex and 16-bit types stay on the host path.
"""

from __future__ import annotations

import ctypes
import logging
import math
from functools import cache

from ..dsl.tensor import ExternOp, LapackCall
from ..schedules.loops import Buffer, LoweredFunc, Seq, extern_args, extern_name
from .build import Kernel
from .codegen.c import CRenderer
from .cpu import Library, compile_c
from .targets import Target

log = logging.getLogger(__name__)

#: the routines a kernel may call, by LapackCall.routine (BLAS for trsm, LAPACK for the others)
ROUTINES = {"trsm": "blas", "getrf": "lapack", "potrf": "lapack", "syevd": "lapack", "gesdd": "lapack"}


@cache
def routine_pointer(name: str) -> int:
    """The address of scipy's ``name`` (say ``strsm``): its Cython export, a PyCapsule."""
    from scipy.linalg import cython_blas, cython_lapack
    mod = cython_blas if name[1:] in ("trsm",) else cython_lapack
    cap = mod.__pyx_capi__[name]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))


def _trsm(spec: LapackCall, a: Buffer, b: Buffer, x: Buffer, n: dict, t: str) -> list[str]:
    k, rows, cols = a.shape[-1], b.shape[-2], b.shape[-1]
    side = "R" if spec.opt("left") else "L"
    uplo = "U" if spec.opt("lower") else "L"
    trans = "N" if spec.opt("trans", 0) == 0 else "T"     # real types: the adjoint is the transpose
    diag = "U" if spec.opt("unit") else "N"
    return [_copy(n[x], n[b], x.size, t),
            f"  if ({rows * cols} == 0) return 0;",
            f"  char side = '{side}', uplo = '{uplo}', tr = '{trans}', diag = '{diag}';",
            f"  int m = {cols}, nn = {rows}, lda = {max(k, 1)}, ldb = {max(cols, 1)};",
            f"  {t} one = 1;",
            f"  for (long long g = 0; g < {_batch(a)}LL; ++g)",
            f"    hl_fn0(&side, &uplo, &tr, &diag, &m, &nn, &one, ({t}*){n[a]} + g * {k * k}LL, &lda,",
            f"           {n[x]} + g * {rows * cols}LL, &ldb);",
            "  return 0;"]


def _copy(dst: str, src: str, size: int, t: str) -> str:
    """C copying ``src`` into ``dst`` unless it is the same array (a donated input)."""
    return f"  if ((const void*){dst} != (const void*){src}) memcpy({dst}, {src}, {max(size, 1)} * sizeof({t}));"


def _potrf(spec: LapackCall, a: Buffer, outs: list[Buffer], n: dict, t: str) -> list[str]:
    f, size = outs[0], a.shape[-1]
    lower, hlo = spec.opt("lower"), spec.opt("hlo")
    lines = [_copy(n[f], n[a], f.size, t),
             f"  char uplo = '{'U' if lower else 'L'}';", f"  int nn = {size}, lda = {max(size, 1)}, info = 0;",
             f"  for (long long g = 0; g < {_batch(a)}LL; ++g) {{",
             f"    {t}* m = {n[f]} + g * {size * size}LL;",
             "    if (nn > 0) hl_fn0(&uplo, &nn, m, &lda, &info);"]
    if hlo:   # the cholesky op: the other triangle 0, all NaN when not positive definite
        keep = "j <= i" if lower else "j >= i"
        lines += ["    for (int i = 0; i < nn; ++i) for (int j = 0; j < nn; ++j)",
                  f"      if (info != 0) m[(long long)i * nn + j] = ({t})NAN;",
                  f"      else if (!({keep})) m[(long long)i * nn + j] = 0;"]
    else:
        lines.append(f"    {n[outs[1]]}[g] = info;")
    return lines + ["  }", "  return 0;"]


def _getrf(a: Buffer, outs: list[Buffer], n: dict, t: str) -> list[str]:
    lu, piv, info = outs
    rows, cols = a.shape[-2], a.shape[-1]
    k = min(rows, cols)
    return [f"  int m = {rows}, nn = {cols}, lda = {max(rows, 1)}, st = 0;",
            f"  {t}* w = ({t}*)hl_alloc({max(rows * cols, 1)} * sizeof({t}));",
            "  if (!w) return 1;",
            f"  for (long long g = 0; g < {_batch(a)}LL; ++g) {{",
            f"    const {t}* src = {n[a]} + g * {rows * cols}LL;",
            f"    {t}* dst = {n[lu]} + g * {rows * cols}LL;",
            "    hl_transpose(src, w, m, nn);",
            f"    if (m > 0 && nn > 0) hl_fn0(&m, &nn, w, &lda, {n[piv]} + g * {k}LL, &st); else st = 0;",
            f"    {n[info]}[g] = st;",
            "    hl_transpose(w, dst, nn, m);",
            "  }", "  free(w);", "  return 0;"]


def _workspace(t: str, call: str) -> list[str]:
    """C asking the routine for its workspace (``lwork = -1``; ``call`` names ``work``, ``lwork``
    and, for syevd, ``iwork``/``liwork``) then allocating it; ``hl_ok`` false when that failed."""
    return [f"  {t} wq = 0; int lwork = -1, liwork = -1, iwq = 0, info = 0;",
            f"  {{ {t}* work = &wq; int* iwork = &iwq; {call} }}",
            "  lwork = (int)wq > 1 ? (int)wq : 1; liwork = iwq > 1 ? iwq : 1;",
            f"  {t}* work = ({t}*)hl_alloc((size_t)lwork * sizeof({t}));"]


def _syevd(spec: LapackCall, a: Buffer, outs: list[Buffer], n: dict, t: str) -> list[str]:
    """eigh of each symmetric matrix: the logical matrix transposed into a column-major scratch
    (the same triangle LAPACK reads as for the host's Fortran-order copy), eigenvectors (or what
    LAPACK left of the scratch) transposed back."""
    v, w, info = outs
    size = a.shape[-1]
    call = (f"hl_fn0(&jobz, &uplo, &nn, m, &lda, {n[w]}, work, &lwork, iwork, &liwork, &info);")
    return [f"  char jobz = '{'V' if spec.opt('vectors') else 'N'}', uplo = '{'L' if spec.opt('lower') else 'U'}';",
            f"  int nn = {size}, lda = {max(size, 1)};",
            f"  {t}* m = ({t}*)hl_alloc({max(size * size, 1)} * sizeof({t}));",
            "  if (!m) return 1;",
            *_workspace(t, call),
            "  int* iwork = (int*)hl_alloc((size_t)liwork * sizeof(int));",
            "  if (!work || !iwork) { free(m); free(work); free(iwork); return 1; }",
            f"  for (long long g = 0; g < {_batch(a)}LL; ++g) {{",
            f"    hl_transpose({n[a]} + g * {size * size}LL, m, nn, nn);",
            (f"    info = 0; if (nn > 0) hl_fn0(&jobz, &uplo, &nn, m, &lda, {n[w]} + g * {size}LL, work, &lwork, "
             "iwork, &liwork, &info);"),
            f"    {n[info]}[g] = info;",
            f"    hl_transpose(m, {n[v]} + g * {size * size}LL, nn, nn);",
            "  }", "  free(m); free(work); free(iwork);", "  return 0;"]


def _gesdd(spec: LapackCall, a: Buffer, outs: list[Buffer], n: dict, t: str) -> list[str]:
    """SVD of each matrix (``mode`` 65 all, 83 the thin vectors, 78 none): column-major scratch
    for a, u and vt, transposed back; without vectors u and vt are zeros."""
    left, s, u, vt, info = outs
    rows, cols = a.shape[-2], a.shape[-1]
    k = min(rows, cols)
    mode = spec.opt("mode", 65)
    ucols, vrows = {65: (rows, cols), 83: (k, k)}.get(mode, (1, 1))
    vec = mode != 78
    call = ("hl_fn0(&jobz, &mm, &nn, m, &lda, " + n[s] + ", uw, &ldu, vw, &ldvt, work, &lwork, iwork, &info);")
    lines = [f"  char jobz = '{ {65: 'A', 83: 'S'}.get(mode, 'N') }';",
             (f"  int mm = {rows}, nn = {cols}, lda = {max(rows, 1)}, ldu = {max(rows, 1) if vec else 1}, "
              f"ldvt = {max(vrows, 1) if vec else 1};"),
             f"  {t}* m = ({t}*)hl_alloc({max(rows * cols, 1)} * sizeof({t}));",
             f"  {t}* uw = ({t}*)hl_alloc({max(rows * ucols, 1) if vec else 1} * sizeof({t}));",
             f"  {t}* vw = ({t}*)hl_alloc({max(vrows * cols, 1) if vec else 1} * sizeof({t}));",
             f"  int* iwork = (int*)hl_alloc({max(8 * k, 1)} * sizeof(int));",
             "  if (!m || !uw || !vw || !iwork) { free(m); free(uw); free(vw); free(iwork); return 1; }",
             *_workspace(t, call),
             "  if (!work) { free(m); free(uw); free(vw); free(iwork); return 1; }"]
    if not vec:
        lines += [f"  memset({n[u]}, 0, {max(u.size, 1)} * sizeof({t}));",
                  f"  memset({n[vt]}, 0, {max(vt.size, 1)} * sizeof({t}));"]
    lines += [f"  for (long long g = 0; g < {_batch(a)}LL; ++g) {{",
              f"    hl_transpose({n[a]} + g * {rows * cols}LL, m, mm, nn);",
              f"    info = 0; {call.replace(n[s] + ',', n[s] + f' + g * {k}LL,')}",
              f"    {n[info]}[g] = info;",
              f"    hl_transpose(m, {n[left]} + g * {rows * cols}LL, nn, mm);"]
    if vec:
        lines += [f"    hl_transpose(uw, {n[u]} + g * {rows * ucols}LL, {ucols}, mm);",
                  f"    hl_transpose(vw, {n[vt]} + g * {vrows * cols}LL, nn, {vrows});"]
    return lines + ["  }", "  free(m); free(uw); free(vw); free(iwork); free(work);", "  return 0;"]


def _transpose(t: str) -> str:
    """C of ``hl_transpose(src, dst, rows, cols)``: dst[j][i] = src[i][j] for a row-major
    rows x cols src, through a 16x16 tile read and written along rows (3.5 us for 128x128
    float32 against 5 us for a plain tiled loop and 10 us for none, AMD EPYC)."""
    return "\n".join([
        f"static void hl_transpose(const {t}* restrict src, {t}* restrict dst, int rows, int cols) {{",
        f"  {t} tile[16][16];",
        "  for (int i0 = 0; i0 < rows; i0 += 16) for (int j0 = 0; j0 < cols; j0 += 16) {",
        "    int ni = rows - i0 < 16 ? rows - i0 : 16, nj = cols - j0 < 16 ? cols - j0 : 16;",
        "    if (ni == 16 && nj == 16) {",
        "      for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) tile[j][i] = src[(long long)(i0 + i) * cols + j0 + j];",
        "      for (int j = 0; j < 16; ++j) for (int i = 0; i < 16; ++i) dst[(long long)(j0 + j) * rows + i0 + i] = tile[j][i];",
        "    } else {",
        "      for (int j = 0; j < nj; ++j) for (int i = 0; i < ni; ++i)",
        "        dst[(long long)(j0 + j) * rows + i0 + i] = src[(long long)(i0 + i) * cols + j0 + j];",
        "    }",
        "  }", "}"])


def _batch(a: Buffer) -> int:
    return math.prod(a.shape[:-2])


def _prototype(routine: str, t: str) -> str:
    """The C type of scipy's Cython export of ``routine`` (Fortran conventions: every
    argument by pointer, no hidden string lengths)."""
    return {"trsm": f"void (*)(char*, char*, char*, char*, int*, int*, {t}*, {t}*, int*, {t}*, int*)",
            "potrf": f"void (*)(char*, int*, {t}*, int*, int*)",
            "getrf": f"void (*)(int*, int*, {t}*, int*, int*, int*)",
            "syevd": f"void (*)(char*, char*, int*, {t}*, int*, {t}*, {t}*, int*, int*, int*, int*)",
            "gesdd": f"void (*)(char*, int*, int*, {t}*, int*, {t}*, {t}*, int*, {t}*, int*, {t}*, int*, int*, "
                     "int*)"}[routine]


def lapack_source(op: ExternOp, target: Target) -> tuple[LoweredFunc, str]:
    """The lowered signature and the C source of extern op ``op`` (its ``fn`` a LapackCall)."""
    spec: LapackCall = op.fn
    name = extern_name(op)
    ins, outs = extern_args(op)
    fn = LoweredFunc(name, tuple(ins + outs), len(ins), Seq(()))
    r = CRenderer(target.hardware)
    n = {b: r.name(b, b.name) for b in ins + outs}
    t = "float" if spec.prefix == "s" else "double"
    if spec.routine == "trsm":
        body = _trsm(spec, ins[0], ins[1], outs[0], n, t)
    elif spec.routine == "potrf":
        body = _potrf(spec, ins[0], outs, n, t)
    elif spec.routine == "syevd":
        body = _syevd(spec, ins[0], outs, n, t)
    elif spec.routine == "gesdd":
        body = _gesdd(spec, ins[0], outs, n, t)
    else:
        body = _getrf(ins[0], outs, n, t)
    typedef = _prototype(spec.routine, t).replace("(*)", "(*hl_fn_t)")
    head = [f"typedef {typedef};", "static hl_fn_t hl_fn0;", *([_transpose(t)] if spec.routine != "trsm" and
                                                               spec.routine != "potrf" else []),
            "void hl_lapack_bind(void** fns) { hl_fn0 = (hl_fn_t)fns[0]; }"]
    src = "\n".join([r.preamble(fn), *head, r.signature(fn) + " {", *body, "}", r.postamble(fn)])
    return fn, src


class LapackKernel(Kernel):
    """A compiled kernel calling scipy's LAPACK through pointers bound when it is loaded (so it
    runs only in a Python process with scipy: an exported library cannot hold it)."""

    def __init__(self, fn: LoweredFunc, source: str, lib: Library, target: Target, routine: str):
        super().__init__(fn, source, lib, target)
        self.routine = routine
        self.in_place = {0: 1} if routine[1:] == "trsm" else {0: 0}   # x from b, the factors from a
        bind = lib.lib.hl_lapack_bind
        bind.argtypes, bind.restype = [ctypes.POINTER(ctypes.c_void_p)], None
        bind((ctypes.c_void_p * 1)(routine_pointer(routine)))


def build_lapack(op: ExternOp, target: Target) -> LapackKernel | None:
    """A kernel running ``op`` (a LapackCall extern op) through scipy's LAPACK, or None when
    its routine or type has no compiled form here (then it runs on the host)."""
    spec = op.fn
    if not isinstance(spec, LapackCall) or spec.routine not in ROUTINES or spec.prefix not in ("s", "d"):
        return None
    if spec.routine in ("syevd", "gesdd") and 0 in op.inputs[0].shape[-2:]:
        return None      # an empty matrix: LAPACK returns at once and leaves u/vt unset
    fn, src = lapack_source(op, target)
    log.debug("%s '%s': compiled call of %s%s", op.kind, op.name, spec.prefix, spec.routine)
    return LapackKernel(fn, src, Library(compile_c(src, target.compiler)), target, spec.prefix + spec.routine)


__all__ = ["LapackKernel", "build_lapack", "lapack_source", "routine_pointer"]
