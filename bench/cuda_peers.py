"""hlotune on a CUDA GPU against cuBLAS (through CuPy and PyTorch) and XLA:GPU (through JAX).

Run where there is an NVIDIA GPU, pycuda and JAX with CUDA: ``python -m bench.cuda_peers``
(bench/cuda_device.sh runs it on a lent H200). Sections (``--only``):

* ``matmul_f32`` / ``matmul_bf16``: a 4096^3 product (bf16 in and out, f32 accumulation), tuned
  with ``--trials`` (the tuning's wall time is reported), then hlotune default, hlotune tuned,
  cuBLAS and XLA:GPU timed in turns; f32 contenders compute in true f32 (no TF32);
* ``layer``: a BERT-base encoder layer (seq ``--seq``), default and tuned (``--layer-trials``);
* ``conv``: a 3x3 convolution, NHWC, batch 8, 56x56x64 -> 64, default and tuned;
* ``corpus``: every module of tests/data/hlo with its default schedules: answers checked
  against the stored XLA outputs, time against XLA:GPU.

hlotune's time is its kernels' device time with the data already on the GPU (the sum over the
module's kernels, each timed with CUDA events: ``CompiledGraph.profile``); cuBLAS is timed with
CUDA events, XLA:GPU by the wall clock around ``n`` calls on device arrays (its launches and
host overhead included). Every contender's answer is checked before its times count. Writes
NAME.csv/.md/.env.json (NAME ``cuda``) into ``--results`` (default results/).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from hlotune.dsl.tolerance import check, scale_of, tolerance

import hlotune
from hlotune.cli import check_outputs

from .common import RESULTS, environment, md_table, write_results

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hlo"
SECTIONS = ("matmul_f32", "matmul_bf16", "corpus", "conv", "layer")
log = logging.getLogger("bench.cuda_peers")


# ---------------------------------------------------------------------------- timers

def cuda_events_timer(fn, min_ms: float = 20.0):
    """Seconds per call of ``fn`` (enqueues GPU work on the current CuPy stream) between events."""
    import cupy as cp

    def timer() -> float:
        n, start, end = 1, cp.cuda.Event(), cp.cuda.Event()
        while True:
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            ms = cp.cuda.get_elapsed_time(start, end)
            if ms >= min_ms or n >= 1 << 16:
                return ms / 1e3 / n
            n = max(2 * n, int(n * min_ms / max(ms, 1e-3) * 1.2))
    return timer


def torch_timer(fn, min_ms: float = 20.0):
    import torch

    def timer() -> float:
        n = 1
        while True:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
            if ms >= min_ms or n >= 1 << 16:
                return ms / 1e3 / n
            n = max(2 * n, int(n * min_ms / max(ms, 1e-3) * 1.2))
    return timer


def wall_timer(fn, sync, min_ms: float = 20.0):
    """Seconds per call of ``fn`` by the wall clock, ``sync`` waiting for the last call."""
    def timer() -> float:
        n = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                r = fn()
            sync(r)
            dt = time.perf_counter() - t0
            if dt * 1e3 >= min_ms or n >= 1 << 16:
                return dt / n
            n = max(2 * n, int(n * (min_ms / 1e3) / max(dt, 1e-6) * 1.2))
    return timer


def hlotune_timer(cm, args, repeat: int = 3):
    """Seconds per call of compiled module ``cm``: its kernels' device time (``profile``)."""
    def timer() -> float:
        prof = cm.graph.profile(*cm.module.bind(args, {}), repeat=repeat, min_repeat_ms=10.0)
        return sum(p["seconds"] for p in prof)
    return timer


def interleave(timers: dict, repeats: int) -> dict[str, list[float]]:
    """Each timer ``repeats`` times, in turns (A B C A B C ...), after one untimed warm-up."""
    for t in timers.values():
        t()
    out = {k: [] for k in timers}
    for _ in range(repeats):
        for k, t in timers.items():
            out[k].append(t())
    return out


# ---------------------------------------------------------------------------- checks

def matches(got, want, dtype=None) -> bool:
    """``got`` equals ``want`` (f64 reference) under the one tolerance policy for ``got``'s dtype."""
    got = np.asarray(got)
    want = np.asarray(want)
    rt, at = tolerance(dtype or got.dtype, scale_of(want))
    c = check(got.astype(np.float64), want.astype(np.float64), rt, at)
    if not c.ok:
        log.warning("answer differs: %s", c.describe())
    return c.ok


# ---------------------------------------------------------------------------- sections

def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def _rows(section: str, times: dict, flops: float | None, ref: str, extra: dict | None = None):
    """CSV rows and table lines of one section; the ratio is ``ref``'s speed over each contender's."""
    rows, table = [], []
    base = times[ref]
    for k, ts in times.items():
        for r, t in enumerate(ts):
            rows.append({"section": section, "contender": k, "repeat": r, "seconds": t,
                         "tflops": flops / t / 1e12 if flops else "", f"{ref} speed over this": t / base[r],
                         **(extra or {})})
        med = statistics.median(ts)
        ratio = statistics.median([ts[r] / base[r] for r in range(len(ts))])
        table.append([section, k, f"{med * 1e3:.3f}", f"{flops / med / 1e12:.1f}" if flops else "", f"{ratio:.2f}"])
    return rows, table


def matmul(section: str, trials: int, repeats: int, n: int = 4096, db_dir: Path | None = None):
    """A square product in f32 or bf16: tuned, default, cuBLAS, XLA:GPU."""
    import cupy as cp
    import torch
    jax, jnp = _jax()
    bf16 = section.endswith("bf16")
    rng = np.random.default_rng(0)
    a32, b32 = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    if bf16:
        import ml_dtypes
        a, b = a32.astype(ml_dtypes.bfloat16), b32.astype(ml_dtypes.bfloat16)
    else:
        a, b = a32, b32
    want = a.astype(np.float64) @ b.astype(np.float64)

    def f(x, y):
        return jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST)
    m = hlotune.load_hlo(jax.jit(f).lower(a, b))
    db = str((db_dir or Path(tempfile.mkdtemp())) / f"{section}.db")
    t0 = time.perf_counter()
    res = hlotune.tune(m, target="cuda", trials=trials, db=db, seed=0, progress=False)
    tune_s = time.perf_counter() - t0
    fails: dict = {}
    for r in res:
        for k, v in r.failures.items():
            fails[k] = fails.get(k, 0) + v
    default = hlotune.compile(m, target="cuda")
    tuned = hlotune.compile(m, target="cuda", db=db)
    ok = {"hlotune default": matches(default(a, b), want), "hlotune tuned": matches(tuned(a, b), want)}
    timers = {"hlotune tuned": hlotune_timer(tuned, (a, b)), "hlotune default": hlotune_timer(default, (a, b))}
    # cuBLAS through CuPy (f32) and PyTorch (both; TF32 off)
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = torch.from_numpy(a32).cuda(), torch.from_numpy(b32).cuda()
    if bf16:
        ta, tb = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
    ok["cuBLAS (PyTorch)"] = matches(torch.matmul(ta, tb).float().cpu().numpy(), want, a.dtype)
    timers["cuBLAS (PyTorch)"] = torch_timer(lambda: torch.matmul(ta, tb))
    if not bf16:
        ca, cb = cp.asarray(a), cp.asarray(b)
        ok["cuBLAS (CuPy)"] = matches(cp.asnumpy(ca @ cb), want)
        timers["cuBLAS (CuPy)"] = cuda_events_timer(lambda: ca @ cb)
    ja, jb = jax.device_put(a), jax.device_put(b)
    jf = jax.jit(f)
    ok["XLA:GPU"] = matches(np.asarray(jf(ja, jb)), want, a.dtype)
    timers["XLA:GPU"] = wall_timer(lambda: jf(ja, jb), lambda r: r.block_until_ready())
    timers = {k: v for k, v in timers.items() if ok[k]}
    times = interleave(timers, repeats)
    best = [r.best_config for r in res]
    rows, table = _rows(section, times, 2.0 * n ** 3, "hlotune tuned" if "hlotune tuned" in times else next(iter(times)),
                        {"tuning_s": round(tune_s, 1)})
    note = (f"**{section}** ({n}^3): tuning {trials} trials took {tune_s:.0f} s on the device "
            f"(failures {fails or 'none'}); best configs {best}; answers checked: "
            f"{', '.join(k for k, v in ok.items() if v)}"
            + (f"; wrong: {', '.join(k for k, v in ok.items() if not v)}" if not all(ok.values()) else ""))
    return rows, table, note


def corpus(repeats: int):
    """Every corpus module with default schedules: checked against the npz, timed against XLA:GPU."""
    jax, _ = _jax()
    from jax._src import xla_bridge as xb
    from jax._src.lib import xla_client as xc
    be = xb.get_backend("cuda")
    manifest = json.loads((DATA / "manifest.json").read_text())
    rows, table, matched, failed = [], [], 0, []
    ratios = []
    for entry in manifest:
        name = entry["name"]
        try:
            z = np.load(DATA / f"{name}.npz")
            m = hlotune.load_hlo(DATA / f"{name}.hlo")
            ins = [z[f"arg{k}"] for k in range(len(m.params))]
            cm = hlotune.compile(m, target="cuda")
            out = cm(*ins)
            res = check_outputs(out if isinstance(out, tuple) else (out,), DATA / f"{name}.npz")
            ok = all(r["ok"] for r in res)
        except Exception as e:  # noqa: BLE001  (a module that fails is reported, the others go on)
            failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
            continue
        if not ok:
            failed.append(f"{name}: wrong answer {res}")
            continue
        matched += 1
        text = (DATA / f"{name}.stablehlo.mlir").read_text()
        exe = be.compile_and_load(text, xc.DeviceList(tuple(be.local_devices()[:1])), xc.CompileOptions())
        args = [jax.device_put(a) for a in ins]

        def xla(exe=exe, args=args):
            return exe.execute_sharded(args).disassemble_into_single_device_arrays()

        def sync(outs):
            for o in outs:
                o[0].block_until_ready()
        times = interleave({"hlotune default": hlotune_timer(cm, ins), "XLA:GPU": wall_timer(xla, sync)}, repeats)
        r, t = _rows(f"corpus {name}", times, None, "hlotune default")
        rows += r
        table += t
        ratios.append(statistics.median([x / y for x, y in zip(times["XLA:GPU"], times["hlotune default"])]))
    gm = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    note = (f"**corpus**: {matched} of {len(manifest)} modules match on cuda"
            + (f"; failed: {failed}" if failed else "")
            + f". hlotune default's speed over XLA:GPU's, geometric mean over the matching modules: {gm:.2f}x "
            "(hlotune: the sum of its kernels' event times; XLA: wall clock per call, launches included).")
    return rows, table, note


def conv(trials: int, repeats: int, db_dir: Path | None = None):
    jax, jnp = _jax()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 56, 56, 64), np.float32)
    w = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(np.float32)

    def f(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            precision=jax.lax.Precision.HIGHEST)
    return _module_section("conv 3x3 56x56x64->64 b8", f, (x, w), 2.0 * 8 * 56 * 56 * 64 * 64 * 9, trials, repeats,
                           db_dir)


def layer(trials: int, repeats: int, seq: int, db_dir: Path | None = None):
    from .model_layers import _transformer
    fn, args = _transformer(seq, 768, 12, 3072, False, False, False, 0)
    d, ffn = 768, 3072
    flops = 2.0 * seq * d * d * 4 + 2.0 * 2 * seq * seq * d + 2.0 * 2 * seq * d * ffn
    return _module_section(f"BERT-base layer seq {seq}", fn, args, flops, trials, repeats, db_dir)


def _module_section(section, fn, args, flops, trials, repeats, db_dir):
    jax, _ = _jax()
    with jax.default_matmul_precision("highest"):
        lowered = jax.jit(fn).lower(*args)
        jf = jax.jit(fn)
        want = np.asarray(jax.jit(fn, backend="cpu")(*args), np.float64)
        m = hlotune.load_hlo(lowered)
        db = str((db_dir or Path(tempfile.mkdtemp())) / "module.db")
        t0 = time.perf_counter()
        if trials:
            hlotune.tune(m, target="cuda", trials=trials, db=db, seed=0, progress=False)
        tune_s = time.perf_counter() - t0
        default = hlotune.compile(m, target="cuda")
        tuned = hlotune.compile(m, target="cuda", db=db) if trials else None
        dargs = [jax.device_put(a) for a in args]
        ok = {"hlotune default": matches(default(*args), want), "XLA:GPU": matches(np.asarray(jf(*dargs)), want)}
        timers = {"hlotune default": hlotune_timer(default, args)}
        if tuned is not None:
            ok["hlotune tuned"] = matches(tuned(*args), want)
            timers = {"hlotune tuned": hlotune_timer(tuned, args), **timers}
        timers["XLA:GPU"] = wall_timer(lambda: jf(*dargs), lambda r: r.block_until_ready())
        times = interleave({k: v for k, v in timers.items() if ok[k]}, repeats)
    rows, table = _rows(section, times, flops, next(iter(times)), {"tuning_s": round(tune_s, 1)})
    return rows, table, (f"**{section}**: {trials} tuning trials in {tune_s:.0f} s; answers checked: "
                         f"{', '.join(k for k, v in ok.items() if v)}"
                         + (f"; wrong: {', '.join(k for k, v in ok.items() if not v)}" if not all(ok.values()) else ""))


def gpu_environment() -> dict:
    from hlotune.runtime.cuda import cuda_target
    t = cuda_target("cuda")
    env = {"gpu": t.device, "compute_capability": ".".join(map(str, t.compute_capability)),
           "multiprocessors": t.multiprocessors, "driver": t.driver_version, "nvcc": t.nvcc,
           "gpu_memory_mib": t.global_mem >> 20}
    for mod in ("pycuda", "cupy", "torch", "jax", "jaxlib"):
        try:
            env[mod] = __import__(mod).__version__ if mod != "pycuda" else __import__("pycuda").VERSION_TEXT
        except Exception:  # noqa: BLE001  (a missing peer is recorded, not fatal)
            env[mod] = "not available"
    import os
    if os.environ.get("HL_PYCUDA_BUILD"):
        env["pycuda_build"] = os.environ["HL_PYCUDA_BUILD"]
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}")
    ap.add_argument("--trials", type=int, default=64, help="tuning trials of each matmul")
    ap.add_argument("--module-trials", type=int, default=32, help="tuning trials of the layer and the convolution")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument("--name", default="cuda")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    env = environment(gpu_environment())
    rows, table, notes = [], [], []
    db_dir = Path(tempfile.mkdtemp())

    def save():
        md = md_table(["section", "contender", "ms (median)", "TFLOP/s", "first contender's speed over this "
                       "(median of pairs)"], table)
        write_results(args.name, rows, md, env, "\n\n".join(notes), folder=Path(args.results))

    for sec in [s.strip() for s in args.only.split(",") if s.strip()]:
        t0 = time.perf_counter()
        try:
            if sec.startswith("matmul"):
                r, t, n = matmul(sec, args.trials, args.repeats, db_dir=db_dir)
            elif sec == "corpus":
                r, t, n = corpus(max(3, args.repeats // 2))
            elif sec == "conv":
                r, t, n = conv(args.module_trials, args.repeats, db_dir)
            elif sec == "layer":
                r, t, n = layer(args.module_trials, args.repeats, args.seq, db_dir)
            else:
                raise SystemExit(f"unknown section {sec!r}; expected {SECTIONS}")
        except Exception as e:
            log.exception("section %s failed", sec)
            notes.append(f"**{sec}** failed: {type(e).__name__}: {e}")
            save()
            continue
        rows += r
        table += t
        notes.append(n + f" (section took {time.perf_counter() - t0:.0f} s)")
        save()
        print(md_table(["section", "contender", "ms", "TFLOP/s", "ratio"], t), flush=True)
        print(n, flush=True)


if __name__ == "__main__":
    main()
