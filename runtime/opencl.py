"""The OpenCL device runtime (pyopencl): device selection by spec, one context and in-order
profiling queue per device, a program cache, and kernels callable on numpy arrays.

Specs: ``opencl`` (the first GPU, else the first device that builds a trivial kernel),
``opencl:P`` / ``opencl:P:D`` (platform P, device D), ``opencl:NAME`` (the first device whose
device, vendor or platform name contains NAME, case-insensitive; e.g. ``opencl:pocl``).

Drivers installed by pip into ``<sys.prefix>/etc/OpenCL/vendors`` (e.g. ``intel-opencl-rt``)
are made visible next to the system's ``/etc/OpenCL/vendors`` when ``OCL_ICD_VENDORS`` is unset.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform as _platform
import sys
import tempfile
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError, DeviceError, MissingDependencyError, TargetError
from ..schedules.loops import LoweredFunc
from .build import KernelBase
from .cachedir import cache_dir, unsafe_dir, unsafe_file
from .codegen.opencl import Program, render_for
from .targets import Target, hlotune_version
from .timing import TimingResult, measure

log = logging.getLogger(__name__)


#: the install prefix that conda-style wheels (intel-opencl-rt) leave in their .icd files
_CONDA_PREFIX = "/opt/anaconda1anaconda2anaconda3"


def _icd_vendors() -> None:
    """pyopencl's bundled ICD loader reads one vendors directory: when ``OCL_ICD_VENDORS`` is unset
    and pip installed drivers under ``sys.prefix``, point it at a directory holding those (with the
    conda prefix placeholder that pip leaves in them resolved) and the system's drivers."""
    if os.environ.get("OCL_ICD_VENDORS"):
        return
    local = Path(sys.prefix) / "etc" / "OpenCL" / "vendors"
    icds = sorted(local.glob("*.icd")) if local.is_dir() else []
    if not icds:
        return
    files = {}
    for k, f in enumerate(sorted(Path("/etc/OpenCL/vendors").glob("*.icd")) + icds):
        try:
            files[f"{k:02d}_{f.name}"] = f.read_text().replace(_CONDA_PREFIX, sys.prefix)
        except OSError:
            continue
    tag = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
    root = cache_dir("opencl")
    merged = root / f"vendors_{tag}"
    try:
        if not merged.is_dir():
            _write_vendors(root / f".vendors_{tag}.{os.getpid()}", files, merged)
        why = _vendors_differ(merged, files)
        if why:   # the loader would dlopen what these files name: never trust a changed folder
            private = Path(tempfile.mkdtemp(prefix=f"hlotune_cache_{os.getpid()}_")) / "vendors"
            log.warning("OpenCL vendors folder %s %s: using a private copy in %s", merged, why, private)
            merged = _write_vendors(private, files)
    except OSError as e:
        log.warning("cannot list pip-installed OpenCL drivers in %s: %s", root, e)
        return
    os.environ["OCL_ICD_VENDORS"] = str(merged)
    log.debug("OCL_ICD_VENDORS=%s (%d drivers)", merged, len(files))


def _write_vendors(tmp: Path, files: dict, final: Path | None = None) -> Path:
    """Write the .icd ``files`` into ``tmp`` (private), then move it to ``final`` if given."""
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp / name).write_text(text)
        (tmp / name).chmod(0o644)
    if final is None:
        return tmp
    try:
        tmp.rename(final)
    except OSError:   # another process made it first
        for x in tmp.iterdir():
            x.unlink()
        tmp.rmdir()
    return final


def _vendors_differ(folder: Path, files: dict) -> str | None:
    """Why ``folder`` is not exactly the private copy of ``files`` it should be, or None."""
    why = unsafe_dir(folder)
    if why:
        return why
    names = sorted(p.name for p in folder.iterdir())
    if names != sorted(files):
        return f"holds {names}, not {sorted(files)}"
    for name, text in files.items():
        why = unsafe_file(folder / name)
        if why or (folder / name).read_text() != text:
            return f"file {name} {why or 'was changed'}"
    return None


def _cl():
    _icd_vendors()
    try:
        import pyopencl
    except ImportError as e:
        raise MissingDependencyError("pyopencl", "opencl") from e
    return pyopencl


@cache
def devices() -> tuple:
    """``(platform_index, device_index, device)`` of every OpenCL device."""
    cl = _cl()
    try:
        plats = cl.get_platforms()
    except cl.Error as e:   # no ICD loader / no platform installed
        log.debug("no OpenCL platforms: %s", e)
        return ()
    out = []
    for pi, p in enumerate(plats):
        try:
            devs = p.get_devices()
        except cl.Error:
            devs = []
        out.extend((pi, di, d) for di, d in enumerate(devs))
    return tuple(out)


def _names(d) -> str:
    p = d.platform
    return " ".join([d.name, d.vendor, p.name, p.vendor, p.version]).lower()


def select_device(spec: str):
    """The ``(platform_index, device_index, device)`` that ``spec`` names (see module docstring)."""
    cl = _cl()
    parts = [p.strip() for p in spec.split(":")[1:]]
    parts = [] if parts == [""] else parts
    devs = devices()
    if not devs:
        raise TargetError(f"target '{spec}': no OpenCL device found; install a driver (pip install "
                          "pocl-binary-distribution gives a CPU device)")
    listing = "; ".join(f"opencl:{pi}:{di} = {d.name.strip()} ({d.platform.name.strip()})" for pi, di, d in devs)
    if not parts:
        order = sorted(devs, key=lambda x: not x[2].type & cl.device_type.GPU)
        why = []
        for x in order:
            err = _probe(x[0], x[1])
            if err is None:
                return x
            why.append(f"opencl:{x[0]}:{x[1]}: {err}")
        raise TargetError(f"target '{spec}': no OpenCL device builds a trivial kernel: {'; '.join(why)}")
    if len(parts) <= 2 and all(p.isdigit() for p in parts):
        pi, di = int(parts[0]), int(parts[1]) if len(parts) == 2 else 0
        for x in devs:
            if x[:2] == (pi, di):
                return x
        raise TargetError(f"target '{spec}': no OpenCL device {pi}:{di}; available: {listing}")
    if len(parts) == 1:
        for x in devs:
            if parts[0].lower() in _names(x[2]):
                return x
        raise TargetError(f"target '{spec}': no OpenCL device matches '{parts[0]}'; available: {listing}")
    raise TargetError(f"target '{spec}': expected 'opencl', 'opencl:P', 'opencl:P:D' or 'opencl:NAME'")


@cache
def _probe(platform_index: int, device_index: int) -> str | None:
    """None if the device builds and runs a trivial kernel, else why not."""
    cl = _cl()
    try:
        ctx = device_context(platform_index, device_index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prg = cl.Program(ctx.context, "__kernel void hl_probe(__global int* a) { a[0] = 1; }").build()
        buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, 4)
        prg.hl_probe(ctx.queue, (1,), None, buf)
        ctx.queue.finish()
    except cl.Error as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        return next((ln for ln in lines if ln.startswith("error")), lines[0] if lines else type(e).__name__)[:200]
    return None


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """An OpenCL device, with what identifies it (``key``) and what ran (``provenance``)."""

    platform_index: int = 0
    device_index: int = 0
    platform: str = ""
    driver_version: str = ""
    opencl_version: str = ""
    compute_units: int = 0
    max_work_group_size: int = 0
    max_work_item_sizes: tuple = ()
    local_mem_size: int = 0
    global_mem_size: int = 0
    max_parameter_size: int = 0
    extensions: tuple = ()
    correctly_rounded_div_sqrt: bool = False

    @property
    def fp16(self) -> bool:
        return "cl_khr_fp16" in self.extensions

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    @property
    def build_options(self) -> tuple[str, ...]:
        return ("-cl-fp32-correctly-rounded-divide-sqrt",) if self.correctly_rounded_div_sqrt else ()

    @property
    def provenance(self) -> dict:
        return {"kind": self.kind, "device": self.device, "platform": self.platform,
                "driver_version": self.driver_version, "opencl_version": self.opencl_version,
                "compute_units": self.compute_units, "max_work_group_size": self.max_work_group_size,
                "local_mem_size": self.local_mem_size, "global_mem_size": self.global_mem_size,
                "build_options": list(self.build_options), "host": _platform.node(),
                "index": f"{self.platform_index}:{self.device_index}", "hlotune_version": hlotune_version()}

    @property
    def key(self) -> str:
        ident = {k: v for k, v in self.provenance.items() if k not in ("host", "index", "hlotune_version")}
        return "opencl-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]

    def __str__(self) -> str:
        return f"opencl:{self.platform_index}:{self.device_index}"


def opencl_target(spec: str = "opencl") -> OpenCLTarget:
    """The OpenCLTarget that ``spec`` names; TargetError lists the devices when none matches."""
    cl = _cl()
    pi, di, d = select_device(spec)
    crdiv = bool(d.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    return OpenCLTarget("opencl", d.name.strip(), threads=d.max_compute_units, platform_index=pi,
                        device_index=di, platform=d.platform.name.strip(), driver_version=d.driver_version,
                        opencl_version=d.version, compute_units=d.max_compute_units,
                        max_work_group_size=d.max_work_group_size,
                        max_work_item_sizes=tuple(d.max_work_item_sizes), local_mem_size=d.local_mem_size,
                        global_mem_size=d.global_mem_size, max_parameter_size=d.max_parameter_size,
                        extensions=tuple(d.extensions.split()),
                        correctly_rounded_div_sqrt=crdiv)


class DeviceContext:
    """One context and in-order profiling queue per device, with its built programs."""

    def __init__(self, device):
        cl = _cl()
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.programs: dict[str, object] = {}

    def program(self, target: OpenCLTarget, source: str):
        """The built program of ``source``; cached by source, options, device and driver."""
        cl = _cl()
        opts = list(target.build_options)
        key = hashlib.sha256("\0".join([source, *opts, target.device, target.platform,
                                        target.driver_version]).encode()).hexdigest()
        prg = self.programs.get(key)
        if prg is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # pyopencl warns on any non-empty build log
                try:
                    prg = cl.Program(self.context, source).build(options=opts)
                except cl.Error as e:
                    errs = [ln for ln in str(e).splitlines() if "error" in ln.lower()][:12]
                    if "unknown target CPU" in str(e):
                        errs.append("(this driver's LLVM does not know the host CPU; use another OpenCL "
                                    "driver, e.g. pip install intel-opencl-rt intel-cmplr-lib-rt)")
                    raise CompileError(f"OpenCL build failed on {target.device}:\n" +
                                       ("\n".join(errs) if errs else str(e)[-4000:]), str(e), source) from e
            blog = prg.get_build_info(self.device, cl.program_build_info.LOG).strip()
            if blog:
                log.debug("OpenCL build log: %s", blog[:2000])
            self.programs[key] = prg
        return prg


@cache
def device_context(platform_index: int, device_index: int) -> DeviceContext:
    for pi, di, d in devices():
        if (pi, di) == (platform_index, device_index):
            return DeviceContext(d)
    raise TargetError(f"no OpenCL device {platform_index}:{device_index}")


def _bytes(a: np.ndarray) -> np.ndarray:
    """A uint8 view (bool, bf16 and 0-d arrays copy through the buffer protocol this way)."""
    return a.reshape(-1).view(np.uint8)


class OpenCLKernel(KernelBase):
    """A compiled OpenCL program: call it on numpy arrays like the CPU Kernel. Device buffers
    (arguments and scratch) are allocated on the first call and reused; ``.time(*args)``
    sums the kernels' profiled durations per call, keeping every repeat."""

    def __init__(self, fn: LoweredFunc, program: Program, target: OpenCLTarget, ctx: DeviceContext):
        super().__init__(fn, program.source, target)
        cl = _cl()
        self.program = program
        self._ctx = ctx
        prg = ctx.program(target, program.source)
        self._kernels = [cl.Kernel(prg, ln.name) for ln in program.launches]
        self._bufs: dict[int, object] | None = None

    @property
    def launches(self):
        return self.program.launches

    def _ensure(self) -> None:
        if self._bufs is not None:
            return
        cl = _cl()
        flags = cl.mem_flags.READ_WRITE
        sizes = {id(b): b.size * b.dtype.itemsize for b in self.lowered.args}
        sizes.update({id(sc): sc.nbytes for sc in self.program.scratch})
        try:
            bufs = {k: cl.Buffer(self._ctx.context, flags, max(n, 4)) for k, n in sizes.items()}
            for k, ln in zip(self._kernels, self.launches):
                k.set_args(*[bufs[id(a)] for a in ln.args])
        except cl.Error as e:
            raise DeviceError(f"allocating {sum(sizes.values())} bytes of buffers for '{self.lowered.name}' "
                              f"on {self.target.device} failed: {e}") from e
        self._bufs = bufs

    def _launch(self) -> list:
        cl = _cl()
        evs = []
        for k, ln in zip(self._kernels, self.launches):
            if math.prod(ln.global_size) == 0:
                continue
            try:
                evs.append(cl.enqueue_nd_range_kernel(self._ctx.queue, k, ln.global_size, ln.local_size))
            except cl.Error as e:
                raise DeviceError(f"launching '{ln.name}' (global {ln.global_size}, local {ln.local_size}) on "
                                  f"{self.target.device} failed: {e}") from e
        return evs

    def _upload(self, ins) -> None:
        cl = _cl()
        for a, b in zip(ins, self.inputs):
            if a.nbytes:
                cl.enqueue_copy(self._ctx.queue, self._bufs[id(b)], _bytes(a), is_blocking=False)

    def __call__(self, *args):
        cl = _cl()
        ins, outs = self.prepare(args)
        self._ensure()
        q = self._ctx.queue
        self._upload(ins)
        self._launch()
        try:
            for o, b in zip(outs, self.outputs):
                if o.nbytes:
                    cl.enqueue_copy(q, _bytes(o), self._bufs[id(b)], is_blocking=False)
            q.finish()
        except cl.Error as e:
            raise DeviceError(f"running '{self.lowered.name}' on {self.target.device} failed: {e}") from e
        return outs[0] if len(outs) == 1 else tuple(outs)

    def time(self, *args, repeat: int = 10, min_repeat_ms: float = 50.0, number: int | None = None) -> TimingResult:
        """Seconds per call (the sum of its kernels' profiled durations): ``repeat`` repeats of
        ``number`` calls each (chosen so a repeat lasts ``min_repeat_ms``); every repeat is kept."""
        ins, _ = self.prepare(args)
        if not any(math.prod(ln.global_size) for ln in self.launches):
            return TimingResult((0.0,) * repeat, 1)
        self._ensure()
        self._upload(ins)
        self._ctx.queue.finish()

        def run_n(n: int) -> float:
            evs = [e for _ in range(n) for e in self._launch()]
            self._ctx.queue.finish()
            return sum(e.profile.end - e.profile.start for e in evs) * 1e-9

        return measure(run_n, repeat, min_repeat_ms, number)


def build_opencl(fn: LoweredFunc, target: OpenCLTarget) -> OpenCLKernel:
    """Render ``fn`` for ``target``'s device, build it (cached) and wrap it as a kernel."""
    prog = render_for(fn, target)
    return OpenCLKernel(fn, prog, target, device_context(target.platform_index, target.device_index))


# ---------------------------------------------------------------------------- launch specs

def launch_spec(fn: LoweredFunc, program: Program, target: OpenCLTarget) -> dict:
    """A JSON-able description of a rendered program that ``SpecRunner`` runs without the IR (the
    autotuner's measurement worker): source, device (index and target key), buffers (the
    function's arguments in order, then host scratch) and the launches over buffer indices."""
    bufs = list(fn.args) + list(program.scratch)
    index = {id(b): k for k, b in enumerate(bufs)}
    nbytes = [b.size * b.dtype.itemsize for b in fn.args] + [sc.nbytes for sc in program.scratch]
    return {"source": program.source, "platform_index": target.platform_index,
            "device_index": target.device_index, "target_key": target.key, "device": target.device,
            "num_inputs": fn.num_inputs, "num_args": len(fn.args), "nbytes": nbytes,
            "launches": [{"name": ln.name, "args": [index[id(a)] for a in ln.args],
                          "global_size": list(ln.global_size),
                          "local_size": None if ln.local_size is None else list(ln.local_size)}
                         for ln in program.launches]}


class SpecRunner:
    """Builds and runs a ``launch_spec`` on its device: ``run(inputs, outputs)`` fills the
    outputs, ``time(...)`` sums the launches' profiled durations per call."""

    def __init__(self, spec: dict):
        cl = _cl()
        self.spec = spec
        self.target = opencl_target(f"opencl:{spec['platform_index']}:{spec['device_index']}")
        if self.target.key != spec["target_key"]:
            raise TargetError(f"device opencl:{spec['platform_index']}:{spec['device_index']} is "
                              f"{self.target.device} ({self.target.key}), not the {spec['device']} "
                              f"({spec['target_key']}) the program was rendered for")
        self._ctx = device_context(self.target.platform_index, self.target.device_index)
        prg = self._ctx.program(self.target, spec["source"])
        self._launches = [(cl.Kernel(prg, ln["name"]), ln) for ln in spec["launches"]]
        try:
            self._bufs = [cl.Buffer(self._ctx.context, cl.mem_flags.READ_WRITE, max(n, 4)) for n in spec["nbytes"]]
            for k, ln in self._launches:
                k.set_args(*[self._bufs[a] for a in ln["args"]])
        except cl.Error as e:
            raise DeviceError(f"allocating {sum(spec['nbytes'])} bytes of buffers on {self.target.device} "
                              f"failed: {e}") from e

    def _launch(self) -> list:
        cl = _cl()
        evs = []
        for k, ln in self._launches:
            if math.prod(ln["global_size"]):
                evs.append(cl.enqueue_nd_range_kernel(self._ctx.queue, k, ln["global_size"], ln["local_size"]))
        return evs

    def upload(self, ins) -> None:
        cl = _cl()
        for a, b in zip(ins, self._bufs[:self.spec["num_inputs"]]):
            if a.nbytes:
                cl.enqueue_copy(self._ctx.queue, b, _bytes(np.ascontiguousarray(a)), is_blocking=False)
        self._ctx.queue.finish()

    def run(self, ins, outs) -> None:
        """Upload ``ins``, launch every kernel once, download into ``outs`` (numpy arrays)."""
        cl = _cl()
        if len(ins) + len(outs) != self.spec["num_args"]:
            raise DeviceError(f"the program takes {self.spec['num_args']} arrays, got {len(ins) + len(outs)}")
        self.upload(ins)
        self._launch()
        for o, b in zip(outs, self._bufs[self.spec["num_inputs"]:]):
            if o.nbytes:
                cl.enqueue_copy(self._ctx.queue, _bytes(o), b, is_blocking=False)
        self._ctx.queue.finish()

    def time(self, repeat: int = 10, min_repeat_ms: float = 50.0, number: int | None = None,
             warmup_ms: float = 0.0, stop=None) -> TimingResult:
        """Seconds per call on the uploaded inputs (profiling events, every repeat kept;
        ``stop``: see ``runtime.timing.measure``)."""
        if not self._launches or not any(math.prod(ln["global_size"]) for _, ln in self._launches):
            return TimingResult((0.0,) * repeat, 1)

        def run_n(n: int) -> float:
            evs = [e for _ in range(n) for e in self._launch()]
            self._ctx.queue.finish()
            return sum(e.profile.end - e.profile.start for e in evs) * 1e-9

        return measure(run_n, repeat, min_repeat_ms, number, warmup_ms=warmup_ms, stop=stop)


def _mib(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**k:
            return f"{n / 2**k:.4g} {unit}"
    return f"{n} B"


def describe() -> list[str]:
    """Lines listing every OpenCL platform and device with its limits (``hlotune devices``)."""
    try:
        _cl()
        devs = devices()
    except MissingDependencyError as e:
        return [f"opencl: unavailable: {e}"]
    if not devs:
        return ["opencl: no OpenCL platform or device found (pip install 'hlotune[opencl]' installs CPU drivers; "
                "GPU drivers come with the vendor's OpenCL runtime)"]
    default = None
    try:
        default = select_device("opencl")[:2]
    except TargetError:
        pass
    out, plat = [], None
    for pi, di, d in devs:
        if pi != plat:
            plat = pi
            p = d.platform
            out.append(f"opencl platform {pi}: {p.name.strip()} ({p.vendor.strip()}, {p.version.strip()})")
        t = opencl_target(f"opencl:{pi}:{di}")
        err = _probe(pi, di)
        tag = " [default for 'opencl']" if (pi, di) == default else ""
        out += [f"  opencl:{pi}:{di}  {t.device}{tag}",
                f"    driver {t.driver_version}, {t.opencl_version.strip()}, {t.compute_units} compute units",
                f"    max work-group {t.max_work_group_size}, work-item sizes {list(t.max_work_item_sizes)}, "
                f"local mem {_mib(t.local_mem_size)}, global mem {_mib(t.global_mem_size)}, "
                f"max parameter size {t.max_parameter_size} bytes",
                f"    fp16 {'yes' if t.fp16 else 'no'}, fp64 {'yes' if t.fp64 else 'no'}, "
                f"builds kernels: {'yes' if err is None else 'no (' + err + ')'}, key {t.key}"]
    return out
