"""The transposing pack helpers themselves (runtime/codegen/pack_c.py), called from C through
ctypes on random rows: ``dst[k * R + r]`` is word ``k`` of row ``r`` (widened where the kind
says so) or 0 where row ``r``'s flag is clear, for every K including tails, compiled with
AVX-512 (16 x 16 blocks), with AVX2 only (8 x 8 blocks) and with neither (one word at a time)."""

from __future__ import annotations

import ctypes
import platform

import ml_dtypes
import numpy as np
import pytest
from hlotune.runtime.codegen.c import helpers
from hlotune.runtime.codegen.pack_c import pack_helper
from hlotune.runtime.cpu import DEFAULT_FLAGS, CCompiler, compile_c
from hypothesis import given, settings
from hypothesis import strategies as st

X86 = platform.machine() in ("x86_64", "AMD64")
#: kind: (source dtype, what a word holds)
KINDS = {"w32": (np.uint32, None), "f16f32": (np.float16, np.float32), "bf16f32": (ml_dtypes.bfloat16, np.float32),
         "s8i32": (np.int8, np.int32), "u8i32": (np.uint8, np.int32), "s8f32": (np.int8, np.float32),
         "u8f32": (np.uint8, np.float32)}
ROWS = (8, 16, 24, 40, 64)
ISAS = {"native": (), "avx2": ("-mno-avx512f",), "scalar": ("-mno-avx512f", "-mno-avx2")}


@pytest.fixture(scope="module", params=list(ISAS))
def lib(request):
    if request.param != "native" and not X86:
        pytest.skip("the AVX-512 and AVX2 paths exist on x86 only")
    src = [helpers()]
    for kind in KINDS:
        for rows in ROWS:
            src.append(pack_helper(kind, rows))
            src.append(f"void w_{kind}_{rows}(hl_pack_u32* d, const void* const* r, const uint8_t* ok, int64_t n)"
                       f" {{ hl_pack_t_{kind}_{rows}(d, r, ok, n); }}\n")
    return ctypes.CDLL(str(compile_c("".join(src), CCompiler(flags=(*DEFAULT_FLAGS, *ISAS[request.param])))))


def _source(rng, kind, rows, n):
    src, _ = KINDS[kind]
    shape = (rows + 3, n + 5)          # rows taken from a larger array, in a random order
    if np.dtype(src).kind in "iu" and kind != "w32":
        info = np.iinfo(src)
        return rng.integers(info.min, info.max + 1, shape).astype(src)
    if kind == "w32":
        return rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)
    return rng.standard_normal(shape).astype(src)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(list(KINDS)), rows=st.sampled_from(ROWS), n=st.integers(0, 41),
       seed=st.integers(0, 2 ** 16))
def test_the_helper_transposes_every_row_and_k_tail_exactly(lib, kind, rows, n, seed):
    rng = np.random.default_rng(seed)
    a = _source(rng, kind, rows, n)
    order = rng.permutation(a.shape[0])[:rows]
    ok = (rng.random(rows) < 0.8).astype(np.uint8)
    ptrs = (ctypes.c_void_p * rows)(*[a.ctypes.data + int(i) * a.strides[0] for i in order])
    dst = np.full(max(n, 1) * rows, 0xDEADBEEF, np.uint32)
    getattr(lib, f"w_{kind}_{rows}")(dst.ctypes.data_as(ctypes.c_void_p), ptrs,
                                     ok.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(n))
    word = KINDS[kind][1]
    rows_k = a[order, :n]
    want = (rows_k if word is None else rows_k.astype(word)).view(np.uint32) * ok[:, None]
    np.testing.assert_array_equal(dst[:n * rows].reshape(n, rows), want.T, err_msg=f"{kind} rows={rows} n={n}")
    if n == 0:
        assert dst[0] == 0xDEADBEEF      # nothing written past the panel
