"""A toy backend for tests/test_backends.py: kernels run in the numpy interpreter of the loop IR
(schedules/interp.py). It touches nothing of hlotune's own files: registering it is enough."""

from __future__ import annotations

import pickle
import tempfile
import time

import numpy as np

from hlotune.runtime.backends import Backend, Runner
from hlotune.runtime.build import KernelBase
from hlotune.runtime.targets import Target
from hlotune.runtime.timing import measure
from hlotune.schedules.hardware import Hardware
from hlotune.schedules.interp import Interpreter


class InterpKernel(KernelBase):
    def __init__(self, fn, target):
        super().__init__(fn, source=str(fn), target=target)
        self._run = Interpreter(fn)

    def __call__(self, *args):
        ins, outs = self.prepare(args)
        self._run(*ins, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)


class InterpRunner(Runner):
    def __init__(self, fn):
        self.interp = Interpreter(fn)
        self.args = ()

    def run(self, ins, outs):
        self.args = (*ins, *outs)
        self.interp(*self.args)

    def time(self, repeat, min_repeat_ms, number, warmup_ms, stop=None):
        def run_n(n):
            t0 = time.perf_counter()
            for _ in range(n):
                self.interp(*self.args)
            return time.perf_counter() - t0
        return measure(run_n, repeat, min_repeat_ms, number, warmup_ms=warmup_ms, stop=stop)


class ToyBackend(Backend):
    kind = "toy"

    def target(self, spec, threads=None):
        return Target("toy", "numpy interpreter", threads=1)

    def hardware(self, target=None):
        return Hardware(threads=1, vector_bytes=16)

    def build(self, fn, target):
        return InterpKernel(fn, target)

    def prepare(self, fn, target, timeout):
        with tempfile.NamedTemporaryFile("wb", suffix=".fn.pickle", delete=False) as f:
            pickle.dump(fn, f)
        return {"fn": f.name}

    def runner(self, req, cache):
        with open(req["fn"], "rb") as f:
            return InterpRunner(pickle.load(f))


__all__ = ["ToyBackend", "np"]
