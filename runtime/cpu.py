"""The CPU device: compile C with the system compiler into a shared library (cached by
source + flags + compiler version), load it with ctypes, call and time it."""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..dsl.errors import CompileError, ResourceError
from .cachedir import cache_dir as checked_cache_dir
from .cachedir import install, scratch_dir, unsafe_file

log = logging.getLogger(__name__)

#: how long an OpenMP thread with no work spins before it sleeps (libgomp's GOMP_SPINCOUNT; its own
#: default is 300000, and PASSIVE is 0). Measured (bench/threading_cpu.py, bench/corpus_cpu.py):
#: sleeping at once costs every small kernel a wake-up (bias_relu 84 us against 18 us), spinning
#: long takes a core that a busy neighbour process (or a descheduled thread of ours) needs.
SPIN_COUNT = "10000"

# libgomp reads this when our first kernel loads it; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT

#: -fno-tree-switch-conversion: gcc 12 miscompiles vectorized, if-converted code reading the lookup table
#: it makes of a select chain over constants (a complex sign of a NaN constant lost its NaN part)
#: -fno-ivopts: with -fwrapv, gcc 12.2 (-O3, AVX2/AVX-512) computed the wrong rows of a dot's tail block
#: whose vectorized epilogue read two more inputs (induction-variable optimization with loop-invariant
#: motion and header copying; any one of the three off avoids it): tests/test_gemm.py's epilogue test
#: found it. Off, the micro-kernels lose under 3% (fp32 matmul 1024: 206 -> 200 GFLOP/s, AMD EPYC)
#: -fno-trapping-math: kernels never read the floating-point exception flags, and with them kept
#: gcc 12 vectorizes no loop whose if-conversion would speculate an operation (hl_logf's subnormal
#: scaling, sign, floorf's rounding without the inexact flag): results are the same IEEE values.
#: 128x8192 float32 on 2 threads (AMD EPYC): log 4731 -> 180 us, sign 627 -> 46, floor 142 -> 45
DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-fwrapv",
                 "-fno-tree-switch-conversion", "-fno-ivopts", "-fPIC", "-shared")


@dataclass(frozen=True)
class CCompiler:
    """A C compiler command and its flags (``-O3 -march=native -fopenmp`` by default)."""

    cc: str = field(default_factory=lambda: os.environ.get("CC", "gcc"))
    flags: tuple[str, ...] = DEFAULT_FLAGS

    @property
    def version(self) -> str:
        return compiler_version(self.cc)


@cache
def compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"C compiler '{cc}' cannot be run: {e}") from e
    return out.stdout.splitlines()[0] if out.stdout else cc


def cache_dir() -> Path:
    """Where compiled kernels are cached (``$HLOTUNE_CACHE/cpu``, default ``~/.cache/hlotune``),
    checked to be private to this user (runtime/cachedir.py)."""
    return checked_cache_dir("cpu")


#: the system headers generated kernels include, precompiled once per compiler and flags (gcc):
#: parsing them was 60% of compiling a dot kernel (0.27 of 0.43 s); with the precompiled header
#: the compile took 0.15-0.23 s against 0.44-0.55 s, the code the same instruction for instruction
PRELUDE = ("#include <stdint.h>\n#include <stdbool.h>\n#include <string.h>\n#include <stdlib.h>\n"
           "#include <math.h>\n#include <time.h>\n#if defined(__x86_64__) || defined(__i386__)\n"
           "#include <immintrin.h>\n#endif\n")
#: flags that only link, left out of the precompiled header's compile
_LINK_ONLY = ("-shared",)


@cache
def prelude_header(cc: str, flags: tuple[str, ...]) -> Path | None:
    """``hl_prelude.h`` (``PRELUDE``) beside its precompiled ``.gch`` for gcc with ``flags``,
    built on first use in the private cache; None for other compilers or when the build fails
    (kernels then compile without it). gcc checks that a ``.gch`` matches the compile's options
    and reads the header's text where it does not."""
    version = compiler_version(cc)
    if "gcc" not in version.lower():
        return None
    key = hashlib.sha256("\0".join([PRELUDE, *flags, version]).encode()).hexdigest()[:24]
    folder = cache_dir() / f"pch_{key}"
    head, gch = folder / "hl_prelude.h", folder / "hl_prelude.h.gch"
    if os.path.lexists(gch) and unsafe_file(gch) is None and os.path.lexists(head) and unsafe_file(head) is None:
        return head
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        with scratch_dir("pch") as tmp:
            h = Path(tmp) / "hl_prelude.h"
            h.write_text(PRELUDE)
            cmd = [cc, *(f for f in flags if f not in _LINK_ONLY), "-x", "c-header", str(h), "-o", f"{h}.gch"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            if r.returncode != 0:
                log.debug("precompiled header not built (%s): %s", shlex.join(cmd), r.stderr[-2000:])
                return None
            os.chmod(h, 0o644)
            os.chmod(f"{h}.gch", 0o644)
            install(h, head)
            install(Path(f"{h}.gch"), gch)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.debug("precompiled header not built: %s", e)
        return None
    return head


def compile_c(source: str, compiler: CCompiler | None = None, timeout: float = 300) -> Path:
    """Compile ``source`` to a shared library; returns its path (from the cache when present and
    private to this user; a cached file others could have written is rebuilt)."""
    compiler = compiler or CCompiler()
    key = hashlib.sha256("\0".join([source, *compiler.flags, compiler.version]).encode()).hexdigest()[:24]
    out = cache_dir() / f"k_{key}.so"
    if os.path.lexists(out):
        why = unsafe_file(out)
        if why is None:
            return out
        log.warning("cached kernel %s %s: rebuilding it", out, why)
    with scratch_dir("build") as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_text(source)
        tmp_so = Path(tmp) / "kernel.so"
        pre = prelude_header(compiler.cc, tuple(compiler.flags))
        cmd = [compiler.cc, *compiler.flags, *(("-include", str(pre)) if pre else ()), str(src), "-o", str(tmp_so),
               "-lm"]
        log.debug("compiling: %s", shlex.join(cmd))
        # own process group, so a timeout also ends the compiler's children (cc1, as)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise CompileError(f"C compiler timed out after {timeout:g}s", "", source) from e
        r = subprocess.CompletedProcess(cmd, p.returncode, "", err)
        if r.returncode != 0:
            raise CompileError(f"C compilation failed ({compiler.cc}):\n{r.stderr[-4000:]}", r.stderr, source)
        os.chmod(tmp_so, 0o755)   # never group/world-writable, whatever the umask
        install(tmp_so, out)      # atomic, and across filesystems (a tmpfs TMPDIR)
    return out


@cache
def _ptr_array(n: int):
    return ctypes.c_void_p * n


class Library:
    """A loaded kernel library with ``hl_entry(void**)`` and ``hl_bench(void**, n) -> seconds``.

    Generated libraries also export ``int hl_run(void**)``, nonzero when the kernel could not
    allocate its heap scratch (``hl_bench`` then returns a negative time): :meth:`entry` and
    :meth:`bench` raise MemoryError for those."""

    def __init__(self, path: Path):
        why = unsafe_file(Path(path))
        if why is not None:
            raise CompileError(f"refusing to load kernel library {path}: it {why}")
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        ptrs = ctypes.POINTER(ctypes.c_void_p)
        self._entry = self.lib.hl_entry
        self._entry.argtypes, self._entry.restype = [ptrs], None
        self._run = getattr(self.lib, "hl_run", None)
        if self._run is not None:
            self._run.argtypes, self._run.restype = [ptrs], ctypes.c_int
        self._bench = self.lib.hl_bench
        self._bench.argtypes, self._bench.restype = [ptrs, ctypes.c_int64], ctypes.c_double

    def entry(self, ptrs) -> None:
        """Run the kernel once on the packed arguments."""
        if self._run is None:
            self._entry(ptrs)
        elif self._run(ptrs):
            raise ResourceError(f"kernel {self.path.name} could not allocate its scratch buffers")

    def bench(self, ptrs, number: int) -> float:
        """Seconds for ``number`` runs."""
        t = self._bench(ptrs, number)
        if t < 0:
            raise ResourceError(f"kernel {self.path.name} could not allocate its scratch buffers")
        return t

    @staticmethod
    def pack(arrays) -> ctypes.Array:
        """The arrays' data pointers as a ``void*[]``."""
        return _ptr_array(max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
