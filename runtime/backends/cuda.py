"""CUDA devices: kernels are rendered by the CUDA dialect and compiled with nvcc; nothing runs
them yet (no CUDA runtime in this build), so targets refuse with a clear message."""

from __future__ import annotations

from ...dsl.errors import TargetError
from .base import Backend


class CUDABackend(Backend):
    kind = "cuda"

    def target(self, spec: str, threads: int | None = None):
        raise TargetError(f"target '{spec}': hlotune generates CUDA kernels (hlotune.runtime.codegen.cuda: "
                          "render_cuda, compile_cuda with nvcc) but cannot run them yet (no CUDA runtime); "
                          "use 'cpu' or 'opencl'")

    def hardware(self, target=None):
        """Blocks and threads with the limits every CUDA device since sm_50 has."""
        from ...schedules.hardware import Hardware
        return Hardware(work_groups=True, max_work_group_size=1024, local_mem_bytes=48 << 10)


__all__ = ["CUDABackend"]
