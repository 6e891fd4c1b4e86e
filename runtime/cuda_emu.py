"""Run generated CUDA programs on the CPU, for tests on machines without a GPU.

The same source that nvcc compiles is compiled by the host C++ compiler with a header that
gives CUDA's built-ins their documented meaning: every block of a launch runs in turn, each of
its threads a host thread; ``__syncthreads`` is a barrier of the block's threads; ``__shared__``
arrays (and the dynamic shared buffer, filled with garbage bytes before each block) are one copy
for the block. The tensor-core and copy helpers of runtime/codegen/gpu_gemm.py are emulated per
warp from the PTX ISA's definitions: ``ldmatrix`` (x4, ``.trans``) hands each lane the 16-bit
pairs of the documented fragment layout, ``mma.m16n8k16`` rebuilds A (16x16), B (16x8) and C
from the 32 lanes' fragments, and ``cp.async`` copies are queued per thread and performed only
when a ``cp.async.wait_group`` covers their group (a missing wait reads stale shared memory).

It checks the indexing, guards, pipelining and fragment bookkeeping of generated kernels, not
their speed, and not the hardware itself: a kernel that passes here still needs one run on a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError
from .cachedir import cache_dir
from .codegen.gpu import Program
from .cuda import launch_plans

EMU_HEADER = r"""
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas(n)
#define HL_EMU_SMEM (256 * 1024)
#define HL_DYN_SHARED(name) unsigned char* name = hl_emu_smem
struct hl_dim3 { unsigned x, y, z; };
inline thread_local hl_dim3 threadIdx, blockIdx;
inline hl_dim3 blockDim, gridDim;
alignas(128) inline unsigned char hl_emu_smem[HL_EMU_SMEM];
struct hl_warp {
  std::unique_ptr<std::barrier<>> bar;
  const void* addr[32];
  unsigned a[32][4], b[32][2];
};
inline std::barrier<>* hl_block_bar;
inline thread_local hl_warp* hl_w;
inline thread_local int hl_lane_id;
inline void __syncthreads() { hl_block_bar->arrive_and_wait(); }
typedef _Float16 __half;
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
inline double2 make_double2(double a, double b) { return {a, b}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
template <class T, class U> inline T hl_bits(U u) { static_assert(sizeof(T) == sizeof(U)); T t; std::memcpy(&t, &u, sizeof t); return t; }
inline float __half2float(__half h) { return (float)h; }
inline __half __float2half_rn(float f) { return (__half)f; }
inline unsigned short __half_as_ushort(__half h) { return hl_bits<unsigned short>(h); }
inline __half __ushort_as_half(unsigned short u) { return hl_bits<__half>(u); }
inline int __float_as_int(float x) { return hl_bits<int>(x); }
inline unsigned __float_as_uint(float x) { return hl_bits<unsigned>(x); }
inline float __int_as_float(int x) { return hl_bits<float>(x); }
inline float __uint_as_float(unsigned x) { return hl_bits<float>(x); }
inline long long __double_as_longlong(double x) { return hl_bits<long long>(x); }
inline double __longlong_as_double(long long x) { return hl_bits<double>(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline float __fmul_rn(float a, float b) { volatile float p = a * b; return p; }
inline double __dmul_rn(double a, double b) { volatile double p = a * b; return p; }
inline double __dadd_rn(double a, double b) { volatile double p = a + b; return p; }
using std::fma; using std::min; using std::max; using std::isinf; using std::isnan; using std::isfinite;
using std::signbit;
/* cp.async: queued per thread, performed when a wait_group covers the group */
struct hl_cp { void* dst; const void* src; int bytes, valid; };
inline thread_local std::vector<hl_cp> hl_cps;
inline thread_local std::vector<size_t> hl_groups;
inline thread_local size_t hl_cps_done;
inline void hl_cp_async(void* dst, const void* src, int bytes, int valid) { hl_cps.push_back({dst, src, bytes, valid}); }
inline void hl_cp_commit() { hl_groups.push_back(hl_cps.size()); }
template <int N> inline void hl_cp_wait() {
  if (hl_groups.size() <= (size_t)N) return;
  size_t upto = hl_groups[hl_groups.size() - N - 1];
  for (; hl_cps_done < upto; ++hl_cps_done) {
    hl_cp& c = hl_cps[hl_cps_done];
    if (c.valid) std::memcpy(c.dst, c.src, c.bytes); else std::memset(c.dst, 0, c.bytes);
  }
}
/* ldmatrix m8n8.x4 (.trans): lanes 8i..8i+7 give the rows of matrix i */
inline unsigned short hl_u16(const void* row, int col) { return ((const unsigned short*)row)[col]; }
inline void hl_ldsm(unsigned* r, const void* p, bool trans) {
  hl_w->addr[hl_lane_id] = p;
  hl_w->bar->arrive_and_wait();
  int g = hl_lane_id / 4, t = hl_lane_id % 4;
  for (int i = 0; i < 4; ++i) {
    unsigned lo, hi;
    if (!trans) { lo = hl_u16(hl_w->addr[8 * i + g], 2 * t); hi = hl_u16(hl_w->addr[8 * i + g], 2 * t + 1); }
    else { lo = hl_u16(hl_w->addr[8 * i + 2 * t], g); hi = hl_u16(hl_w->addr[8 * i + 2 * t + 1], g); }
    r[i] = lo | (hi << 16);
  }
  hl_w->bar->arrive_and_wait();
}
inline void hl_ldsm_x4(unsigned* r, const void* p) { hl_ldsm(r, p, false); }
inline void hl_ldsm_x4_trans(unsigned* r, const void* p) { hl_ldsm(r, p, true); }
/* mma.m16n8k16.row.col, f32 accumulators: the PTX ISA's fragment layouts */
inline float hl_bf16f(unsigned short u) { return hl_bits<float>((unsigned)u << 16); }
inline float hl_f16f(unsigned short u) { return (float)hl_bits<_Float16>(u); }
inline void hl_mma(float* c, const unsigned* a, const unsigned* b, bool bf16) {
  for (int i = 0; i < 4; ++i) hl_w->a[hl_lane_id][i] = a[i];
  for (int i = 0; i < 2; ++i) hl_w->b[hl_lane_id][i] = b[i];
  hl_w->bar->arrive_and_wait();
  float A[16][16], B[16][8];
  for (int L = 0; L < 32; ++L) {
    int g = L / 4, t = L % 4;
    for (int j = 0; j < 2; ++j) {
      auto h = [&](unsigned r) { unsigned short u = (unsigned short)(r >> (16 * j)); return bf16 ? hl_bf16f(u) : hl_f16f(u); };
      A[g][2 * t + j] = h(hl_w->a[L][0]);
      A[g + 8][2 * t + j] = h(hl_w->a[L][1]);
      A[g][2 * t + 8 + j] = h(hl_w->a[L][2]);
      A[g + 8][2 * t + 8 + j] = h(hl_w->a[L][3]);
      B[2 * t + j][g] = h(hl_w->b[L][0]);
      B[2 * t + 8 + j][g] = h(hl_w->b[L][1]);
    }
  }
  int g = hl_lane_id / 4, t = hl_lane_id % 4;
  for (int q = 0; q < 4; ++q) {
    int row = g + (q / 2) * 8, col = 2 * t + (q % 2);
    float s = c[q];
    for (int k = 0; k < 16; ++k) s += A[row][k] * B[k][col];
    c[q] = s;
  }
  hl_w->bar->arrive_and_wait();
}
inline void hl_mma_16816_bf16(float* c, const unsigned* a, const unsigned* b) { hl_mma(c, a, b, true); }
inline void hl_mma_16816_f16(float* c, const unsigned* a, const unsigned* b) { hl_mma(c, a, b, false); }
/* a launch: blocks in turn, each block's threads as host threads */
template <typename... P, size_t... I>
inline void hl_emu_call(void (*k)(P...), void** a, std::index_sequence<I...>) { k(((P)a[I])...); }
template <typename... P>
inline int hl_emu_run(void (*k)(P...), void** a, const long* d, int serial) {
  gridDim = {(unsigned)d[0], (unsigned)d[1], (unsigned)d[2]};
  blockDim = {(unsigned)d[3], (unsigned)d[4], (unsigned)d[5]};
  const unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  for (unsigned bz = 0; bz < gridDim.z; ++bz)
  for (unsigned by = 0; by < gridDim.y; ++by)
  for (unsigned bx = 0; bx < gridDim.x; ++bx) {
    if (serial) {      /* no barrier or warp operation: threads one after another */
      for (unsigned t = 0; t < nt; ++t) {
        blockIdx = {bx, by, bz};
        threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
        hl_emu_call(k, a, std::index_sequence_for<P...>{});
      }
      continue;
    }
    std::memset(hl_emu_smem, 0xA5, sizeof hl_emu_smem);
    std::barrier<> bar(nt);
    hl_block_bar = &bar;
    std::vector<hl_warp> warps((nt + 31) / 32);
    for (unsigned w = 0; w < warps.size(); ++w)
      warps[w].bar = std::make_unique<std::barrier<>>(std::min(32u, nt - 32 * w));
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < nt; ++t)
      ts.emplace_back([&, t] {
        blockIdx = {bx, by, bz};
        threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
        hl_lane_id = t % 32;
        hl_w = &warps[t / 32];
        hl_cps.clear(); hl_groups.clear(); hl_cps_done = 0;
        hl_emu_call(k, a, std::index_sequence_for<P...>{});
        hl_w->bar->arrive_and_drop();
        bar.arrive_and_drop();
      });
    for (auto& th : ts) th.join();
  }
  return 0;
}
"""

#: a stand-in for cuda_fp16.h (the real one needs nvcc)
_FP16_H = '#include "hl_cuda_emu.h"\n'


def _include_dir() -> Path:
    d = cache_dir("cuda_emu") / ("inc_" + hashlib.sha256(EMU_HEADER.encode()).hexdigest()[:12])
    if not (d / "cuda_fp16.h").exists():
        d.mkdir(parents=True, exist_ok=True)
        (d / "hl_cuda_emu.h").write_text(EMU_HEADER)
        (d / "cuda_fp16.h").write_text(_FP16_H)
    return d


_SYNC = ("__syncthreads", "hl_ldsm", "hl_mma", "hl_cp_", "__shfl")


def _synchronizes(source: str, kernel: str) -> bool:
    """Whether kernel ``kernel``'s definition in ``source`` waits for other threads (a barrier,
    a warp operation or an asynchronous copy): then its threads must run concurrently."""
    head = source.find(f" {kernel}(")
    if head < 0:
        return True
    end = source.find('extern "C"', head)
    return any(w in source[head:end if end > 0 else len(source)] for w in _SYNC)


def compile_emulated(program: Program, cxx: str | None = None) -> ctypes.CDLL:
    """The program's kernels compiled for the CPU, each with a launcher ``hl_emu_<kernel>``."""
    names = list(dict.fromkeys(ln.name for ln in program.launches))
    footer = "\n".join(f'extern "C" int hl_emu_{n}(void** a, const long* d) {{ return hl_emu_run({n}, a, d, '
                       f'{int(not _synchronizes(program.source, n))}); }}' for n in names)
    src = program.source + "\n" + footer + "\n"
    inc = _include_dir()
    cxx = cxx or os.environ.get("CXX", "g++")
    key = hashlib.sha256("\0".join([src, EMU_HEADER, cxx]).encode()).hexdigest()[:24]
    d = cache_dir("cuda_emu")
    so = d / f"{key}.so"
    if not so.exists():
        cu = d / f"{key}.{os.getpid()}.cc"
        cu.write_text(src)
        tmp = d / f"{key}.{os.getpid()}.so"
        r = subprocess.run([cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-fno-strict-aliasing", "-w",
                            "-DHL_EMULATE", f"-I{inc}", "-include", "hl_cuda_emu.h", "-x", "c++", str(cu), "-o", str(tmp)],
                           capture_output=True, text=True, check=False, timeout=600)
        cu.unlink(missing_ok=True)
        if r.returncode != 0:
            errs = [ln for ln in r.stderr.splitlines() if "error" in ln][:12]
            raise CompileError("emulated CUDA build failed:\n" + ("\n".join(errs) or r.stderr[-4000:]), r.stderr, src)
        os.replace(tmp, so)
    return ctypes.CDLL(str(so))


def run_emulated(fn, program: Program, *arrays) -> tuple[np.ndarray, ...]:
    """Run ``program`` (the CUDA program of LoweredFunc ``fn``) on numpy ``arrays`` (its inputs)
    on the CPU; returns its outputs."""
    lib = compile_emulated(program)
    ins = [np.ascontiguousarray(a) for a in arrays]
    outs = [np.zeros(b.shape, b.dtype.np) for b in fn.args[fn.num_inputs:]]
    scratch = [np.zeros(max(sc.nbytes, 4), np.uint8) for sc in program.scratch]
    bufs = ins + outs + scratch
    for p in launch_plans(program, [*fn.args, *program.scratch]):
        if p.empty:
            continue
        args = (ctypes.c_void_p * max(len(p.args), 1))(*[bufs[a].ctypes.data for a in p.args])
        dims = (ctypes.c_long * 6)(*p.grid, *p.block)
        getattr(lib, f"hl_emu_{p.name}")(args, dims)
    return tuple(outs)


__all__ = ["EMU_HEADER", "compile_emulated", "run_emulated"]
