"""Fuzzing real modules: one token of a corpus or JAX user module (HLO, optimized HLO or StableHLO)
changed, then loaded, compiled and run on the cpu in a worker subprocess (tests/_fuzz.py). No
case may end the worker with a signal, raise anything but hlotune's typed errors (or
MemoryError), or answer differently from the numpy reference. Bounded to about a minute; the
long run is ``python -m bench.fuzz_modules --cases 5000``."""

from __future__ import annotations

import signal
import time

import pytest
from _fuzz import Fuzzer, corpus, mutate
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

BUDGET_S = 20.0   # the 6,000-case run off CI: bench/fuzz_modules.py
FILES = corpus()


@pytest.fixture(scope="module")
def fuzzer():
    f = Fuzzer(timeout=30.0)
    f.started = time.monotonic()
    yield f
    f.close()


def test_corpus_modules_match_through_the_fuzz_worker(fuzzer):
    """The harness itself: unchanged modules load, run and match; a dead worker is a crash."""
    for path in FILES[::7]:
        out = fuzzer.run(path.read_text(), path.name)
        assert out.kind == "matched", (path.name, out)
    out = fuzzer.run("", "kill", signal=int(signal.SIGSEGV))
    assert (out.kind, out.error) == ("crash", "SIGSEGV") and out.failed
    bad = fuzzer.run("HloModule m\nENTRY e {\n  ROOT a = f32[3] add(b, b)\n}\n", "bad.hlo")
    assert (bad.kind, bad.error, bad.stage) == ("refused", "HloParseError", "load") and not bad.failed


def test_a_loop_that_never_ends_times_out_and_the_worker_restarts():
    f = Fuzzer(timeout=3.0)
    try:
        text = ("HloModule m\ncond {\n  s = f32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
                "body {\n  s = f32[] parameter(0)\n  ROOT n = f32[] negate(s)\n}\n"
                "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=cond, body=body\n}\n")
        assert f.run(text, "loop.hlo").kind == "timeout"
        assert f.run(FILES[0].read_text(), FILES[0].name).kind == "matched"
    finally:
        f.close()


@settings(max_examples=2000, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(FILES), data=st.data())
def test_mutated_modules_run_and_match_or_are_refused(fuzzer, path, data):
    text = mutate(path, data, ("number", "delete", "duplicate", "replace", "truncate"))
    if time.monotonic() - fuzzer.started > BUDGET_S:   # drawn first: the draws stay deterministic
        return
    out = fuzzer.run(text, path.name)
    assert not out.failed, (f"{path.name}: {out.kind} {out.error} at {out.stage}: {out.detail}\n"
                            f"--- mutated module ---\n{text}")
