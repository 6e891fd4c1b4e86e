"""The CUDA device runtime (pycuda): device selection by spec, one context per device, cubins
compiled by nvcc and cached, kernels callable on numpy arrays, timing with CUDA events.

Specs: ``cuda`` (device 0) and ``cuda:N`` (device N, as ``nvidia-smi`` numbers them under
``CUDA_DEVICE_ORDER=PCI_BUS_ID``, else the driver's order).

Cubins are compiled in the calling process (``compile_cubin``: ``nvcc -cubin`` for the device's
``sm_XY``, cached on disk by source, nvcc version, arch and driver version, with ptxas's report
of registers, shared memory and spills kept beside each cubin). A device context loads each cubin
once (its module cache) and runs launches on the default stream. Buffers are allocated on a
kernel's first call and reused; ``time`` brackets ``n`` calls with CUDA events and keeps every
repeat. A kernel that faults (an illegal address) leaves its context unusable: ``DeviceContext``
then rebuilds a fresh one, and the fault is a ``DeviceError``.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import math
import os
import platform as _platform
import re
import struct
import subprocess
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError, DeviceError, MissingDependencyError, TargetError
from ..schedules.loops import LoweredFunc
from .build import KernelBase
from .cachedir import cache_dir
from .codegen.cuda import render_for
from .codegen.gpu import Program
from .targets import Target, hlotune_version
from .timing import TimingResult, measure

log = logging.getLogger(__name__)

#: threads per block of kernels whose block shape the lowering left open (flattened data loops)
DEFAULT_BLOCK = 256


@cache
def _drv():
    """pycuda.driver, initialised; TargetError when the driver cannot start (no GPU)."""
    try:
        with warnings.catch_warnings():     # pycuda warns before raising when the driver is missing
            warnings.simplefilter("ignore")
            import pycuda.driver as drv
    except ModuleNotFoundError as e:
        if e.name not in ("pycuda", "pycuda.driver"):
            raise TargetError(f"pycuda cannot load ({e})") from e
        raise MissingDependencyError("pycuda", "cuda") from e
    except ImportError as e:       # pycuda is there, the driver library (libcuda) is not, or too old
        raise TargetError(f"pycuda is installed but cannot load the CUDA driver ({e}); is there an NVIDIA GPU "
                          "and its driver?") from e
    try:
        drv.init()
    except Exception as e:
        raise TargetError(f"the CUDA driver cannot start ({type(e).__name__}: {e}); is there an NVIDIA GPU "
                          "and its driver?") from e
    return drv


def available() -> str | None:
    """None when a CUDA device can run kernels here, else why not (for skips and listings)."""
    try:
        if _drv().Device.count() < 1:
            return "the CUDA driver found no device"
        nvcc_version()
    except (MissingDependencyError, TargetError) as e:
        return str(e)
    return None


@cache
def nvcc_version() -> str:
    """nvcc's release line, e.g. 'release 13.0, V13.0.88'; MissingDependencyError when absent."""
    nvcc = os.environ.get("NVCC", "nvcc")
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        raise MissingDependencyError("nvcc (the CUDA toolkit)") from e
    m = re.search(r"release [^\n]*", out)
    return m.group(0).strip() if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def _version(v: int) -> str:
    """The driver API's integer version (13000) as '13.0'."""
    return f"{v // 1000}.{(v % 1000) // 10}"


@dataclass(frozen=True)
class CUDATarget(Target):
    """A CUDA device, with what identifies it (``key``) and what ran (``provenance``)."""

    index: int = 0
    compute_capability: tuple[int, int] = (0, 0)
    multiprocessors: int = 0
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, ...] = (1024, 1024, 64)
    max_grid_dims: tuple[int, ...] = (2**31 - 1, 65535, 65535)
    shared_per_block: int = 48 << 10
    shared_optin: int = 48 << 10
    registers_per_block: int = 65536
    warp_size: int = 32
    l2_bytes: int = 0
    global_mem: int = 0
    clock_mhz: int = 0
    memory_clock_mhz: int = 0
    bus_width: int = 0
    driver_version: str = ""
    nvcc: str = ""

    @property
    def arch(self) -> str:
        """The ``-arch`` nvcc builds this device's cubins for, e.g. 'sm_90'."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def provenance(self) -> dict:
        return {"kind": self.kind, "device": self.device, "compute_capability": ".".join(map(str, self.compute_capability)),
                "driver_version": self.driver_version, "cuda_version": self.nvcc, "multiprocessors": self.multiprocessors,
                "shared_optin": self.shared_optin, "l2_bytes": self.l2_bytes, "global_mem": self.global_mem,
                "clock_mhz": self.clock_mhz, "host": _platform.node(), "index": self.index,
                "hlotune_version": hlotune_version()}

    @property
    def key(self) -> str:
        ident = {k: v for k, v in self.provenance.items() if k not in ("host", "index", "hlotune_version", "clock_mhz")}
        return "cuda-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]

    def __str__(self) -> str:
        return f"cuda:{self.index}"


def _index(spec: str) -> int:
    parts = [p.strip() for p in spec.split(":")[1:]]
    if not parts or parts == [""]:
        return 0
    if len(parts) == 1 and parts[0].isdigit():
        return int(parts[0])
    raise TargetError(f"target '{spec}': expected 'cuda' or 'cuda:N' (N a device number)")


@cache
def cuda_target(spec: str = "cuda") -> CUDATarget:
    """The CUDATarget that ``spec`` names; TargetError lists the devices when none matches."""
    i = _index(spec)
    drv = _drv()
    n = drv.Device.count()
    if i >= n:
        names = "; ".join(f"cuda:{k} = {drv.Device(k).name()}" for k in range(n)) or "none"
        raise TargetError(f"target '{spec}': no CUDA device {i}; available: {names}")
    d = drv.Device(i)
    A = drv.device_attribute

    def at(name: str, default: int = 0) -> int:
        try:
            return int(d.get_attribute(getattr(A, name)))
        except (AttributeError, drv.Error):     # an attribute this pycuda or driver lacks
            return default

    return CUDATarget(
        "cuda", d.name().strip(), threads=at("MULTIPROCESSOR_COUNT", 1), index=i,
        compute_capability=tuple(d.compute_capability()), multiprocessors=at("MULTIPROCESSOR_COUNT"),
        max_threads_per_block=at("MAX_THREADS_PER_BLOCK", 1024),
        max_block_dims=(at("MAX_BLOCK_DIM_X", 1024), at("MAX_BLOCK_DIM_Y", 1024), at("MAX_BLOCK_DIM_Z", 64)),
        max_grid_dims=(at("MAX_GRID_DIM_X", 2**31 - 1), at("MAX_GRID_DIM_Y", 65535), at("MAX_GRID_DIM_Z", 65535)),
        shared_per_block=at("MAX_SHARED_MEMORY_PER_BLOCK", 48 << 10),
        shared_optin=at("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", at("MAX_SHARED_MEMORY_PER_BLOCK", 48 << 10)),
        registers_per_block=at("MAX_REGISTERS_PER_BLOCK", 65536), warp_size=at("WARP_SIZE", 32),
        l2_bytes=at("L2_CACHE_SIZE"), global_mem=int(d.total_memory()), clock_mhz=at("CLOCK_RATE") // 1000,
        memory_clock_mhz=at("MEMORY_CLOCK_RATE") // 1000, bus_width=at("GLOBAL_MEMORY_BUS_WIDTH"),
        driver_version=_version(drv.get_driver_version()), nvcc=nvcc_version())


def device_count() -> int:
    """How many CUDA devices the driver sees (0 without pycuda or a driver)."""
    try:
        return _drv().Device.count()
    except (MissingDependencyError, TargetError):
        return 0


# ---------------------------------------------------------------------------- compiling

_PTXAS = re.compile(r"Used (\d+) registers|(\d+) bytes smem|(\d+) bytes stack frame|(\d+) bytes spill stores|"
                    r"(\d+) bytes spill loads")


def ptxas_report(text: str) -> dict:
    """Registers, static shared memory, stack frame and spill bytes from ``ptxas -v``'s report
    (the largest over the kernels of one source)."""
    out = {"registers": 0, "smem": 0, "stack": 0, "spill_stores": 0, "spill_loads": 0}
    for m in _PTXAS.finditer(text):
        for k, v in zip(out, m.groups()):
            if v is not None:
                out[k] = max(out[k], int(v))
    return out


def arch_flags(arch: str) -> list[str]:
    """nvcc's target flags for ``arch`` ('sm_90', or 'sm_90a' for Hopper's own instructions)."""
    cc = arch.removeprefix("sm_")
    return [f"-gencode=arch=compute_{cc},code={arch}"]


def compile_cubin(source: str, arch: str, driver: str = "", timeout: float = 300.0,
                  extra: tuple[str, ...] = ()) -> tuple[Path, dict]:
    """``nvcc -cubin`` of ``source`` for ``arch``: the cubin's path and ptxas's report (see
    ``ptxas_report``, plus its ``log``). Cached by source, nvcc version, arch, driver and flags.
    CompileError carries nvcc's messages; MissingDependencyError when nvcc is absent."""
    nvcc = os.environ.get("NVCC", "nvcc")
    version = nvcc_version()
    flags = ["-O3", "-std=c++17", *arch_flags(arch), "-Xptxas", "-v", "-diag-suppress", "177", *extra]
    key = hashlib.sha256("\0".join([source, arch, version, driver, *flags]).encode()).hexdigest()[:24]
    d = cache_dir("cuda")
    cubin, info = d / f"{key}.cubin", d / f"{key}.json"
    if cubin.exists() and info.exists():
        return cubin, json.loads(info.read_text())
    src = d / f"{key}.{os.getpid()}.cu"
    src.write_text(source)
    tmp = d / f"{key}.{os.getpid()}.cubin"
    try:
        r = subprocess.run([nvcc, "-cubin", *flags, "-o", str(tmp), str(src)], capture_output=True, text=True,
                           check=False, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"nvcc took longer than {timeout:g}s", "", source) from e
    finally:
        src.unlink(missing_ok=True)
    if r.returncode != 0:
        errs = [ln for ln in r.stderr.splitlines() if "error" in ln][:12]
        raise CompileError("nvcc failed:\n" + ("\n".join(errs) or r.stderr[-4000:]), r.stderr, source)
    rep = {**ptxas_report(r.stderr), "log": "\n".join(ln for ln in r.stderr.splitlines() if "ptxas" in ln)[-4000:]}
    info.write_text(json.dumps(rep))
    os.replace(tmp, cubin)
    return cubin, rep


def cuobjdump() -> str | None:
    """A cuobjdump that can disassemble (with nvdisasm beside it or on PATH): the toolkit's, or
    the PyPI packages nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm; None when there is none."""
    import shutil
    import sysconfig
    exe = shutil.which("cuobjdump")
    dis = shutil.which("nvdisasm")
    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for sub in sorted(Path(root, "nvidia").glob("cu*/bin")):
            exe = exe or (str(sub / "cuobjdump") if (sub / "cuobjdump").exists() else None)
            dis = dis or (str(sub / "nvdisasm") if (sub / "nvdisasm").exists() else None)
    return exe if exe and dis else None


def sass_of(cubin: Path) -> str:
    """cuobjdump's SASS listing of ``cubin`` (MissingDependencyError without cuobjdump)."""
    exe = cuobjdump()
    if exe is None:
        raise MissingDependencyError("cuobjdump and nvdisasm (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    import shutil
    dis = shutil.which("nvdisasm") or str(Path(exe).parent / "nvdisasm")
    env = {**os.environ, "NVDISASM_PATH": str(Path(dis).parent)}
    r = subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True, timeout=120, env=env, check=False)
    if r.returncode != 0:
        raise CompileError(f"cuobjdump failed on {cubin}: {r.stderr[-2000:]}", r.stderr, "")
    return r.stdout


# ---------------------------------------------------------------------------- contexts

class DeviceContext:
    """One context per device, made current while hlotune uses it, with its loaded modules
    (cubin path -> module). ``rebuild`` replaces a context that a faulting kernel broke."""

    def __init__(self, index: int):
        self.index = index
        self.ctx = None
        self.modules: dict[str, object] = {}
        self.generation = 0
        self._make()
        atexit.register(self.close)

    def _make(self) -> None:
        drv = _drv()
        try:
            self.ctx = drv.Device(self.index).make_context()
        except drv.Error as e:
            raise DeviceError(f"cannot make a context on cuda:{self.index}: {e}") from e
        drv.Context.pop()
        self.modules = {}
        self.generation += 1

    def __enter__(self):
        self.ctx.push()
        return self

    def __exit__(self, *exc):
        try:
            _drv().Context.pop()
        except Exception as e:  # noqa: BLE001  (an error here must not hide the one being raised)
            log.debug("popping the context of cuda:%d: %s", self.index, e)

    def module(self, cubin: str):
        """The loaded module of ``cubin`` (call inside ``with self``)."""
        m = self.modules.get(cubin)
        if m is None:
            drv = _drv()
            try:
                m = drv.module_from_file(cubin)
            except drv.Error as e:
                raise DeviceError(f"loading {cubin} on cuda:{self.index} failed: {e}") from e
            self.modules[cubin] = m
        return m

    def rebuild(self) -> None:
        """Drop this context (after a fault it cannot run anything) and make a fresh one."""
        old, self.ctx = self.ctx, None
        try:
            old.detach()
        except Exception as e:  # noqa: BLE001  (a broken context may refuse even this)
            log.debug("detaching the broken context of cuda:%d: %s", self.index, e)
        self._make()
        log.info("cuda:%d: context rebuilt after a fault", self.index)

    def close(self) -> None:
        if self.ctx is not None:
            try:
                self.ctx.detach()
            except Exception:  # noqa: BLE001,S110  (at exit, nothing left to report to)
                pass
            self.ctx = None


@cache
def device_context(index: int) -> DeviceContext:
    return DeviceContext(index)


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


@dataclass(frozen=True)
class LaunchPlan:
    """One kernel launch in CUDA's terms: ``grid`` blocks of ``block`` threads, ``shared``
    bytes of dynamic shared memory, arguments as buffer indices."""

    name: str
    args: tuple[int, ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int = 0

    @property
    def empty(self) -> bool:
        return math.prod(self.grid) == 0


def launch_plans(program: Program, buffers: list) -> list[LaunchPlan]:
    """The launches of a rendered ``program`` over ``buffers`` (the function's arguments, then
    its scratch), as grids of blocks: a launch's global size is a whole number of its blocks;
    one without a block shape (flattened data loops) gets blocks of up to ``DEFAULT_BLOCK``."""
    index = {id(b): k for k, b in enumerate(buffers)}
    out = []
    for ln in program.launches:
        gs = tuple(ln.global_size) + (1,) * (3 - len(ln.global_size))
        if ln.local_size is None:
            ls = (min(DEFAULT_BLOCK, max(gs[0], 1)), 1, 1)
        else:
            ls = tuple(ln.local_size) + (1,) * (3 - len(ln.local_size))
        grid = tuple(-(-g // max(b, 1)) for g, b in zip(gs, ls))
        out.append(LaunchPlan(ln.name, tuple(index[id(a)] for a in ln.args), grid, ls,
                              getattr(ln, "shared_bytes", 0)))
    return out


class _Device:
    """Device buffers and prepared launches of one program in one context: ``run`` (upload,
    launch, download) and ``time`` (events around ``n`` calls). Faults rebuild the context."""

    def __init__(self, ctx: DeviceContext, cubin: str, plans: list[LaunchPlan], nbytes: list[int],
                 num_inputs: int, what: str):
        drv = _drv()
        self.ctx, self.plans, self.nbytes, self.num_inputs, self.what = ctx, plans, nbytes, num_inputs, what
        self.generation = ctx.generation
        with ctx:
            mod = ctx.module(cubin)
            try:
                self.bufs = [drv.mem_alloc(max(n, 4)) for n in nbytes]
            except drv.Error as e:
                raise DeviceError(f"allocating {sum(nbytes)} bytes of buffers for {what} on cuda:{ctx.index} "
                                  f"failed: {e}") from e
            self.calls = []
            for p in plans:
                if p.empty:
                    continue
                f = mod.get_function(p.name)
                if p.shared > 48 << 10:
                    f.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, p.shared)
                arg_buf = struct.pack("P" * len(p.args), *[int(self.bufs[a]) for a in p.args])
                self.calls.append((f, p, arg_buf))

    def _fault(self, e, doing: str) -> DeviceError:
        """The DeviceError of fault ``e``, after rebuilding the context; when even that fails the
        error asks its process to stop (``restart_worker``: the measurement worker then exits
        after replying, and the next candidate gets a fresh process)."""
        msg = f"{doing} {self.what} on cuda:{self.ctx.index} failed: {e}"
        try:
            self.ctx.rebuild()
        except Exception as e2:  # noqa: BLE001  (any failure here leaves the process without a device)
            err = DeviceError(f"{msg}; rebuilding the context failed too ({e2})")
            err.restart_worker = True
            return err
        return DeviceError(f"{msg} (the context was rebuilt)")

    def _launch(self) -> None:
        for f, p, arg_buf in self.calls:
            f._launch_kernel(p.grid, p.block, arg_buf, p.shared, None)

    def run(self, ins, outs) -> None:
        drv = _drv()
        if self.generation != self.ctx.generation:
            raise DeviceError(f"{self.what}: its context was rebuilt after a fault; build it again")
        err = None
        with self.ctx:
            try:
                for a, b in zip(ins, self.bufs[:self.num_inputs]):
                    if a.nbytes:
                        drv.memcpy_htod(b, _bytes(a))
                self._launch()
                for o, b in zip(outs, self.bufs[self.num_inputs:]):
                    if o.nbytes:
                        drv.memcpy_dtoh(o.reshape(-1).view(np.uint8), b)
                drv.Context.synchronize()
            except drv.Error as e:
                err = e
        if err is not None:     # rebuilt outside the ``with``: the broken context is popped first
            raise self._fault(err, "running") from err

    def time(self, repeat: int, min_repeat_ms: float, number: int | None, warmup_ms: float,
             stop=None) -> TimingResult:
        """Seconds per call between CUDA events around ``n`` calls (every repeat kept; ``stop``:
        see ``runtime.timing.measure``)."""
        drv = _drv()
        if not self.calls:
            return TimingResult((0.0,) * repeat, 1)
        err = None
        with self.ctx:
            start, end = drv.Event(), drv.Event()

            def run_n(n: int) -> float:
                start.record()
                for _ in range(n):
                    self._launch()
                end.record()
                end.synchronize()
                return end.time_since(start) * 1e-3

            try:
                return measure(run_n, repeat, min_repeat_ms, number, warmup_ms=warmup_ms, stop=stop)
            except drv.Error as e:
                err = e
        raise self._fault(err, "timing") from err


class CUDAKernel(KernelBase):
    """A compiled CUDA program: call it on numpy arrays like the CPU Kernel; ``.time(*args)``
    measures calls with CUDA events (every repeat kept); ``.ptxas`` is ptxas's report."""

    def __init__(self, fn: LoweredFunc, program: Program, target: CUDATarget):
        super().__init__(fn, program.source, target)
        self.program = program
        cubin, self.ptxas = compile_cubin(program.source, target.arch, target.driver_version)
        self.plans = launch_plans(program, [*fn.args, *program.scratch])
        self._dev = _Device(device_context(target.index), *self._device_args(cubin))

    @property
    def launches(self):
        return self.program.launches

    def __call__(self, *args):
        ins, outs = self.prepare(args)
        if self._dev.generation != self._dev.ctx.generation:
            cubin, _ = compile_cubin(self.program.source, self.target.arch, self.target.driver_version)
            self._dev = _Device(self._dev.ctx, *self._device_args(cubin))
        self._dev.run(ins, outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _device_args(self, cubin):
        """``_Device``'s arguments after the context: the cubin, launches, buffer sizes."""
        fn = self.lowered
        nbytes = [b.size * b.dtype.itemsize for b in fn.args] + [sc.nbytes for sc in self.program.scratch]
        return str(cubin), self.plans, nbytes, fn.num_inputs, f"'{fn.name}'"

    def time(self, *args, repeat: int = 10, min_repeat_ms: float = 50.0, number: int | None = None) -> TimingResult:
        ins, outs = self.prepare(args)
        self(*ins, *outs)
        return self._dev.time(repeat, min_repeat_ms, number, 0.0)


def build_cuda(fn: LoweredFunc, target: CUDATarget) -> CUDAKernel:
    """Render ``fn`` for ``target``'s device, compile it (cached) and wrap it as a kernel."""
    return CUDAKernel(fn, render_for(fn, target), target)


# ---------------------------------------------------------------------------- launch specs

def launch_spec(fn: LoweredFunc, target: CUDATarget, timeout: float = 300.0) -> dict:
    """A JSON-able description of ``fn`` compiled for ``target`` that ``SpecRunner`` runs without
    the IR (the measurement worker): the cubin, device (index and target key), buffer sizes
    (arguments in order, then scratch) and the launches over buffer indices."""
    program = render_for(fn, target)
    cubin, rep = compile_cubin(program.source, target.arch, target.driver_version, timeout)
    nbytes = [b.size * b.dtype.itemsize for b in fn.args] + [sc.nbytes for sc in program.scratch]
    plans = launch_plans(program, [*fn.args, *program.scratch])
    return {"cubin": str(cubin), "index": target.index, "target_key": target.key, "device": target.device,
            "num_inputs": fn.num_inputs, "num_args": len(fn.args), "nbytes": nbytes, "name": fn.name,
            "ptxas": {k: v for k, v in rep.items() if k != "log"},
            "launches": [{"name": p.name, "args": list(p.args), "grid": list(p.grid), "block": list(p.block),
                          "shared": p.shared} for p in plans]}


class SpecRunner:
    """Loads and runs a ``launch_spec`` on its device (the measurement worker's Runner)."""

    def __init__(self, spec: dict):
        self.spec = spec
        t = cuda_target(f"cuda:{spec['index']}")
        if t.key != spec["target_key"]:
            raise TargetError(f"device cuda:{spec['index']} is {t.device} ({t.key}), not the {spec['device']} "
                              f"({spec['target_key']}) the program was compiled for")
        plans = [LaunchPlan(ln["name"], tuple(ln["args"]), tuple(ln["grid"]), tuple(ln["block"]), ln.get("shared", 0))
                 for ln in spec["launches"]]
        self._dev = _Device(device_context(t.index), spec["cubin"], plans, spec["nbytes"], spec["num_inputs"],
                            f"'{spec.get('name', 'kernel')}'")

    def run(self, ins, outs) -> None:
        if len(ins) + len(outs) != self.spec["num_args"]:
            raise DeviceError(f"the program takes {self.spec['num_args']} arrays, got {len(ins) + len(outs)}")
        self._dev.run(ins, outs)

    def time(self, repeat: int = 10, min_repeat_ms: float = 50.0, number: int | None = None,
             warmup_ms: float = 0.0, stop=None) -> TimingResult:
        return self._dev.time(repeat, min_repeat_ms, number, warmup_ms, stop)


def describe() -> list[str]:
    """Lines listing every CUDA device with its limits (``hlotune devices``)."""
    why = available()
    if why is not None:
        return [f"cuda: unavailable: {why}"]
    out = []
    for i in range(device_count()):
        t = cuda_target(f"cuda:{i}")
        out += [f"  cuda:{i}  {t.device}{' [default for cuda]' if i == 0 else ''}",
                f"    compute capability {'.'.join(map(str, t.compute_capability))} ({t.arch}), "
                f"{t.multiprocessors} multiprocessors, driver {t.driver_version}, nvcc {t.nvcc}",
                f"    max threads per block {t.max_threads_per_block}, block dims {list(t.max_block_dims)}, "
                f"shared memory {t.shared_per_block >> 10} KiB per block ({t.shared_optin >> 10} KiB opt-in), "
                f"{t.registers_per_block} registers per block, L2 {t.l2_bytes >> 20} MiB, "
                f"memory {t.global_mem >> 20} MiB, key {t.key}"]
    return ["cuda:", *out]


__all__ = [
    "CUDAKernel",
    "CUDATarget",
    "DeviceContext",
    "LaunchPlan",
    "SpecRunner",
    "available",
    "build_cuda",
    "compile_cubin",
    "cuda_target",
    "cuobjdump",
    "describe",
    "device_context",
    "device_count",
    "launch_plans",
    "launch_spec",
    "nvcc_version",
    "ptxas_report",
    "sass_of",
]
