"""StableHLO's interpreter suite on hlotune: every single-device case, by status and reason.

Run: ``python -m bench.stablehlo_conformance --suite DIR`` where DIR holds the files of
``stablehlo/tests/interpret`` of the openxla/stablehlo repository (a copy kept outside this
repository; its files are not ours). Each ``// -----`` case becomes a module returning the values
its ``check`` ops test (bench/stablehlo_cases.py), is compiled for ``--target`` (default cpu;
``reference`` evaluates it with the numpy reference instead) and run; its checks decide:

* pass: every check holds;
* fail: a wrong answer (a check does not hold);
* refused: hlotune raised one of its typed errors (an unsupported op or type, a module it
  cannot parse), the reason names it;
* error: anything else (an untyped exception, a C compiler error, a crash, a timeout).

A ``run_parallel`` over one program (infeed/outfeed cases) runs that program with its infeed
queue filled by the case's queue functions. Cases on several devices, probes (``interpreter.probe``) and
cases without checks (FileCheck tests of the interpreter's printing) are counted apart.
Writes results/stablehlo_conformance.csv (one row per case) and .md (counts and reasons).
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import re
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path

from .common import environment, md_table, write_results
from .stablehlo_cases import Case, HarnessError, compare, harness, queue_module, split_cases

DEFAULT_SUITE = Path(os.environ.get("STABLEHLO_INTERPRET_SUITE",
                                    "/work/.cache/stablehlo/stablehlo/tests/interpret"))


def parse_literal(text: str, ty: str):
    """The numpy value of ``dense<...> : type`` (hlotune's literal parser, nothing else)."""
    import numpy as np
    from hlotune.frontend.stablehlo import parse_stablehlo
    mod = parse_stablehlo(f"func.func @main() -> {ty} {{\n  %c = stablehlo.constant {text} : {ty}\n"
                          f"  func.return %c : {ty}\n}}\n")
    comp = mod.entry_computation
    root = comp.root_instruction
    if root.opcode == "broadcast":
        lit = comp.by_name[root.operands[0]].literal
        return np.broadcast_to(lit, root.shape.dims).copy()
    return np.asarray(root.literal)


def reason_of(e: BaseException) -> str:
    """A short reason without file locations (cases with the same cause share it)."""
    from hlotune.dsl.errors import HloParseError, UnsupportedOpError
    if isinstance(e, UnsupportedOpError):
        detail = str(e).split(": ", 1)[1] if ": " in str(e) else ""
        return f"unsupported {e.opcode}" + (f": {detail}" if detail else "")
    if isinstance(e, HloParseError):
        return f"parse error: {e.reason}"
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}"


def _normalize(reason: str) -> str:
    """Group reasons: drop SSA names, instruction names and numbers that differ per case."""
    r = re.sub(r"'[^']*\.[0-9][^']*'", "'…'", reason)
    r = re.sub(r"%[\w#.]+", "%…", r)
    return r[:160]


def run_case(case: Case, target: str) -> tuple[str, str, str]:
    """(status, reason, detail) of one case."""
    from hlotune.dsl.errors import CompileError, HlotuneError
    try:
        text, checks = harness(case, parse_literal)
        queues = queue_module(case) if case.kind == "single-run-parallel" else []
    except HarnessError as e:
        return "refused", f"harness: {e}", ""
    except HlotuneError as e:
        return "refused", f"expected value: {reason_of(e)}", ""
    try:
        infeed = [_evaluate(q, target)[0] for q in queues]
        outputs = _evaluate(text, target, infeed)
    except CompileError as e:
        return "error", "C compiler error", str(e)[:400]
    except HlotuneError as e:
        return "refused", reason_of(e), str(e).splitlines()[0][:300]
    except Exception as e:  # noqa: BLE001  (an untyped exception is this benchmark's finding)
        return "error", f"{type(e).__name__}: {str(e)[:120]}", traceback.format_exc()[-600:]
    for c in checks:
        why = compare(c, outputs)
        if why is not None:
            return "fail", "wrong answer", why[:400]
    return "pass", "", ""


def _evaluate(text: str, target: str, infeed=()) -> list:
    """The results of ``text``'s ``@main`` (no arguments) on ``target``, its infeed queue
    holding ``infeed`` (each value a one-element tuple of data)."""
    import hlotune
    m = hlotune.load_hlo(text)
    if target == "reference":
        from hlotune.dsl.reference import evaluate
        return evaluate(list(m.outputs), list(infeed), list(m.params))
    c = hlotune.compile(m, target=target)
    c.infeed.extend(infeed)
    r = c()
    return list(r) if isinstance(r, tuple) else [r]


def _worker(conn, target: str) -> None:
    while True:
        case = conn.recv()
        if case is None:
            return
        t0 = time.perf_counter()
        status, reason, detail = run_case(case, target)
        conn.send((status, reason, detail, time.perf_counter() - t0))


class _Pool:
    """Worker processes running one case at a time each; a worker that dies or overruns the
    timeout is replaced and its case recorded as an error."""

    def __init__(self, jobs: int, target: str, timeout: float):
        self.ctx = mp.get_context("spawn")
        self.target, self.timeout = target, timeout
        self.workers = [self._start() for _ in range(jobs)]

    def _start(self):
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(child, self.target), daemon=True)
        p.start()
        return {"proc": p, "conn": parent, "case": None, "since": 0.0}

    def run(self, cases: list[Case], on_result) -> None:
        todo = list(cases)
        while todo or any(w["case"] is not None for w in self.workers):
            for w in self.workers:
                if w["case"] is None and todo:
                    w["case"], w["since"] = todo.pop(0), time.perf_counter()
                    w["conn"].send(w["case"])
            busy = [w for w in self.workers if w["case"] is not None]
            ready = wait([w["conn"] for w in busy], timeout=1.0)
            now = time.perf_counter()
            for k, w in enumerate(self.workers):
                if w["case"] is None:
                    continue
                if w["conn"] in ready:
                    try:
                        on_result(w["case"], *w["conn"].recv())
                        w["case"] = None
                        continue
                    except (EOFError, OSError):
                        why = "the worker process died (a crash in generated code?)"
                elif now - w["since"] > self.timeout:
                    why = f"timed out after {self.timeout:g} s"
                else:
                    continue
                on_result(w["case"], "error", why, "", now - w["since"])
                w["proc"].kill()
                self.workers[k] = self._start()

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except OSError:
                pass
            w["proc"].join(timeout=5)
            if w["proc"].is_alive():
                w["proc"].kill()


def collect(suite: Path, only: list[str] | None) -> list[Case]:
    files = sorted(suite.glob("*.mlir")) + sorted(suite.glob("chlo/*.mlir"))
    if not files:
        raise SystemExit(f"no .mlir files under {suite}; fetch github:openxla/stablehlo and pass "
                         "--suite .../stablehlo/tests/interpret")
    cases = []
    for f in files:
        rel = f.relative_to(suite).as_posix()
        if only and not any(o in rel for o in only):
            continue
        cases += split_cases(rel, f.read_text())
    return cases


SINGLE = ("single", "single-run-parallel")


def report(rows: list[dict], target: str, suite: Path) -> tuple[str, str]:
    single = [r for r in rows if r["kind"] in SINGLE]
    by_status = collections.Counter(r["status"] for r in single)
    lines = [f"{len(single)} single-device cases on `{target}`: " +
             ", ".join(f"{by_status.get(s, 0)} {s}" for s in ("pass", "fail", "refused", "error")) + ".",
             "", md_table(["status", "cases"], [[s, by_status.get(s, 0)] for s in
                                                ("pass", "fail", "refused", "error")])]
    groups: dict[tuple, list] = collections.defaultdict(list)
    for r in single:
        if r["status"] != "pass":
            groups[(r["status"], _normalize(r["reason"]))].append(r)
    if groups:
        lines += ["", "## What does not pass, by reason", "",
                  md_table(["status", "reason", "cases", "examples", "detail (first case)"],
                           [[s, reason.replace("|", "/"), len(rs), ", ".join(r["case"] for r in rs[:3]),
                             rs[0]["detail"].splitlines()[0][:160].replace("|", "/") if rs[0]["detail"] else ""]
                            for (s, reason), rs in sorted(groups.items(), key=lambda kv: -len(kv[1]))])]
    per_file: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in single:
        per_file[r["file"]][r["status"]] += 1
    lines += ["", "## Per file", "",
              md_table(["file", "pass", "fail", "refused", "error"],
                       [[f, c["pass"], c["fail"], c["refused"], c["error"]] for f, c in sorted(per_file.items())])]
    other = collections.Counter(r["kind"] for r in rows if r["kind"] not in SINGLE)
    notes = ("Cases counted apart (not single-device check cases): " +
             ", ".join(f"{n} {k}" for k, n in sorted(other.items())) +
             f". Suite: `{suite}` (files of openxla/stablehlo's `stablehlo/tests/interpret`).")
    return "\n".join(lines), notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE,
                    help="the stablehlo/tests/interpret folder of an openxla/stablehlo checkout")
    ap.add_argument("--target", default="cpu", help="cpu, opencl[...], or reference (numpy)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    ap.add_argument("--only", nargs="*", help="file name parts to run (default: all)")
    ap.add_argument("--name", default="stablehlo_conformance", help="results/NAME.{md,csv}")
    ap.add_argument("--note", default="", help="a paragraph added to the notes of the .md")
    ap.add_argument("--suite-commit", default=os.environ.get("STABLEHLO_SUITE_COMMIT", "unknown"),
                    help="the openxla/stablehlo commit the suite was taken from (recorded)")
    args = ap.parse_args(argv)
    cases = collect(args.suite, args.only)
    env = environment({"target": args.target, "stablehlo_suite_commit": args.suite_commit})
    rows: list[dict] = []

    def record(case, status, reason, detail, seconds):
        rows.append({"case": case.name, "file": case.file, "index": case.index, "line": case.line,
                     "kind": case.kind, "status": status, "reason": reason, "detail": detail,
                     "seconds": round(seconds, 3)})
        print(f"{status:8s} {case.name}  {reason}", flush=True)

    runnable = [c for c in cases if c.kind in SINGLE]
    for c in cases:
        if c.kind not in SINGLE:
            record(c, "excluded", c.kind, "", 0.0)
    pool = _Pool(max(1, args.jobs), args.target, args.timeout)
    try:
        pool.run(runnable, record)
    finally:
        pool.close()
    rows.sort(key=lambda r: (r["file"], r["index"]))
    table, notes = report(rows, args.target, args.suite)
    write_results(args.name, rows, table, env, notes + ("\n\n" + args.note if args.note else ""))
    print(table.splitlines()[0])


if __name__ == "__main__":
    main()
