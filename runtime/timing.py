"""Timing results: every repeat is kept (seconds per call)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

#: a warm call at least this long sizes the repeats by itself (no calibrating round)
SURE_S = 1e-3


@dataclass(frozen=True)
class TimingResult:
    """``times[r]`` is the mean seconds per call over ``number`` calls in repeat ``r``."""

    times: tuple[float, ...]
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    def __repr__(self) -> str:
        return (f"TimingResult(median={self.median * 1e6:.1f}us, min={self.min * 1e6:.1f}us, "
                f"repeats={len(self.times)}, number={self.number})")


@dataclass(frozen=True)
class Stop:
    """When a measurement has repeats enough before its ``repeat``-th (the tuner's search uses
    this; a final figure takes every repeat): once ``least`` repeats lie within ``spread`` of
    each other ((max - min) / min), or as soon as the fastest repeat so far is slower than
    ``slower_s`` (the candidate has lost: more repeats would not change its rank)."""

    least: int = 3
    spread: float = 0.02
    slower_s: float | None = None

    def enough(self, times: list[float]) -> bool:
        if self.slower_s is not None and times and min(times) > self.slower_s:
            return True
        return len(times) >= self.least and max(times) - min(times) <= self.spread * min(times)


def measure(run_n: Callable[[int], float], repeat: int = 10, min_repeat_ms: float = 50.0,
            number: int | None = None, warmup: int = 1, warmup_ms: float = 0.0,
            stop: Stop | None = None) -> TimingResult:
    """Time ``run_n(n) -> seconds for n calls``: pick ``number`` so one repeat lasts at least
    ``min_repeat_ms`` (as TVM's ``min_repeat_ms``), then take ``repeat`` repeats. ``warmup``
    calls, and calls for at least ``warmup_ms`` of wall time, run first and are not counted (a
    fresh process's thread pools and clocks take a while to settle); the last of them is the
    first estimate of one call, taken as it is when it lasts at least ``SURE_S`` (a call that
    long is not lost in the clock's resolution or the call overhead). ``stop`` ends the repeats
    early (``Stop``)."""
    t = run_n(warmup) / warmup if warmup else None
    end = time.perf_counter() + warmup_ms / 1e3
    while time.perf_counter() < end:
        t = run_n(max(warmup, 1)) / max(warmup, 1)
    if number is None:
        number = 1
        if t is not None and t >= SURE_S:
            number = max(1, math.ceil(min_repeat_ms / 1e3 / t))
        else:
            while True:
                t = run_n(number)
                if t * 1e3 >= min_repeat_ms or number >= 1 << 30:
                    break
                grow = (min_repeat_ms / 1e3) / max(t, 1e-9)
                number = max(number * 2, min(int(number * grow * 1.2) + 1, number * 1000))
    times: list[float] = []
    while len(times) < repeat and not (stop and stop.enough(times)):
        times.append(run_n(number) / number)
    return TimingResult(tuple(times), number)
