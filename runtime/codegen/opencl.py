"""The OpenCL C renderer: the loop-nest IR as ``__kernel`` functions over ``__global`` buffers.

It differs from the C renderer in strings and capabilities, and in what runs on the NDRange:

* A LoweredFunc becomes a ``Program``: one ``__kernel`` per root loop nest, enqueued in order (a
  kernel boundary is the global barrier between stages). Root intermediates (the Allocates at the
  top of the function) become ``__global`` scratch arguments that the host allocates.
* Loops bound with ``bind(axis, 'group.x'|'local.y'|...)`` (or CUDA's ``blockIdx.x`` /
  ``threadIdx.x``) read ``get_group_id``/``get_local_id``; every other loop runs inside each
  work-item, and code outside the bound loops runs redundantly on every work-item (so it may only
  write buffers private to the work-item).
* Without binds, the leading perfectly nested data loops of a nest, down to the outermost
  'parallel' loop (else down to the first 'vectorize' loop), are flattened onto
  ``get_global_id(0)``: one work-item per iteration (iterations of data loops write disjoint
  elements). Other loops, 'parallel' and 'vectorize' included, stay loops in the work-item.
* Nests without a data loop at their root (full reductions) run on one work-item; consecutive
  such nests share a kernel.
* Buffers allocated inside a nest are private arrays, or a work-item's slice of a host-allocated
  scratch buffer when 'global' or larger than ``max_private_bytes``. 'shared' buffers (from
  ``cache_read(t, 'local')``) are ``__local`` arrays declared at kernel scope, one per work-group;
  a loop bound to ``local.d`` inside another loop bound to ``local.d`` reuses the work-item's id
  (the cooperative fill of a shared buffer), and ``Barrier`` is ``barrier(CLK_LOCAL_MEM_FENCE)``,
  which must not sit in code that only some work-items of a group run.
* A 'vectorize' loop of 2/4/8/16 contiguous float stores becomes ``vloadN``/``vstoreN`` on
  ``floatN`` values (see clvec.py); other 'vectorize' loops stay loops in the work-item.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from ...dsl import dtypes as dt
from ...dsl.errors import ScheduleError, TargetError
from ...dsl.expr import Expr, walk
from ...dsl.ops import Op
from ...schedules.loops import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    LoweredFunc,
    Seq,
    Stmt,
    Store,
    stmt_children,
    stmt_exprs,
    walk_stmts,
)
from .clvec import render_vector_loop
from .cstyle import _FMATH, CStyleRenderer
from .helpers import HelperTypes, float_helpers, int_bitcasts, int_helpers, multiplies_16bit, rounding_helpers
from .typehelpers import type_helpers

log = logging.getLogger(__name__)

_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int8": "char", "int16": "short",
          "int32": "int", "int64": "long", "uint8": "uchar", "uint16": "ushort", "uint32": "uint",
          "uint64": "ulong"}
#: bind() thread names -> (id function, dimension)
THREADS = {f"{n}.{x}": (kind, d) for d, x in enumerate("xyz")
           for n, kind in (("group", "group"), ("blockIdx", "group"), ("local", "local"), ("threadIdx", "local"))}


@dataclass(frozen=True, eq=False)
class Scratch:
    """A buffer the host allocates: a root intermediate shared by kernels (``count`` 1) or
    per-work-item scratch (``count`` slices of ``buffer``, one per work-item)."""

    buffer: Buffer
    count: int = 1

    @property
    def nbytes(self) -> int:
        return self.buffer.size * self.buffer.dtype.itemsize * self.count


@dataclass(frozen=True)
class Launch:
    """One ``__kernel`` enqueue: its arguments (function Buffers or Scratch) and NDRange."""

    name: str
    args: tuple
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None


@dataclass(frozen=True)
class Program:
    """The OpenCL source of a LoweredFunc and the launches that run it, in order."""

    source: str
    launches: tuple[Launch, ...]
    scratch: tuple[Scratch, ...]


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
    return "".join(out + float_helpers(ty) + int_helpers(ty) + int_bitcasts(ty))


# ---------------------------------------------------------------------------- IR walks

def _buffers(stmts) -> set[int]:
    """ids of the Buffers that ``stmts`` load or store."""
    out: set[int] = set()
    for root in stmts:
        for s in walk_stmts(root):
            if isinstance(s, Store):
                out.add(id(s.buffer))
            out.update(id(e.arg) for e in walk(stmt_exprs(s)) if e.op is Op.LOAD)
    return out


def used_dtypes(fn: LoweredFunc) -> set:
    """Every dtype of a buffer or value in ``fn``."""
    out = {b.dtype for b in fn.args}
    for s in walk_stmts(fn.body):
        if isinstance(s, Allocate):
            out.add(s.buffer.dtype)
        out.update(e.dtype for e in walk(stmt_exprs(s)))
    return out


def _static_extent(e: Expr) -> int | None:
    """An upper bound of a loop extent: a constant, or the constant side of ``min(f, rest)``."""
    if e.op is Op.CONST:
        return int(e.arg)
    if e.op is Op.MIN:
        ks = [k for k in map(_static_extent, e.src) if k is not None]
        return min(ks) if ks else None
    return None


def _gid_chain(s: Stmt) -> list[For]:
    """The root data loops to flatten onto ``get_global_id(0)`` (see the module docstring)."""
    chain = []
    while (isinstance(s, For) and s.var.kind == "data" and s.extent.op is Op.CONST
           and not s.kind.startswith("bind:")):
        chain.append(s)
        s = s.body
    par = next((k for k, f in enumerate(chain) if f.kind == "parallel"), None)
    if par is not None:
        return chain[:par + 1]
    vec = next((k for k, f in enumerate(chain) if f.kind == "vectorize"), len(chain))
    return chain[:max(vec, 1)]


def _stores_only_shared(s: Stmt) -> bool:
    return all(x.buffer.scope == "shared" for x in walk_stmts(s) if isinstance(x, Store))


def _bound_loops(s: Stmt, enclosing: tuple = ()) -> list[tuple[For, str, int]]:
    """``(loop, 'group'|'local', dim)`` for every bound loop in ``s``; checks thread names and
    that no loop is bound inside another loop bound to the same index (except the cooperative
    fill of a shared buffer, which reuses the enclosing ``local.*`` id)."""
    out = []
    if isinstance(s, For) and s.kind.startswith("bind:"):
        thread = s.kind[5:]
        if thread not in THREADS:
            raise ScheduleError(f"bind: loop '{s.var.name}' is bound to unknown thread index '{thread}'; "
                                f"the opencl target knows {', '.join(THREADS)}")
        kind, d = THREADS[thread]
        if (kind, d) in enclosing and not (kind == "local" and _stores_only_shared(s.body)):
            raise ScheduleError(f"bind: loop '{s.var.name}' is bound to '{thread}' inside another loop bound "
                                "to the same index")
        if _static_extent(s.extent) is None:
            raise ScheduleError(f"bind: loop '{s.var.name}' has no static extent")
        out.append((s, kind, d))
        enclosing = enclosing + ((kind, d),)
    for c in stmt_children(s):
        out += _bound_loops(c, enclosing)
    return out


def _check_bound_stores(s: Stmt, need: set, tags: frozenset = frozenset(), private: frozenset = frozenset()):
    """Every store to a non-private buffer lies inside loops bound to all indices in ``need``."""
    if isinstance(s, For) and s.kind.startswith("bind:"):
        tags = tags | {THREADS[s.kind[5:]]}
    if isinstance(s, Allocate):
        private = private | {id(s.buffer)}
    if isinstance(s, Store) and id(s.buffer) not in private and not need <= tags:
        miss = ", ".join(f"{k}.{'xyz'[d]}" for k, d in sorted(need - tags))
        raise ScheduleError(f"bind: '{s.buffer.name}' is stored outside the loops bound to {miss}, so every "
                            "work-item would write it; bind loops that enclose the store")
    for c in stmt_children(s):
        _check_bound_stores(c, need, tags, private)


# ---------------------------------------------------------------------------- renderer

class OpenCLRenderer(CStyleRenderer):
    """OpenCL C 1.2 kernels. ``fp16``/``fp64``: the device has cl_khr_fp16/cl_khr_fp64;
    ``max_work_group_size``/``max_work_item_sizes`` check bound work-group shapes."""

    kernel_prefix = "__kernel "
    arg_qualifier = "__global "
    restrict = "restrict"
    half_type = "half"
    int64_type = "long"
    ll_suffix, ull_suffix = "L", "UL"
    max_private_bytes = 16384

    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    index_type = "long"              # loop and id variables
    shared_qualifier = "__local "
    vector_types = True              # vloadN/vstoreN for contiguous 'vectorize' loops
    no_contract = "#pragma OPENCL FP_CONTRACT OFF"   # before kernels rounding 16-bit products

    def __init__(self, fp16: bool = False, fp64: bool = True, max_work_group_size: int | None = None,
                 max_work_item_sizes: tuple | None = None, local_mem_size: int | None = None,
                 max_parameter_size: int | None = None, device: str = "the device"):
        super().__init__()
        self.fp16, self.fp64, self.device = fp16, fp64, device
        self.max_work_group_size = max_work_group_size
        self.max_work_item_sizes = max_work_item_sizes
        self.local_mem_size = local_mem_size
        self.max_parameter_size = max_parameter_size
        self._shared: list[Buffer] = []
        self._divergent = 0
        self._mapped: dict[int, tuple[str, int | None]] = {}   # id(For) -> (index, launch extent)
        self._item_scratch: list[Scratch] = []
        self._items = 1

    # ------------------------------------------------------------------ strings
    type_families = frozenset({"complex", "sub_byte", "small_float"})
    complex_ctypes = MappingProxyType({"complex64": "float2", "complex128": "double2"})
    table_qualifier = "__constant"
    exact_helper_defs = "#pragma OPENCL FP_CONTRACT OFF\n"     # for what follows (kernels too)

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
        if op in _FMATH:      # OpenCL's math functions are overloaded: no 'f' suffix
            return f"{_FMATH[op]}({', '.join(a)})"
        if op is Op.RSQRT:
            return f"({'1.0' if d is dt.float64 else '1.0f'} / sqrt({a[0]}))"
        return super().float_op(op, a, d)

    def loop_pragma(self, f: For) -> list[str]:
        if f.kind == "unroll":
            ext = f.extent.arg if f.extent.op is Op.CONST else None
            return [f"#pragma unroll {min(ext, 64) if ext else 8}"]
        return []

    def preamble(self, fn: LoweredFunc) -> str:
        return cl_helpers(self.fp64, self.fp16) + type_helpers(self, fn, _helper_types(self.fp64), self.fp64)

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, For) and id(s) in self._mapped:
            idx, launch = self._mapped[id(s)]
            v = self.name(s.var, s.var.name)
            if s.extent.op is Op.CONST and s.extent.arg == launch:
                body = self.stmt(s.body, depth + 1)
            else:
                body = [f"{pad}  if ({v} < {self.expr(s.extent)}) {{", *self._diverging(s.body, depth + 2), pad + "  }"]
            return [pad + "{", f"{pad}  {self.index_type} {v} = {idx};", *body, pad + "}"]
        if isinstance(s, If):
            return [f"{pad}if ({self.expr(s.cond)}) {{", *self._diverging(s.then, depth + 1), pad + "}"]
        if isinstance(s, Barrier) and self._divergent:
            raise ScheduleError("a work-group barrier (after filling a cache_read 'local' buffer) lies in code that "
                                "only some work-items run (a guarded tail of a bound loop, or an if); make the bound "
                                "loops' extents divide evenly, or compute the cache at a loop outside the guard")
        if isinstance(s, Allocate) and s.buffer.scope == "shared":
            self._shared.append(s.buffer)
            return self.stmt(s.body, depth)
        if isinstance(s, For) and s.kind == "vectorize" and self.vector_types:
            vec = render_vector_loop(self, s, pad)
            if vec is not None:
                return vec
            log.debug("opencl: vectorize loop '%s' is not contiguous float stores; it stays a scalar loop",
                      s.var.name)
        if isinstance(s, For) and s.kind == "parallel":
            log.debug("opencl: parallel loop '%s' is not at the root of its nest; it runs serially in "
                      "each work-item", s.var.name)
        if isinstance(s, Allocate):
            b = s.buffer
            if b.scope == "global" or b.size * b.dtype.itemsize > self.max_private_bytes:
                sc = Scratch(b, self._items)
                self._item_scratch.append(sc)
                t = self.ctype(b.dtype, storage=True)
                n, base = self.name(b, b.name), self.name(sc, b.name + "_scratch")
                return [pad + "{", f"{pad}  {self.global_ptr(t, n)} = {base} + hl_wid * {b.size};",
                        *self.stmt(s.body, depth + 1), pad + "}"]
        return super().stmt(s, depth)

    # ------------------------------------------------------------------ dialect strings
    def thread_id(self, kind: str, d: int) -> str:
        """The work-group (``kind`` 'group') or work-item ('local') index in dimension ``d``."""
        return f"(long)get_{kind}_id({d})"

    def global_id(self, d: int) -> str:
        return f"(long)get_global_id({d})"

    def global_ptr(self, t: str, name: str) -> str:
        return f"__global {t}* restrict {name}"

    def gid_guard(self, total: int) -> list[str]:
        """Lines ending the work-items past ``total`` (OpenCL launches exactly ``total``)."""
        return []

    def kernel_head(self, name: str, params: list[str], lsize) -> str:
        attr = ""
        if lsize is not None:     # lets the compiler size barriers and vectorize for the known shape
            attr = f"__attribute__((reqd_work_group_size({', '.join(map(str, (*lsize, 1, 1, 1)[:3]))}))) "
        return f"__kernel {attr}void {name}({', '.join(params)}) {{"

    def _diverging(self, s: Stmt, depth: int) -> list[str]:
        self._divergent += 1
        try:
            return self.stmt(s, depth)
        finally:
            self._divergent -= 1

    def _declare_shared(self, kind: str) -> list[str]:
        """``__local`` declarations of the kernel's shared buffers (checked against the device)."""
        if not self._shared:
            return []
        names = ", ".join(f"'{b.name}'" for b in self._shared)
        if kind != "bind":
            raise ScheduleError(f"cache_read 'local' buffers {names} need a work-group: bind the reader's loops "
                                "to local.*/group.* ids (without binds every work-item would fill them)")
        total = sum(b.size * b.dtype.itemsize for b in self._shared)
        if self.local_mem_size and total > self.local_mem_size:
            raise ScheduleError(f"cache_read 'local': buffers {names} need {total} bytes of local memory, more than "
                                f"{self.device}'s local memory size {self.local_mem_size}")
        return [f"  {self.shared_qualifier}{self.ctype(b.dtype, True)} {self.name(b, b.name)}[{max(b.size, 1)}];"
                for b in self._shared]

    # ------------------------------------------------------------------ kernels
    def _map_gid(self, root: Stmt) -> tuple[tuple[int, ...], None, str]:
        chain = _gid_chain(root)
        exts = [int(f.extent.arg) for f in chain]
        for k, f in enumerate(chain):
            inner = math.prod(exts[k + 1:])
            e = "hl_gid" if inner == 1 else f"(hl_gid / {inner})"
            self._mapped[id(f)] = (e if k == 0 else f"({e} % {exts[k]})", exts[k])
        return (math.prod(exts),), None, "hl_gid"

    def _map_binds(self, root: Stmt) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        loops = _bound_loops(root)
        size = {"group": [1, 1, 1], "local": [1, 1, 1]}
        for f, kind, d in loops:
            size[kind][d] = max(size[kind][d], _static_extent(f.extent))
        for f, kind, d in loops:
            self._mapped[id(f)] = (self.thread_id(kind, d), size[kind][d])
        need = {(k, d) for _, k, d in loops}
        ndim = 1 + max(d for _, _, d in loops)
        local = tuple(size["local"][:ndim])
        if self.max_work_group_size and math.prod(local) > self.max_work_group_size:
            raise ScheduleError(f"bind: work-group of {' x '.join(map(str, local))} work-items exceeds "
                                f"{self.device}'s maximum work-group size {self.max_work_group_size}")
        for d, (n, m) in enumerate(zip(local, self.max_work_item_sizes or ())):
            if n > m:
                raise ScheduleError(f"bind: local.{'xyz'[d]} extent {n} exceeds {self.device}'s maximum "
                                    f"work-item size {m} in that dimension")
        _check_bound_stores(root, need)
        gsize = tuple(g * n for g, n in zip(size["group"][:ndim], local))
        wid = self.global_id(0)
        for d in range(1, ndim):
            wid = f"{wid} + {math.prod(gsize[:d])}{self.ll_suffix} * {self.global_id(d)}"
        return gsize, local, wid

    def _kernel(self, fn: LoweredFunc, name: str, kind: str, stmts: list[Stmt],
                shared: dict[int, Scratch]) -> tuple[str, Launch]:
        self._mapped, self._item_scratch, self._shared = {}, [], []
        gsize, lsize, wid = (1,), None, "0"
        if kind == "bind":
            gsize, lsize, wid = self._map_binds(stmts[0])
        elif kind == "gid":
            gsize, lsize, wid = self._map_gid(stmts[0])
        self._items = math.prod(gsize)
        body = [ln for s in stmts for ln in self.stmt(s, 1)]
        head = self._declare_shared(kind)
        if kind == "gid":
            head.append(f"  {self.index_type} hl_gid = {self.global_id(0)};")
            head += self.gid_guard(math.prod(gsize))
        if self._item_scratch:
            head.append(f"  {self.index_type} hl_wid = {wid};")
        used = _buffers(stmts)
        args = [b for b in fn.args if id(b) in used] + [sc for k, sc in shared.items() if k in used]
        params = []
        for a in args:
            b = a if isinstance(a, Buffer) else a.buffer
            const = "const " if isinstance(a, Buffer) and fn.args.index(a) < fn.num_inputs else ""
            params.append(self.global_ptr(const + self.ctype(b.dtype, True), self.name(b, b.name)))
        for sc in self._item_scratch:
            params.append(self.global_ptr(self.ctype(sc.buffer.dtype, True), self.name(sc, sc.buffer.name + "_scratch")))
        args += self._item_scratch
        if self.max_parameter_size and 8 * len(params) > self.max_parameter_size:
            raise ScheduleError(f"kernel '{name}' takes {len(params)} buffer arguments ({8 * len(params)} bytes), more "
                                f"than {self.device}'s maximum parameter size {self.max_parameter_size}; split the "
                                "module segment (fewer fused inputs and outputs per kernel)")
        src = "\n".join([self.kernel_head(name, params, lsize), *head, *body, "}", ""])
        return src, Launch(name, tuple(args), gsize, lsize)

    def program(self, fn: LoweredFunc) -> Program:
        """Render ``fn`` as kernels plus launches (see the module docstring)."""
        dts = used_dtypes(fn)
        if dt.float16 in dts and not self.fp16:
            raise TargetError(f"float16 kernels need the cl_khr_fp16 extension, which {self.device} lacks; "
                              "compute in float32 or bfloat16, or use the cpu target")
        if dt.float64 in dts and not self.fp64:
            raise TargetError(f"float64 kernels need the cl_khr_fp64 extension, which {self.device} lacks")
        for d in sorted(dts, key=lambda d: d.name):
            fam = self.family(d)
            if fam is not None and fam not in self.type_families:
                raise TargetError(f"{d} kernels are not supported by the {type(self).__name__[:-8]} backend; "
                                  "use the cpu target")
            if d is dt.complex128 and not self.fp64:
                raise TargetError(f"complex128 kernels need the cl_khr_fp64 extension, which {self.device} lacks")
        for b in fn.args:
            self.name(b, b.name)
        body, shared = fn.body, {}
        while isinstance(body, Allocate):
            shared[id(body.buffer)] = Scratch(body.buffer)
            body = body.body
        groups: list[tuple[str, list[Stmt]]] = []
        for r in (body.stmts if isinstance(body, Seq) else (body,)):
            kind = "bind" if _bound_loops(r) else ("gid" if _gid_chain(r) else "one")
            if kind == "one" and groups and groups[-1][0] == "one":
                groups[-1][1].append(r)
            else:
                groups.append((kind, [r]))
        base = "hl_" + re.sub(r"[^0-9a-zA-Z_]", "_", fn.name)
        sources, launches, item = [], [], []
        for k, (kind, stmts) in enumerate(groups):
            src, launch = self._kernel(fn, base if len(groups) == 1 else f"{base}_{k}", kind, stmts, shared)
            sources.append(src)
            launches.append(launch)
            item += self._item_scratch
        if self.no_contract and multiplies_16bit(fn):     # its rounded 16-bit products must not fuse into multiply-adds
            sources.insert(0, self.no_contract)
        return Program("\n".join([self.preamble(fn), *sources]), tuple(launches),
                       tuple(shared.values()) + tuple(item))

    def render(self, fn: LoweredFunc) -> str:
        return self.program(fn).source


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
