"""OpenCL devices through pyopencl: programs rendered by the OpenCL dialect, built by the
driver (in the measurement worker, where a crashing driver costs one candidate), timed with
profiling events."""

from __future__ import annotations

from .base import Backend, Runner


class OpenCLBackend(Backend):
    kind = "opencl"

    def target(self, spec: str, threads: int | None = None):
        from ..opencl import opencl_target
        return opencl_target(spec.strip())

    def hardware(self, target=None):
        """Work-groups and the device's limits (a generic device when ``target`` is None)."""
        from ...schedules.hardware import Hardware
        from ...schedules.templates.gpu import MAX_LOCAL
        if target is None:
            return Hardware(work_groups=True, max_work_group_size=MAX_LOCAL)
        return Hardware(threads=target.threads, work_groups=True,
                        max_work_group_size=target.max_work_group_size or MAX_LOCAL,
                        local_mem_bytes=target.local_mem_size)

    def build(self, fn, target):
        from ..opencl import build_opencl
        return build_opencl(fn, target)

    def prepare(self, fn, target, timeout: float) -> dict:
        from ..codegen.opencl import render_for
        from ..opencl import launch_spec
        return {"program": launch_spec(fn, render_for(fn, target), target)}

    def worker_plan(self, fields: dict) -> list[dict]:
        return [{"op": "build", "program": fields["program"]}, {"op": "run"}]

    def worker_build(self, req: dict, cache: dict) -> dict:
        from ...dsl.errors import CompileError
        from ..opencl import SpecRunner
        cache.pop("opencl", None)
        try:
            cache["opencl"] = SpecRunner(req["program"])
        except CompileError as e:
            return {"ok": False, "failure": "compile_error", "message": str(e)}
        return {"ok": True}

    def runner(self, req: dict, cache: dict) -> Runner:
        from ...dsl.errors import DeviceError
        if "opencl" not in cache:
            raise DeviceError("no OpenCL program was built")
        return cache["opencl"]      # SpecRunner has Runner's run/time

    def describe(self) -> list[str]:
        from ..opencl import describe
        return describe()


__all__ = ["OpenCLBackend"]
