"""Noise-aware winners: before a tuned config replaces a task's default schedule, the finalists
(the fastest configs of the search within ``within`` of the best, and the default) are timed
again, interleaved round after round, and compared by bootstrap confidence intervals of their
medians. A finalist wins only when its whole interval lies below the default's: a candidate
that looked fast once (a quiet moment, an outlier), or a default that was measured while the
machine was busy, does not decide what is stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from .database import Database, config_key

log = logging.getLogger(__name__)

#: confirmation defaults: rounds of interleaved re-timing, finalists besides the default, how
#: far from the best a finalist may be, and the interval's confidence level
ROUNDS, FINALISTS, WITHIN, LEVEL = 3, 3, 0.10, 0.95


def median_ci(times, level: float = LEVEL, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(median, lo, hi): the sample median of ``times`` and a percentile-bootstrap ``level``
    confidence interval of it."""
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        raise ValueError("no times")
    rng = np.random.default_rng(seed)
    meds = np.median(rng.choice(t, size=(n_boot, t.size), replace=True), axis=1)
    a = (1 - level) / 2
    return float(np.median(t)), float(np.quantile(meds, a)), float(np.quantile(meds, 1 - a))


@dataclass
class Finalist:
    config: dict
    times: list = field(default_factory=list)
    failed: str = ""

    def ci(self) -> tuple[float, float, float]:
        return median_ci(self.times)

    def as_dict(self) -> dict:
        m, lo, hi = self.ci() if self.times else (None, None, None)
        return {"config": self.config, "median": m, "lo": lo, "hi": hi, "times": self.times,
                "failed": self.failed}


def finalists(db: Database, task, k: int = FINALISTS, within: float = WITHIN) -> list[dict]:
    """The default and up to ``k`` of the fastest distinct configs measured for ``task``, each
    within ``within`` of the best (relative)."""
    top = [t for t in db.top_k(task.key, task.target.key, k + 1) if t.config]
    if top:
        best = top[0].median
        top = [t for t in top if t.median <= best * (1 + within)][:k]
    return [{}] + [t.config for t in top]


def confirm(measurer, configs: list[dict], rounds: int = ROUNDS) -> list[Finalist]:
    """Time every config ``rounds`` times, interleaved (A B C A B C ...); a config that fails
    once is dropped (its failure kept)."""
    out = [Finalist(c) for c in configs]
    for _ in range(rounds):
        for f in out:
            if f.failed:
                continue
            r = measurer.measure([f.config or None], screen=False)[0]
            if r.failure:
                f.failed = f"{r.failure}: {r.message[:200]}"
            else:
                f.times.extend(r.times)
    return out


def decide(timed: list[Finalist]) -> tuple[Finalist, Finalist | None]:
    """(winner, default): the fastest finalist whose interval lies wholly below the default's,
    else the default (a finalist replaces the default only when it is surely faster); when the
    default did not run, the fastest finalist."""
    ok = [f for f in timed if f.times and not f.failed]
    if not ok:
        raise ValueError("no finalist ran")
    default = next((f for f in ok if not f.config), None)
    if default is None:
        return min(ok, key=lambda f: f.ci()[0]), None
    _, dlo, _ = default.ci()
    sure = [f for f in ok if f.config and f.ci()[2] < dlo]
    return (min(sure, key=lambda f: f.ci()[0]) if sure else default), default


def confirm_task(db: Database, task, measurer, rounds: int = ROUNDS, k: int = FINALISTS) -> dict | None:
    """Re-time ``task``'s finalists, store the winner with its interval (``Database.set_winner``)
    and return the stored record; None when nothing ran. The re-timings are not trials: they
    choose among configs the search measured."""
    timed = confirm(measurer, finalists(db, task, k), rounds)
    try:
        win, default = decide(timed)
    except ValueError:
        log.warning("%s: no finalist ran again; no winner stored", task.description)
        return None
    db.set_winner(task.key, task.target.key, win.config, win.ci(), default.ci() if default else None,
                  [f.as_dict() for f in timed])
    if win.config:
        log.info("%s: %s wins, %.1f us [%.1f, %.1f] vs default %s", task.description, config_key(win.config),
                 *(x * 1e6 for x in win.ci()), "not run" if default is None else f"{default.ci()[0] * 1e6:.1f} us")
    return db.winner(task.key, task.target.key)


__all__ = ["Finalist", "confirm", "confirm_task", "decide", "finalists", "median_ci"]
