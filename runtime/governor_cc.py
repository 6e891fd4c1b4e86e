"""The thread governor of runtime/threads.py in C++, for calls that never enter Python: the XLA
FFI handler (runtime/ffi.py) runs each plan's calls under one of these.

It is the same policy, step for step, on the same constants (substituted from threads.py), with
the same ``begin``/``end`` protocol as :meth:`runtime.threads.Governor.begin`/``end``: ``begin``
gives the call's thread count and whether it is timed; a timed call reports its start and end
(seconds) to ``end``. The two implementations are checked against each other on random timings
(tests/test_ffi_governor.py). ``GOVERNOR_CC`` is C++17 text for a translation unit that has
included <algorithm>, <deque>, <mutex> and <vector>; it also exports ``hlotune_gov_*`` functions
for those tests.
"""

from __future__ import annotations

from . import threads as T

_TEMPLATE = r"""
namespace hlgov {
const double SWITCH = @SWITCH@, DRIFT = @DRIFT@, SUSTAIN = @SUSTAIN@, SAMPLE_S = @SAMPLE_S@;
const double MIN_GAP = @MIN_GAP@, MAX_GAP = @MAX_GAP@;
const long long PROBE = @PROBE@, MIN_INTERVAL = @MIN_INTERVAL@, MAX_INTERVAL = @MAX_INTERVAL@;
const long long MAX_REDUCED = @MAX_REDUCED@, WARMUP = @WARMUP@, WINDOW = @WINDOW@, SAMPLE = @SAMPLE@;
const long long MAX_SAMPLE = @MAX_SAMPLE@;

template <class C> double median(const C& xs) {       // the upper median, as threads._median
  std::vector<double> s(xs.begin(), xs.end());
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

struct Governor {
  std::vector<int> counts;           // most, then halving down to 1
  bool active = false;
  int current = 1;
  std::deque<double> recent;         // the current count's last WINDOW timed calls
  long long calls = 0, interval = MIN_INTERVAL, next_probe = WARMUP + MIN_INTERVAL;
  double gap = MIN_GAP;
  bool probing = false;
  std::vector<double> probe;
  int probe_n = 0;
  std::vector<double> blip;
  double blip_since = 0.0;
  bool down = false;                 // a probe with fewer threads won at down_since
  double down_since = 0.0;
  long long side = 0, every = SAMPLE, skip = WARMUP;
  std::mutex mu;

  explicit Governor(int most, bool enabled) {
    for (int n = most < 1 ? 1 : most; n >= 1; n /= 2) counts.push_back(n);
    if (counts.back() != 1) counts.push_back(1);
    current = counts[0];
    active = enabled && counts.size() > 1;
  }

  void keep(double s) {
    recent.push_back(s);
    while ((long long)recent.size() > WINDOW) recent.pop_front();
  }

  int choose() {
    ++calls;
    if (!probing && calls >= next_probe && recent.size() >= 3) {
      size_t k = std::find(counts.begin(), counts.end(), current) - counts.begin();
      std::vector<int> near;
      if (k >= 1) near.push_back(counts[k - 1]);
      if (k + 1 < counts.size()) near.push_back(counts[k + 1]);
      if (!down) ++side;
      probing = true;
      probe.clear();
      probe_n = near[side % (long long)near.size()];
    }
    return probing ? probe_n : current;
  }

  void end_probe(double now) {
    std::vector<double> times = probe;
    int n = probe_n;
    probing = false;
    double score = median(times), base = recent.empty() ? score : median(recent);
    if (score >= SWITCH * base) {
      down = false;
      long long most = current == counts[0] ? MAX_INTERVAL : MAX_REDUCED;
      interval = std::min(most, interval * 2);
      gap = std::min(MAX_GAP, std::max(MIN_GAP, 2 * gap));
    } else if (n < current && (!down || now - down_since < SUSTAIN)) {
      if (!down) { down = true; down_since = now; }
      recent.clear();
      interval = MIN_INTERVAL;
      gap = 0.0;
    } else {
      current = n; interval = MIN_INTERVAL; blip.clear(); down = false; gap = MIN_GAP;
      recent.clear();
      for (double t : times) keep(t);
    }
    long long wait = interval;
    if (current == counts[0] && !recent.empty())
      wait = std::max(wait, (long long)(gap / std::max(median(recent), 1e-9)));
    next_probe = calls + wait;
  }

  void record(int n, double seconds, double now) {
    if (calls <= WARMUP) return;
    if (probing && n == probe_n) {
      probe.push_back(seconds);
      if ((long long)probe.size() >= PROBE) end_probe(now);
      return;
    }
    if (n != current) return;
    if (recent.size() >= 3) {
      double mid = median(recent);
      if (!(mid / DRIFT <= seconds && seconds <= mid * DRIFT)) {
        if (blip.empty()) blip_since = now;
        blip.push_back(seconds);
        if (blip.size() < 2 || now - blip_since < SUSTAIN) return;
        recent.clear();
        size_t from = blip.size() >= 3 ? blip.size() - 3 : 0;
        for (size_t i = from; i + 1 < blip.size(); ++i) keep(blip[i]);
        interval = MIN_INTERVAL;
        gap = 0.0;
        next_probe = calls + 1;
      }
    }
    blip.clear();
    keep(seconds);
    every = std::max(1LL, std::min(MAX_SAMPLE, (long long)(SAMPLE_S / std::max(median(recent), 1e-9))));
  }

  void plan() {
    if (probing || !blip.empty() || recent.size() < 3) skip = 0;
    else skip = std::max(0LL, std::min(every - 1, next_probe - calls - 1));
  }

  // the next call's thread count; *timed: whether its start and end go to end()
  int begin(int* timed) {
    std::lock_guard<std::mutex> g(mu);
    if (skip) { --skip; ++calls; *timed = 0; return current; }
    *timed = 1;
    return choose();
  }

  void end(int n, double t0, double t1) {
    std::lock_guard<std::mutex> g(mu);
    record(n, t1 - t0, t1);
    plan();
  }
};
}  // namespace hlgov

extern "C" void* hlotune_gov_new(int most, int enabled) { return new hlgov::Governor(most, enabled != 0); }
extern "C" void hlotune_gov_free(void* g) { delete static_cast<hlgov::Governor*>(g); }
extern "C" int hlotune_gov_begin(void* g, int* timed) { return static_cast<hlgov::Governor*>(g)->begin(timed); }
extern "C" void hlotune_gov_end(void* g, int n, double t0, double t1) { static_cast<hlgov::Governor*>(g)->end(n, t0, t1); }
extern "C" int hlotune_gov_current(void* g) { return static_cast<hlgov::Governor*>(g)->current; }
"""

_NAMES = ("SWITCH", "DRIFT", "SUSTAIN", "SAMPLE_S", "MIN_GAP", "MAX_GAP", "PROBE", "MIN_INTERVAL", "MAX_INTERVAL",
          "MAX_REDUCED", "WARMUP", "WINDOW", "SAMPLE", "MAX_SAMPLE")


def _source() -> str:
    text = _TEMPLATE
    for name in _NAMES:
        value = getattr(T, name)
        text = text.replace(f"@{name}@", repr(float(value)) if isinstance(value, float) else str(int(value)))
    return text


#: the governor as C++ (see the module docstring)
GOVERNOR_CC = _source()

__all__ = ["GOVERNOR_CC"]
