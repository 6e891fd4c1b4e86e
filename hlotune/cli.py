"""The ``hlotune`` command line: ``run``, ``tune``, ``report``, ``devices``, ``export``, ``import``."""

from __future__ import annotations

import argparse
import logging
import math
import sqlite3
import sys
import textwrap
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .dsl.errors import DataFileError, HlotuneError, InternalError, KernelArgumentError

_NPZ_ERRORS = (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error)


def _load_npz(path, what: str):
    """The archive of arrays (``np.savez``) at ``path``; DataFileError naming ``what`` when it is
    missing, not an npz archive, or holds pickled objects."""
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataFileError(f"{what} file {path} does not exist") from None
    except _NPZ_ERRORS:
        raise DataFileError(f"{what} file {path} is not an npz archive of arrays (hlotune loads no pickled "
                            "objects); write one with np.savez(path, name=array, ...)") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataFileError(f"{what} file {path} holds one .npy array, not an npz archive; write one with "
                            "np.savez(path, name=array, ...)")
    return z


def _array(z, key: str, path) -> np.ndarray:
    try:
        return z[key]
    except _NPZ_ERRORS as e:
        raise DataFileError(f"{path}: array '{key}' cannot be read ({e})") from None


def _exact_cast(a: np.ndarray, t, where: str) -> np.ndarray:
    """``a`` as parameter ``t``'s dtype when every value survives the cast (as the Python API
    takes only arrays of the parameter's dtype, the CLI converts only what it can keep)."""
    want = t.dtype.np
    if a.dtype == want:
        return a
    if a.dtype.kind not in "biuf":
        raise KernelArgumentError(f"{where} has dtype {a.dtype}; parameter {t.name} needs {t.dtype}")
    with np.errstate(all="ignore"):
        b = a.astype(want)
        back = b.astype(a.dtype)
        same = (back == a) & (b == a)     # back: no rounding or wrap; b == a: no sign flip (uint8 -> int8)
    if a.dtype.kind == "f":
        same |= np.isnan(a) & np.isnan(back)
    if not same.all():
        i = tuple(int(x) for x in np.argwhere(~same)[0])
        raise KernelArgumentError(f"{where} is {a.dtype} and parameter {t.name} is {t.dtype}: the cast changes "
                                  f"values ({a[i].item()!r} at {list(i)} becomes {b[i].item()!r}); save the "
                                  f"array as {t.dtype}")
    return b


def input_keys(module) -> list[list[str]]:
    """The npz keys each parameter accepts (``Module.param_keys``)."""
    return module.param_keys()


def _load_inputs(module, path):
    """One array per parameter from the npz at ``path`` (random inputs when None), found under
    any key ``input_keys`` allows (other arrays, such as ``out0`` for ``--check``, are left
    alone); a parameter with no array or with two is a KernelArgumentError."""
    if path is None:
        return module.random_inputs()
    z = _load_npz(path, "inputs")
    allowed = input_keys(module)
    arrays = []
    for k, (t, ks) in enumerate(zip(module.params, allowed)):
        found = [key for key in ks if key in z.files]
        if not found:
            raise KernelArgumentError(f"{path}: no array {' or '.join(repr(x) for x in ks)} for parameter {k} "
                                      f"({t.name}: {t.dtype}{list(t.shape)}); the file has {z.files}; "
                                      f"parameters: {_param_list(module, allowed)}")
        if len(found) > 1:
            raise KernelArgumentError(f"{path}: arrays {found} are all parameter {k} ({t.name}); keep one")
        key = found[0]
        a = _array(z, key, path)
        if tuple(a.shape) != t.shape:
            raise KernelArgumentError(f"{path}: '{key}' has shape {a.shape}, parameter {t.name} needs {t.shape}")
        arrays.append(_exact_cast(a, t, f"{path}: '{key}'"))
    return arrays


def _param_list(module, allowed) -> str:
    return ", ".join(f"{'/'.join(ks)} ({t.dtype}{list(t.shape)})" for t, ks in zip(module.params, allowed))


def check_outputs(outs, ref_path, rtol=None, atol=None) -> list[dict]:
    """Compare ``outs`` with ``out0, out1, ...`` of an npz; one dict per output."""
    from .dsl.tolerance import check
    z = _load_npz(ref_path, "reference")
    rows = []
    for k, o in enumerate(outs):
        key = f"out{k}"
        if key not in z.files:
            rows.append({"output": key, "ok": False, "why": "missing in reference"})
            continue
        r = _array(z, key, ref_path)
        if r.shape != o.shape:
            rows.append({"output": key, "ok": False, "why": f"shape {o.shape} != reference {r.shape}"})
            continue
        if r.dtype.kind not in "biuf":
            rows.append({"output": key, "ok": False, "why": f"reference dtype {r.dtype} is not numeric"})
            continue
        c = check(o, r, rtol, atol)     # the one tolerance policy (the tuner's gate uses it too)
        rows.append({"output": key, "ok": c.ok, "max_abs": c.max_abs, "max_rel": c.max_rel, "rtol": c.rtol,
                     "atol": c.atol})
    if len(z.files) and len([f for f in z.files if f.startswith("out")]) != len(outs):
        rows.append({"output": "count", "ok": False,
                     "why": f"module gives {len(outs)} outputs, reference has "
                            f"{len([f for f in z.files if f.startswith('out')])}"})
    return rows


def cmd_run(args) -> int:
    from .api import _feed_leaves, compile, load_hlo
    m = load_hlo(args.module)
    t0 = time.perf_counter()
    cm = compile(m, target=args.target, db=args.db, threads=args.threads)
    t1 = time.perf_counter()
    ins = _load_inputs(m, args.inputs)
    outs = cm(*ins)
    outs = outs if isinstance(outs, tuple) else (outs,)
    # what this call's outfeeds wrote, as arrays (the --repeat calls below queue theirs too)
    fed = [x for v, sh in zip(list(cm.outfeed), m.outfeed) for x in _feed_leaves(v, sh)]
    t2 = time.perf_counter()
    print(f"{m.signature}")
    print(f"target {cm.target}: compiled in {t1 - t0:.2f}s, ran in {(t2 - t1) * 1e3:.2f}ms")
    print(textwrap.fill(kernel_summary(m, cm, args.db), 100))
    if args.repeat is not None:
        import statistics
        ts = []
        for _ in range(args.repeat):
            a = time.perf_counter()
            cm(*ins)
            ts.append(time.perf_counter() - a)
        print(f"time per call: median {statistics.median(ts) * 1e3:.3f} ms, min {min(ts) * 1e3:.3f} ms "
              f"over {args.repeat} calls")
    if m.outfeed:
        print(f"outfeed: {len(m.outfeed)} value(s), {len(fed)} array(s)" + (" (saved as outfeed0, ...)" if args.out else ""))
    if args.out:
        np.savez(args.out, **{f"out{k}": o for k, o in enumerate(outs)}, **{f"outfeed{k}": o for k, o in enumerate(fed)})
        print(f"wrote {len(outs)} output(s) to {args.out}")
    if args.check:
        rows = check_outputs(outs, args.check, args.rtol, args.atol)
        bad = [r for r in rows if not r["ok"]]
        for r in rows:
            if "why" in r:
                print(f"  {r['output']}: MISMATCH ({r['why']})")
            else:
                rel = "-" if r["max_rel"] is None else f"{r['max_rel']:.3g}"   # "-": every reference value ~0
                print(f"  {r['output']}: {'ok' if r['ok'] else 'MISMATCH'}  max abs err {r['max_abs']:.3g}, "
                      f"max rel err {rel} (rtol {r['rtol']:g}, atol {r['atol']:g})")
        if bad:
            print(f"check failed: {len(bad)} of {len(rows)} outputs differ from {args.check}")
            return 1
        print(f"check passed: {len(rows)} outputs match {args.check}")
    return 0


def kernel_summary(module, compiled, db) -> str:
    """How ``run``'s compiled kernels relate to ``tune``'s tasks: a kernel is one compiled
    function per segment of the module between host ops; it runs the segment's stages, and
    each distinct stage is a task (repeats of one are one task)."""
    from .autotune.task import extract_tasks
    tasks = extract_tasks(list(module.outputs), list(module.params), compiled.target)
    stages = sum(t.weight for t in tasks)
    text = (f"{len(compiled.kernels)} compiled kernel(s) (one function per segment between host ops) running "
            f"{stages} stage(s): {len(tasks)} distinct task(s), as 'hlotune tune' counts them")
    if db:
        from .api import _db
        d = _db(db, create=False)
        tuned = sum(1 for t in tasks if d.best(t.key, compiled.target.key) is not None)
        text += f"; {tuned} of them measured in {db} (each runs its fastest stored config)"
    return text


def cmd_tune(args) -> int:
    from .api import check_tune_args, load_hlo, parse_duration, tune
    from .autotune.tune import overhead_line, summary_table
    budget = parse_duration(args.budget) if args.budget is not None else None
    if args.trials is None and budget is None:
        args.trials = 64
    check_tune_args(args.trials or 1, args.tuner, args.seed, batch=args.batch, timeout=args.timeout)
    m = load_hlo(args.module)
    t0 = time.perf_counter()
    opts = {}
    if args.tuner == "bayes":
        opts = {"base_estimator": args.estimator, "acq_func": args.acq}
    res = tune(m, target=args.target, trials=args.trials, db=args.db, tuner=args.tuner, seed=args.seed,
               progress=not args.quiet, batch=args.batch, timeout=args.timeout, tuner_options=opts,
               dask=args.dask, security=args.dask_security, remeasure=args.remeasure, threads=args.threads,
               budget=budget, cost_model=not args.no_cost_model, adaptive=not args.full_repeats,
               cold={"auto": "auto", "cold": True, "hot": False}[args.caches])
    wall = time.perf_counter() - t0
    plans = [r for r in res if r.task.family == "fusion"]
    kernels = len(res) - len(plans)
    split = (f"{sum(r.trials for r in res) - sum(r.trials for r in plans)} on kernels, "
             f"{sum(r.trials for r in plans)} on {len(plans)} segment(s)' fusion plans")
    what = (f"re-timed the finalists of {m.name} on {args.target}" if args.remeasure else
            f"tuned {m.name} on {args.target}: {kernels} task(s) (distinct kernel stages), "
            + (f"a budget of {args.trials} measured trials" if budget is None else
               f"{sum(r.trials for r in res)} measured trials within a budget of {budget:g} s"
               + (f" (and at most {args.trials} trials)" if args.trials else ""))
            + f" shared among them ({split})")
    print(textwrap.fill(f"{what}, {wall:.1f}s; database {args.db}", 100))
    print(summary_table(res, m.name))
    print(textwrap.fill(overhead_line(res, wall), 100))
    return 0


def cmd_report(args) -> int:
    from .api import report
    from .autotune.report import TRIALS_NOTE, write
    r = report(args.db)
    df = r.table(args.view) if args.format == "table" else r.view(args.view)
    text = write(df, args.format, args.out)
    if not args.out:
        print(text)
        if args.format == "table" and args.view in ("tasks", "tuners"):
            print(textwrap.fill(TRIALS_NOTE, 100))
    if args.plot:
        r.plot(args.view, args.plot)
        print(f"wrote the {args.view} plot to {args.plot}")
    return 0


def cmd_export(args) -> int:
    """A database's trials as a log, or (with ``--out``) a module as a library folder."""
    if args.out:
        from .api import export_library
        db = args.db
        out = export_library(args.log, args.out, db=db)
        print(f"exported {args.log} ({'tuned with ' + str(db) if db else 'default schedules'}) to {out}: "
              "libhlotune_module.so, hlotune_module.h, example.c, hlotune_module.json")
        return 0
    from .autotune.database import Database
    db = args.db or "tuning.db"
    n = Database(db, create=False).export_jsonl(args.log)
    print(f"exported {n} trials from {db} to {args.log}")
    return 0


def cmd_import(args) -> int:
    """Import a log in one transaction: nothing when a line is bad (unless ``--skip-bad``);
    a database this command created is removed again when nothing went in."""
    from .autotune.database import Database
    new = not Path(args.db).exists()
    db = Database(args.db)
    r = None
    try:
        r = db.import_log(args.log, skip_bad=args.skip_bad)
    finally:
        db.close()
        if new and (r is None or not r.imported):
            _remove_db(args.db)
    for line, why in r.skipped:
        print(f"  line {line}: {why}")
    if not r.committed:
        print(f"nothing imported into {args.db}: {len(r.skipped)} bad line(s) in {args.log} (fix them, or "
              "give --skip-bad to import the others)")
        return 1
    print(f"imported {r.imported} trials into {args.db}; {r.duplicates} were there already; "
          f"skipped {len(r.skipped)}")
    if r.legacy:
        print(f"{r.legacy} trials carry workload keys of format 1 (a log of schema 2): 'hlotune tune' of their "
              "modules re-keys them, and 'hlotune run --db' finds them meanwhile")
    return 0 if not r.skipped else 1


def _remove_db(path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if not 0 <= v < 2**32:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2^32), got {text!r}")
    return v


def _number(positive: bool):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise argparse.ArgumentTypeError(f"must be a {'positive' if positive else 'non-negative'} number, "
                                             f"got {text!r}")
        return v
    return parse


def cmd_devices(args) -> int:
    """Every device kind's devices with their limits (each backend's ``describe``)."""
    from .runtime.backends import backend, kinds
    for kind in kinds():
        for line in backend(kind).describe():
            print(line)
    return 0


_DB_EXISTING = "SQLite tuning database to read (must exist; default tuning.db)"


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .autotune.report import VIEWS
    p = argparse.ArgumentParser(prog="hlotune", description="Compile and autotune XLA HLO and StableHLO modules "
                                "(from JAX: jax.jit(f).lower(...).as_text(), or the Python API's hlotune.jit).")
    p.add_argument("--version", action="version", version=f"hlotune {__version__}",
                   help="print hlotune's version and exit")
    p.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("run", help="compile and run a module (tuned kernels with --db)",
                       description="Compile a module and run it once; with --db each kernel stage runs its fastest "
                       "tuned config. A kernel is one compiled function per segment of the module between host ops "
                       "(a sort, or a while loop not compiled whole, runs on the host); it runs that segment's stages, which are the tasks "
                       "'hlotune tune' tunes.")
    r.add_argument("module", help="HLO text file (.hlo) or StableHLO text file (.mlir)")
    r.add_argument("--target", default="cpu", help="cpu (default) or opencl[:P:D|:NAME] (see 'hlotune devices')")
    r.add_argument("--inputs", metavar="NPZ", help="npz with one array per parameter, named after the parameter "
                   "(x.1, or x for JAX's x.1) or argK for parameter K (random inputs when omitted); the values "
                   "a module reads with infeed are the parameters infeed.0..., infeed.1... (infeed.K.J for tuple data)")
    r.add_argument("--check", metavar="NPZ", help="npz with out0, out1, ... to compare the outputs against")
    r.add_argument("--out", metavar="NPZ", help="write the outputs to this npz as out0, out1, ... (and what the "
                   "module wrote with outfeed as outfeed0, outfeed1, ...)")
    r.add_argument("--rtol", type=_number(False), help="relative tolerance for --check (default per dtype)")
    r.add_argument("--atol", type=_number(False), help="absolute tolerance for --check (default per dtype)")
    r.add_argument("--threads", type=_positive_int, help="CPU threads (default $HLOTUNE_THREADS, else every core; "
                   "recorded in the target's key: configs tuned with another count do not apply)")
    r.add_argument("--db", help="use the best tuned configs from this (existing) tuning database")
    r.add_argument("--repeat", type=_positive_int, metavar="N", help="time N more calls and print the median")
    r.set_defaults(fn=cmd_run)
    t = sub.add_parser("tune", help="tune every kernel of a module, recording trials in a database",
                       description="Tune every task (distinct kernel stage) of a module: each task's default "
                       "schedule is measured first, then the budget goes to tasks by their share of the time. "
                       "Running the same command again resumes it. " + _trials_help())
    t.add_argument("module", help="HLO text file (.hlo) or StableHLO text file (.mlir)")
    t.add_argument("--target", default="cpu", help="cpu (default) or opencl[:P:D|:NAME] (see 'hlotune devices')")
    t.add_argument("--threads", type=_positive_int, help="CPU threads (default $HLOTUNE_THREADS, else every core; "
                   "recorded in the target's key: configs tuned with another count do not apply)")
    t.add_argument("--trials", type=_positive_int, help="measured candidates in all, shared among the "
                   "tasks (default 64, or no cap with --budget; invalid configs are free)")
    t.add_argument("--budget", metavar="TIME", help="wall time for the whole run (300, 90s, 5m, 1h): batches go to "
                   "the tasks whose program time falls fastest per second of tuning (Ansor's task scheduler) until "
                   "it is spent; the summary shows each task's share")
    t.add_argument("--no-cost-model", action="store_true", help="bayes: start without the cost model trained "
                   "across the database")
    t.add_argument("--full-repeats", action="store_true", help="time every candidate with all its repeats "
                   "(default: they end once three agree within 2%%, or once the candidate is 1.5x the best)")
    t.add_argument("--caches", choices=["auto", "cold", "hot"], default="auto", help="time each call with its "
                   "inputs out of the caches (cold: copies of them in turn, twice the last-level cache), as a "
                   "program whose data outgrow the caches runs its kernels, or on the same cached inputs (hot); "
                   "auto (default): cold when the module's inputs fill half of the last-level cache")
    t.add_argument("--db", default="tuning.db", help="SQLite tuning database, made in an existing folder "
                   "when missing (default tuning.db)")
    t.add_argument("--tuner", default="bayes", help="bayes (default), random or grid")
    t.add_argument("--seed", type=_seed, default=0, help="seed of the tuner and the random inputs (default 0)")
    t.add_argument("--batch", type=_positive_int, default=4, help="candidates per round (default 4)")
    t.add_argument("--estimator", default="auto", choices=["auto", "GP", "RF", "ET", "GBRT"],
                   help="bayes: surrogate model (default auto: RF, or a GP over the cost model's residuals)")
    t.add_argument("--acq", default="EI", choices=["gp_hedge", "EI", "PI", "LCB"], help="bayes: acquisition "
                   "function (default EI)")
    t.add_argument("--timeout", type=_number(True), default=20.0, help="seconds before a candidate is a timeout "
                   "(default 20)")
    t.add_argument("--dask", metavar="ADDRESS", help="measure on the workers of this Dask scheduler "
                   "(tcp://host:8786; the [dask] extra; one single-threaded worker per machine)")
    t.add_argument("--dask-security", metavar="PATH|SPEC", help="TLS for --dask tls://...: a YAML/JSON file of "
                   "distributed.security.Security options or key=value,... (tls_ca_file, tls_client_cert, "
                   "tls_client_key, ...)")
    t.add_argument("--remeasure", action="store_true", help="measure no new config: re-time each task's "
                   "finalists and default already in --db on this machine, interleaved, and store the "
                   "winners again with their confidence intervals")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    t.set_defaults(fn=cmd_tune)
    views = "\n".join(textwrap.fill(v, 79, initial_indent=f"  {k:12s} ", subsequent_indent=" " * 15)
                      for k, v in VIEWS.items())
    rp = sub.add_parser("report", help="reports of a tuning database (tables and plots)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Views of a tuning database. Kernels are named module/op family type.",
                        epilog=f"views:\n{views}\n\n{textwrap.fill(_trials_help(), 79)}")
    rp.add_argument("--db", default="tuning.db", help=_DB_EXISTING)
    rp.add_argument("--view", default="tasks", choices=list(VIEWS), help="what to show (default tasks; see views "
                    "below)")
    rp.add_argument("--format", default="table", choices=["table", "csv", "md", "html"], help="table (default: "
                    "the view's main columns, at most 100 wide) or every column as csv, md (Markdown) or html")
    rp.add_argument("--out", metavar="FILE", help="write to this file instead of printing")
    rp.add_argument("--plot", metavar="PNG", help="also plot the view to this image (the [plot] extra)")
    rp.set_defaults(fn=cmd_report)
    dv = sub.add_parser("devices", help="list the CPU target, the OpenCL and the CUDA devices with their limits")
    dv.set_defaults(fn=cmd_devices)
    ex = sub.add_parser("export", help="export a database's trials as a JSON-lines log, or (with --out) a module "
                        "as a library that runs without Python or a compiler")
    ex.add_argument("log", metavar="LOG|MODULE", help="the JSON-lines file to write; with --out, the HLO or "
                    "StableHLO module to export")
    ex.add_argument("--db", help=_DB_EXISTING + "; with --out, the module's tuned kernels "
                    "come from it when given (else default schedules)")
    ex.add_argument("--out", metavar="DIR", help="write MODULE as a library folder: libhlotune_module.so, a C header "
                    "with one entry point, a C example and a manifest (cpu; hlotune.load_library runs it)")
    ex.set_defaults(fn=cmd_export)
    im = sub.add_parser("import", help="import a JSON-lines log (each record validated; all or nothing)")
    im.add_argument("log", help="a JSON-lines log written by 'hlotune export'")
    im.add_argument("--db", default="tuning.db", help="SQLite tuning database to import into, made in an existing "
                    "folder when missing (default tuning.db)")
    im.add_argument("--skip-bad", action="store_true", help="import the valid records when some lines are bad")
    im.set_defaults(fn=cmd_import)
    return p


def _trials_help() -> str:
    from .autotune.report import TRIALS_NOTE
    return TRIALS_NOTE[0].upper() + TRIALS_NOTE[1:] + "."


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.fn(args)
    except InternalError as e:
        print(f"hlotune: {e}", file=sys.stderr)
        return 3
    except HlotuneError as e:
        print(f"hlotune: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"hlotune: error: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"hlotune: error: tuning database: {e} (a corrupt file? give another --db)", file=sys.stderr)
        return 2
    except Exception as e:   # anything else is a bug: said so, with a short traceback at -vv
        logging.getLogger("hlotune").debug("internal error", exc_info=True)
        print(f"hlotune: {InternalError(f'running {args.command!r}', e)} (hlotune -vv ... shows the traceback)",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
