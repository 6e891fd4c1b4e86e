"""Tuned modules out as a library that runs without Python or a compiler (cpu target).

``export_library(graph, out)`` writes into folder ``out``:

- ``libhlotune_module.so``: every kernel of the compiled graph (each segment's C, compiled on
  its own with only its entry left global, so the segments' names never clash) and a driver
  running the module's whole program: the kernels in order, intermediate buffers allocated
  per call, constants embedded;
- ``hlotune_module.h``: one entry point, ``int hlotune_run(const void* const inputs[],
  void* const outputs[])`` (0, or 1 when a buffer could not be allocated), with every input's
  and output's dtype and shape;
- ``example.c``: a short program calling it on zero inputs;
- ``hlotune_module.json``: what ``load_library`` checks (inputs, outputs, the target and the
  instruction sets the code was compiled for).

A module with steps that run on the host (a sort by a comparator that is no key order, a loop
with one inside), that call scipy's LAPACK (bound at load time in Python), or control flow
calling graphs through addresses of this process (``runtime.nested``) is refused, naming them.
``load_library(folder)`` runs an export from Python with ctypes: no compiler needed, and refused
on a CPU without the instructions it was built for.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import os
import shlex
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError, ExportError, KernelArgumentError, ResourceError
from .build import Kernel
from .cachedir import scratch_dir
from .cpu import CCompiler
from .isa import detect
from .lapack import LapackKernel
from .module import CompiledGraph, _ExternStep, _KernelStep, _key
from .nested import NestedKernel
from .targets import cpu_model, hlotune_version

log = logging.getLogger(__name__)

LIB, HEADER, EXAMPLE, MANIFEST = "libhlotune_module.so", "hlotune_module.h", "example.c", "hlotune_module.json"
FORMAT = 1

#: /proc/cpuinfo's names of the instruction sets runtime/isa.py names after compiler macros
_CPUINFO = {"avx512fp16": "avx512_fp16", "avx512bf16": "avx512_bf16", "avx512vnni": "avx512_vnni",
            "amx": "amx_tile", "neon": "asimd"}


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if r.returncode:
        raise CompileError(f"{what} failed: {shlex.join(cmd)}\n{r.stderr[-2000:]}")


def _spec(t, name: str) -> dict:
    return {"name": name, "shape": list(t.shape), "dtype": t.dtype.name,
            "bytes": math.prod(t.shape) * np.dtype(t.dtype.np).itemsize}


def _c_bytes(a: np.ndarray, name: str) -> str:
    raw = np.ascontiguousarray(a).tobytes() or b"\0"
    body = ",".join(str(b) for b in raw)
    return f"static const unsigned char {name}[{len(raw)}] __attribute__((aligned(64))) = {{{body}}};"


def _nbytes(t) -> int:
    """Bytes of a tensor or buffer (at least 1: malloc(0) may give NULL)."""
    return max(1, math.prod(t.shape) * np.dtype(t.dtype.np).itemsize)


def _driver(graph: CompiledGraph, kernels: list[_KernelStep]) -> str:
    """The C driver: ``hlotune_run`` calls every segment in order on its buffers."""
    g = graph.graph
    where: dict = {_key(t): f"(void*)inputs[{i}]" for i, t in enumerate(g.inputs)}
    lines = ["#include <stdlib.h>", "#include <string.h>", "#include <stdint.h>"]
    for n, (k, a) in enumerate(graph.constants.items()):
        lines.append(_c_bytes(a, f"hl_const{n}"))
        where[k] = f"(void*)hl_const{n}"
    lines += [f"int hlx_seg{n}_run(void** args);" for n in range(len(kernels))]
    out_of = {}
    for j, t in enumerate(g.outputs):
        out_of.setdefault(_key(t), j)
    body, temps = [], []
    for n, step in enumerate(kernels):
        fn = step.kernel.lowered
        for k, b in zip(step.outputs, fn.args[fn.num_inputs:]):
            if k in out_of and k not in where:
                where[k] = f"outputs[{out_of[k]}]"
            elif k not in where:
                where[k] = f"t{len(temps)}"
                temps.append((where[k], _nbytes(b)))
        args = ", ".join(where[k] for k in (*step.inputs, *step.outputs))
        body += [f"  {{ void* a[] = {{{args}}};", f"    if (hlx_seg{n}_run(a)) {{ status = 1; goto done; }} }}"]
    for j, t in enumerate(g.outputs):       # outputs no kernel wrote there: inputs, constants, repeats
        src = where.get(_key(t))
        size = math.prod(t.shape) * np.dtype(t.dtype.np).itemsize
        if src != f"outputs[{j}]" and size:
            body.append(f"  memcpy(outputs[{j}], {src}, {size});")
    lines += ["int hlotune_run(const void* const inputs[], void* const outputs[]) {", "  int status = 0;"]
    lines += [f"  void* {name} = malloc({size});" for name, size in temps]
    if temps:
        lines.append(f"  if (!({' && '.join(n for n, _ in temps)})) {{ status = 1; goto done; }}")
    lines += body + ["done:"] + [f"  free({name});" for name, _ in temps] + ["  return status;", "}"]
    return "\n".join(lines) + "\n"


def _header(name: str, ins: list[dict], outs: list[dict], target: str) -> str:
    def table(kind: str, specs: list[dict]) -> list[str]:
        ranks = ", ".join(str(len(s["shape"])) for s in specs) or "0"
        dims = ", ".join(str(d) for s in specs for d in s["shape"]) or "0"
        types = ", ".join(f'"{s["dtype"]}"' for s in specs) or '""'
        sizes = ", ".join(str(s["bytes"]) for s in specs) or "0"
        doc = [f" *   {kind} {k} '{s['name']}': {s['dtype']}{s['shape']}" for k, s in enumerate(specs)]
        return ["/*", *doc, " */", f"static const int hlotune_{kind}_ranks[] = {{{ranks}}};",
                f"static const int64_t hlotune_{kind}_dims[] = {{{dims}}};  /* every {kind}'s dims in turn */",
                f"static const char* const hlotune_{kind}_dtypes[] = {{{types}}};",
                f"static const int64_t hlotune_{kind}_bytes[] = {{{sizes}}};"]
    return "\n".join([
        f"/* hlotune module '{name}', tuned for {target}; written by hlotune {hlotune_version()}. */",
        "#ifndef HLOTUNE_MODULE_H", "#define HLOTUNE_MODULE_H", "#include <stdint.h>",
        "#ifdef __cplusplus", 'extern "C" {', "#endif",
        f"#define HLOTUNE_NUM_INPUTS {len(ins)}", f"#define HLOTUNE_NUM_OUTPUTS {len(outs)}",
        *table("input", ins), *table("output", outs),
        "/* Run the module: inputs[k] and outputs[k] point to C-contiguous (row-major) arrays of the",
        " * dtypes and shapes above; outputs are written. Returns 0, or 1 when a buffer could not be",
        " * allocated. Calls may run from several threads at once (no state is kept). */",
        "int hlotune_run(const void* const inputs[], void* const outputs[]);",
        "#ifdef __cplusplus", "}", "#endif", "#endif", ""])


_CTYPES = {"float32": ("float", "%g"), "float64": ("double", "%g"), "int32": ("int32_t", "%d"),
           "int64": ("int64_t", "%lld"), "int8": ("int8_t", "%d"), "uint8": ("uint8_t", "%u")}


def _example(ins: list[dict], outs: list[dict]) -> str:
    first = outs[0]
    ct, fmt = _CTYPES.get(first["dtype"], ("unsigned char", "%u"))
    cast = "(long long)" if fmt == "%lld" else ""
    return "\n".join([
        "/* Calls the exported module on zero inputs and prints its first output's first element:",
        " *   gcc example.c -L. -lhlotune_module -Wl,-rpath,. -o example && ./example */",
        "#include <stdio.h>", "#include <stdlib.h>", "#include <stdint.h>", '#include "hlotune_module.h"', "",
        "int main(void) {", "  void* in[HLOTUNE_NUM_INPUTS + 1];", "  void* out[HLOTUNE_NUM_OUTPUTS + 1];",
        "  for (int k = 0; k < HLOTUNE_NUM_INPUTS; ++k) in[k] = calloc(1, hlotune_input_bytes[k] + 1);",
        "  for (int k = 0; k < HLOTUNE_NUM_OUTPUTS; ++k) out[k] = calloc(1, hlotune_output_bytes[k] + 1);",
        "  if (hlotune_run((const void* const*)in, out)) { fprintf(stderr, \"out of memory\\n\"); return 1; }",
        f'  printf("{fmt}\\n", {cast}(({ct}*)out[0])[0]);',
        "  return 0;", "}", ""])


def export_library(graph: CompiledGraph, out, name: str = "module", input_names=None, output_names=None,
                   compiler: CCompiler | None = None) -> Path:
    """Write ``graph`` (compiled for the cpu) as a library folder ``out`` (see the module
    docstring); returns the folder. ExportError names the host-only ops of a module that has
    some."""
    host = [f"{s.op.kind} ('{s.op.name}')" for s in graph.steps if isinstance(s, _ExternStep)]
    host += [f"{s.kernel.routine} call ('{s.kernel.lowered.name}': scipy's LAPACK)" for s in graph.steps
             if isinstance(s, _KernelStep) and isinstance(s.kernel, LapackKernel)]
    host += [f"control flow calling graphs compiled in this process ('{s.kernel.lowered.name}')"
             for s in graph.steps if isinstance(s, _KernelStep) and isinstance(s.kernel, NestedKernel)]
    if host:
        kinds = ", ".join(sorted(set(host)))
        raise ExportError(f"module '{name}' has ops that run on the host and cannot be exported: {kinds}")
    kernels = [s for s in graph.steps if isinstance(s, _KernelStep)]
    if not all(isinstance(s.kernel, Kernel) for s in kernels):
        raise ExportError(f"only modules compiled to C for the cpu are exported as libraries, not for {graph.target}")
    compiler = compiler or getattr(graph.target, "compiler", None) or CCompiler()
    g = graph.graph
    ins = [_spec(t, n) for t, n in zip(g.inputs, input_names or g.input_names)]
    outs = [_spec(t, n) for t, n in zip(g.outputs, output_names or [f"out{k}" for k in range(len(g.outputs))])]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    flags = [f for f in compiler.flags if f != "-shared"]
    with scratch_dir("export") as tmp:
        tmp = Path(tmp)
        objs = []
        for n, step in enumerate(kernels):
            src = tmp / f"seg{n}.c"
            src.write_text(step.kernel.source)
            obj = tmp / f"seg{n}.o"
            _run([compiler.cc, *flags, "-c", str(src), "-o", str(obj), f"-Dhl_run=hlx_seg{n}_run",
                  f"-Dhl_entry=hlx_seg{n}_entry", f"-Dhl_bench=hlx_seg{n}_bench"], f"compiling segment {n}")
            _run(["objcopy", f"--keep-global-symbol=hlx_seg{n}_run", str(obj)], f"localizing segment {n}")
            objs.append(str(obj))
        drv = tmp / "driver.c"
        drv.write_text(_driver(graph, kernels))
        _run([compiler.cc, *flags, "-c", str(drv), "-o", str(tmp / "driver.o")], "compiling the driver")
        lib = tmp / LIB
        _run([compiler.cc, *compiler.flags, *objs, str(tmp / "driver.o"), "-o", str(lib), "-lm"], "linking")
        os.replace(lib, out / LIB)
    hw = detect(compiler.cc, tuple(compiler.flags), graph.target.threads)
    (out / HEADER).write_text(_header(name, ins, outs, graph.target.key))
    (out / EXAMPLE).write_text(_example(ins, outs))
    manifest = {"format": FORMAT, "name": name, "hlotune": hlotune_version(), "target": graph.target.key,
                "cpu": cpu_model(), "isa": list(hw.isa), "library": LIB, "entry": "hlotune_run",
                "inputs": ins, "outputs": outs}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    log.info("exported '%s' (%d kernels) to %s", name, len(kernels), out)
    return out


@cache
def cpu_flags() -> frozenset[str] | None:
    """This CPU's instruction-set flags (/proc/cpuinfo), or None where the OS does not say."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


class LoadedLibrary:
    """An exported module, loaded: call it on numpy arrays (one per input, in order); returns one
    array, or a tuple for several outputs."""

    def __init__(self, folder: Path, manifest: dict):
        self.folder, self.manifest = folder, manifest
        self._lib = ctypes.CDLL(str(folder / manifest["library"]))
        self._run = getattr(self._lib, manifest["entry"])
        self._run.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        self._run.restype = ctypes.c_int
        self._ins = [(s["name"], _np_dtype(s["dtype"]), tuple(s["shape"])) for s in manifest["inputs"]]
        self._outs = [(_np_dtype(s["dtype"]), tuple(s["shape"])) for s in manifest["outputs"]]
        self._in_t = ctypes.c_void_p * max(1, len(self._ins))
        self._out_t = ctypes.c_void_p * max(1, len(self._outs))

    def __call__(self, *arrays):
        if len(arrays) != len(self._ins):
            raise KernelArgumentError(f"{self.manifest['name']} takes {len(self._ins)} inputs, got {len(arrays)}")
        ins = []
        for (nm, dt, shape), a in zip(self._ins, arrays):
            a = np.asarray(a)
            if a.dtype != dt or a.shape != shape:
                raise KernelArgumentError(f"input '{nm}' must be {dt}{list(shape)}, got {a.dtype}{list(a.shape)}")
            ins.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
        outs = [np.empty(shape, dt) for dt, shape in self._outs]
        if self._run(self._in_t(*[a.ctypes.data for a in ins]), self._out_t(*[o.ctypes.data for o in outs])):
            raise ResourceError(f"{self.manifest['name']}: a buffer could not be allocated")
        return outs[0] if len(outs) == 1 else tuple(outs)


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name if name != "bool" else np.bool_)


def load_library(folder) -> LoadedLibrary:
    """An exported library folder, loaded (ExportError for a folder that is no export, or a CPU
    without the instructions it was compiled for)."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("format") != FORMAT or not (folder / manifest["library"]).is_file():
            raise ValueError("unknown format or no library")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExportError(f"{folder} is not an hlotune library export ({type(e).__name__}: {e})") from None
    have = cpu_flags()
    if have is not None:
        missing = [i for i in manifest.get("isa", []) if _CPUINFO.get(i, i) not in have]
        if missing:
            raise ExportError(f"{folder}: built for {manifest.get('cpu')} with {', '.join(missing)}, which this "
                              f"CPU ({cpu_model()}) lacks; export it again on this machine")
    else:
        log.warning("cannot read this CPU's instruction sets: running %s unchecked", folder)
    return LoadedLibrary(folder, manifest)


__all__ = ["LoadedLibrary", "export_library", "load_library"]
