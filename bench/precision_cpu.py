"""Matmuls and transformer layers in fp32, bf16, fp16 and int8, each tuned by hlotune, against
XLA:CPU (``jax.jit``) in the same precision and numpy/OpenBLAS in fp32, side by side in one
process.

Run: ``python -m bench.precision_cpu [--sizes 1024 4096] [--layers bert_base_encoder ...]
[--trials-per-task 32]`` (needs the ``bench`` extra). Precisions, as JAX writes them:

- ``fp32``: ``jnp.dot`` of f32; ``bf16``/``fp16``: 16-bit operands with
  ``preferred_element_type=f32`` (layers: every argument in that type, as JAX runs it);
- ``int8``: s8 x s8 with ``preferred_element_type=int32`` (matmuls only);
- ``int8 weights``: f32 activations times int8 weights dequantized by per-column scales
  (``x @ (w.astype(f32) * s)``; layers: every 2-D weight quantized so).

Every contender's answer is checked with hlotune's one tolerance policy before it is timed:
matmuls against numpy in float64 (int8 exactly), layers against XLA's answer in the same
precision. Times are interleaved (A B C A B C), each after 0.3 s of quiet. Each precision's
peak is measured by bench/peak.py's loop of its instruction (fp32 FMAs for fp32, fp16 and int8
weights; ``vdpbf16ps``; ``vpdpbusd``). Writes results/precision_cpu.csv and .md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import hlotune
from hlotune.dsl.tolerance import check, scale_of, tolerance

from .common import environment, interleaved, md_table, write_results
from .model_layers import hlo_text, layers
from .peak import peak

PRECISIONS = ("fp32", "bf16", "fp16", "int8", "int8 weights")
#: the instruction whose peak bounds each precision's kernels
PEAK_KIND = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp32", "int8": "int8", "int8 weights": "fp32"}


def _np(name: str):
    import ml_dtypes
    return {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}[name]


def matmul_case(n: int, prec: str, rng):
    """(JAX function, arguments, float64/int64 oracle of its answer) for an n x n x n matmul."""
    import jax.numpy as jnp
    if prec == "int8":
        a, b = (rng.integers(-128, 128, (n, n)).astype(np.int8) for _ in range(2))
        return (lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.int32), (a, b),
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
    if prec == "int8 weights":
        x = rng.standard_normal((n, n)).astype(np.float32)
        w = rng.integers(-127, 128, (n, n)).astype(np.int8)
        s = (rng.random(n) * 0.02 + 0.001).astype(np.float32)
        return (lambda x, w, s: x @ (w.astype(jnp.float32) * s), (x, w, s),
                x.astype(np.float64) @ (w.astype(np.float64) * s.astype(np.float32).astype(np.float64)))
    d = np.float32 if prec == "fp32" else _np(prec)
    a, b = (rng.standard_normal((n, n)).astype(d) for _ in range(2))
    return (lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32), (a, b),
            a.astype(np.float64) @ b.astype(np.float64))


def quantized(fn, params):
    """``fn`` with each 2-D weight (both sides >= 64) replaced by int8 values and per-column f32
    scales (symmetric, max |w| / 127), dequantized inside: (function, arguments)."""
    picks = [p.ndim == 2 and min(p.shape) >= 64 and k > 0 for k, p in enumerate(params)]
    args = []
    for p, q in zip(params, picks):
        if q:
            s = np.maximum(np.abs(p).max(axis=0), 1e-8).astype(np.float32) / 127
            args += [np.clip(np.round(p / s), -127, 127).astype(np.int8), s]
        else:
            args.append(p)

    def f(*xs):
        import jax.numpy as jnp
        it, full = iter(xs), []
        for q in picks:
            full.append(next(it).astype(jnp.float32) * next(it) if q else next(it))
        return fn(*full)
    return f, tuple(args)


def layer_case(name: str, prec: str):
    """(JAX function, arguments) of a model layer in ``prec`` (None: not measured)."""
    fn, params = layers()[name]
    if prec == "fp32":
        return fn, params
    if prec in ("bf16", "fp16"):
        return fn, tuple(p.astype(_np(prec)) for p in params)
    if prec == "int8 weights":
        return quantized(fn, params)
    return None


def instruction(module) -> str:
    """The multiply instruction a compiled module's dot tiles use (from their source: the helper
    calls in the tiles, not the helpers every file declares)."""
    src = " ".join(k.source for k in module.kernels)
    for mark, name in (("= hl_vdot_bf16_", "vdpbf16ps"), ("= hl_vdot_s8s8_", "vpdpbusd (s8 as u8 + 128)"),
                       ("= hl_vdot_u8s8_", "vpdpbusd"), ("= hl_vdot_s8u8_", "vpdpbusd"),
                       ("= hl_vld_float16_", "vcvtph2ps + FMA"), ("hl_pack_t_f16f32_", "FMA (f16 widened when packed)"),
                       ("= hl_vld_bfloat16_", "bf16 widened + FMA"),
                       ("hl_acc0 = hl_vld", "FMA")):
        if mark in src:
            return name
    return "compiler's own"


def _check(what: str, got, want, prec: str) -> None:
    """The tolerance policy, for the narrowest type the computation rounds to: a bf16 layer's
    f32 output carries bf16 rounding from inside, which XLA and hlotune place differently."""
    got, want = np.asarray(got), np.asarray(want)
    want = want.astype(got.dtype) if want.dtype != got.dtype else want
    narrow = {"bf16": "bfloat16", "fp16": "float16"}.get(prec)
    c = check(got, want, *tolerance(narrow, scale_of(want))) if narrow and got.dtype.kind == "f" else check(got, want)
    if not c.ok:
        raise SystemExit(f"{what}: answer off the tolerance policy: {c.describe()}")


def run_group(label, cases, db, trials_per_task, repeats, flops, extra=None):
    """Tune, check and time one group of cases (one matmul size or one layer): ``cases`` maps
    a precision to (function, arguments, oracle or None: XLA's answer)."""
    import jax
    from hlotune.autotune.task import extract_tasks
    from hlotune.runtime.targets import get_target
    contenders, info = dict(extra or {}), {}
    for prec, (fn, args, oracle) in cases.items():
        m = hlotune.load_hlo(hlo_text(fn, args))
        ntasks = len(extract_tasks(list(m.outputs), list(m.params), get_target("cpu")))
        t0 = time.perf_counter()
        if trials_per_task:
            hlotune.tune(m, target="cpu", trials=trials_per_task * ntasks, db=db, progress=True)
        tune_s = time.perf_counter() - t0
        tuned = hlotune.compile(m, target="cpu", db=db if trials_per_task else None)
        jf = jax.jit(fn)
        jargs = [jax.device_put(a) for a in args]
        xla_out = np.asarray(jf(*jargs))
        want = xla_out if oracle is None else oracle
        _check(f"{label} {prec} hlotune", tuned(*args), want, prec)
        if oracle is not None:
            _check(f"{label} {prec} XLA", xla_out, want, prec)
        contenders[f"hlotune {prec}"] = lambda f=tuned, a=args: f(*a)
        contenders[f"XLA {prec}"] = lambda f=jf, a=jargs: f(*a).block_until_ready()
        info[prec] = {"tune_s": tune_s, "tasks": ntasks, "instruction": instruction(tuned)}
    return interleaved(contenders, repeats=repeats), info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024])
    ap.add_argument("--layers", nargs="*", default=["bert_base_encoder", "gpt2_small_decoder"])
    ap.add_argument("--trials-per-task", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--db", help="tuning database (default: a fresh temporary one)")
    ap.add_argument("--name", default="precision_cpu", help="results/NAME.{csv,md} (default: precision_cpu)")
    args = ap.parse_args(argv)
    db = args.db or str(Path(tempfile.mkdtemp()) / "precision.db")
    peaks = {k: peak(k) for k in ("fp32", "bf16", "int8")}
    env = environment({"trials_per_task": args.trials_per_task, **{
        f"{k}_peak": f"{v['gflops']:.1f} G/s" if v else "instruction not targeted" for k, v in peaks.items()}})
    rng = np.random.default_rng(0)
    rows, table = [], []
    groups = [(f"matmul {n}", {p: matmul_case(n, p, rng) for p in PRECISIONS}, 2.0 * n ** 3) for n in args.sizes]
    for name in args.layers:
        cases = {p: (*c, None) for p in PRECISIONS if (c := layer_case(name, p)) is not None}
        groups.append((name, cases, None))
    for label, cases, flops in groups:
        extra = None
        if flops is not None:       # numpy's fp32 matmul (OpenBLAS), the baseline every user has
            a32, b32 = (np.asarray(x, np.float32) for x in cases["fp32"][1])
            extra = {"numpy fp32 (OpenBLAS)": lambda a=a32, b=b32: np.matmul(a, b)}
        times, info = run_group(label, cases, db, args.trials_per_task, args.repeats, flops, extra)
        for k, ts in times.items():
            for r, t in enumerate(ts):
                rows.append({"case": label, "contender": k, "repeat": r, "seconds": t,
                             "gops": flops / t / 1e9 if flops else None})
        fp32 = times["hlotune fp32"]
        for prec in cases:
            h, x = times[f"hlotune {prec}"], times[f"XLA {prec}"]
            pk = peaks.get(PEAK_KIND[prec])
            rate = flops / statistics.median(h) / 1e9 if flops else None
            table.append([label, prec, info[prec]["instruction"], f"{statistics.median(h) * 1e3:.2f}",
                          f"{statistics.median(x) * 1e3:.2f}",
                          f"{statistics.median([b / a for a, b in zip(h, x)]):.2f}",
                          f"{statistics.median([b / a for a, b in zip(h, fp32)]):.2f}",
                          f"{rate:.0f}" if rate else "", f"{100 * rate / pk['gflops']:.0f}%" if rate and pk else "",
                          f"{info[prec]['tune_s']:.0f}"])
        if extra:
            o = times["numpy fp32 (OpenBLAS)"]
            table.append([label, "fp32 numpy (OpenBLAS)", "", f"{statistics.median(o) * 1e3:.2f}", "", "", "",
                          f"{flops / statistics.median(o) / 1e9:.0f}", "", ""])
    md = md_table(["case", "precision", "hlotune's multiply", "hlotune ms", "XLA:CPU ms",
                   "hlotune speed / XLA's", "hlotune speed / its fp32", "hlotune G(FL)OP/s",
                   "of the precision's peak", "tuning s"], table)
    notes = (f"Tuned with {args.trials_per_task} trials per task (bayes); ratios are medians of per-pair ratios "
             f"over {args.repeats} interleaved repeats of >= 50 ms each after 0.3 s of quiet; > 1: hlotune faster. "
             "Peaks (bench/peak.py, all threads): " + ", ".join(
                 f"{k} {v['gflops']:.0f} G/s" if v else f"{k}: not targeted" for k, v in peaks.items()) +
             ". fp16 and int8-weight kernels multiply in f32 (FMA peak). Layers in bf16/fp16 take every argument "
             "in that type and compute in it (reductions of means and softmax sums accumulate in f32, as JAX "
             "writes them); int8 layers "
             "(activations quantized too) are not measured.")
    write_results(args.name, rows, md, env, notes)
    print(md)
    print(notes)


if __name__ == "__main__":
    main()
