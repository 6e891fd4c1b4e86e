"""What schedules need to know about a machine, as plain data (no runtime objects).

The runtime fills a ``Hardware`` for each target (detected from the compiler's target macros and
the OS's cache description); templates size register tiles and cache blocks from it, and the C
renderer picks its vector width from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hardware:
    """``vector_bytes``: widest float SIMD register the compiler targets (64 for AVX-512, 32 for
    AVX2, 16 for SSE/NEON, 0 when unknown); ``vector_regs``: how many such registers; ``fma``:
    fused multiply-add instructions; cache sizes in bytes (``l1d`` and ``l2`` per core, ``l3``
    shared); ``threads``: the threads kernels run on; ``isa``: feature names, e.g. 'avx512f';
    ``work_groups``: loops run on a grid of work-groups (GPUs), with their limits; CUDA devices
    add ``compute_capability`` (e.g. 90 for sm_90), the shared memory a block may opt in to, their
    multiprocessors and registers per block (0 when unknown or not a CUDA device)."""

    arch: str = "unknown"
    vector_bytes: int = 16
    vector_regs: int = 16
    fma: bool = False
    l1d: int = 32 << 10
    l2: int = 512 << 10
    l3: int = 8 << 20
    threads: int = 1
    isa: tuple[str, ...] = ()
    #: a GPU-style device: loops map onto work-groups of work-items (OpenCL NDRange, CUDA grid)
    work_groups: bool = False
    max_work_group_size: int = 0
    local_mem_bytes: int = 0
    compute_capability: int = 0
    shared_optin_bytes: int = 0
    multiprocessors: int = 0
    registers_per_block: int = 0

    def lanes(self, itemsize: int) -> int:
        """Elements of ``itemsize`` bytes in one vector register (at least 1)."""
        return max(1, self.vector_bytes // itemsize)

    def as_dict(self) -> dict:
        return {"arch": self.arch, "vector_bytes": self.vector_bytes, "vector_regs": self.vector_regs,
                "fma": self.fma, "l1d": self.l1d, "l2": self.l2, "l3": self.l3, "threads": self.threads,
                "isa": list(self.isa), "work_groups": self.work_groups,
                "max_work_group_size": self.max_work_group_size, "local_mem_bytes": self.local_mem_bytes,
                "compute_capability": self.compute_capability, "shared_optin_bytes": self.shared_optin_bytes,
                "multiprocessors": self.multiprocessors, "registers_per_block": self.registers_per_block}

    @classmethod
    def from_dict(cls, d: dict) -> Hardware:
        """The ``Hardware`` ``as_dict`` wrote (keys it does not know are ignored, missing ones
        take their defaults); ValueError naming the field when a value has the wrong type (a
        count that is not a non-negative integer, an ISA that is not a list of names)."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for k, v in known.items():
            want = type(getattr(GENERIC, k))
            if want is tuple:
                ok = isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
            elif want is int:
                ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
            else:
                ok = isinstance(v, want)
            if not ok:
                raise ValueError(f"hardware field '{k}' = {v!r}: expected {want.__name__}")
        if "isa" in known:
            known["isa"] = tuple(known["isa"])
        return cls(**known)


#: a conservative machine for code paths that know nothing better (SSE-class, 16 registers)
GENERIC = Hardware()

__all__ = ["GENERIC", "Hardware"]
