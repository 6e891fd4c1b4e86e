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


def fixed_threads(m):
    """``m`` compiled with every call at the target's thread count (no governor)."""
    before = os.environ.get("HLOTUNE_ADAPTIVE_THREADS")
    os.environ["HLOTUNE_ADAPTIVE_THREADS"] = "0"
    try:
        return hlotune.compile(m, target="cpu")
    finally:
        if before is None:
            del os.environ["HLOTUNE_ADAPTIVE_THREADS"]
        else:
            os.environ["HLOTUNE_ADAPTIVE_THREADS"] = before


def geo(xs) -> float:
    return math.exp(sum(math.log(r) for r in xs) / len(xs)) if xs else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="module names (default: all)")
    args = ap.parse_args(argv)
    manifest = json.loads((DATA / "manifest.json").read_text())
    env = environment()
    rows, table, ratios, fixed_ratios = [], [], [], []
    for entry in manifest:
        name = entry["name"]
        if args.only and name not in args.only:
            continue
        z = np.load(DATA / f"{name}.npz")
        m = hlotune.load_hlo(DATA / f"{name}.hlo")
        ins = [z[f"arg{k}"] for k in range(len(m.params))]
        cm, cf = hlotune.compile(m, target="cpu"), fixed_threads(m)
        xla = xla_runner(name, ins)
        oks = []
        for outs in (cm(*ins), cf(*ins), tuple(xla())):
            outs = outs if isinstance(outs, tuple) else (outs,)
            oks.append(all(r["ok"] for r in check_outputs(outs, DATA / f"{name}.npz")))
        if not all(oks):
            table.append([name, "-", "-", "-", "-", "-", f"answer mismatch (hlotune ok={oks[0]}, xla ok={oks[2]})"])
            continue
        times = interleaved({"hlotune": lambda cm=cm, ins=ins: cm(*ins), "fixed": lambda cf=cf, ins=ins: cf(*ins),
                             "xla": xla}, repeats=args.repeats)
        per_pair = [x / h for h, x in zip(times["hlotune"], times["xla"])]
        per_fixed = [x / h for h, x in zip(times["fixed"], times["xla"])]
        r, rf = statistics.median(per_pair), statistics.median(per_fixed)
        ratios.append(r)
        fixed_ratios.append(rf)
        for k in range(args.repeats):
            rows.append({"module": name, "repeat": k, "hlotune_s": times["hlotune"][k],
                         "hlotune_fixed_threads_s": times["fixed"][k], "xla_s": times["xla"][k],
                         "xla_over_hlotune": per_pair[k], "xla_over_hlotune_fixed": per_fixed[k],
                         "kernels": len(cm.kernels), "xla_cpu_us_manifest": entry.get("xla_cpu_us")})
        us = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        table.append([name, f"{us['hlotune']:.1f}", f"{us['fixed']:.1f}", f"{us['xla']:.1f}", f"{r:.2f}", f"{rf:.2f}",
                      len(cm.kernels)])
    md = md_table(["module", "hlotune us (median)", "hlotune, fixed threads us", "XLA:CPU us (median)",
                   "speed vs XLA (XLA time / hlotune time, median of pairs)", "same, fixed threads", "kernels"], table)
    notes = (f"**Geometric mean of speed vs XLA over {len(ratios)} modules: {geo(ratios):.2f}** (>1: hlotune faster); "
             f"with threads fixed at the target's count (`HLOTUNE_ADAPTIVE_THREADS=0`, no governor): "
             f"{geo(fixed_ratios):.2f}.\n\n"
             f"hlotune: default fusion and loop schedules (no tuning), the whole module from NAME.hlo, called "
             f"from Python (its per-call overhead is included, as is XLA's through its executable). XLA:CPU: "
             f"the same module compiled from NAME.stablehlo.mlir by jaxlib. {args.repeats} interleaved "
             "repeats of >= 50 ms each (hlotune, hlotune with fixed threads, XLA), each after 0.3 s of quiet; "
             "every answer checked against the npz outputs first.")
    write_results("corpus_cpu", rows, md, env, notes)
    print(md)
    print(f"geometric mean speed vs XLA: {geo(ratios):.3f} (fixed threads {geo(fixed_ratios):.3f})")


if __name__ == "__main__":
    main()
