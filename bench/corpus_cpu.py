"""Every corpus module: hlotune's default schedules vs XLA:CPU (through JAX), side by side.

Run: ``python -m bench.corpus_cpu`` (needs the ``bench`` extra). hlotune compiles NAME.hlo;
XLA compiles the same module from NAME.stablehlo.mlir. Both answers are checked against the
npz outputs before timing. Writes results/corpus_cpu.csv and results/corpus_cpu.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from pathlib import Path

import numpy as np

import hlotune
from hlotune.cli import check_outputs

from .common import environment, interleaved, md_table, write_results

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hlo"


def xla_runner(name: str, arrays):
    """A callable running XLA:CPU's executable of the module, and its outputs."""
    import jax
    from jax._src import xla_bridge as xb
    from jax._src.lib import xla_client as xc
    be = xb.get_backend("cpu")
    text = (DATA / f"{name}.stablehlo.mlir").read_text()
    exe = be.compile_and_load(text, xc.DeviceList(tuple(be.local_devices()[:1])), xc.CompileOptions())
    args = [jax.device_put(a) for a in arrays]

    def run():
        outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
        for o in outs:
            o[0].block_until_ready()
        return [np.asarray(o[0]) for o in outs]
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="module names (default: all)")
    ap.add_argument("--fixed-threads", action="store_true",
                    help="every call runs the target's thread count (HLOTUNE_ADAPTIVE_THREADS=0)")
    ap.add_argument("--name", default=None, help="results file name (default: corpus_cpu, "
                    "corpus_cpu_fixed_threads with --fixed-threads)")
    args = ap.parse_args(argv)
    if args.fixed_threads:
        os.environ["HLOTUNE_ADAPTIVE_THREADS"] = "0"
    name_out = args.name or ("corpus_cpu_fixed_threads" if args.fixed_threads else "corpus_cpu")
    manifest = json.loads((DATA / "manifest.json").read_text())
    env = environment()
    rows, table, ratios = [], [], []
    for entry in manifest:
        name = entry["name"]
        if args.only and name not in args.only:
            continue
        z = np.load(DATA / f"{name}.npz")
        m = hlotune.load_hlo(DATA / f"{name}.hlo")
        ins = [z[f"arg{k}"] for k in range(len(m.params))]
        cm = hlotune.compile(m, target="cpu")
        xla = xla_runner(name, ins)
        ours = cm(*ins)
        ours = ours if isinstance(ours, tuple) else (ours,)
        ok_ours = all(r["ok"] for r in check_outputs(ours, DATA / f"{name}.npz"))
        ok_xla = all(r["ok"] for r in check_outputs(tuple(xla()), DATA / f"{name}.npz"))
        if not (ok_ours and ok_xla):
            table.append([name, "-", "-", "-", f"answer mismatch (hlotune ok={ok_ours}, xla ok={ok_xla})"])
            continue
        times = interleaved({"hlotune": lambda cm=cm, ins=ins: cm(*ins), "xla": xla}, repeats=args.repeats)
        per_pair = [x / h for h, x in zip(times["hlotune"], times["xla"])]
        r = statistics.median(per_pair)
        ratios.append(r)
        for k in range(args.repeats):
            rows.append({"module": name, "repeat": k, "hlotune_s": times["hlotune"][k], "xla_s": times["xla"][k],
                         "xla_over_hlotune": per_pair[k], "kernels": len(cm.kernels),
                         "xla_cpu_us_manifest": entry.get("xla_cpu_us")})
        h_us = statistics.median(times["hlotune"]) * 1e6
        x_us = statistics.median(times["xla"]) * 1e6
        table.append([name, f"{h_us:.1f}", f"{x_us:.1f}", f"{r:.2f}", len(cm.kernels)])
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    md = md_table(["module", "hlotune us (median)", "XLA:CPU us (median)",
                   "speed vs XLA (XLA time / hlotune time, median of pairs)", "kernels"], table)
    notes = (f"**Geometric mean of speed vs XLA over {len(ratios)} modules: {geo:.2f}** (>1: hlotune faster).\n\n"
             f"hlotune: default fusion and loop schedules (no tuning), the whole module from NAME.hlo, called "
             f"from Python (its per-call overhead is included, as is XLA's through its executable). XLA:CPU: "
             f"the same module compiled from NAME.stablehlo.mlir by jaxlib. {args.repeats} interleaved "
             "repeats of >= 50 ms each, each after 0.3 s of quiet; both answers checked against the npz outputs first.")
    if args.fixed_threads:
        notes += " Threads fixed at the target's count (HLOTUNE_ADAPTIVE_THREADS=0): no governor."
    write_results(name_out, rows, md, env, notes)
    print(md)
    print(f"geometric mean speed vs XLA: {geo:.3f}")


if __name__ == "__main__":
    main()
