"""Backends are objects registered by kind: a toy backend (tests/toy_backend.py, kernels run in
the loop-IR interpreter) is added with one ``register`` call and compiles, runs and tunes HLO
modules through the same API as the built-in ones; nothing outside the registry compares kinds;
the interpreter agrees with compiled kernels on the same IR."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _checks import MATMUL_F32, assert_close, matmul, random_inputs
from hlotune.dsl.errors import LoweringError, TargetError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.backends import backend, kinds, register
from hlotune.schedules.fusion import default_schedule
from hlotune.schedules.interp import interpret
from toy_backend import ToyBackend

import hlotune

ROOT = Path(__file__).resolve().parent.parent
#: the corpus softmax at 4 x 16: the interpreter runs a statement at a time
SMALL_SOFTMAX = (ROOT / "tests" / "data" / "hlo" / "softmax.hlo").read_text().replace("128", "4").replace("512", "16")


@pytest.fixture
def toy():
    b = register(ToyBackend())
    yield b


def test_builtin_kinds_and_unknown_targets():
    assert {"cpu", "opencl", "cuda"} <= set(kinds())
    assert backend("cpu").kind == backend("host").kind == "cpu"
    with pytest.raises(TargetError, match="unknown target 'tpu'"):
        hlotune.get_target("tpu")


def test_a_toy_backend_compiles_runs_and_tunes_a_module(toy, tmp_path):
    m = hlotune.load_hlo(SMALL_SOFTMAX)
    t = hlotune.get_target("toy")
    assert t.kind == "toy" and "toy" in kinds()
    ins = m.random_inputs()
    got = hlotune.compile(m, target="toy")(*ins)
    ref = hlotune.compile(m, target="cpu")(*ins)
    assert_close(got, ref, *MATMUL_F32)
    from hlotune.autotune.task import extract_tasks
    n = len(extract_tasks(list(m.outputs), list(m.params), t)) + 2
    res = hlotune.tune(m, target="toy", trials=n, db=str(tmp_path / "toy.db"), tuner="random", progress=False,
                       repeat=2, min_repeat_ms=1.0)
    assert sum(r.trials for r in res) == n and all(r.best_time for r in res)
    assert_close(hlotune.compile(m, target="toy", db=str(tmp_path / "toy.db"))(*ins), ref, *MATMUL_F32)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_interpreter_agrees_with_compiled_kernels(threads):
    """Lowering tested without a compiler: the interpreter runs the same IR the C renderer prints
    (a packed, register-tiled matmul with tails) and both match the reference."""
    from hlotune.schedules.hardware import Hardware
    C = matmul(13, 21, 9)
    s = default_schedule([C], hw=Hardware(vector_bytes=32, vector_regs=16, threads=threads))
    fn = s.lower()
    ins = random_inputs([C], seed=5)
    out = np.zeros(C.shape, np.float32)
    interpret(fn, *ins, out)
    ref = evaluate([C], ins)[0]
    assert_close(out, ref, *MATMUL_F32)
    assert_close(hlotune.build(s)(*ins), ref, *MATMUL_F32)


def test_the_interpreter_places_an_out_of_bounds_index_in_lowering():
    from hlotune.dsl import dtypes as dt
    from hlotune.dsl.expr import IterVar, as_expr
    from hlotune.schedules.loops import Buffer, For, LoopKind, LoweredFunc, Store
    a = Buffer("a", dt.float32, (4,), "arg")
    i = IterVar("i", 5)
    fn = LoweredFunc("bad", (a,), 0, For(i, as_expr(5, dt.index), LoopKind.SERIAL, Store(a, (i.var,), as_expr(1.0, dt.float32))))
    with pytest.raises(LoweringError, match="index 0 of 'a' is 4"):
        interpret(fn, np.zeros(4, np.float32))


def test_no_backend_kind_is_compared_as_a_string_outside_the_registry():
    """Code outside runtime/backends asks the registry (or a Hardware capability), never
    ``kind == 'opencl'``-style string tests."""
    pat = re.compile(r"""\bkind\s*(==|!=|in)\s*\(?\s*["'](cpu|opencl|cuda)["']|["'](cpu|opencl|cuda)["']\s*(==|!=)\s*\w*kind""")
    bad = []
    for folder in ("dsl", "schedules", "runtime", "autotune", "hlotune"):
        for f in (ROOT / folder).rglob("*.py"):
            if "backends" in f.parts:
                continue
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if pat.search(line):
                    bad.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_errors_module_and_one_version_source():
    """``import hlotune.errors`` works as documented and holds every error class of the one
    errors module; the version comes from the package metadata (pyproject.toml) everywhere."""
    from importlib import import_module

    from hlotune.runtime.targets import hlotune_version
    one, errors = import_module("hlotune.dsl.errors"), import_module("hlotune.errors")
    assert errors.HlotuneError is one.HlotuneError
    defined = {n for n, v in vars(one).items() if isinstance(v, type) and issubclass(v, BaseException)
               and v.__module__ == one.__name__}
    assert defined == set(errors.__all__)
    assert hlotune_version() == hlotune.get_target("cpu").provenance["hlotune_version"]
