"""hlotune on an OpenCL device next to its OpenCL peers, in one process.

For matmul 1024x1024x1024 (tests/data/hlo/matmul_1024.hlo), softmax and conv2d_nhwc_3x3 (corpus):
hlotune's default schedules (``hlotune.compile(m, target="opencl")``) and hlotune tuned with 64
trials; for the matmul also CLBlast's SGEMM (``pyclblast``) and the best configuration that
Kernel Tuner finds in 64 evaluations for a classic local-memory tiled SGEMM written below. All
run on the one device that ``hlotune.get_target("opencl")`` picks (CLBlast and Kernel Tuner are
pointed at the same platform/device index), every answer is checked against numpy before its
time counts, and the contenders are timed interleaved (A B A B) by wall clock, each call going
from host numpy arrays to host numpy arrays (upload, kernels, download, ``queue.finish()``).

Run: ``python -m bench.opencl_peers [--trials 64]`` (needs the ``opencl`` and ``bench-opencl``
extras; pyclblast builds against Debian's ``libclblast-dev`` and ``ocl-icd-opencl-dev``). Writes
results/opencl_pocl.csv and results/opencl_pocl.md (the name is historical: PoCL was the device
first asked for; the md says which device ran).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from hlotune.runtime import opencl as rocl

import hlotune
from hlotune.cli import check_outputs

from .common import environment, interleaved, md_table, write_results
from .corpus_cpu import DATA

#: a classic tiled SGEMM (C = A @ B, row-major, M x K times K x N): a work-group of
#: block_size_x x block_size_y work-items computes a (block_size_y*tile_size_y) x
#: (block_size_x*tile_size_x) tile of C, staging tile_size_k-deep slabs of A and B in local
#: memory; each work-item keeps tile_size_y x tile_size_x accumulators in registers, strided by
#: the block size so that neighbouring work-items touch neighbouring columns.
SGEMM_SOURCE = r"""
#define WG_M (block_size_y * tile_size_y)
#define WG_N (block_size_x * tile_size_x)
#define NT (block_size_x * block_size_y)

__kernel __attribute__((reqd_work_group_size(block_size_x, block_size_y, 1)))
void tiled_sgemm(__global float* restrict C, __global const float* restrict A,
                 __global const float* restrict B) {
    __local float As[WG_M][tile_size_k];
    __local float Bs[tile_size_k][WG_N];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int lid = ty * block_size_x + tx;
    const int row0 = get_group_id(1) * WG_M, col0 = get_group_id(0) * WG_N;
    float acc[tile_size_y][tile_size_x];
    #pragma unroll
    for (int i = 0; i < tile_size_y; i++)
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += tile_size_k) {
        for (int e = lid; e < WG_M * tile_size_k; e += NT) {
            const int r = e / tile_size_k, c = e % tile_size_k;
            As[r][c] = A[(row0 + r) * K + k0 + c];
        }
        for (int e = lid; e < tile_size_k * WG_N; e += NT) {
            const int r = e / WG_N, c = e % WG_N;
            Bs[r][c] = B[(k0 + r) * N + col0 + c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int k = 0; k < tile_size_k; k++) {
            float b[tile_size_x];
            #pragma unroll
            for (int j = 0; j < tile_size_x; j++)
                b[j] = Bs[k][tx + j * block_size_x];
            #pragma unroll
            for (int i = 0; i < tile_size_y; i++) {
                const float a = As[ty + i * block_size_y][k];
                #pragma unroll
                for (int j = 0; j < tile_size_x; j++)
                    acc[i][j] = fma(a, b[j], acc[i][j]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    #pragma unroll
    for (int i = 0; i < tile_size_y; i++)
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            C[(row0 + ty + i * block_size_y) * N + col0 + tx + j * block_size_x] = acc[i][j];
}
"""

SGEMM_PARAMS = {
    "block_size_x": [1, 2, 4, 8, 16, 32, 64],
    "block_size_y": [1, 2, 4, 8, 16, 32],
    "tile_size_x": [1, 2, 4, 8],
    "tile_size_y": [1, 2, 4, 8],
    "tile_size_k": [4, 8, 16, 32, 64],
}


def sgemm_restrictions(M: int, N: int, K: int, max_wg: int, local_mem: int):
    def ok(p):
        wg_m, wg_n = p["block_size_y"] * p["tile_size_y"], p["block_size_x"] * p["tile_size_x"]
        nt = p["block_size_x"] * p["block_size_y"]
        return (M % wg_m == 0 and N % wg_n == 0 and K % p["tile_size_k"] == 0 and 1 <= nt <= max_wg
                and 4 * p["tile_size_k"] * (wg_m + wg_n) <= local_mem)
    return ok


def sgemm_defines(p: dict, M: int, N: int, K: int) -> str:
    return "".join(f"#define {k} {p[k]}\n" for k in SGEMM_PARAMS) + f"#define M {M}\n#define N {N}\n#define K {K}\n"


def kernel_tuner_sgemm(a, b, ref, target, fevals: int, strategy: str, seed: int):
    """Kernel Tuner on the tiled SGEMM: (best params, wall seconds, results list, env)."""
    import kernel_tuner
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), np.float32)
    src = f"#define M {M}\n#define N {N}\n#define K {K}\n" + SGEMM_SOURCE
    restr = sgemm_restrictions(M, N, K, target.max_work_group_size, target.local_mem_size)
    t0 = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        "tiled_sgemm", src, (N, M), [c, a, b], SGEMM_PARAMS,
        grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
        restrictions=restr, answer=[ref, None, None], atol=1e-3 * float(np.abs(ref).max()),
        lang="OpenCL", platform=target.platform_index, device=target.device_index,
        strategy=strategy, strategy_options={"max_fevals": fevals}, seed=seed, quiet=True,
        verbose=False)
    wall = time.perf_counter() - t0
    good = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(good, key=lambda r: r["time"])
    return {k: best[k] for k in SGEMM_PARAMS}, wall, results, env, kernel_tuner.__version__


class ClRunner:
    """Host arrays in, host array out on the hlotune device's context and queue (wall clock)."""

    def __init__(self, target, arrays, out_shape):
        self.cl = rocl._cl()
        self.ctx = rocl.device_context(target.platform_index, target.device_index)
        self.q = self.ctx.queue
        import pyopencl.array as cla  # device arrays (pyclblast wants them); .data is the buffer
        self.arrays = [np.ascontiguousarray(x) for x in arrays]
        self.dev = [cla.empty(self.q, x.shape, x.dtype) for x in self.arrays]
        self.out = np.empty(out_shape, np.float32)
        self.odev = cla.empty(self.q, out_shape, np.float32)
        self.bufs = [d.data for d in self.dev]
        self.obuf = self.odev.data

    def upload(self):
        for x, b in zip(self.arrays, self.bufs):
            self.cl.enqueue_copy(self.q, b, x, is_blocking=False)

    def download(self):
        self.cl.enqueue_copy(self.q, self.out, self.obuf, is_blocking=False)
        self.q.finish()
        return self.out


def tiled_sgemm_runner(target, a, b, params):
    r = ClRunner(target, [a, b], (a.shape[0], b.shape[1]))
    M, K = a.shape
    N = b.shape[1]
    prg = r.cl.Program(r.ctx.context, sgemm_defines(params, M, N, K) + SGEMM_SOURCE).build()
    kern = r.cl.Kernel(prg, "tiled_sgemm")
    kern.set_args(r.obuf, *r.bufs)
    bx, by = params["block_size_x"], params["block_size_y"]
    gsize = (N // params["tile_size_x"], M // params["tile_size_y"])

    def run():
        r.upload()
        r.cl.enqueue_nd_range_kernel(r.q, kern, gsize, (bx, by))
        return r.download()
    return run


def clblast_runner(target, a, b):
    import pyclblast
    r = ClRunner(target, [a, b], (a.shape[0], b.shape[1]))
    M, K = a.shape
    N = b.shape[1]

    def run():
        r.upload()
        pyclblast.gemm(r.q, M, N, K, r.dev[0], r.dev[1], r.odev, a_ld=K, b_ld=N, c_ld=N)
        return r.download()
    return run


def flops_of(name: str, z) -> tuple[float, float, str]:
    """(FLOPs, bytes moved, how counted) per call."""
    if name == "matmul_1024":
        m, k = z["arg0"].shape
        n = z["arg1"].shape[1]
        return 2.0 * m * n * k, 4.0 * (m * k + k * n + m * n), "2*M*N*K"
    if name == "conv2d_nhwc_3x3":
        nb, h, w, ci = z["arg0"].shape
        kh, kw, _, co = z["arg1"].shape
        return 2.0 * nb * h * w * co * ci * kh * kw, 4.0 * (z["arg0"].size + z["arg1"].size + z["out0"].size), \
            "2*N*H*W*Co*Ci*KH*KW"
    if name == "softmax":
        n = z["arg0"].size
        return 5.0 * n, 8.0 * n, "5 per element (max, sub, exp, sum, div)"
    raise KeyError(name)


def fails_of(res) -> dict:
    out: dict = {}
    for r in res:
        for f, n in r.failures.items():
            out[f] = out.get(f, 0) + n
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--tuner", default="bayes")
    ap.add_argument("--kt-strategy", default="bayes_opt")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--target", default="opencl")
    ap.add_argument("--modules", default="matmul_1024,softmax,conv2d_nhwc_3x3")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="Non-empty compiler output")

    target = hlotune.get_target(args.target)   # also sets OCL_ICD_VENDORS before anyone lists platforms
    cl = rocl._cl()
    dev_lines = []
    for pi, di, d in rocl.devices():
        err = rocl._probe(pi, di)
        dev_lines.append(f"opencl:{pi}:{di} {d.name.strip()} ({d.platform.name.strip()}, {d.platform.version.strip()}, "
                         f"driver {d.driver_version}): " + ("builds kernels" if err is None else f"cannot build: {err}"))
    extra = {"trials": args.trials, "tuner": args.tuner, "kernel_tuner_strategy": args.kt_strategy,
             "opencl_target": str(target), "opencl_device": target.device, "opencl_platform": target.platform,
             "opencl_driver": target.driver_version, "opencl_version": target.opencl_version,
             "opencl_compute_units": target.compute_units, "pyopencl": cl.VERSION_TEXT,
             "opencl_devices_seen": " / ".join(dev_lines)}
    try:
        from importlib.metadata import version

        import pyclblast  # noqa: F401
        extra["pyclblast"] = version("pyclblast")
        extra["clblast"] = _clblast_version()
    except Exception as e:  # noqa: BLE001
        extra["pyclblast"] = f"unavailable: {type(e).__name__}: {e}"
    env = environment(extra)
    db = str(Path(tempfile.mkdtemp()) / "opencl_peers.db")

    rows, table, notes = [], [], []
    verdict = {}
    for name in args.modules.split(","):
        m = hlotune.load_hlo(DATA / f"{name}.hlo")
        z = np.load(DATA / f"{name}.npz")
        ins = [z[f"arg{i}"] for i in range(len(m.params))]
        ref = z["out0"]
        flops, nbytes, how = flops_of(name, z)
        print(f"== {name}: tuning {args.trials} trials on {target} ({target.device})", flush=True)
        t0 = time.perf_counter()
        res = hlotune.tune(m, target=str(target), trials=args.trials, db=db, tuner=args.tuner, seed=0,
                           progress=False)
        tune_wall = time.perf_counter() - t0
        default = hlotune.compile(m, target=str(target))
        tuned = hlotune.compile(m, target=str(target), db=db)
        contenders = {"hlotune default": lambda f=default, x=ins: f(*x), "hlotune tuned": lambda f=tuned, x=ins: f(*x)}
        walls = {"hlotune tuned": tune_wall}
        missing = {}
        if name == "matmul_1024":
            a, b = ins
            try:
                t0 = time.perf_counter()
                run = clblast_runner(target, a, b)
                run()   # first call compiles CLBlast's kernels for this device
                walls["CLBlast"] = time.perf_counter() - t0
                contenders["CLBlast"] = run
            except Exception as e:  # noqa: BLE001
                missing["CLBlast"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
            try:
                print(f"== {name}: Kernel Tuner, {args.kt_strategy}, max_fevals={args.trials}", flush=True)
                best, kt_wall, kt_results, _, kt_ver = kernel_tuner_sgemm(
                    a, b, ref, target, args.trials, args.kt_strategy, seed=0)
                env["kernel_tuner"] = kt_ver
                walls["Kernel Tuner best"] = kt_wall
                contenders["Kernel Tuner best"] = tiled_sgemm_runner(target, a, b, best)
                kt_ok = [r for r in kt_results if isinstance(r.get("time"), (int, float))]
                notes.append(f"Kernel Tuner ({args.kt_strategy}, max_fevals={args.trials}, seed 0): "
                             f"{len(kt_results)} configurations evaluated, {len(kt_ok)} valid, in {kt_wall:.0f} s; "
                             f"best `{best}` ({min(r['time'] for r in kt_ok):.2f} ms by Kernel Tuner's own timing).")
                for k, r in enumerate(kt_results):
                    rows.append({"module": name, "contender": "Kernel Tuner trial", "repeat": k,
                                 "seconds": r["time"] / 1e3 if isinstance(r.get("time"), (int, float)) else "",
                                 "status": "ok" if isinstance(r.get("time"), (int, float)) else str(r.get("time")),
                                 "config": str({p: r[p] for p in SGEMM_PARAMS})})
            except Exception as e:  # noqa: BLE001
                missing["Kernel Tuner best"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
        for k, fn in list(contenders.items()):
            got = fn()
            got = got if isinstance(got, tuple) else (got,)
            chk = check_outputs(tuple(np.asarray(g).copy() for g in got), DATA / f"{name}.npz")
            if not all(r["ok"] for r in chk):
                missing[k] = f"wrong answer: {chk}"
                del contenders[k]
        print(f"== {name}: timing {list(contenders)} ({args.repeats} interleaved repeats)", flush=True)
        times = interleaved(contenders, repeats=args.repeats)
        tuned_t = times["hlotune tuned"]
        med = {k: statistics.median(ts) for k, ts in times.items()}
        for k, ts in times.items():
            pair = [ts[r] / tuned_t[r] for r in range(len(ts))]
            for r, t in enumerate(ts):
                rows.append({"module": name, "contender": k, "repeat": r, "seconds": t, "gflops": flops / t / 1e9,
                             "gbytes_per_s": nbytes / t / 1e9, "tuned_speed_over_this": pair[r], "status": "ok",
                             "tuning_wall_s": walls.get(k, "")})
            table.append([name, k, f"{med[k] * 1e3:.3f}", f"{min(ts) * 1e3:.3f}-{max(ts) * 1e3:.3f}",
                          f"{flops / med[k] / 1e9:.1f}", f"{nbytes / med[k] / 1e9:.2f}",
                          f"{statistics.median(pair):.2f}",
                          f"{walls[k]:.0f}" if k in walls else "-"])
        for k, why in missing.items():
            table.append([name, k, "-", "-", "-", "-", "-", f"missing: {why}"[:300]])
        fails = fails_of(res)
        cfgs = [r.best_config for r in res]
        notes.append(f"**{name}** ({how} = {flops / 1e6:.1f} MFLOP, {nbytes / 1e6:.2f} MB moved per call): hlotune "
                     f"tuned with {args.trials} `{args.tuner}` trials (seed 0) over {len(res)} task(s) in "
                     f"{tune_wall:.0f} s, {sum(r.trials for r in res)} trials recorded, failures "
                     f"{fails or 'none'}; best config(s) `{cfgs}`.")
        if name == "matmul_1024":
            g = {k: flops / med[k] / 1e9 for k in med}
            for peer in ("CLBlast", "Kernel Tuner best"):
                if peer in g:
                    pair = statistics.median([times[peer][r] / tuned_t[r] for r in range(len(tuned_t))])
                    verdict[peer] = (g["hlotune tuned"], g[peer], pair)
    md = md_table(["module", "contender", "ms (median)", "ms min-max", "GFLOPS", "GB/s",
                   "hlotune tuned speed-up over it (median of pairs)", "tuning wall s"], table)
    vtxt = []
    for peer, goal in (("CLBlast", ">="), ("Kernel Tuner best", ">")):
        if peer in verdict:
            ours, theirs, pair = verdict[peer]
            met = ours >= theirs if goal == ">=" else ours > theirs
            vtxt.append(f"- matmul 1024: hlotune tuned {ours:.1f} GFLOPS vs {peer} {theirs:.1f} GFLOPS "
                        f"({ours / theirs:.2f}x, median of pairs {pair:.2f}x); target tuned {goal} {peer}: "
                        f"**{'met' if met else 'not met'}**.")
        else:
            vtxt.append(f"- matmul 1024: {peer} did not run, so the target against it cannot be judged.")
    pocl = [ln for ln in dev_lines if "pocl" in ln.lower() or "portable" in ln.lower()]
    device_note = (f"**Device that ran: {target} = {target.device} on {target.platform} (driver "
                   f"{target.driver_version}, {target.opencl_version}, {target.compute_units} compute units).** "
                   "All contenders used this device (CLBlast on hlotune's own context and queue, Kernel Tuner "
                   f"with platform={target.platform_index}, device={target.device_index}). It is not PoCL because "
                   "the PoCL 3.0 from PyPI (pocl-binary-distribution) cannot compile kernels on this CPU: "
                   + ("; ".join(pocl) if pocl else "its platform is not visible here") +
                   ". The file keeps the name opencl_pocl for the issue that asked for it.")
    text_notes = ("## Verdict\n\n" + "\n".join(vtxt) + "\n\n" + device_note + "\n\n## Tuning\n\n" +
                  "\n\n".join(notes) +
                  f"\n\n## Method\n\n{args.repeats} interleaved repeats (A B A B) of >= 50 ms each, wall clock, each call "
                  "from host numpy arrays to a host numpy array (uploads, kernels, download, queue.finish()), "
                  "after one warm-up call; every contender's answer checked against the corpus npz (numpy/XLA "
                  "reference; rtol 1e-4, atol 1e-5 x max|ref|) before timing, and Kernel Tuner checks every "
                  "configuration it times against the numpy answer. Kernel Tuner's figures in the table are "
                  "its best configuration rebuilt and timed here like the others; CLBlast's tuning wall time "
                  "is its first call (kernel compilation; CLBlast ships pre-tuned parameters). CLBlast and Kernel "
                  "Tuner run on the matmul only: pyclblast exposes no softmax and no convolution (CLBlast's "
                  "convgemm is not in its Python bindings), and Kernel Tuner tunes the SGEMM written here. GB/s counts "
                  "inputs read once and the output written once.")
    write_results("opencl_pocl", rows, md, env, text_notes)
    print(md)
    print(text_notes)


def _clblast_version() -> str:
    import subprocess
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libclblast-dev"], check=False,
                             capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return f"libclblast-dev {out}" if out else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


if __name__ == "__main__":
    main()
