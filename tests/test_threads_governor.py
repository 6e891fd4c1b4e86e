"""runtime/threads.py: the per-program thread governor. Its policy on synthetic timings (a quiet
machine keeps every thread and probes rarely; a busy one falls back to fewer threads within a
few calls and returns when the cores are free), and kernels that honour the calling thread's
OpenMP limit with unchanged answers."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.runtime import threads as T
from hlotune.runtime.threads import MAX_INTERVAL, MAX_REDUCED, PROBE, WARMUP, Governor

import hlotune


def drive(gov: Governor, calls: int, seconds) -> list[int]:
    """Run ``calls`` governed calls whose time is ``seconds(threads)``; the counts used."""
    used = []
    for _ in range(calls):
        n = gov.choose()
        t = seconds(n)
        CLOCK[0] += t
        gov.record(n, t, CLOCK[0])
        used.append(n)
    return used


CLOCK = [0.0]       # the synthetic calls' wall clock


QUIET = {2: 1.0, 1: 1.9}.__getitem__
BUSY = {2: 2.6, 1: 2.0}.__getitem__


def test_a_quiet_machine_keeps_every_thread_and_probes_less_and_less():
    gov = Governor(2)
    used = drive(gov, 2000, QUIET)
    assert gov.current == 2
    late = used[1000:]
    assert late.count(1) <= PROBE * (1000 // MAX_INTERVAL + 1)   # about one probe in MAX_INTERVAL calls
    assert used[:WARMUP].count(1) == 0


def test_a_busy_machine_falls_back_and_comes_back():
    gov = Governor(2)
    drive(gov, 300, QUIET)
    used = drive(gov, 100, BUSY)       # two slower calls (SUSTAIN seconds) re-arm; a third, a probe wins
    assert gov.current == 1 and used[:6] == [2, 2, 2, 1, 1, 1]
    assert used[-50:].count(2) <= PROBE * (50 // MAX_REDUCED + 1)
    used = drive(gov, 4 * MAX_REDUCED, QUIET)                  # reduced counts probe at least every MAX_REDUCED
    assert gov.current == 2 and used[-10:].count(1) <= PROBE                # a probe at most


def test_drift_rearms_probes_at_once():
    """The current count slowing down by more than DRIFT brings a probe within a few calls."""
    gov = Governor(2)
    drive(gov, 600, QUIET)
    used = drive(gov, 5, BUSY)
    assert 1 in used[:4]


def test_one_slow_call_is_a_blip():
    """A single slow call (the first after a pause, another process's burst) neither switches
    nor brings a probe; the window keeps its median."""
    gov = Governor(2)
    drive(gov, 600, QUIET)
    times = iter([30.0] + [1.0] * 100)
    used = drive(gov, 20, lambda n: next(times) if n == 2 else 1.9)
    assert gov.current == 2 and used == [2] * 20


def test_a_short_spell_of_slow_calls_is_a_transient():
    """Slow calls in a row that last less than SUSTAIN seconds in all (an idle core waking up
    after a pause) keep the current count; a longer spell brings a probe, and fewer threads
    once they have won twice, SUSTAIN apart."""
    gov = Governor(2)
    drive(gov, 600, lambda n: 1e-4 if n == 2 else 1.5e-4)
    k = int(T.SUSTAIN / 1e-3) // 2
    times = iter([1e-3] * k + [1e-4] * 100)
    used = drive(gov, 50, lambda n: next(times) if n == 2 else 1.5e-4)
    assert gov.current == 2 and used.count(1) <= 2 * PROBE     # a due probe, perhaps, but no switch
    drive(gov, 1000, lambda n: 1e-4 if n == 2 else 1.5e-4)
    used = drive(gov, 3 * 2 * k, lambda n: 1e-3 if n == 2 else 1.5e-4)
    first = used.index(1)                                   # a probe once the spell is SUSTAIN long
    assert k <= first <= 2 * k + 2
    assert used[first + PROBE] == 2                          # fewer threads won once: not yet
    assert gov.current == 1                                  # the second win, SUSTAIN later, switched


def test_a_probe_up_survives_waking_the_pool():
    """Back at full speed after a busy spell: the first call of a probe with more threads pays
    for waking them (as slow as one thread), the rest run at full speed; the governor goes back."""
    gov = Governor(2)
    drive(gov, 300, QUIET)
    drive(gov, 100, BUSY)
    assert gov.current == 1
    last = [1]

    def wake(n):
        t = 1.9 if n == 2 and last[0] == 1 else QUIET(n)
        last[0] = n
        return t
    used = drive(gov, 2 * MAX_REDUCED + 2 * PROBE, wake)
    assert gov.current == 2 and used[-PROBE:] == [2] * PROBE


def test_counts_halve_down_to_one():
    assert T._counts(8) == (8, 4, 2, 1) and T._counts(6) == (6, 3, 1) and T._counts(1) == (1,)
    assert not Governor(1).active


def test_one_noisy_probe_does_not_switch():
    gov = Governor(2)
    drive(gov, 100, QUIET)
    noise = iter([0.5] + [1.9] * 50)                           # one lucky probe, then the truth
    drive(gov, 200, lambda n: next(noise) if n == 1 else 1.0)
    assert gov.current == 2


@pytest.mark.skipif(T._omp() is None, reason="no OpenMP runtime to set a thread limit with")
def test_kernels_honour_the_limit_and_answer_the_same():
    text = """HloModule m
ENTRY e {
  a = f32[96,128] parameter(0)
  b = f32[128,256] parameter(1)
  d = f32[96,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(-inf)
  mx = f32[96] reduce(d, z), dimensions={1}, to_apply=mx
  ROOT t = f32[96] tanh(mx)
}
mx {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
"""
    c = hlotune.compile(text, threads=2)
    assert "hl_team" in c.kernels[0].source
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((96, 128), np.float32), rng.standard_normal((128, 256), np.float32)
    want = np.tanh((a.astype(np.float64) @ b).max(axis=1))
    outs = []
    for n in (2, 1, 2):
        T.set_threads(n)
        assert T.current_limit() == n
        outs.append(c.graph._call((a, b)))
    T.set_threads(T._counts(2)[0])
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-6)
    assert all(np.array_equal(o, outs[0]) for o in outs)     # parallel loops split outputs, not sums


def test_a_slow_start_does_not_cost_threads():
    """The first calls after compiling run in a spell (2 threads 50x slower, as an idle virtual
    core waking up gives); one thread wins a probe then, but the spell is over before its
    confirmation: the program keeps both threads."""
    gov = Governor(2)
    calls = [0]

    def spell(n):
        calls[0] += 1
        return (5e-4 if calls[0] < 25 else 1e-5) if n == 2 else 1.1e-5     # 2 threads: no clear win
    used = drive(gov, 2000, spell)
    assert 1 in used[:40] and gov.current == 2
    assert used[-1000:].count(1) <= PROBE * (1000 // MAX_INTERVAL + 1)


def test_probes_at_full_count_are_spaced_in_time():
    """Short calls on a quiet machine: at most one probe per MAX_GAP seconds of calls, once
    the first have confirmed the full count."""
    gov = Governor(2)
    used = drive(gov, 100_000, lambda n: 1e-4 if n == 2 else 1.9e-4)      # 10 s of calls
    assert gov.current == 2
    assert used[50_000:].count(1) <= PROBE * (5 / T.MAX_GAP + 1)


def test_fast_calls_are_rarely_timed(monkeypatch):
    """Between decisions a call costs a counter: of 20,000 calls of 10 microseconds (on a
    synthetic clock, so the machine's noise cannot decide), about one in SAMPLE_S seconds of
    calls is timed (and the probes)."""
    clock = [0.0]
    monkeypatch.setattr(T, "time", type("Clock", (), {"perf_counter": staticmethod(lambda: clock[0])}))

    def call():
        clock[0] += 1e-5

    gov = Governor(2)
    timed = []
    record = gov.record
    gov.record = lambda n, s, now=None: (timed.append(n), record(n, s, now))
    for _ in range(20_000):
        gov.run(call)
    assert gov.calls == 20_000 and gov.current == 2
    assert len(timed) < 20_000 / 8       # was one in 4, and more
    assert len(timed) > 20_000 * 1e-5 / T.SAMPLE_S / 2       # but samples are still taken
