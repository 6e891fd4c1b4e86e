"""CUDA devices through pycuda: kernels rendered by the CUDA dialect, compiled to cubins by nvcc
in the parent (in parallel, cached), loaded and run in the measurement worker (where a faulting
kernel costs one candidate and a rebuilt context), timed with CUDA events."""

from __future__ import annotations

from .base import Backend, Runner


class CUDABackend(Backend):
    kind = "cuda"
    aliases = ("nvidia",)

    def target(self, spec: str, threads: int | None = None):
        from ..cuda import cuda_target
        return cuda_target(spec.strip().lower().replace("nvidia", "cuda", 1))

    def hardware(self, target=None):
        """Blocks and threads with the device's limits (those of every CUDA device since sm_50
        when ``target`` is None: used to check logs of a device that is not here)."""
        from ...schedules.hardware import Hardware
        if target is None:       # a generic sm_80 device
            return Hardware(arch="sm_80", work_groups=True, max_work_group_size=1024, local_mem_bytes=48 << 10,
                            compute_capability=80, shared_optin_bytes=163 << 10)
        cc = target.compute_capability
        return Hardware(arch=target.arch, threads=target.multiprocessors, work_groups=True,
                        max_work_group_size=target.max_threads_per_block, local_mem_bytes=target.shared_per_block,
                        l2=target.l2_bytes, compute_capability=10 * cc[0] + cc[1],
                        shared_optin_bytes=target.shared_optin, multiprocessors=target.multiprocessors,
                        registers_per_block=target.registers_per_block)

    def build(self, fn, target):
        from ..cuda import build_cuda
        return build_cuda(fn, target)

    def prepare(self, fn, target, timeout: float) -> dict:
        from ..cuda import launch_spec
        return {"program": launch_spec(fn, target, timeout)}

    def worker_plan(self, fields: dict) -> list[dict]:
        return [{"op": "build", "program": fields["program"]}, {"op": "run"}]

    def worker_build(self, req: dict, cache: dict) -> dict:
        """Load the cubin in the worker's context (a module the driver refuses is a
        ``compile_error``; one that faults later is the run's ``runtime_error``)."""
        from ...dsl.errors import DeviceError
        from ..cuda import SpecRunner
        cache.pop("cuda", None)
        try:
            cache["cuda"] = SpecRunner(req["program"])
        except DeviceError as e:
            return {"ok": False, "failure": "compile_error", "message": str(e)}
        return {"ok": True}

    def runner(self, req: dict, cache: dict) -> Runner:
        from ...dsl.errors import DeviceError
        if "cuda" not in cache:
            raise DeviceError("no CUDA program was loaded")
        return cache["cuda"]      # SpecRunner has Runner's run/time

    def describe(self) -> list[str]:
        from ..cuda import describe
        return describe()


__all__ = ["CUDABackend"]
