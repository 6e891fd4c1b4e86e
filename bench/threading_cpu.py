"""How hlotune's CPU kernels use threads, measured on real layers, quiet and next to a busy
process: the thread count each call measures against the cores actually free
(runtime/threads.py, hlotune's default) against the target's fixed count, with each parallel
loop its own ``parallel for`` region of static chunks (what the C renderer emits) or one OpenMP
parallel region per kernel whose parallel loops are taskloops (what it emitted before), under
OpenMP's short spin then sleep (hlotune's default, GOMP_SPINCOUNT=10000), passive, hybrid
(libgomp's: a long spin, then sleep) and active wait policies.

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

#: name -> (codegen, environment): hlotune's default is a ``parallel for`` per loop and a short spin
#: (10000); libgomp's own default spins GOMP_SPINCOUNT=300000 times before sleeping ("hybrid")
VARIANTS = {
    "adaptive threads, parallel for, short spin (hlotune's default)": ("for", {"GOMP_SPINCOUNT": "10000"}),
    "fixed threads, parallel for, short spin": ("for", {"GOMP_SPINCOUNT": "10000", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, parallel for, passive": ("for", {"OMP_WAIT_POLICY": "PASSIVE", "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, parallel for, hybrid (libgomp's default)": ("for", {"GOMP_SPINCOUNT": "300000",
                                                                        "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "adaptive threads, one region of taskloops, short spin": ("tasks", {"GOMP_SPINCOUNT": "10000"}),
    "fixed threads, one region of taskloops, short spin": ("tasks", {"GOMP_SPINCOUNT": "10000",
                                                                    "HLOTUNE_ADAPTIVE_THREADS": "0"}),
    "fixed threads, one region of taskloops, passive": ("tasks", {"OMP_WAIT_POLICY": "PASSIVE",
                                                                 "HLOTUNE_ADAPTIVE_THREADS": "0"}),
}


def _taskloop_regions() -> None:
    """Render each kernel as one parallel region in which one thread runs the stages and every
    parallel loop is a taskloop of 4 tasks per thread (the former codegen)."""
    from hlotune.runtime.codegen import c
    from hlotune.runtime.codegen.cstyle import CStyleRenderer
    from hlotune.schedules.loops import For, LoopKind, walk_stmts

    def loop_pragma(self, f, _orig=c.CRenderer.loop_pragma):
        if f.kind is LoopKind.PARALLEL:
            t = self.hardware.threads
            return [f"#pragma omp taskloop default(shared) num_tasks({4 * t})"] if t > 1 else []
        return _orig(self, f)

    def function(self, fn):
        t = self.hardware.threads
        if t <= 1 or not any(isinstance(x, For) and x.kind is LoopKind.PARALLEL for x in walk_stmts(fn.body)):
            return CStyleRenderer.function(self, fn)
        for b in fn.args:
            self.name(b, b.name)
        return "\n".join([self.signature(fn) + " {", *self.prologue(fn), *c.team_lines(t),
                          "  #pragma omp parallel num_threads(hl_team)", "  #pragma omp single", "  {",
                          *self.stmt(fn.body, 2), "  }", *self.epilogue(fn), "}"])
    c.CRenderer.loop_pragma = loop_pragma
    c.CRenderer.function = function


def child(layer: str, mode: str, repeats: int) -> dict:
    """Time one layer in this process: hlotune default and XLA, quiet then busy."""
    import jax
    import numpy as np

    import hlotune

    from .model_layers import hlo_text, layers
    from .models_cpu import Busy
    if mode == "tasks":
        _taskloop_regions()
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
                          f"{med['busy']['xla'] / med['quiet']['xla']:.2f}",
                          f"{med['busy']['hlotune'] / med['busy']['xla']:.2f}"])
            print(" | ".join(table[-1]), flush=True)
    md = md_table(["layer", "variant", "hlotune quiet ms", "hlotune busy ms", "hlotune slowdown",
                   "hlotune / XLA (quiet, time)", "XLA slowdown (same run)", "hlotune / XLA (busy, time)"], table)
    notes = ("Busy: one other process spins on a core while the contenders are timed (2 cores). Medians of "
             f"{args.repeats} interleaved repeats of >= 50 ms; answers checked against JAX first. A layer that "
             "keeps both cores busy when quiet can at best run at the speed of the one core left under load "
             "(a slowdown near 2x); a layer that used one core all along is hardly slowed: the last column, "
             "both times under load, is what a user sharing the machine sees.")
    write_results("threading_cpu", rows, md, env, notes)
    print(md)


if __name__ == "__main__":
    main()
