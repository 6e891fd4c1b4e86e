"""Plots of the report views (matplotlib, the ``plot`` extra), one per view.

Series are named by kernel (module/op family type) and target, never by hash; colours come
from tab10, tab20 or an evenly spaced colormap for more series, with a marker cycle, so no two
series share a look; every point has a marker, so a task with one trial shows; trial axes
have integer ticks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from ..dsl.errors import DataFileError, MissingDependencyError

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingDependencyError("matplotlib", "plot") from e
    return plt


def colors(n: int) -> list:
    """``n`` distinct RGBA colours: tab10, tab20, then evenly spaced hues of ``turbo``."""
    plt = _plt()
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:
        return [plt.get_cmap("tab20")(i) for i in range(n)]
    return [plt.get_cmap("turbo")(x) for x in np.linspace(0.02, 0.98, n)]


def _figure(rows: int, legend_items: int = 0):
    plt = _plt()
    height = max(3.5, 0.28 * rows + 1.5)
    width = 8 + (3.5 if legend_items > 12 else 0)
    return plt, *plt.subplots(figsize=(width, height))


def _legend(ax, n: int) -> None:
    if n > 12:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + n // 40, frameon=False)
    else:
        ax.legend(fontsize=7)


def _save(plt, fig, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _grouped_bars(ax, groups: list[str], series: dict[str, list[float]], xlabel: str, log: bool = True,
                  errors: dict[str, tuple[list[float], list[float]]] | None = None) -> None:
    """Horizontal bars: one group per name in ``groups`` (top to bottom), one bar per series."""
    n = max(len(series), 1)
    h = 0.8 / n
    y = np.arange(len(groups))[::-1]
    for k, ((label, vals), c) in enumerate(zip(series.items(), colors(len(series)))):
        v = np.array([np.nan if x is None else x for x in vals], dtype=float)
        err = None
        if errors and label in errors:
            lo, hi = (np.array(e, dtype=float) for e in errors[label])
            err = np.vstack([np.maximum(v - lo, 0), np.maximum(hi - v, 0)])
        ax.barh(y + (n - 1 - 2 * k) * h / 2, v, height=h, color=c, label=label, xerr=err,
                error_kw={"elinewidth": 0.8, "capsize": 1.5})
    ax.set_yticks(y)
    ax.set_yticklabels(groups, fontsize=7)
    ax.set_xlabel(xlabel)
    vals = [x for v in series.values() for x in v if x is not None and np.isfinite(x) and x > 0]
    if log and vals:    # whole decades: bars start at a round value, no crowded minor labels
        from matplotlib.ticker import NullFormatter
        ax.set_xscale("log")
        lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals) * 1.05))
        ax.set_xlim(10.0 ** lo, 10.0 ** max(hi, lo + 1))
        ax.xaxis.set_minor_formatter(NullFormatter())


def _integer_x(ax) -> None:
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _label(task: str, target: str, many_targets: bool, tuner: str = "") -> str:
    return task + (f" @ {target}" if many_targets else "") + (f" [{tuner}]" if tuner else "")


def plot_convergence(df, path: str) -> None:
    plt, fig, ax = _figure(10, df.groupby(["task", "target", "tuner"]).ngroups)
    many = df.target.nunique() > 1
    keys = list(df.groupby(["workload", "target_key", "tuner"], sort=False).groups)
    looks = zip(colors(len(keys)), itertools.cycle(_MARKERS))
    for (w, g, tu), (c, mk) in zip(keys, looks):
        grp = df[(df.workload == w) & (df.target_key == g) & (df.tuner == tu)]
        best = grp.best_so_far_us.replace(math.inf, np.nan)
        ax.plot(grp.trial, best, drawstyle="steps-post", color=c, marker=mk, markersize=4,
                label=_label(grp.task.iloc[0], grp.target.iloc[0], many, tu))
    ax.set_xlabel("measured trial")
    ax.set_ylabel("best time so far (us)")
    ax.set_yscale("log")
    ax.set_title("convergence")
    _integer_x(ax)
    _legend(ax, len(keys))
    _save(plt, fig, path)


def plot_tasks(df, path: str) -> None:
    plt, fig, ax = _figure(2 * len(df))
    many = df.target.nunique() > 1
    groups = [_label(t, g, many) for t, g in zip(df.task, df.target)]
    _grouped_bars(ax, groups, {"default schedule": list(df.default_us), "best tuned": list(df.best_us)}, "time (us)")
    ax.set_title("tasks: default and best time")
    _legend(ax, 2)
    _save(plt, fig, path)


def plot_schedules(df, path: str) -> None:
    """The top-k configs of each task side by side (bars by rank, min-max whiskers)."""
    plt, fig, ax = _figure(df["rank"].max() * df.groupby(["workload", "target_key"]).ngroups)
    many = df.target.nunique() > 1
    tasks = list(df.groupby(["workload", "target_key"], sort=False).groups)
    groups, series, errs = [], {}, {}
    for w, g in tasks:
        grp = df[(df.workload == w) & (df.target_key == g)].set_index("rank")
        groups.append(_label(grp.task.iloc[0], grp.target.iloc[0], many))
        for r in range(1, int(df["rank"].max()) + 1):
            has = r in grp.index
            series.setdefault(f"rank {r}", []).append(grp.median_us[r] if has else None)
            lo, hi = errs.setdefault(f"rank {r}", ([], []))
            lo.append(grp.min_us[r] if has else np.nan)
            hi.append(grp.max_us[r] if has else np.nan)
    _grouped_bars(ax, groups, series, "median time (us); whiskers: min to max", errors=errs)
    ax.set_title("schedules: the fastest configs of each task")
    _legend(ax, len(series))
    _save(plt, fig, path)


def plot_targets(df, path: str) -> None:
    targets = [c for c in df.columns if c not in ("task", "workload")]
    plt, fig, ax = _figure(len(df) * len(targets), len(targets))
    _grouped_bars(ax, list(df.task), {t: list(df[t]) for t in targets}, "best time (us)")
    ax.set_title("targets: best time of each task")
    _legend(ax, len(targets))
    _save(plt, fig, path)


def plot_tuners(df, path: str) -> None:
    """Best time and trials to come within 5% of the best, per task, one bar per tuner."""
    plt = _plt()
    many = df.target.nunique() > 1
    keys = list(df.groupby(["workload", "target_key"], sort=False).groups)
    tuners = list(dict.fromkeys(df.tuner))
    groups = []
    best: dict[str, list] = {t: [] for t in tuners}
    hits: dict[str, list] = {t: [] for t in tuners}
    for w, g in keys:
        grp = df[(df.workload == w) & (df.target_key == g)].set_index("tuner")
        groups.append(_label(grp.task.iloc[0], grp.target.iloc[0], many))
        for t in tuners:
            has = t in grp.index
            best[t].append(grp.best_us[t] if has else None)
            hits[t].append(float(grp.trials_to_within[t]) if has and not pd.isna(grp.trials_to_within[t]) else None)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, max(3.5, 0.3 * len(keys) * len(tuners) + 1.5)), sharey=True)
    _grouped_bars(a1, groups, best, "best time (us)")
    _grouped_bars(a2, groups, hits, "measured trials to within 5% of the best", log=False)
    _integer_x(a2)
    a1.set_title("tuners: best time")
    a2.set_title("tuners: trials needed")
    _legend(a1, len(tuners))
    _save(plt, fig, path)


def plot_trials(df, path: str) -> None:
    """Every trial's time by its order within its task; failures as crosses on the bottom axis."""
    plt, fig, ax = _figure(10, df.groupby(["task", "target"]).ngroups)
    many = df.target.nunique() > 1
    keys = list(df.groupby(["workload", "target_key"], sort=False).groups)
    floor = df.median_us.min() if df.median_us.notna().any() else 1.0
    for (w, g), c, mk in zip(keys, colors(len(keys)), itertools.cycle(_MARKERS)):
        grp = df[(df.workload == w) & (df.target_key == g)].reset_index(drop=True)
        x = grp.index + 1
        ok = grp.failure.isna()
        ax.scatter(x[ok], grp.median_us[ok], color=c, marker=mk, s=16,
                   label=_label(grp.task.iloc[0], grp.target.iloc[0], many))
        if (~ok).any():
            ax.scatter(x[~ok], [floor * 0.8] * int((~ok).sum()), color=c, marker="x", s=16)
    ax.set_xlabel("trial of the task (x on the bottom: failed or invalid)")
    ax.set_ylabel("median time (us)")
    ax.set_yscale("log")
    ax.set_title("trials")
    _integer_x(ax)
    _legend(ax, len(keys))
    _save(plt, fig, path)


def plot_fusion(df, path: str) -> None:
    """Each segment's measured fusion plans side by side (time per plan)."""
    plt, fig, ax = _figure(len(df))
    many = df.target.nunique() > 1
    groups = [f"{_label(t, g, many)}: {p}" for t, g, p in zip(df.task, df.target, df.plan)]
    _grouped_bars(ax, groups, {"segment time": list(df.median_us)}, "median time (us)")
    ax.set_title("fusion: plans of each segment measured end to end")
    _save(plt, fig, path)


_PLOTS = {"tasks": plot_tasks, "schedules": plot_schedules, "tuners": plot_tuners, "targets": plot_targets,
          "convergence": plot_convergence, "trials": plot_trials, "fusion": plot_fusion}


def plot_view(report, name: str, path: str) -> None:
    """Plot view ``name`` of ``report`` (autotune/report.py) to ``path``."""
    df = report.view(name)
    if df.empty:
        raise DataFileError(f"{report.db.path} has no {name} to plot (no trials recorded yet)")
    _PLOTS[name](df, path)


__all__ = ["colors", "plot_view"]
