"""Fuzz real modules at length (off CI): ``python -m bench.fuzz_modules --cases 10000``.

Each case changes one token of a corpus or JAX user module (HLO, optimized HLO or StableHLO) and
loads, compiles and runs it in a worker subprocess (``tests/_fuzz.py``, the engine of
``tests/test_fuzz_modules.py``), with XLA:CPU running the same text on the same inputs as the
oracle. Writes results/fuzz.{csv,md}: the counts by outcome (matched; refused, by error type;
XLA refused; timeout; crash, untyped, internal, verified_error, wrong), the seed, the slowest
cases, and every failing case, whose module text goes to ``--out`` for replay with
``python tests/_fuzz.py FILE``.
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

from .common import environment, md_table, write_results

log = logging.getLogger("fuzz_modules")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heavy", action="store_true", help="also the modules over 2 s a case")
    ap.add_argument("--out", type=Path, default=Path("fuzz_failures"), help="folder for failing texts")
    ap.add_argument("--name", default="fuzz", help="results/NAME.{csv,md}")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    files = corpus(args.heavy)
    counts: collections.Counter = collections.Counter()
    refused: collections.Counter = collections.Counter()
    rows: list[dict] = []
    env = environment({"cases": args.cases, "seed": args.seed, "timeout_s": args.timeout})
    fuzzer = Fuzzer(args.timeout)
    t0 = time.monotonic()

    @seed(args.seed)
    @settings(max_examples=args.cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(path=st.sampled_from(files), data=st.data())
    def case(path, data):
        text = mutate(path, data, ("number", "delete", "duplicate", "replace", "truncate"))
        t1 = time.monotonic()
        out = fuzzer.run(text, path.name)
        rows.append({"case": len(rows), "module": path.name, "kind": out.kind, "error": out.error, "stage": out.stage,
                     "seconds": round(time.monotonic() - t1, 3), "detail": out.detail[:300]})
        counts[out.kind] += 1
        if out.kind == "refused":
            refused[f"{out.error} ({out.stage})"] += 1
        if out.failed or out.kind in ("timeout", "hang_unjudged"):
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
    wall = time.monotonic() - t0
    kinds = ("matched", "refused", "xla_refused", "impl_defined", "both_hang", "hang_unjudged", "timeout", *FAILURES)
    table = md_table(["outcome", "cases", "failure?"], [[k, counts[k], "yes" if k in FAILURES else
                                                         ("a hang" if k == "timeout" else "")] for k in kinds])
    slow = sorted(rows, key=lambda r: -r["seconds"])[:10]
    fails = [r for r in rows if r["kind"] in (*FAILURES, "timeout", "hang_unjudged", "impl_defined")]
    notes = (f"{n} cases in {wall:.0f} s over {len(files)} module texts (seed {args.seed}, "
             f"{args.timeout:g} s per case), XLA:CPU as the oracle. **Failures: "
             f"{sum(counts[k] for k in FAILURES)}, hangs (timeouts): {counts['timeout']}.**\n\n"
             "## Refused, by error type (stage)\n\n"
             + md_table(["error (stage)", "cases"], [[k, v] for k, v in refused.most_common()])
             + "\n\n## XLA refused (hlotune ran them)\n\n"
             + md_table(["module", "error", "detail"], [[r["module"], r["error"], r["detail"][:120].replace("|", "/")]
                                                        for r in rows if r["kind"] == "xla_refused"][:20])
             + "\n\n## Slowest cases\n\n"
             + md_table(["case", "module", "outcome", "seconds"], [[r["case"], r["module"], r["kind"], r["seconds"]]
                                                                 for r in slow])
             + ("\n\n## Failures, hangs and implementation-defined differences\n\n" + md_table(["case", "module", "outcome", "error", "detail"],
                                                    [[r["case"], r["module"], r["kind"], r["error"],
                                                      r["detail"][:160].replace("|", "/")] for r in fails])
                if fails else ""))
    write_results(args.name, rows, table, env, notes)
    print(table)
    print(notes)


if __name__ == "__main__":
    main()
