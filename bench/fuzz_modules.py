"""Fuzz real modules at length (off CI): ``python -m bench.fuzz_modules --cases 5000``.

Each case changes one token of a corpus or JAX user module (HLO, optimized HLO or StableHLO) and
loads, compiles, runs and checks it in a worker subprocess (``tests/_fuzz.py``, the engine of
``tests/test_fuzz_modules.py``). Prints the counts by outcome (matched; refused, by error type;
timeout; crash, untyped exception, wrong answer, reference error) and every failing case, whose
module text is written to ``--out`` for replay with ``python tests/_fuzz.py FILE``.
"""

from __future__ import annotations

import argparse
import collections
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _fuzz import FAILURES, Fuzzer, corpus, mutate
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

log = logging.getLogger("fuzz_modules")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heavy", action="store_true", help="also the modules over 2 s a case")
    ap.add_argument("--out", type=Path, default=Path("fuzz_failures"), help="folder for failing texts")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    files = corpus(args.heavy)
    counts: collections.Counter = collections.Counter()
    refused: collections.Counter = collections.Counter()
    fuzzer = Fuzzer(args.timeout)
    t0 = time.monotonic()

    @seed(args.seed)
    @settings(max_examples=args.cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(path=st.sampled_from(files), data=st.data())
    def case(path, data):
        text = mutate(path, data, ("number", "delete", "duplicate", "replace", "truncate"))
        out = fuzzer.run(text, path.name)
        counts[out.kind] += 1
        if out.kind == "refused":
            refused[f"{out.error} ({out.stage})"] += 1
        if out.failed:
            args.out.mkdir(exist_ok=True)
            f = args.out / f"{sum(counts[k] for k in FAILURES):04d}_{path.name}"
            f.write_text(text)
            log.info("%s: %s %s at %s: %s [%s]", path.name, out.kind, out.error, out.stage, out.detail, f)
        n = sum(counts.values())
        if n % 100 == 0:
            log.info("%d cases, %.0f s: %s", n, time.monotonic() - t0, dict(counts))

    try:
        case()
    finally:
        fuzzer.close()
    n = sum(counts.values())
    print(f"\n{n} cases in {time.monotonic() - t0:.0f} s over {len(files)} module texts")
    for kind in ("matched", "refused", "timeout", *FAILURES):
        print(f"  {kind:16s} {counts[kind]}")
    print("refused by type (stage):")
    for k, v in refused.most_common():
        print(f"  {k:40s} {v}")


if __name__ == "__main__":
    main()
