"""Linear algebra: the ``cholesky`` and ``triangular-solve`` opcodes and the LAPACK custom calls
JAX emits for ``jnp.linalg`` on the CPU (``lapack_{s,d,c,z}{potrf,getrf,geqrf,orgqr,ungqr,
syevd,heevd,gesdd,gesvd,trsm}_ffi``), as extern ops calling the same LAPACK/BLAS routines through
scipy (jaxlib's CPU kernels take theirs from scipy too), one matrix of the batch at a time.

Values are logical arrays: the custom calls' column-major layouts only say how XLA stores the
matrix LAPACK sees, which scipy takes care of.
"""

from __future__ import annotations

import re

import numpy as np

from ...dsl.tensor import LapackCall
from .common import dtype_of, unsupported
from .control import _extern_result, _leaf_shapes

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _lapack(prefix: str, name: str):
    from scipy.linalg import blas, lapack
    return getattr(lapack, prefix + name, None) or getattr(blas, prefix + name)


def _work_dtype(d) -> np.dtype:
    """The type LAPACK runs in: the array's own, f32 for 16-bit floats."""
    return np.dtype(np.float32) if d.is_float and d.bits < 32 else d.np


def _batch_shape(a: np.ndarray, core: int) -> tuple[int, ...]:
    return a.shape[:a.ndim - core]


def _per_matrix(fn, arrays, cores, outs_like):
    """Apply ``fn(*matrices) -> tuple`` over the leading batch dims; ``outs_like`` gives each
    output's (core shape, dtype)."""
    batch = _batch_shape(arrays[0], cores[0])
    outs = [np.zeros(batch + tuple(s), d) for s, d in outs_like]
    for idx in np.ndindex(*batch):
        res = fn(*(a[idx] for a in arrays))
        for o, r in zip(outs, res):
            if r is not None:       # None: an output the routine was asked not to compute
                o[idx] = r
    return outs


# ----------------------------------------------------------------------------- HLO opcodes

def lower_cholesky(ctx, instr, operands):
    """``cholesky(a)``, ``lower``: L with a = L L^T (U^T U when not lower) over the batch, from
    that triangle of ``a`` alone; the other triangle is 0 and a matrix that is not positive
    definite gives NaNs: https://openxla.org/xla/operation_semantics#cholesky"""
    (a,) = operands
    _check_square(ctx, instr, a)
    lower = _flag(instr.attr("lower", False))
    wd = _work_dtype(a.dtype)

    def run_cholesky(arrays, run):
        x = np.asarray(arrays[0]).astype(wd)
        potrf = _lapack(_prefix(ctx, instr, wd), "potrf")

        def one(m):
            c, info = potrf(m, lower=int(lower), clean=1)
            return (np.full_like(c, np.nan) if info else c,)
        return tuple(o.astype(a.dtype.np) for o in _per_matrix(one, [x], [2], [(x.shape[-2:], wd)]))
    fn = _compilable(wd, [a], "potrf", (("hlo", True), ("lower", lower)), run_cholesky)
    return _extern_result(ctx, instr, "cholesky", [a], fn, (("lower", lower),))


_TRANSPOSE = {"no_transpose": 0, "transpose": 1, "adjoint": 2}


def lower_triangular_solve(ctx, instr, operands):
    """``triangular-solve(a, b)``: x with op(a) x = b (``left_side``) or x op(a) = b, op by
    ``transpose_a`` (NO_TRANSPOSE, TRANSPOSE, ADJOINT), reading only the ``lower`` or upper
    triangle of a, its diagonal taken as ones with ``unit_diagonal``; batched over leading dims:
    https://openxla.org/xla/operation_semantics#triangularsolve"""
    a, b = operands
    _check_square(ctx, instr, a)
    left = _flag(instr.attr("left_side", False))
    lower = _flag(instr.attr("lower", False))
    unit = _flag(instr.attr("unit_diagonal", False))
    trans = _TRANSPOSE.get(str(instr.attr("transpose_a", "NO_TRANSPOSE")).lower())
    if trans is None:
        raise unsupported(ctx, instr, f"transpose_a={instr.attr('transpose_a')!r}")
    k = a.shape[-1]
    if len(b.shape) != len(a.shape) or b.shape[:-2] != a.shape[:-2] or \
            (b.shape[-2] if left else b.shape[-1]) != k:
        raise unsupported(ctx, instr, f"a {list(a.shape)} does not fit b {list(b.shape)} "
                                      f"(left_side={left})")
    return _trsm(ctx, instr, a, b, left, lower, trans, unit)


def _trsm(ctx, instr, a, b, left: bool, lower: bool, trans: int, unit: bool):
    wd = _work_dtype(b.dtype)

    def run_trsm(arrays, run):
        x, y = (np.asarray(v).astype(wd) for v in arrays)
        trsm = _lapack(_prefix(ctx, instr, wd), "trsm")

        def one(m, rhs):
            if rhs.size == 0:
                return (rhs,)
            return (trsm(1.0, m, rhs, side=0 if left else 1, lower=int(lower), trans_a=trans,
                         diag=int(unit)),)
        return tuple(o.astype(b.dtype.np) for o in _per_matrix(one, [x, y], [2, 2], [(y.shape[-2:], wd)]))
    attrs = (("left", left), ("lower", lower), ("trans", trans), ("unit", unit))
    fn = _compilable(wd, [a, b], "trsm", attrs, run_trsm)
    return _extern_result(ctx, instr, "triangular-solve", [a, b], fn, attrs)


def _compilable(wd, arrays, routine: str, opts: tuple, run):
    """``run`` as a ``LapackCall`` a compiling runtime may call from C, when every array is
    already in LAPACK's real type (float32/float64); else ``run`` itself (host only)."""
    p = _PREFIX.get(np.dtype(wd).name)
    if p not in ("s", "d") or any(t.dtype.np != np.dtype(wd) for t in arrays):
        return run
    return LapackCall(routine, p, tuple(sorted(opts)), run)


def _flag(v) -> bool:
    return v is True or str(v).lower() == "true"


def _check_square(ctx, instr, a) -> None:
    if len(a.shape) < 2 or a.shape[-1] != a.shape[-2]:
        raise unsupported(ctx, instr, f"needs square matrices [..., n, n], got {list(a.shape)}")


def _prefix(ctx, instr, wd: np.dtype) -> str:
    p = _PREFIX.get(np.dtype(wd).name)
    if p is None:
        raise unsupported(ctx, instr, f"no LAPACK routine for {np.dtype(wd).name}")
    return p


# ----------------------------------------------------------------------------- LAPACK calls

_TARGET = re.compile(r"lapack_([sdcz])(potrf|getrf|geqrf|orgqr|ungqr|syevd|heevd|gesdd|gesvd|trsm)_ffi")


#: the LAPACK character options JAX passes (as ASCII codes) and the values each may take
_CHAR_OPTIONS = {"side": "LR", "uplo": "LU", "trans_x": "NTC", "diag": "NU"}
#: ``mode`` by routine: which singular vectors (gesdd/gesvd), eigenvectors or not (syevd/heevd)
_MODES = {"gesdd": "ASON", "gesvd": "ASON", "syevd": "VN", "heevd": "VN"}
_ENTRY = re.compile(r"\s*(\w+)\s*=\s*(-?\d+)\s*(?::\s*[su]i\d+\s*)?")


def backend_config(instr) -> dict[str, int] | None:
    """The FFI attributes of a custom call: ``{uplo = 76 : ui8}`` (HLO text) or a dict
    (StableHLO's ``mhlo.backend_config``); None when an entry is not ``name = integer``."""
    v = instr.attr("backend_config")
    if isinstance(v, dict):
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v.values()):
            return None
        return {k: int(x) for k, x in v.items()}
    body = (v or "").strip()
    body = body[1:-1] if body.startswith("{") and body.endswith("}") else body
    out = {}
    for part in filter(str.strip, body.split(",")):
        m = _ENTRY.fullmatch(part)
        if m is None:
            return None
        out[m[1]] = int(m[2])
    return out


def _check_options(ctx, instr, routine, cfg) -> None:
    """Every character option of a LAPACK call is one of those LAPACK defines (XLA passes them
    through to LAPACK, which may crash on others)."""
    options = {**_CHAR_OPTIONS, **({"mode": _MODES[routine]} if routine in _MODES else {})}
    for key, allowed in options.items():
        if key in cfg and not (0 <= cfg[key] < 128 and chr(cfg[key]) in allowed):
            raise unsupported(ctx, instr, f"backend_config {key} = {cfg[key]} is not one of "
                                          f"{', '.join(f'{ord(c)} ({c!r})' for c in allowed)}")


def is_lapack_target(target: str) -> bool:
    return _TARGET.fullmatch(target) is not None


def lower_lapack(ctx, instr, operands):
    """A ``lapack_*_ffi`` custom call of JAX's CPU backend, through scipy's LAPACK: potrf
    (Cholesky), getrf (LU, 1-based pivots), geqrf + orgqr/ungqr (QR), syevd/heevd (eigh),
    gesdd/gesvd (SVD) and BLAS trsm (triangular solve), with their ``info`` outputs."""
    target = instr.attr("custom_call_target")
    prefix, routine = _TARGET.fullmatch(target).groups()
    cfg = backend_config(instr)
    if cfg is None:
        raise unsupported(ctx, instr, f"backend_config {instr.attr('backend_config')!r} is not a list of "
                                      "'name = integer' entries")
    _check_options(ctx, instr, routine, cfg)
    leaves = _leaf_shapes(instr.shape)
    outs = [(tuple(s.dims), dtype_of(ctx, instr, s)) for s in leaves]
    _check_lapack(ctx, instr, prefix, routine, cfg, operands, outs)
    if routine == "trsm":
        a, b = operands
        return _trsm(ctx, instr, a, b, cfg.get("side", 76) == 76, cfg.get("uplo", 76) == 76,
                     {78: 0, 84: 1, 67: 2}.get(cfg.get("trans_x", 78), 0), cfg.get("diag", 78) == 85)
    fn = _LAPACK_CALLS[routine]
    cores = [2 if len(t.shape) >= 2 and k == 0 else 1 for k, t in enumerate(operands)]
    nb = len(operands[0].shape) - 2

    def run_lapack(arrays, run):
        xs = [np.asarray(x) for x in arrays]
        like = [(shape[nb:], d.np) for shape, d in outs]
        return tuple(_per_matrix(lambda *m: fn(prefix, cfg, *m), xs, cores, like))
    if routine in ("getrf", "potrf", "syevd", "gesdd") and prefix in "sd":
        opts = {"potrf": (("hlo", False), ("lower", cfg.get("uplo", 76) == 76)),
                "syevd": (("lower", cfg.get("uplo", 76) == 76), ("vectors", cfg.get("mode", 86) == 86)),
                "gesdd": (("mode", cfg.get("mode", 65)),)}.get(routine, ())
        run_lapack = LapackCall(routine, prefix, opts, run_lapack)
    return _extern_result(ctx, instr, f"lapack-{routine}", list(operands), run_lapack,
                          (("target", target), ("config", tuple(sorted(cfg.items())))))


def _lapack_shapes(routine, cfg, shapes) -> tuple[int, list[tuple[int, ...]]] | None:
    """(operand count, the result shapes) a LAPACK routine gives for operand ``shapes`` (the
    first a [..., m, n] matrix), or None when they do not fit it."""
    a = shapes[0]
    if len(a) < 2:
        return None
    batch, (m, n) = a[:-2], a[-2:]
    k = min(m, n)
    if routine == "trsm":
        if len(shapes) != 2 or m != n or len(shapes[1]) != len(a) or shapes[1][:-2] != batch:
            return None
        b = shapes[1]
        return (2, [b]) if (b[-2] if cfg.get("side", 76) == 76 else b[-1]) == m else None
    if routine in ("potrf", "syevd", "heevd") and m != n:
        return None
    if routine in ("orgqr", "ungqr"):
        ok = len(shapes) == 2 and shapes[1][:-1] == batch and len(shapes[1]) == len(batch) + 1 and \
            shapes[1][-1] <= n <= m
        return (2, [a]) if ok else None
    mode = cfg.get("mode", 65 if routine in ("gesdd", "gesvd") else 86)
    if mode not in ({65, 83, 78} if routine in ("gesdd", "gesvd") else {86, 78}):
        return None
    full = {65: (m, n), 83: (k, k)}.get(mode, (0, 0))
    want = {"potrf": [a, batch], "getrf": [a, batch + (k,), batch], "geqrf": [a, batch + (k,)],
            "syevd": [a, batch + (n,), batch], "heevd": [a, batch + (n,), batch],
            "gesdd": [a, batch + (k,), batch + (m, full[0]), batch + (full[1], n), batch]}
    want["gesvd"] = want["gesdd"]
    return 1, want[routine]


def _check_lapack(ctx, instr, prefix, routine, cfg, operands, outs) -> None:
    shapes = [t.shape for t in operands]
    fit = _lapack_shapes(routine, cfg, shapes) if shapes else None
    declared = [s for s, _ in outs]
    vectors_skipped = routine in ("gesdd", "gesvd") and cfg.get("mode", 65) == 78
    if fit is not None and vectors_skipped:   # no u/vt wanted: any shapes for them
        fit = (fit[0], [w if k not in (2, 3) else declared[k] for k, w in enumerate(fit[1])]
               if len(declared) == 5 else fit[1])
    if fit is None or fit[0] != len(operands) or fit[1] != declared:
        raise unsupported(ctx, instr, f"{instr.attr('custom_call_target')} does not fit operands "
                                      f"{[list(s) for s in shapes]} and results {[list(s) for s in declared]}")
    want = {"s": "float32", "d": "float64", "c": "complex64", "z": "complex128"}[prefix]
    if any(t.dtype.name != want for t in operands[:1]) or (routine == "trsm" and operands[1].dtype.name != want):
        raise unsupported(ctx, instr, f"{instr.attr('custom_call_target')} takes {want} matrices, got "
                                      f"{[t.dtype.name for t in operands]}")


def _potrf(p, cfg, a):
    c, info = _lapack(p, "potrf")(a, lower=int(cfg.get("uplo", 76) == 76), clean=0)
    return c, info


def _getrf(p, cfg, a):
    lu, piv, info = _lapack(p, "getrf")(a)
    return lu, piv + 1, info


def _geqrf(p, cfg, a):
    qr, tau, _work, _info = _lapack(p, "geqrf")(a)
    return qr, tau


def _orgqr(p, cfg, a, tau):
    name = "ungqr" if p in "cz" else "orgqr"
    q, _work, _info = _lapack(p, name)(a, tau)
    return (q,)


def _syevd(p, cfg, a):
    name = "heevd" if p in "cz" else "syevd"
    vectors = cfg.get("mode", 86) == 86
    work = np.array(a, order="F")     # LAPACK's own buffer: without vectors its output is what LAPACK left
    w, v, info = _lapack(p, name)(work, compute_v=int(vectors), lower=int(cfg.get("uplo", 76) == 76),
                                  overwrite_a=1)
    return (v if vectors else work), w, info


def _gesvd_like(name):
    def run(p, cfg, a):
        mode = cfg.get("mode", 65)
        full, vectors = mode == 65, mode != 78
        work = np.array(a, order="F")     # output 0 is the input as LAPACK leaves it (JAX's FFI returns it)
        u, s, vt, info = _lapack(p, name)(work, compute_uv=int(vectors), full_matrices=int(full), overwrite_a=1)
        return work, s, (u if vectors else None), (vt if vectors else None), info
    return run


_LAPACK_CALLS = {"potrf": _potrf, "getrf": _getrf, "geqrf": _geqrf, "orgqr": _orgqr, "ungqr": _orgqr,
                 "syevd": _syevd, "heevd": _syevd, "gesdd": _gesvd_like("gesdd"),
                 "gesvd": _gesvd_like("gesvd")}

HANDLERS = {"cholesky": lower_cholesky, "triangular-solve": lower_triangular_solve}

__all__ = ["HANDLERS", "backend_config", "is_lapack_target", "lower_lapack"]
