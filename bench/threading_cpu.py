"""How hlotune's CPU kernels use threads, measured on real layers, quiet and next to a busy
process: the thread count each call measures against the cores actually free
(runtime/threads.py, hlotune's default) against the target's fixed count, with one OpenMP
parallel region per kernel whose parallel loops are taskloops (what the C renderer emits) or one
``parallel for`` region per stage (what it emitted before), under OpenMP's short spin then sleep
(hlotune's default, GOMP_SPINCOUNT=10000), passive, hybrid (libgomp's: a long spin, then sleep)
and active wait policies.

Run: ``python -m bench.threading_cpu [--only LAYER ...]`` (needs the ``bench`` extra). Each
variant runs in its own process (the wait policy is read when libgomp loads), timing hlotune's
default kernels and XLA:CPU interleaved. Writes results/threading_cpu.csv and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from .common import environment, interleaved, md_table, write_results

#: name -> (codegen, environment): hlotune's default is taskloops and a short spin (10000); libgomp's
#: own default spins GOMP_SPINCOUNT=300000 times before sleeping ("hybrid")
VARIANTS = {
    "adaptive threads, taskloop, short spin (hlotune's default)": ("tasks", {"GOMP_SPINCOUNT": "10000"}),
    "fixed threads, taskloop, short spin": ("tasks", {"GOMP_SPINCOUNT": "10000", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, taskloop, passive": ("tasks", {"OMP_WAIT_POLICY": "PASSIVE", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, taskloop, hybrid (libgomp's default)": ("tasks", {"GOMP_SPINCOUNT": "300000",
                                                                      "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, taskloop, active": ("tasks", {"OMP_WAIT_POLICY": "ACTIVE", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "parallel for per stage, hybrid": ("for", {"GOMP_SPINCOUNT": "300000", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "parallel for per stage, passive": ("for", {"OMP_WAIT_POLICY": "PASSIVE", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
}


def _per_stage_regions() -> None:
    """Render every parallel loop as its own ``parallel for`` region (the former codegen)."""
    from hlotune.runtime.codegen import c
    from hlotune.runtime.codegen.cstyle import CStyleRenderer
    from hlotune.schedules.loops import LoopKind

    def loop_pragma(self, f, _orig=c.CRenderer.loop_pragma):
        if f.kind is LoopKind.PARALLEL:
            return [f"#pragma omp parallel for schedule(static) num_threads({self.hardware.threads})"]
        return _orig(self, f)
    c.CRenderer.loop_pragma = loop_pragma
    c.CRenderer.function = CStyleRenderer.function


def child(layer: str, mode: str, repeats: int) -> dict:
    """Time one layer in this process: hlotune default and XLA, quiet then busy."""
    import jax
    import numpy as np

    import hlotune

    from .model_layers import hlo_text, layers
    from .models_cpu import Busy
    if mode == "for":
        _per_stage_regions()
    fn, params = layers()[layer]
    m = hlotune.load_hlo(hlo_text(fn, params))
    cm = hlotune.compile(m, target="cpu")
    jf = jax.jit(fn)
    ja = [jax.device_put(a) for a in params]
    ref = np.asarray(jf(*ja))
    assert np.max(np.abs(cm(*params) - ref)) <= 1e-4 * np.max(np.abs(ref))
    runs = {"hlotune": lambda: cm(*params), "xla": lambda: jf(*ja).block_until_ready()}
    quiet = interleaved(runs, repeats=repeats)
    with Busy():
        busy = interleaved(runs, repeats=repeats)
    return {"quiet": quiet, "busy": busy}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="*", default=["bert_base_encoder", "resnet50_bottleneck"])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.repeats)))
        return
    env = environment()
    rows, table = [], []
    for layer in args.only:
        for name, (mode, wait) in VARIANTS.items():
            e = {k: v for k, v in os.environ.items()
                 if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "HLOTUNE_ADAPTIVE_THREADS")}
            e.update(wait)
            out = subprocess.run([sys.executable, "-m", "bench.threading_cpu", "--repeats", str(args.repeats),
                                  "--child", layer, mode], capture_output=True, text=True, env=e, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            med = {k: {c: statistics.median(v) for c, v in r[k].items()} for k in ("quiet", "busy")}
            for k in ("quiet", "busy"):
                for c, ts in r[k].items():
                    rows += [{"layer": layer, "variant": name, "load": k, "contender": c, "repeat": i, "seconds": t}
                             for i, t in enumerate(ts)]
            table.append([layer, name, f"{med['quiet']['hlotune'] * 1e3:.2f}", f"{med['busy']['hlotune'] * 1e3:.2f}",
                          f"{med['busy']['hlotune'] / med['quiet']['hlotune']:.2f}",
                          f"{med['quiet']['hlotune'] / med['quiet']['xla']:.2f}",
                          f"{med['busy']['xla'] / med['quiet']['xla']:.2f}"])
            print(" | ".join(table[-1]), flush=True)
    md = md_table(["layer", "variant", "hlotune quiet ms", "hlotune busy ms", "hlotune slowdown",
                   "hlotune / XLA (quiet, time)", "XLA slowdown (same run)"], table)
    notes = ("Busy: one other process spins on a core while the contenders are timed (2 cores). Medians of "
             f"{args.repeats} interleaved repeats of >= 50 ms; answers checked against JAX first.")
    write_results("threading_cpu", rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
