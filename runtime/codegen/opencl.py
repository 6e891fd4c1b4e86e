"""The OpenCL C dialect: the GPU kernels of ``schedules/gpu_lower.py`` as ``__kernel`` functions
over ``__global`` buffers.

A ThreadIndex reads ``get_global_id``/``get_group_id``/``get_local_id``; 'shared' buffers are
``__local`` arrays and ``Barrier`` is ``barrier(CLK_LOCAL_MEM_FENCE)``. A 'vectorize' loop of
2/4/8/16 contiguous float stores becomes ``vloadN``/``vstoreN`` on ``floatN`` values (see
clvec.py); other 'vectorize' loops stay loops in the work-item.
"""

from __future__ import annotations

import logging
from functools import cache
from types import MappingProxyType

from ...dsl import dtypes as dt
from ...dsl.errors import TargetError
from ...dsl.ops import Op
from ...schedules.gpu_lower import GpuLimits, Launch, Scratch
from ...schedules.loops import For, LoopKind, LoweredFunc, Stmt
from .clvec import render_vector_loop
from .cstyle import _FMATH
from .gpu import GPURenderer, Program, used_dtypes
from .helpers import HelperTypes, float_helpers, int_bitcasts, int_helpers, pow_f64_helper, rounding_helpers
from .typehelpers import type_helpers

log = logging.getLogger(__name__)

_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int8": "char", "int16": "short",
          "int32": "int", "int64": "long", "uint8": "uchar", "uint16": "ushort", "uint32": "uint",
          "uint64": "ulong"}


def _helper_types(fp64: bool) -> HelperTypes:
    """OpenCL C's type names and idioms for the helper generators."""
    return HelperTypes(
        ints={"i8": ("char", 8, True), "i16": ("short", 16, True), "i32": ("int", 32, True),
              "i64": ("long", 64, True), "u8": ("uchar", 8, False), "u16": ("ushort", 16, False),
              "u32": ("uint", 32, False), "u64": ("ulong", 64, False)},
        floats={"f32": ("float", ""), **({"f64": ("double", "")} if fp64 else {})},
        ll="L", ull="UL", f2i_arg="double" if fp64 else "float",
        popcnt=lambda t, u, bits: f"({t})popcount(({u})a)", clz=lambda t, u, bits: f"({t})clz(({u})a)")


@cache
def cl_helpers(fp64: bool, fp16: bool) -> str:
    """OpenCL C helpers: the shared XLA-semantics families plus bf16/f16 conversions and bitcasts."""
    ty = _helper_types(fp64)
    out = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else "",
           "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if fp16 else "",
           """#define HL_INLINE static inline
HL_INLINE int hl_bitcast_f32_i32(float x) { return as_int(x); }
HL_INLINE uint hl_bitcast_f32_u32(float x) { return as_uint(x); }
HL_INLINE float hl_bitcast_i32_f32(int x) { return as_float(x); }
HL_INLINE float hl_bitcast_u32_f32(uint x) { return as_float(x); }
"""] + rounding_helpers(ty, fp64)
    if fp16:
        out.append("""HL_INLINE float hl_round_f16(float f) { return (float)(half)f; }
HL_INLINE ushort hl_f32_to_f16bits(float f) { return as_ushort((half)f); }
HL_INLINE float hl_f16bits_to_f32(ushort u) { return (float)as_half(u); }
""")
    if fp64:
        out.append("""HL_INLINE long hl_bitcast_f64_i64(double x) { return as_long(x); }
HL_INLINE ulong hl_bitcast_f64_u64(double x) { return as_ulong(x); }
HL_INLINE double hl_bitcast_i64_f64(long x) { return as_double(x); }
HL_INLINE double hl_bitcast_u64_f64(ulong x) { return as_double(x); }
""")
        out.append(pow_f64_helper(ty))
    return "".join(out + float_helpers(ty) + int_helpers(ty) + int_bitcasts(ty))


# ---------------------------------------------------------------------------- renderer

class OpenCLRenderer(GPURenderer):
    """OpenCL C 1.2 kernels. ``fp16``/``fp64``: the device has cl_khr_fp16/cl_khr_fp64;
    the limits are checked by the lowering pass (:class:`GpuLimits`)."""

    kernel_prefix = "__kernel "
    arg_qualifier = "__global "
    restrict = "restrict"
    half_type = "half"
    int64_type = "long"
    ll_suffix, ull_suffix = "L", "UL"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    index_type = "long"              # loop and id variables
    shared_qualifier = "__local "
    no_contract = "#pragma OPENCL FP_CONTRACT OFF"   # before kernels rounding 16-bit products
    type_families = frozenset({"complex", "sub_byte", "small_float"})
    complex_ctypes = MappingProxyType({"complex64": "float2", "complex128": "double2"})
    table_qualifier = "__constant"
    exact_helper_defs = "#pragma OPENCL FP_CONTRACT OFF\n"     # for what follows (kernels too)

    def __init__(self, fp16: bool = False, fp64: bool = True, max_work_group_size: int | None = None,
                 max_work_item_sizes: tuple | None = None, local_mem_size: int | None = None,
                 max_parameter_size: int | None = None, device: str = "the device"):
        super().__init__(GpuLimits(device, max_work_group_size, max_work_item_sizes, local_mem_size,
                                   max_parameter_size))
        self.fp16, self.fp64 = fp16, fp64

    # ------------------------------------------------------------------ strings
    def ctype(self, d, storage: bool = False) -> str:
        special = self.extra_ctype(d, storage)
        if special is not None:
            return special
        if d is dt.bfloat16:
            return "ushort" if storage else "float"
        if d is dt.float16:
            return "half" if storage else "float"
        if d.is_bool and storage:
            return "uchar"    # bool has no defined size in OpenCL C
        return _TYPES[d.name]

    def complex_make(self, re: str, im: str, d) -> str:
        return f"(({self.ctype(d)})({re}, {im}))"

    def complex_part(self, s: str, part: str) -> str:
        return f"(({s}).{'x' if part == 're' else 'y'})"

    def complex_convert(self, s: str, d) -> str:
        return f"convert_{self.ctype(d)}({s})"

    @property
    def has_double(self) -> bool:
        return self.fp64

    def float_op(self, op, a, d):
        if op is Op.POW and d is dt.float64:
            return f"hl_pow_f64({a[0]}, {a[1]})"
        if op in _FMATH:      # OpenCL's math functions are overloaded: no 'f' suffix
            return f"{_FMATH[op]}({', '.join(a)})"
        if op is Op.RSQRT:
            return f"({'1.0' if d is dt.float64 else '1.0f'} / sqrt({a[0]}))"
        return super().float_op(op, a, d)

    def preamble(self, fn: LoweredFunc) -> str:
        return cl_helpers(self.fp64, self.fp16) + type_helpers(self, fn, _helper_types(self.fp64), self.fp64)

    def check_types(self, fn: LoweredFunc) -> None:
        dts = used_dtypes(fn)
        if dt.float16 in dts and not self.fp16:
            raise TargetError(f"float16 kernels need the cl_khr_fp16 extension, which {self.device} lacks; "
                              "compute in float32 or bfloat16, or use the cpu target")
        if dt.float64 in dts and not self.fp64:
            raise TargetError(f"float64 kernels need the cl_khr_fp64 extension, which {self.device} lacks")
        super().check_types(fn)

    def thread_index(self, axis: str, d: int) -> str:
        return f"(long)get_{axis}_id({d})"

    def global_ptr(self, t: str, name: str) -> str:
        return f"__global {t}* restrict {name}"

    def kernel_head(self, name: str, params: list[str], lsize) -> str:
        attr = ""
        if lsize is not None:     # lets the compiler size barriers and vectorize for the known shape
            attr = f"__attribute__((reqd_work_group_size({', '.join(map(str, (*lsize, 1, 1, 1)[:3]))}))) "
        return f"__kernel {attr}void {name}({', '.join(params)}) {{"

    def stmt(self, s: Stmt, depth: int) -> list[str]:
        if isinstance(s, For) and s.kind is LoopKind.VECTORIZE:
            vec = render_vector_loop(self, s, "  " * depth)
            if vec is not None:
                return vec
            log.debug("opencl: vectorize loop '%s' is not contiguous float stores; it stays a scalar loop",
                      s.var.name)
        return super().stmt(s, depth)


def render_opencl(fn: LoweredFunc, **caps) -> Program:
    """The OpenCL program of ``fn`` (fresh renderer, so names are stable for the same IR)."""
    return OpenCLRenderer(**caps).program(fn)


def render_for(fn: LoweredFunc, target) -> Program:
    """The OpenCL program of ``fn`` checked against an OpenCL Target's device limits."""
    return render_opencl(fn, fp16=target.fp16, fp64=target.fp64,
                         max_work_group_size=target.max_work_group_size or None,
                         max_work_item_sizes=target.max_work_item_sizes or None,
                         local_mem_size=getattr(target, "local_mem_size", 0) or None,
                         max_parameter_size=getattr(target, "max_parameter_size", 0) or None,
                         device=f"'{target.device}'")


__all__ = ["Launch", "OpenCLRenderer", "Program", "Scratch", "cl_helpers", "render_for", "render_opencl"]
