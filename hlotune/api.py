"""The public entry points for HLO modules: ``load_hlo`` and ``compile``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dsl.hlo.lower import LoweredModule, lower_module
from .dsl.hlo.parser import parse_hlo
from .runtime.module import CompiledGraph

__all__ = ["Module", "CompiledModule", "load_hlo", "compile", "tolerance"]


@dataclass
class Module:
    """A parsed HLO module lowered to tensor expressions.

    ``params``: the entry parameters as placeholders (in parameter order); ``outputs``: the
    entry result flattened; ``tuple_result``: whether the result is a tuple.
    """

    name: str
    hlo: object
    lowered: LoweredModule
    source: str | None = None

    @property
    def params(self):
        return self.lowered.params

    @property
    def outputs(self):
        return self.lowered.outputs

    @property
    def tuple_result(self) -> bool:
        return self.lowered.tuple_result

    @property
    def ops(self):
        """The entry computation's instructions."""
        return self.hlo.entry_computation.instructions

    @property
    def signature(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.params)
        outs = ", ".join(f"{t.dtype}{list(t.shape)}" for t in self.outputs)
        return f"{self.name}({ins}) -> ({outs})" if self.tuple_result else f"{self.name}({ins}) -> {outs}"

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random arrays matching the entry parameters (ints in [0, 8), bools random)."""
        rng = np.random.default_rng(seed)
        out = []
        for t in self.params:
            d = t.dtype
            if d.is_float:
                a = rng.standard_normal(t.shape).astype(d.np)
            elif d.is_bool:
                a = rng.random(t.shape) < 0.5
            else:
                a = rng.integers(0, 8, size=t.shape).astype(d.np)
            out.append(np.asarray(a, d.np))
        return out

    def __repr__(self) -> str:
        return f"Module({self.signature})"


def load_hlo(path_or_text) -> Module:
    """Parse and lower HLO text (a path to a ``.hlo`` file, or the text itself)."""
    text, file = None, None
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text
                                          and os.path.exists(path_or_text)):
        file = str(path_or_text)
        text = Path(file).read_text()
    else:
        text = str(path_or_text)
    hlo = parse_hlo(text, file=file)
    lowered = lower_module(hlo)
    return Module(hlo.name, hlo, lowered, file)


class CompiledModule:
    """A module compiled for a target; call it with numpy arrays, one per entry parameter.
    Returns one array, or a tuple for a tuple result."""

    def __init__(self, module: Module, target="cpu", schedule_fn=None):
        self.module = module
        self.graph = CompiledGraph(module.outputs, module.params, target, schedule_fn)
        self.target = self.graph.target

    def __call__(self, *arrays):
        r = self.graph(*arrays)
        if self.module.tuple_result and not isinstance(r, tuple):
            return (r,)
        return r

    @property
    def kernels(self):
        return self.graph.kernels


def compile(module, target="cpu") -> CompiledModule:  # noqa: A001
    """Compile ``module`` (a Module, path or HLO text) for ``target`` with default schedules."""
    if not isinstance(module, Module):
        module = load_hlo(module)
    return CompiledModule(module, target)


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) used to compare with XLA's answers, per dtype."""
    d = np.dtype(dtype)
    if d.kind in "iub":
        return 0.0, 0.0
    if d.itemsize == 2:
        return 2e-2, 2e-2
    if d.itemsize == 8:
        return 1e-9, 1e-12
    return 1e-4, 1e-5
