"""runtime/timing.py: sizing repeats, and ending them early (``Stop``)."""

from __future__ import annotations

import pytest
from hlotune.runtime.timing import Stop, measure
from hypothesis import given
from hypothesis import strategies as st


def _clock(per_call: list[float]):
    """A fake ``run_n``: its k-th use (the warm-up call first, then the repeats when ``number``
    is given or the warm call sizes them) runs calls of ``per_call[k]`` seconds each (the last
    figure once they run out)."""
    seen = []

    def run_n(n: int) -> float:
        k = len(seen)
        seen.append(n)
        return n * per_call[min(k, len(per_call) - 1)]
    return run_n, seen


def test_number_makes_a_repeat_last_min_repeat_ms():
    run_n, _ = _clock([1e-5])
    r = measure(run_n, repeat=4, min_repeat_ms=2.0)
    assert len(r.times) == 4 and r.number * 1e-5 >= 2e-3 and r.number * 1e-5 < 2 * 2e-3 * 1.2 + 1e-5


def test_agreeing_repeats_stop_at_least():
    run_n, _ = _clock([2e-3])
    r = measure(run_n, repeat=9, min_repeat_ms=1.0, warmup=1, stop=Stop(least=3, spread=0.02))
    assert len(r.times) == 3 and r.median == pytest.approx(2e-3)


def test_spread_repeats_go_on_to_repeat():
    times = [2e-3, 2e-3, 3e-3, 2e-3, 2.5e-3, 2e-3, 2e-3, 2e-3]
    run_n, _ = _clock([2e-3] + times)
    r = measure(run_n, repeat=6, min_repeat_ms=1.0, stop=Stop(least=3, spread=0.02))
    assert r.times == tuple(times[:6])


def test_a_lost_candidate_stops_after_one_repeat():
    run_n, seen = _clock([5e-3])
    r = measure(run_n, repeat=5, min_repeat_ms=1.0, stop=Stop(slower_s=3e-3))
    assert r.times == (5e-3,) and len(seen) == 2       # the warm call, one repeat
    run_n, _ = _clock([2e-3])
    assert len(measure(run_n, repeat=5, min_repeat_ms=1.0, stop=Stop(least=9, slower_s=3e-3)).times) == 5


@given(st.lists(st.floats(1e-4, 1e-2), min_size=1, max_size=12), st.integers(1, 8), st.integers(1, 5),
       st.floats(0.0, 0.5))
def test_stop_is_the_first_point_its_rule_holds(per_call, repeat, least, spread):
    """The repeats taken are the shortest prefix on which ``Stop.enough`` holds, or ``repeat``."""
    run_n, _ = _clock([per_call[0]] + per_call)
    stop = Stop(least=least, spread=spread)
    r = measure(run_n, repeat=repeat, min_repeat_ms=0.0, number=1, warmup=1, stop=stop)
    got = list(r.times)
    assert got == (per_call + [per_call[-1]] * repeat)[:len(got)]
    assert 1 <= len(got) <= repeat
    assert all(not stop.enough(got[:k]) for k in range(len(got)))
    assert len(got) == repeat or stop.enough(got)
