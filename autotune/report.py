"""Reports of a tuning database as pandas DataFrames: tasks, schedules side by side, tuners
compared, targets compared, convergence; written as table/CSV/Markdown/HTML, plotted with
matplotlib."""

from __future__ import annotations

import json

import pandas as pd

from ..dsl.errors import ConfigError, MissingDependencyError
from .database import FAILURES, Database


class Report:
    """Views of one database; each method returns a DataFrame."""

    def __init__(self, db: Database):
        self.db = db

    def trials(self) -> pd.DataFrame:
        """One row per trial."""
        rows = []
        wl = {w["key"]: w for w in self.db.workloads()}
        for t in self.db.history():
            rows.append({"id": t.id, "workload": t.workload, "family": wl[t.workload]["family"],
                         "description": wl[t.workload]["description"], "target": t.target, "tuner": t.tuner,
                         "seed": t.seed, "run": t.run, "config": json.dumps(t.config, sort_keys=True),
                         "median_us": t.median * 1e6 if t.median else None, "failure": t.failure,
                         "finished": t.finished})
        return pd.DataFrame(rows)

    def tasks(self) -> pd.DataFrame:
        """Per task and target: trials, failures by type, default and best time, GFLOPS, GB/s,
        speed-up over the default schedule, best config."""
        rows = []
        wl = {w["key"]: w for w in self.db.workloads()}
        kinds = {t["key"]: t["kind"] for t in self.db.targets()}
        df = self.trials()
        if df.empty:
            return pd.DataFrame(columns=["workload", "family", "target", "trials", "best_us"])
        for (w, g), grp in df.groupby(["workload", "target"], sort=False):
            ok = grp[grp.failure.isna()]
            default = ok[ok.config == "{}"]
            best = ok.loc[ok.median_us.idxmin()] if len(ok) else None
            d_us = float(default.median_us.iloc[0]) if len(default) else None
            b_us = float(best.median_us) if best is not None else None
            info = wl[w]
            row = {"workload": w, "family": info["family"], "description": info["description"],
                   "shapes": json.dumps(info["shapes"]), "target": g, "target_kind": kinds.get(g, ""),
                   "trials": len(grp)}
            for f in FAILURES:
                row[f] = int((grp.failure == f).sum())
            row.update({"default_us": d_us, "best_us": b_us,
                        "speedup": (d_us / b_us) if d_us and b_us else None,
                        "gflops": info["flops"] / (b_us * 1e3) if info.get("flops") and b_us else None,
                        "gbps": info["bytes"] / (b_us * 1e3) if info.get("bytes") and b_us else None,
                        "best_config": best.config if best is not None else None})
            rows.append(row)
        return pd.DataFrame(rows)

    def schedules(self, workload: str | None = None, target: str | None = None, k: int = 5) -> pd.DataFrame:
        """The top-k configs of each task side by side with their times."""
        rows = []
        for w in self.db.workloads():
            if workload and not w["key"].startswith(workload):
                continue
            for g in self.db.targets():
                if target and g["key"] != target:
                    continue
                for rank, t in enumerate(self.db.top_k(w["key"], g["key"], k), 1):
                    rows.append({"workload": w["key"], "description": w["description"], "target": g["key"],
                                 "rank": rank, "median_us": t.median * 1e6, "min_us": min(t.times) * 1e6,
                                 "max_us": max(t.times) * 1e6, **{f"knob.{n}": v for n, v in t.config.items()}})
        return pd.DataFrame(rows)

    def tuners(self, within: float = 0.05) -> pd.DataFrame:
        """Tuners compared per task: trials, failures, best, and the trial at which each came
        within ``within`` of the task's best over all tuners."""
        df = self.trials()
        if df.empty:
            return df
        rows = []
        for (w, g), grp in df.groupby(["workload", "target"], sort=False):
            overall = grp.median_us.min()
            for tuner, tg in grp.groupby("tuner", sort=False):
                ok = tg.median_us.fillna(float("inf")).reset_index(drop=True)
                bsf = ok.cummin()
                hit = bsf[bsf <= overall * (1 + within)]
                rows.append({"workload": w, "target": g, "tuner": tuner, "trials": len(tg),
                             "failures": int(tg.failure.notna().sum()), "best_us": float(ok.min()),
                             "trials_to_within": int(hit.index[0]) + 1 if len(hit) else None})
        return pd.DataFrame(rows)

    def targets(self) -> pd.DataFrame:
        """Best time per task on each target (one column per target)."""
        t = self.tasks()
        if t.empty:
            return t
        return t.pivot_table(index=["workload", "description"], columns="target", values="best_us").reset_index()

    def convergence(self) -> pd.DataFrame:
        """Best-so-far time per trial for each (task, target, tuner)."""
        df = self.trials()
        if df.empty:
            return df
        parts = []
        for (w, g, tu), grp in df.groupby(["workload", "target", "tuner"], sort=False):
            grp = grp.sort_values("id").reset_index(drop=True)
            parts.append(pd.DataFrame({"workload": w, "target": g, "tuner": tu, "trial": grp.index + 1,
                                       "median_us": grp.median_us,
                                       "best_so_far_us": grp.median_us.fillna(float("inf")).cummin()}))
        return pd.concat(parts, ignore_index=True)

    def plot_convergence(self, path: str) -> None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise MissingDependencyError("matplotlib", "plot") from e
        df = self.convergence()
        fig, ax = plt.subplots(figsize=(7, 4))
        for (w, g, tu), grp in df.groupby(["workload", "target", "tuner"], sort=False):
            ax.plot(grp.trial, grp.best_so_far_us, label=f"{w[:8]} {tu}")
        ax.set_xlabel("trial")
        ax.set_ylabel("best so far (us)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def write(df: pd.DataFrame, fmt: str, path: str | None) -> str:
    """Render a DataFrame as ``table``, ``csv``, ``md`` or ``html``; write it when ``path``."""
    if fmt == "csv":
        text = df.to_csv(index=False)
    elif fmt == "md":
        text = df.to_markdown(index=False) if _has_tabulate() else _md(df)
    elif fmt == "html":
        text = df.to_html(index=False)
    elif fmt == "table":
        text = df.to_string(index=False)
    else:
        raise ConfigError(f"unknown report format '{fmt}'; use table, csv, md or html", "format")
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
        return True
    except ImportError:
        return False


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(lines)
