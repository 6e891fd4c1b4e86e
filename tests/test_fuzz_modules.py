"""Fuzzing real modules: one token of a corpus or JAX user module (HLO, optimized HLO or StableHLO)
changed, then loaded, compiled and run on the cpu in a worker subprocess (tests/_fuzz.py) and
through XLA:CPU on the same inputs. No case may end the worker with a signal, raise anything but
a typed refusal of its input, end in a compile/lowering/schedule/internal error after the
verifier accepted it, or answer differently from XLA. Bounded in time, with a minimum number of
mutated cases that must have run; the long run is ``python -m bench.fuzz_modules --cases 10000``
(results/fuzz.md)."""

from __future__ import annotations

import signal
import time

import pytest
from _fuzz import DATA, Fuzzer, corpus, mutate
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

BUDGET_S = 25.0   # the long run off CI: bench/fuzz_modules.py
MIN_CASES = 15    # mutated cases that must have run within the budget (else the test proves nothing)
FILES = corpus()


@pytest.fixture(scope="module")
def fuzzer():
    f = Fuzzer(timeout=30.0)
    f.started = time.monotonic()
    f.cases = 0
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
    fuzzer.started = time.monotonic()     # the budget is for mutated cases


def test_a_loop_that_never_ends_times_out_and_the_worker_restarts():
    f = Fuzzer(timeout=3.0)
    try:
        text = ("HloModule m\ncond {\n  s = f32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
                "body {\n  s = f32[] parameter(0)\n  ROOT n = f32[] negate(s)\n}\n"
                "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=cond, body=body\n}\n")
        assert f.run(text, "loop.hlo").kind == "both_hang"       # XLA never ends it either
        assert f.run(FILES[0].read_text(), FILES[0].name).kind == "matched"
    finally:
        f.close()


@settings(max_examples=300, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(FILES), data=st.data())
def test_mutated_modules_run_and_match_or_are_refused(fuzzer, path, data):
    text = mutate(path, data, ("number", "delete", "duplicate", "replace", "truncate"))
    if time.monotonic() - fuzzer.started > BUDGET_S:   # drawn first: the draws stay deterministic
        return
    out = fuzzer.run(text, path.name)
    fuzzer.cases += 1
    assert not out.failed, (f"{path.name}: {out.kind} {out.error} at {out.stage}: {out.detail}\n"
                            f"--- mutated module ---\n{text}")


def test_enough_mutated_cases_ran(fuzzer):
    """Runs after the property test (file order): its budget may not be spent on nothing."""
    assert fuzzer.cases >= MIN_CASES, f"only {fuzzer.cases} mutated cases ran in {BUDGET_S:g} s"


def test_a_reduction_from_a_non_identity_is_implementation_defined(fuzzer):
    """XLA:CPU applies a reduce's init value once per vector accumulator; hlotune (and the StableHLO
    interpreter) once: such a difference is reported apart, not as a wrong answer."""
    text = ("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
            "ENTRY e {\n  x = f32[10,128] parameter(0)\n  c = f32[] constant(52)\n"
            "  ROOT r = f32[10] reduce(x, c), dimensions={1}, to_apply=add\n}\n")
    out = fuzzer.run(text, "init.hlo")
    assert out.kind in ("matched", "impl_defined") and not out.failed, out


@pytest.mark.parametrize("old,new,recognized", [
    ("", "", True),                                                                   # JAX's comparator
    ("lt_to.3 = pred[] compare(sort.6, sort.7), direction=LT",
     "lt_to.3 = pred[] compare(sort.7, sort.6), direction=LT", True),                 # descending key
    ("ROOT or.1 = pred[] or(lt_to.3, and.1)", "ROOT or.1 = pred[] and(eq_to.1, lt_to.2)", False),
    ("lt_to.3 = pred[] compare(sort.6, sort.7), direction=LT",
     "lt_to.3 = pred[] compare(sort.6, sort.7), direction=LE", False),                # not strict
    ("eq.3 = pred[] compare(sort.9, constant.3)", "eq.3 = pred[] compare(sort.9, constant.2)", False),
    ("direction=LT, type=TOTALORDER", "direction=LT", False),                        # NaN: no order
    ("eq_to.1 = pred[] compare(sort.6, sort.7)", "eq_to.1 = pred[] compare(sort.6, sort.6)", False),
])
def test_a_sort_whose_comparator_is_no_strict_weak_order_is_implementation_defined(old, new, recognized):
    """StableHLO's sort asks for a strict weak order; with any other comparator XLA and hlotune
    may rightly leave different orders (a mutant found in CI: and(eq(k), lt(x)) as the root).
    JAX's lexicographic comparator, and a descending key, are recognized; a mutation that breaks
    the order is reported apart from wrong answers."""
    from _fuzz import implementation_defined
    text = (DATA / "jax_user" / "sort_multikey.hlo").read_text()
    assert old in text
    why = implementation_defined(text.replace(old, new), "sort_multikey.hlo")
    assert (why is None) == recognized, why
