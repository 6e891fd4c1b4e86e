"""Detect the host CPU's vector ISA (as the C compiler targets it with its flags) and caches."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
from functools import cache
from pathlib import Path

from ..schedules.hardware import Hardware

log = logging.getLogger(__name__)

#: compiler macro -> feature name, widest first within each family
_MACROS = {"__AVX512F__": "avx512f", "__AVX512FP16__": "avx512fp16", "__AVX512BF16__": "avx512bf16",
           "__AVX512VNNI__": "avx512vnni", "__AMX_TILE__": "amx", "__AVX2__": "avx2", "__AVX__": "avx",
           "__FMA__": "fma", "__SSE2__": "sse2", "__ARM_NEON": "neon", "__ARM_FEATURE_FMA": "fma",
           "__ARM_FEATURE_SVE": "sve"}


@cache
def compiler_macros(cc: str, flags: tuple[str, ...]) -> frozenset[str]:
    """Macros the compiler predefines with ``flags`` (empty when it cannot be asked)."""
    keep = [f for f in flags if f.startswith(("-m", "-march", "-mcpu"))]
    try:
        out = subprocess.run([cc, *keep, "-dM", "-E", "-x", "c", os.devnull], capture_output=True,
                             text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("cannot ask %s for its target macros: %s", cc, e)
        return frozenset()
    return frozenset(ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("#define "))


def _cache_sizes() -> dict[str, int]:
    """L1d, L2, L3 sizes in bytes from sysfs (empty where the OS does not say)."""
    out: dict[str, int] = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for d in sorted(base.glob("index*")) if base.exists() else []:
        try:
            level = (d / "level").read_text().strip()
            kind = (d / "type").read_text().strip()
            size = (d / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        n = int(size.rstrip("KMG") or 0) * mult
        if kind in ("Data", "Unified") and n:
            out[{"1": "l1d", "2": "l2", "3": "l3"}.get(level, f"l{level}")] = n
    return out


@cache
def detect(cc: str, flags: tuple[str, ...], threads: int) -> Hardware:
    """The ``Hardware`` kernels compiled by ``cc flags`` run on."""
    m = compiler_macros(cc, flags)
    isa = tuple(dict.fromkeys(name for mac, name in _MACROS.items() if mac in m))
    if "avx512f" in isa:
        vb, regs = 64, 32
    elif "avx" in isa:
        vb, regs = 32, 16
    elif "sve" in isa or "neon" in isa:
        vb, regs = 16, 32
    else:
        vb, regs = 16, 16
    return Hardware(arch=platform.machine(), vector_bytes=vb, vector_regs=regs, fma="fma" in isa,
                    threads=threads, isa=isa, **_cache_sizes())


__all__ = ["compiler_macros", "detect"]
