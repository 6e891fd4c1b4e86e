"""Compiled CPU modules as one XLA FFI handler: the shim library and the kernel plans it runs.

The shim (C++ against ``xla/ffi/api/ffi.h``, compiled once with the system C++ compiler and
cached like kernels) exports one typed FFI handler, ``hlotune_call``, that runs a *plan*: the
module's compiled kernels (each library's ``int hl_run(void** args)``, inputs then outputs) in
order over the FFI operands, the result buffers, the module's constants and scratch buffers for
the values between kernels, then copies into results that are inputs, constants or repeats.
Plans are registered in the shim (``Plan.register``) and named by an integer attribute of the
custom call; a registered plan, and the libraries and constants it points into, live until the
process ends (a jitted JAX program may call it any time).

Thread safety: the handler keeps no state between calls but each plan's thread governor
(scratch is allocated per call; the plan table and each governor are guarded by a mutex), so XLA
may call it from several threads at once. Threads: as in hlotune's own runtime, each call runs
the kernels' OpenMP regions with the count its plan's governor chooses (runtime/governor_cc.py,
the policy of runtime/threads.py: the target's count on a quiet machine, fewer when cores are
busy), set on the calling thread and put back after the call.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..dsl.errors import CompileError
from . import threads
from .cachedir import cache_dir, install, scratch_dir, unsafe_file
from .governor_cc import GOVERNOR_CC
from .module import CompiledGraph, _ExternStep, _key

log = logging.getLogger(__name__)

#: the handler's symbol (and the FFI target name it is registered under)
HANDLER = "hlotune_call"

_SHIM = r"""
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
typedef int (*hl_run_t)(void**);
@GOVERNOR@
namespace {
struct Plan {
  std::vector<int64_t> arg_bytes, ret_bytes, temp_bytes;
  std::vector<void*> consts;
  std::vector<hl_run_t> fns;
  std::vector<int64_t> offsets, slots, copies;   // step k reads slots[offsets[k]..offsets[k+1])
  std::unique_ptr<hlgov::Governor> gov;          // the thread count of each call
};
std::mutex plans_mu;
std::vector<std::unique_ptr<Plan>> plans;

const Plan* find_plan(int64_t id) {
  std::lock_guard<std::mutex> g(plans_mu);
  return id >= 0 && id < (int64_t)plans.size() ? plans[id].get() : nullptr;
}

struct Scratch {
  std::vector<void*> bufs;
  ~Scratch() { for (void* p : bufs) free(p); }
};

ffi::Error fail(ffi::ErrorCode code, const std::string& what) { return ffi::Error(code, "hlotune: " + what); }

// the OpenMP runtime's thread limit of the calling thread (the one the kernels link; set once)
void (*omp_set)(int) = nullptr;
int (*omp_get)() = nullptr;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// a call's thread limit on the calling thread, put back when the call ends (however it ends)
struct Limit {
  int before = -1;
  Limit(int n, int most) {
    if (n != most && omp_set && omp_get) { before = omp_get(); omp_set(n); }
  }
  ~Limit() { if (before >= 0) omp_set(before); }
};
}  // namespace

extern "C" void hlotune_ffi_set_omp(void* set, void* get) {
  omp_set = reinterpret_cast<void (*)(int)>(set);
  omp_get = reinterpret_cast<int (*)()>(get);
}

extern "C" int64_t hlotune_ffi_add_plan(int64_t n_args, const int64_t* arg_bytes, int64_t n_rets,
    const int64_t* ret_bytes, int64_t n_consts, void* const* consts, int64_t n_temps, const int64_t* temp_bytes,
    int64_t n_steps, void* const* fns, const int64_t* offsets, const int64_t* slots, int64_t n_copies,
    const int64_t* copies, int64_t most_threads, int64_t governed) {
  auto p = std::make_unique<Plan>();
  p->gov = std::make_unique<hlgov::Governor>((int)most_threads, governed != 0 && omp_set && omp_get);
  p->arg_bytes.assign(arg_bytes, arg_bytes + n_args);
  p->ret_bytes.assign(ret_bytes, ret_bytes + n_rets);
  p->consts.assign(consts, consts + n_consts);
  p->temp_bytes.assign(temp_bytes, temp_bytes + n_temps);
  for (int64_t k = 0; k < n_steps; ++k) p->fns.push_back(reinterpret_cast<hl_run_t>(fns[k]));
  p->offsets.assign(offsets, offsets + n_steps + 1);
  p->slots.assign(slots, slots + offsets[n_steps]);
  p->copies.assign(copies, copies + 3 * n_copies);
  std::lock_guard<std::mutex> g(plans_mu);
  plans.push_back(std::move(p));
  return (int64_t)plans.size() - 1;
}

static ffi::Error hl_call(int64_t plan, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  const Plan* p = find_plan(plan);
  if (!p) return fail(ffi::ErrorCode::kInvalidArgument, "no kernel plan " + std::to_string(plan) +
                      " in this process (plans do not outlive the process that registered them)");
  if (args.size() != p->arg_bytes.size() || rets.size() != p->ret_bytes.size())
    return fail(ffi::ErrorCode::kInvalidArgument, "plan " + std::to_string(plan) + " takes " +
                std::to_string(p->arg_bytes.size()) + " operands and " + std::to_string(p->ret_bytes.size()) +
                " results, got " + std::to_string(args.size()) + " and " + std::to_string(rets.size()));
  std::vector<void*> slot;
  for (size_t i = 0; i < args.size(); ++i) {
    auto b = args.get<ffi::AnyBuffer>(i);
    if (b.has_error()) return b.error();
    if ((int64_t)b->size_bytes() != p->arg_bytes[i])
      return fail(ffi::ErrorCode::kInvalidArgument, "operand " + std::to_string(i) + " has " +
                  std::to_string(b->size_bytes()) + " bytes, the kernel takes " + std::to_string(p->arg_bytes[i]));
    slot.push_back(b->untyped_data());
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    auto r = rets.get<ffi::AnyBuffer>(i);
    if (r.has_error()) return r.error();
    if ((int64_t)(*r)->size_bytes() != p->ret_bytes[i])
      return fail(ffi::ErrorCode::kInvalidArgument, "result " + std::to_string(i) + " has " +
                  std::to_string((*r)->size_bytes()) + " bytes, the kernel makes " + std::to_string(p->ret_bytes[i]));
    slot.push_back((*r)->untyped_data());
  }
  slot.insert(slot.end(), p->consts.begin(), p->consts.end());
  Scratch scratch;
  for (int64_t n : p->temp_bytes) {
    void* q = nullptr;
    if (posix_memalign(&q, 64, n ? (size_t)n : 64)) return fail(ffi::ErrorCode::kResourceExhausted,
        "cannot allocate " + std::to_string(n) + " bytes between kernels");
    scratch.bufs.push_back(q);
    slot.push_back(q);
  }
  hlgov::Governor& gov = *p->gov;
  int timed = 0, n = gov.active ? gov.begin(&timed) : gov.counts[0];
  Limit limit(n, gov.counts[0]);
  double t0 = timed ? seconds_now() : 0.0;
  std::vector<void*> a;
  for (size_t k = 0; k < p->fns.size(); ++k) {
    a.clear();
    for (int64_t s = p->offsets[k]; s < p->offsets[k + 1]; ++s) a.push_back(slot[p->slots[s]]);
    if (p->fns[k](a.data())) return fail(ffi::ErrorCode::kResourceExhausted,
        "kernel " + std::to_string(k) + " could not allocate its scratch buffers");
  }
  for (size_t c = 0; c < p->copies.size(); c += 3)
    if (p->copies[c + 2]) std::memcpy(slot[p->copies[c]], slot[p->copies[c + 1]], (size_t)p->copies[c + 2]);
  if (timed) gov.end(n, t0, seconds_now());
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(hlotune_call, hl_call,
    ffi::Ffi::Bind().Attr<int64_t>("plan").RemainingArgs().RemainingRets());
""".replace("@GOVERNOR@", GOVERNOR_CC)


def _nbytes(t) -> int:
    """Bytes of tensor or buffer ``t`` (shape and hlotune dtype)."""
    return int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize


def unsupported(graph: CompiledGraph) -> str | None:
    """Why ``graph`` cannot run as one FFI handler (a step that runs on the host, kernels that
    are not host C libraries), or None."""
    for s in graph.steps:
        if isinstance(s, _ExternStep):
            return f"its '{s.op.kind}' op '{s.op.name}' runs on the host between kernels"
        if _run_symbol(s.kernel) is None:
            return f"its kernels run on {graph.target}, and the FFI handler calls host C kernels (hl_run)"
    return None


@dataclass(frozen=True, eq=False)
class Plan:
    """The kernels of a CompiledGraph as slot lists (see the module docstring): slots are the
    operands, then the results, then constants, then scratch buffers."""

    graph: CompiledGraph
    arg_bytes: tuple[int, ...]
    ret_bytes: tuple[int, ...]
    consts: tuple[np.ndarray, ...]
    temp_bytes: tuple[int, ...]
    steps: tuple[tuple[int, tuple[int, ...]], ...]     # (kernel index in graph.kernels, slots)
    copies: tuple[tuple[int, int, int], ...]            # (to slot, from slot, bytes)

    @classmethod
    def of(cls, graph: CompiledGraph) -> Plan:
        """The plan of ``graph``; ``unsupported(graph)`` must be None."""
        why = unsupported(graph)
        if why is not None:
            raise ValueError(f"graph cannot run as an FFI handler: {why}")
        g = graph.graph
        slot = {_key(t): k for k, t in enumerate(g.inputs)}
        nin, nout = len(g.inputs), len(g.outputs)
        produced = {k for s in graph.steps for k in s.outputs}
        for j, t in enumerate(g.outputs):          # a kernel writes each module output in place
            if _key(t) in produced and _key(t) not in slot:
                slot[_key(t)] = nin + j
        consts = []
        for k, v in graph.constants.items():
            if k not in slot:
                slot[k] = nin + nout + len(consts)
                consts.append(v)
        temps, steps = [], []
        base = nin + nout + len(consts)
        for i, s in enumerate(graph.steps):
            bufs = s.kernel.lowered.args[s.kernel.lowered.num_inputs:]
            for k, b in zip(s.outputs, bufs):
                if k not in slot:
                    slot[k] = base + len(temps)
                    temps.append(_nbytes(b))
            steps.append((i, tuple(slot[k] for k in list(s.inputs) + list(s.outputs))))
        copies = tuple((nin + j, slot[_key(t)], _nbytes(t)) for j, t in enumerate(g.outputs)
                       if slot[_key(t)] != nin + j)
        return cls(graph, tuple(_nbytes(t) for t in g.inputs), tuple(_nbytes(t) for t in g.outputs),
                   tuple(consts), tuple(temps), tuple(steps), copies)

    def register(self, shim: ctypes.CDLL) -> int:
        """Hand the plan to the loaded shim; returns its id (the custom call's ``plan``)."""
        i64 = ctypes.c_int64

        def arr(values, ty=i64):
            values = list(values)
            return (ty * max(1, len(values)))(*values)

        fns = [ctypes.cast(_run_symbol(self.graph.kernels[i]), ctypes.c_void_p).value for i, _ in self.steps]
        offsets = np.cumsum([0] + [len(s) for _, s in self.steps]).tolist()
        slots = [x for _, s in self.steps for x in s]
        add = shim.hlotune_ffi_add_plan
        add.restype = i64
        return int(add(i64(len(self.arg_bytes)), arr(self.arg_bytes), i64(len(self.ret_bytes)), arr(self.ret_bytes),
                       i64(len(self.consts)), arr((c.ctypes.data for c in self.consts), ctypes.c_void_p),
                       i64(len(self.temp_bytes)), arr(self.temp_bytes), i64(len(fns)), arr(fns, ctypes.c_void_p),
                       arr(offsets), arr(slots), i64(len(self.copies)), arr(x for c in self.copies for x in c),
                       i64(self.threads), i64(self.governed)))

    @property
    def threads(self) -> int:
        """The most threads a call runs (the target's)."""
        gov = self.graph.governor
        return gov.counts[0] if gov is not None else 1

    @property
    def governed(self) -> bool:
        """Whether calls choose their thread count as hlotune's own runtime does (runtime/threads.py)."""
        gov = self.graph.governor
        return gov is not None and gov.active


def _run_symbol(kernel):
    """``int hl_run(void**)`` of a host C kernel (runtime/build.py's Kernel), else None."""
    lib = getattr(getattr(kernel, "_lib", None), "lib", None)
    return None if lib is None else getattr(lib, "hl_run", None)


_SHIMS: dict[str, ctypes.CDLL] = {}


def shim(include_dir: str | os.PathLike) -> ctypes.CDLL:
    """The shim library built against the FFI headers in ``include_dir`` (``jax.ffi.include_dir()``),
    compiled with ``$CXX`` (default g++) and cached by source, headers and compiler; loaded once
    per process."""
    inc = Path(include_dir)
    headers = b"".join((inc / "xla" / "ffi" / "api" / h).read_bytes() for h in ("ffi.h", "api.h", "c_api.h"))
    cxx = os.environ.get("CXX", "g++")
    flags = ["-O2", "-std=c++17", "-fPIC", "-shared", f"-I{inc}"]
    key = hashlib.sha256(_SHIM.encode() + headers + " ".join([cxx, *flags[:-1]]).encode()).hexdigest()[:24]
    if key not in _SHIMS:
        lib = ctypes.CDLL(str(_compile(key, cxx, flags)))
        omp = threads._omp()
        if omp is not None:
            lib.hlotune_ffi_set_omp(*(ctypes.cast(f, ctypes.c_void_p) for f in omp))
        _SHIMS[key] = lib
    return _SHIMS[key]


def _compile(key: str, cxx: str, flags: list[str]) -> Path:
    out = cache_dir("cpu") / f"ffi_{key}.so"
    if os.path.lexists(out) and unsafe_file(out) is None:
        return out
    with scratch_dir("ffi") as tmp:
        src, so = Path(tmp) / "shim.cc", Path(tmp) / "shim.so"
        src.write_text(_SHIM)
        cmd = [cxx, *flags, str(src), "-o", str(so)]
        log.debug("compiling the FFI shim: %s", shlex.join(cmd))
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"C++ compiler '{cxx}' cannot build the FFI shim: {e} (set $CXX to a C++17 "
                               "compiler)") from e
        if r.returncode != 0:
            raise CompileError(f"the FFI shim does not compile ({cxx}):\n{r.stderr[-4000:]}", r.stderr, _SHIM)
        os.chmod(so, 0o755)
        install(so, out)
    return out


__all__ = ["HANDLER", "Plan", "shim", "unsupported"]
