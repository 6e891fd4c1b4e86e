"""Threads that follow the cores actually free: a per-program governor.

Every generated CPU kernel opens its parallel region with ``min(T, omp_get_max_threads())``
threads, where ``T`` is the target's thread count (what it was tuned for) and OpenMP's
``nthreads-var`` is the calling thread's setting. A :class:`Governor` sets that value before
each call of a compiled program and learns which count runs it fastest *now*: when another
process keeps a core busy, a team of two on two cores waits at every barrier for the thread the
scheduler put aside, and one thread is faster (measured on model layers: 2.3-4.5x slower with
two threads next to a busy process, 1.0-1.1x with one).

The choice is measured, never guessed from a load average: the governor runs the current count,
and now and then ``PROBE`` calls in a row with a neighbouring count (a probe; the first of them
may pay for waking the pool's threads); the current count changes when the probe's median beats
the median of its recent calls by ``SWITCH`` (hysteresis; fewer threads must win twice,
``SUSTAIN`` apart). Probes back off while they confirm the current count (every 8, 16, ...
calls, and at the full count at most one per ``MAX_GAP`` seconds of the program's own calls: a
probe with fewer threads idles a core, which a virtual machine may make the next calls pay for), and come back at once
when the current count's calls move by more than ``DRIFT`` for ``SUSTAIN`` seconds (shorter
spells, say the slow calls right after a pause, are ignored): a machine that becomes busy is
noticed within about 0.1 s, and one that becomes quiet again within ``MAX_REDUCED`` calls.
Between decisions a call costs a counter; about one in ``SAMPLE_S`` seconds of calls is timed.
``HLOTUNE_ADAPTIVE_THREADS=0`` turns it off (every call runs
``T`` threads).
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import logging
import os
import threading
import time
from functools import cache

log = logging.getLogger(__name__)

#: a probe wins when its median takes less than this fraction of the current count's recent median
SWITCH = 0.85
#: consecutive calls of one probe
PROBE = 3
#: calls of the current count this far from its recent median, two or more in a row for at
#: least SUSTAIN seconds, re-arm the probes; fewer threads must win twice SUSTAIN apart. Shorter
#: spells are transients: a virtual machine's idle core can run a team 6-50x slower for
#: 10-35 ms after a pause (measured here)
DRIFT, SUSTAIN = 1.3, 0.05
#: calls between probes: at first, at most at the full count, at most below it
MIN_INTERVAL, MAX_INTERVAL, MAX_REDUCED = 8, 256, 32
#: seconds of the program's calls between probes at the full count: after the first, at most
MIN_GAP, MAX_GAP = 0.25, 2.0
#: calls not sampled (first touches of buffers), and the current count's samples kept
WARMUP, WINDOW = 8, 5
#: between probes, one call in SAMPLE is timed at first, then one per SAMPLE_S seconds of calls
#: (at most one in MAX_SAMPLE), to notice a change of conditions
SAMPLE, SAMPLE_S, MAX_SAMPLE = 4, 2e-4, 64

_local = threading.local()


@cache
def _omp():
    """(omp_set_num_threads, omp_get_max_threads) of the OpenMP runtime the kernels link
    (libgomp with gcc, libomp with clang), or None where none can be loaded."""
    for name in ("gomp", "omp", "iomp5"):
        path = ctypes.util.find_library(name)
        for cand in ([path] if path else []) + [f"lib{name}.so.1", f"lib{name}.so", f"lib{name}.dylib"]:
            try:
                lib = ctypes.CDLL(cand)
                put, get = lib.omp_set_num_threads, lib.omp_get_max_threads
            except (OSError, AttributeError):
                continue
            put.argtypes, put.restype = [ctypes.c_int], None
            get.argtypes, get.restype = [], ctypes.c_int
            return put, get
    log.info("no OpenMP runtime found: kernels run their compiled thread count")
    return None


def enabled() -> bool:
    return os.environ.get("HLOTUNE_ADAPTIVE_THREADS", "1").strip().lower() not in ("0", "false", "no", "off")


def set_threads(n: int) -> None:
    """Make parallel regions that this OS thread opens from now on use at most ``n`` threads."""
    omp = _omp()
    if omp is None or getattr(_local, "n", None) == n:
        return
    omp[0](int(n))
    _local.n = n


def current_limit() -> int | None:
    """This OS thread's OpenMP thread limit (None without an OpenMP runtime)."""
    omp = _omp()
    return None if omp is None else int(omp[1]())


def _counts(most: int) -> tuple[int, ...]:
    """The thread counts a governor tries: ``most``, then halving down to 1."""
    out, n = [], most
    while n >= 1:
        out.append(n)
        n //= 2
    return tuple(dict.fromkeys(out + [1]))


class Governor:
    """Chooses the thread count of each call of one compiled program (see the module doc):
    ``gov.run(fn, *args)``. Not shared between OS threads (each program call sets the
    calling thread's limit and puts it back).

    Decisions compare fresh samples only. A *probe* runs ``PROBE`` consecutive calls with a
    neighbouring count (the first of them may pay for waking threads up); it *wins* when their
    median beats the median of the current count's last ``WINDOW`` calls (at least 3) by
    ``SWITCH``. A win with more threads switches at once (the full count is the default worth
    returning to); one with fewer switches only when another probe, against fresh calls of the
    current count at least ``SUSTAIN`` seconds later, wins too (so a spell of slow calls shorter
    than that never costs threads). A loss doubles the probe interval, up to ``MAX_INTERVAL``
    calls below the full count; at the full count the gap between probes also doubles in time,
    up to ``MAX_GAP`` seconds of its own calls (each probe with fewer threads leaves a core idle, which a
    virtual machine can make pay for tens of milliseconds). Conditions have changed when timed
    calls of the current count fall outside ``DRIFT`` of its median, two or more in a row for
    at least ``SUSTAIN`` seconds: the window restarts from them and a probe follows; a shorter
    spell is a blip and is not kept."""

    def __init__(self, most: int):
        self.counts = _counts(max(1, int(most)))
        #: whether calls are governed (several counts, not turned off, an OpenMP runtime)
        self.active = len(self.counts) > 1 and enabled() and _omp() is not None
        self.current = self.counts[0]
        self.recent: collections.deque = collections.deque(maxlen=WINDOW)
        self.calls = 0
        self.interval = MIN_INTERVAL
        self.next_probe = WARMUP + MIN_INTERVAL
        self._gap = MIN_GAP                         # seconds of calls between probes at the full count
        self._probe: list[float] | None = None     # the running probe's times
        self._probe_n = 0
        self._blip: list[float] = []               # the current count's out-of-range times, in a row
        self._blip_since = 0.0                      # when the first of them ended
        self._down_since: float | None = None      # when a probe with fewer threads first won
        self._side = 0
        self._every = SAMPLE                        # one call of the current count in this many is timed
        self._skip = WARMUP                         # calls to run before the next timed one

    def choose(self) -> int:
        """The count for the next call: the current one, or a neighbour while a probe runs."""
        self.calls += 1
        if self._probe is None and self.calls >= self.next_probe and len(self.recent) >= 3:
            k = self.counts.index(self.current)
            near = [self.counts[j] for j in (k - 1, k + 1) if 0 <= j < len(self.counts)]
            if self._down_since is None:
                self._side += 1
            self._probe, self._probe_n = [], near[self._side % len(near)]
        return self.current if self._probe is None else self._probe_n

    def record(self, n: int, seconds: float, now: float | None = None) -> None:
        """Account a call of ``n`` threads that took ``seconds`` and ended at ``now``
        (``time.perf_counter()`` by default)."""
        if self.calls <= WARMUP:        # first calls pay for first touches: not samples
            return
        now = time.perf_counter() if now is None else now
        if self._probe is not None and n == self._probe_n:
            self._probe.append(seconds)
            if len(self._probe) >= PROBE:
                self._end_probe(now)
            return
        if n != self.current:
            return
        if len(self.recent) >= 3:
            mid = _median(self.recent)
            if not mid / DRIFT <= seconds <= mid * DRIFT:
                if not self._blip:
                    self._blip_since = now
                self._blip.append(seconds)
                if len(self._blip) < 2 or now - self._blip_since < SUSTAIN:      # a blip, so far
                    return
                log.debug("threads %d: %.3g s per call, was %.3g s: probing", n, seconds, mid)
                self.recent.clear()                      # conditions changed: look around
                self.recent.extend(self._blip[-3:-1])        # and this call, below
                self.interval, self._gap = MIN_INTERVAL, 0.0
                self.next_probe = self.calls + 1
        self._blip = []
        self.recent.append(seconds)
        # time about SAMPLE_S of calls between samples: cheap enough for microsecond programs
        self._every = max(1, min(MAX_SAMPLE, int(SAMPLE_S / max(_median(self.recent), 1e-9))))

    def _end_probe(self, now: float) -> None:
        times, n = self._probe, self._probe_n
        self._probe = None
        score, base = _median(times), _median(self.recent)
        if score >= SWITCH * base:
            self._down_since = None
            most = MAX_INTERVAL if self.current == self.counts[0] else MAX_REDUCED
            self.interval = min(most, self.interval * 2)
            self._gap = min(MAX_GAP, max(MIN_GAP, 2 * self._gap))
        elif n < self.current and (self._down_since is None or now - self._down_since < SUSTAIN):
            if self._down_since is None:                # fewer threads won: ask again later,
                self._down_since = now                  # against fresh calls of the current count
            self.recent.clear()
            self.interval, self._gap = MIN_INTERVAL, 0.0
        else:
            log.debug("threads %d -> %d (%.3g s vs %.3g s per call)", self.current, n, score, base)
            self.current, self.interval, self._blip, self._down_since = n, MIN_INTERVAL, [], None
            self._gap = MIN_GAP
            self.recent.clear()
            self.recent.extend(times)
        wait = self.interval
        if self.current == self.counts[0] and self.recent:       # a gap in time, as calls
            wait = max(wait, int(self._gap / max(_median(self.recent), 1e-9)))
        self.next_probe = self.calls + wait

    def _plan(self) -> None:
        """How many calls run untimed before the next one that a decision needs."""
        if self._probe is not None or self._blip or len(self.recent) < 3:
            self._skip = 0
        else:
            self._skip = max(0, min(self._every - 1, self.next_probe - self.calls - 1))

    def begin(self) -> tuple[int, bool]:
        """The next call's thread count, and whether that call is timed (then report it to
        :meth:`end`). Untimed calls, between decisions, cost a counter."""
        if self._skip:
            self._skip -= 1
            self.calls += 1
            return self.current, False
        return self.choose(), True

    def end(self, n: int, t0: float, t1: float) -> None:
        """Account a timed call of ``n`` threads that ran from ``t0`` to ``t1`` (seconds)."""
        self.record(n, t1 - t0, t1)
        self._plan()

    def run(self, fn, *args):
        """``fn(*args)`` with this call's thread limit set on the calling thread (and put back),
        timed when :meth:`begin` says so."""
        n, timed = self.begin()
        t0 = time.perf_counter() if timed else 0.0
        r = fn(*args) if n == self.counts[0] else self._limited(n, fn, args)
        if timed:
            self.end(n, t0, time.perf_counter())
        return r

    @staticmethod
    def _limited(n: int, fn, args):
        before = getattr(_local, "n", None)
        if before is None:
            before = _local.n = current_limit()         # OpenMP's own default on this thread
        set_threads(n)
        try:
            return fn(*args)
        finally:
            set_threads(before)


def _median(xs) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


__all__ = ["Governor", "current_limit", "enabled", "set_threads"]
