"""The CUDA C++ dialect: the GPU kernels of ``schedules/gpu_lower.py`` in CUDA's words.

Kernels, launches, bound loops, shared buffers, barriers and per-thread scratch are the lowering
pass's (a ``group`` index is ``blockIdx``, ``local`` is ``threadIdx``, ``global`` is
``blockIdx * blockDim + threadIdx``, a work-group is a block); only the strings differ from
opencl.py: ``extern "C" __global__``
kernels with ``__launch_bounds__`` when the block shape is known, ``__restrict__`` pointers,
``__shared__`` arrays, ``__syncthreads()``, libm-style float functions (``expf``), ``__half``
storage for float16 (``cuda_fp16.h``) and bf16 stored as ``unsigned short``. Vector loops stay
scalar loops (CUDA has no ``vloadN``).

``compile_cuda`` runs ``nvcc -ptx`` on a source (cached), which is how CI checks the generated
code on machines without a CUDA device.
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
from functools import cache
from pathlib import Path

from ...dsl import dtypes as dt
from ...dsl.errors import CompileError, MissingDependencyError
from ...dsl.ops import Op
from ...schedules.gpu_lower import GpuLimits
from ...schedules.loops import LoweredFunc, MatmulKernel
from .gpu import GPURenderer, Program
from .gpu_gemm import GEMM_HELPERS, render_gemm
from .helpers import HelperTypes, float_helpers, int_bitcasts, int_helpers, pow_f64_helper, rounding_helpers

_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int8": "signed char", "int16": "short",
          "int32": "int", "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
          "uint32": "unsigned int", "uint64": "unsigned long long"}


@cache
def cuda_helpers() -> str:
    """CUDA device helpers: the shared XLA-semantics families plus bf16/f16 conversions and bitcasts."""
    ty = HelperTypes(
        ints={"i8": ("signed char", 8, True), "i16": ("short", 16, True), "i32": ("int", 32, True),
              "i64": ("long long", 64, True), "u8": ("unsigned char", 8, False),
              "u16": ("unsigned short", 16, False), "u32": ("unsigned int", 32, False),
              "u64": ("unsigned long long", 64, False)},
        floats={"f32": ("float", "f"), "f64": ("double", "")},
        popcnt=lambda t, u, bits: f"({t})__popcll((unsigned long long)({u})a)",
        clz=lambda t, u, bits: f"a == 0 ? {bits} : ({t})(__clzll((long long)({u})a) - {64 - bits})")
    out = ["""#include <cuda_fp16.h>
#define HL_INLINE static __device__ __forceinline__
HL_INLINE float hl_round_f16(float f) { return __half2float(__float2half_rn(f)); }
HL_INLINE unsigned short hl_f32_to_f16bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
HL_INLINE float hl_f16bits_to_f32(unsigned short u) { return __half2float(__ushort_as_half(u)); }
HL_INLINE int hl_bitcast_f32_i32(float x) { return __float_as_int(x); }
HL_INLINE unsigned int hl_bitcast_f32_u32(float x) { return __float_as_uint(x); }
HL_INLINE float hl_bitcast_i32_f32(int x) { return __int_as_float(x); }
HL_INLINE float hl_bitcast_u32_f32(unsigned int x) { return __uint_as_float(x); }
HL_INLINE long long hl_bitcast_f64_i64(double x) { return __double_as_longlong(x); }
HL_INLINE unsigned long long hl_bitcast_f64_u64(double x) { return (unsigned long long)__double_as_longlong(x); }
HL_INLINE double hl_bitcast_i64_f64(long long x) { return __longlong_as_double(x); }
HL_INLINE double hl_bitcast_u64_f64(unsigned long long x) { return __longlong_as_double((long long)x); }
"""] + rounding_helpers(ty) + [pow_f64_helper(ty, "__dmul_rn({}, {})", "__dadd_rn({}, {})")]
    return "".join(out + float_helpers(ty) + int_helpers(ty) + int_bitcasts(ty)) + GEMM_HELPERS


class CUDARenderer(GPURenderer):
    """CUDA C++ kernels (see the module docstring); the limits default to a current NVIDIA GPU's
    (sm_80: 1024 threads per block, 48 KiB of static and 163 KiB of opt-in shared memory)."""

    kernel_prefix = 'extern "C" __global__ '
    arg_qualifier = ""
    restrict = "__restrict__"
    half_type = "__half"
    int64_type = "long long"
    ll_suffix, ull_suffix = "LL", "ULL"
    barrier = "__syncthreads();"
    index_type = "long long"
    shared_qualifier = "__shared__ "
    no_contract = ""                 # 16-bit products use __fmul_rn, which nvcc never contracts
    type_families = frozenset()      # complex, sub-byte and sub-16-bit float types: refused (TargetError)

    def __init__(self, max_work_group_size: int | None = 1024, max_work_item_sizes: tuple | None = (1024, 1024, 64),
                 local_mem_size: int | None = 48 * 1024, device: str = "the CUDA device",
                 compute_capability: int | None = 80, shared_optin: int | None = 163 << 10):
        super().__init__(GpuLimits(device, max_work_group_size, max_work_item_sizes, local_mem_size,
                                   compute_capability=compute_capability, shared_optin=shared_optin))

    def ctype(self, d, storage: bool = False) -> str:
        if d is dt.bfloat16:
            return "unsigned short" if storage else "float"
        if d is dt.float16:
            return "__half" if storage else "float"
        return _TYPES[d.name]

    def float_op(self, op, a, d):
        if op is Op.MUL and d in (dt.float16, dt.bfloat16):   # rounded before use: never fused into an FMA
            return f"__fmul_rn({a[0]}, {a[1]})"
        if op is Op.POW and d is dt.float64:
            return f"hl_pow_f64({a[0]}, {a[1]})"
        return super().float_op(op, a, d)    # expf/logf/...: CUDA's libm names

    def preamble(self, fn: LoweredFunc) -> str:
        return cuda_helpers()

    def stmt(self, s, depth: int) -> list[str]:
        if isinstance(s, MatmulKernel):
            return render_gemm(self, s, self.limits.compute_capability)
        return super().stmt(s, depth)

    def thread_index(self, axis: str, d: int) -> str:
        x = "xyz"[d]
        if axis == "global":
            return f"((long long)blockIdx.{x} * blockDim.{x} + threadIdx.{x})"
        return f"(long long){'blockIdx' if axis == 'group' else 'threadIdx'}.{x}"

    def global_ptr(self, t: str, name: str) -> str:
        return f"{t}* __restrict__ {name}"

    def kernel_head(self, name: str, params: list[str], lsize) -> str:
        bounds = f"__launch_bounds__({math.prod(lsize)}) " if lsize is not None else ""
        return f'extern "C" __global__ void {bounds}{name}({", ".join(params)}) {{'


def render_cuda(fn: LoweredFunc, **caps) -> Program:
    """The CUDA program of ``fn``: source plus launches (grid = global size / block size)."""
    return CUDARenderer(**caps).program(fn)


def render_for(fn: LoweredFunc, target) -> Program:
    """``fn``'s CUDA program with ``target``'s limits (a runtime.cuda.CUDATarget)."""
    cc = target.compute_capability
    return CUDARenderer(target.max_threads_per_block, tuple(target.max_block_dims), target.shared_per_block,
                        device=target.device, compute_capability=10 * cc[0] + cc[1],
                        shared_optin=target.shared_optin).program(fn)


def compile_cuda(source: str, arch: str = "sm_80", timeout: float = 300.0) -> Path:
    """``nvcc -ptx`` of ``source`` for ``arch``; returns the PTX path (cached by source, arch and
    nvcc). CompileError carries nvcc's messages; MissingDependencyError when nvcc is absent."""
    nvcc = os.environ.get("NVCC", "nvcc")
    try:
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except FileNotFoundError as e:
        raise MissingDependencyError("nvcc (the CUDA toolkit)") from e
    key = hashlib.sha256("\0".join([source, arch, version]).encode()).hexdigest()[:24]
    cache_dir = Path(os.environ.get("HLOTUNE_CACHE", Path.home() / ".cache" / "hlotune")) / "cuda"
    cache_dir.mkdir(parents=True, exist_ok=True)
    ptx = cache_dir / f"{key}.ptx"
    if ptx.exists():
        return ptx
    src = cache_dir / f"{key}.cu"
    src.write_text(source)
    tmp = cache_dir / f"{key}.{os.getpid()}.ptx"
    r = subprocess.run([nvcc, "-ptx", f"-arch={arch}", "-o", str(tmp), str(src)], capture_output=True, text=True, check=False,
                       timeout=timeout)
    if r.returncode != 0:
        errs = [ln for ln in r.stderr.splitlines() if "error" in ln][:12]
        raise CompileError("nvcc failed:\n" + ("\n".join(errs) or r.stderr[-4000:]), r.stderr, source)
    os.replace(tmp, ptx)
    return ptx


__all__ = ["CUDARenderer", "compile_cuda", "cuda_helpers", "render_cuda", "render_for"]
