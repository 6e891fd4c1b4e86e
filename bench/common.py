"""Shared benchmark harness (see shared BENCHMARKING.md): interleaved side-by-side timing,
the environment record, and results/NAME.csv + NAME.md writers."""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], check=False, capture_output=True, text=True, cwd=Path(__file__).parent, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def _git_commit() -> str:
    """The checkout's commit, or ``$HLOTUNE_COMMIT`` where the tree was copied without git (a
    device machine)."""
    c = (_git("rev-parse", "--short", "HEAD") or "").strip()
    return c or os.environ.get("HLOTUNE_COMMIT", "unknown")


def _git_tree() -> str:
    """'clean', or 'dirty (N changed files)': results are made from committed code."""
    st = _git("status", "--porcelain", "--untracked-files=no")
    if st is None:
        return os.environ.get("HLOTUNE_TREE", "unknown (no git)")
    # results/ holds what benchmarks write, not code: another benchmark's fresh files do not count
    n = len([ln for ln in st.splitlines() if ln.strip() and not ln[3:].startswith("results/")])
    return "clean" if n == 0 else f"dirty ({n} changed files)"


def _blas() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        b = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{b.get('name', '?')} {b.get('version', '')}".strip()
    except Exception:  # noqa: BLE001  (numpy builds differ in what they report)
        return "unknown"


def _openblas_kernel() -> str:
    """The OpenBLAS kernel family numpy's BLAS runs (its 'architecture'), as threadpoolctl reports it."""
    try:
        from threadpoolctl import threadpool_info
        return ", ".join(i.get("architecture", "?") for i in threadpool_info() if i.get("internal_api") == "openblas")
    except Exception:  # noqa: BLE001  (threadpoolctl missing or a BLAS it cannot read)
        return "unknown"


def _cpu_isa() -> str:
    """The vector features hlotune detected on this CPU and the architecture gcc's
    ``-march=native`` resolves to (machines of one model name differ: AVX2 or AVX-512)."""
    from hlotune.runtime.targets import get_target
    isa = ",".join(get_target("cpu").hardware.isa)
    try:
        out = subprocess.run(["gcc", "-march=native", "-Q", "--help=target"], capture_output=True, text=True, check=False,
                             timeout=30).stdout
        arch = next((ln.split()[-1] for ln in out.splitlines() if ln.strip().startswith("-march=")), "?")
    except (OSError, subprocess.SubprocessError):
        arch = "?"
    return f"{isa} (gcc -march=native: {arch})"


def environment(extra: dict | None = None) -> dict:
    """What ran: versions, CPU, threads, load average."""
    from hlotune.runtime.cpu import CCompiler
    from hlotune.runtime.targets import cpu_model
    cc = CCompiler()
    env = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "hlotune_commit": _git_commit(),
        "tree": _git_tree(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "cpu_model": cpu_model(),
        "cpu_isa": _cpu_isa(),
        "cpu_count": os.cpu_count(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "unset (all cores)"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "unset (all cores)"),
        "HLOTUNE_ADAPTIVE_THREADS": os.environ.get("HLOTUNE_ADAPTIVE_THREADS", "unset (on)"),
        "compiler": cc.version,
        "flags": " ".join(cc.flags),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    env["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE", "unset")
    env["openblas_kernel"] = _openblas_kernel()
    try:
        import jax
        env["jax"] = jax.__version__
    except ImportError:
        env["jax"] = "not installed"
    env.update(extra or {})
    return env


def time_call(fn: Callable[[], object], min_ms: float = 50.0) -> tuple[float, int]:
    """Mean seconds per call of ``fn`` over enough calls to last ``min_ms``; returns (sec, calls)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt * 1e3 >= min_ms:
            return dt / n, n
        n = max(n * 2, int(n * (min_ms / 1e3) / max(dt, 1e-9) * 1.2))


#: seconds of quiet before each contender's timing: a thread pool keeps spinning after its last
#: call (OpenBLAS's for about 0.1 s), on the cores the next contender needs. Measured here:
#: XLA's matmul 1024 took 7.9 ms right after numpy's and 5.7 ms after 0.3 s of quiet.
SETTLE_S = 0.3


#: seconds of untimed calls after the quiet, before each timing: on this VM a core left idle
#: runs the next 10-35 ms of two-thread calls 6-50x slower, whoever makes them, which would
#: otherwise land inside a 50 ms timing of a microsecond program.
WARM_S = 0.04


def interleaved(contenders: dict[str, Callable[[], object]], repeats: int = 10,
                min_ms: float = 50.0, settle_s: float = SETTLE_S, warm_s: float = WARM_S) -> dict[str, list[float]]:
    """Time each contender ``repeats`` times, interleaved (A B C, B C A, C A B, ...: each round
    starts one contender later, so that no contender always runs right after the same one),
    each after ``settle_s`` of quiet and ``warm_s`` of untimed calls (at least one); returns
    seconds per call."""
    for fn in contenders.values():
        fn()  # warm up
    out: dict[str, list[float]] = {k: [] for k in contenders}
    items = list(contenders.items())
    for r in range(repeats):
        for name, fn in items[r % len(items):] + items[:r % len(items)]:
            time.sleep(settle_s)
            t0 = time.perf_counter()
            fn()
            while time.perf_counter() - t0 < warm_s:
                fn()
            out[name].append(time_call(fn, min_ms)[0])
    return out


def ratios(a: list[float], b: list[float]) -> list[float]:
    """Per-pair ratios b/a (a's speed over b's: >1 means a is faster)."""
    return [y / x for x, y in zip(a, b)]


def summary(ts: list[float]) -> dict:
    return {"median": statistics.median(ts), "min": min(ts), "max": max(ts)}


def write_results(name: str, rows: list[dict], table_md: str, env: dict, notes: str = "",
                  folder: Path | None = None) -> None:
    """Write results/NAME.csv (every row, all columns) and results/NAME.md (in ``folder`` when given).
    Results describe committed code: from a dirty tree this refuses (SystemExit) unless
    ``HLOTUNE_ALLOW_DIRTY=1`` is set, and then the environment table says the tree was dirty."""
    if env.get("tree", "clean").startswith("dirty") and os.environ.get("HLOTUNE_ALLOW_DIRTY") != "1":
        raise SystemExit(f"refusing to write results/{name}.*: the working tree is {env['tree']}; commit first "
                         "(or set HLOTUNE_ALLOW_DIRTY=1, and the results say so)")
    folder = Path(folder) if folder is not None else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(env)
    env["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(folder / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    env_md = "\n".join(f"| {k} | {v} |" for k, v in env.items())
    text = (f"# {name}\n\n{table_md}\n\n{notes}\n\n## Environment\n\n| what | value |\n|---|---|\n{env_md}\n")
    (folder / f"{name}.md").write_text(text)
    (folder / f"{name}.env.json").write_text(json.dumps(env, indent=1))


def md_table(header: list[str], rows: list[list]) -> str:
    def fmt(x):
        return f"{x:.3g}" if isinstance(x, float) else str(x)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)
