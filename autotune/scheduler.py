"""Which task gets the next batch of a time budget: Ansor's gradient task scheduler, over
seconds of tuning instead of trials.

The objective is the program's time, ``sum(weight_i * best_i)`` (``best_i``: task i's best
time so far, its default's before any search). Each task's gradient, the change of that time per
second of tuning spent on it, mixes what its last ``WINDOW`` batches bought (backward) with a
forward estimate, its average gain per second so far plus an optimistic ``OPTIMISM`` share of
its best time (Ansor credits the whole best time, ``-best_i / seconds_i``, which feeds a task
that stopped improving as long as it is the heaviest; measured gains feed the one that pays):
``g_i = weight_i * (ALPHA * backward_i + (1 - ALPHA) * forward_i)``. The task with the most
negative gradient goes next; every task first gets one batch (most expensive first), and an
``EPS`` share of picks is random, so a task that looked stuck is tried again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

#: weight of the backward estimate (Ansor's alpha)
ALPHA = 0.2
#: batches the backward estimate looks back over
WINDOW = 3
#: share of random picks
EPS = 0.05
#: a task is credited this share of its best time as a gain still to come
OPTIMISM = 0.1


@dataclass
class _Track:
    weight: float
    best: float
    first: float = 0.0      # the best time before any batch
    seconds: float = 0.0
    #: (cumulative seconds, best) after each batch
    history: list = field(default_factory=list)


class TaskScheduler:
    """Picks tasks for batches (see the module docstring). ``tasks``: key -> (weight, best
    time so far); a task without a measured time counts as 1 s (large: it goes first)."""

    def __init__(self, tasks: dict[str, tuple[float, float | None]], seed: int = 0):
        self.tracks = {k: _Track(float(w), float(b or 1.0), float(b or 1.0)) for k, (w, b) in tasks.items()}
        self.rng = random.Random(seed)

    def record(self, key: str, seconds: float, best: float | None) -> None:
        """Task ``key`` spent ``seconds`` on a batch and its best time is now ``best``."""
        t = self.tracks[key]
        t.seconds += max(seconds, 1e-6)
        if best:
            t.best = min(t.best, float(best))
        t.history.append((t.seconds, t.best))

    def gradient(self, key: str) -> float:
        t = self.tracks[key]
        if not t.history:
            return -float("inf")
        back = 0.0
        if len(t.history) > 1:
            s0, b0 = t.history[max(len(t.history) - 1 - WINDOW, 0)]
            s1, b1 = t.history[-1]
            back = (b1 - b0) / max(s1 - s0, 1e-6)
        forward = -((t.first - t.best) + OPTIMISM * t.best) / t.seconds
        return t.weight * (ALPHA * back + (1 - ALPHA) * forward)

    def pick(self, alive: list[str]) -> str | None:
        """The next task among ``alive`` (those with configs left), or None when none is."""
        if not alive:
            return None
        fresh = [k for k in alive if not self.tracks[k].history]
        if fresh:
            return max(fresh, key=lambda k: self.tracks[k].weight * self.tracks[k].best)
        if self.rng.random() < EPS:
            return self.rng.choice(sorted(alive))
        return min(sorted(alive), key=self.gradient)

    def share(self) -> dict[str, float]:
        """Seconds spent per task."""
        return {k: t.seconds for k, t in self.tracks.items()}
