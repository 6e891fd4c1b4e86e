"""Reports of a tuning database as pandas DataFrames: tasks, schedules side by side, tuners
compared, targets compared, convergence, trials; written as a terminal table (at most 100
columns, long names wrapped at their separators), CSV, Markdown or HTML; plotted with
matplotlib (autotune/plots.py).

Kernels are named by module, op and output shape (``jit_mlp/mul.13 dot f32[128,1024]``) and
targets by kind and device, never by hash. Trials are counted as ``hlotune tune``'s summary
counts them (see ``TRIALS_NOTE``).
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd

from ..dsl.errors import ConfigError
from .database import FAILURES, Database, config_key

#: what each view shows (the CLI's ``report --help`` prints these)
VIEWS = {
    "tasks": "one row per task (kernel) and target: measured trials, invalid configs, other failures, "
             "default and best time, speed-up; csv/md/html add GFLOPS, GB/s and the best config",
    "schedules": "the 5 fastest configs of each task side by side, with their median, min and max times",
    "tuners": "tuners compared on each task: trials, failures, best time, and the trial at which each came "
              "within 5% of the best any tuner found",
    "targets": "the best time of each task on each target, one column per target",
    "convergence": "the best time so far after each measured trial, per task, target and tuner",
    "trials": "every trial in the order it finished: tuner, config, median time or failure",
    "fusion": "each compute segment's fusion plans measured end to end: the decisions each plan flips "
              "from the default fusion, its time, and its speed-up over the default plan; for the finalists "
              "re-timed interleaved with the default, the confirmed time and speed-up, and the winner",
}

TRIALS_NOTE = ("trials: measured candidates, the default schedule included; invalid: configs that broke a "
               "template rule, recorded but neither measured nor counted in trials or the budget")

_DESC = re.compile(r"^(?P<family>\S+) (?P<op>[^:]+): \((?P<ins>.*)\) -> (?P<out>[^\s\[]+\[[^\]]*\])")
_DTYPES = ((r"\bbfloat(\d+)", r"bf\1"), (r"\bfloat(\d+)", r"f\1"), (r"\buint(\d+)", r"u\1"),
           (r"\bint(\d+)", r"s\1"), (r"\bbool\b", "pred"))


def short_type(text: str) -> str:
    """``float32[128, 1024]`` -> ``f32[128,1024]`` (HLO's spelling, no spaces)."""
    for pat, rep in _DTYPES:
        text = re.sub(pat, rep, text)
    return re.sub(r"\[([^\]]*)\]", lambda m: "[" + m.group(1).replace(" ", "") + "]", text)


def kernel_name(description: str, module: str | None = None) -> str:
    """A task's name from its workload description: ``module/op family out-type``."""
    m = _DESC.match(description)
    name = f"{m['op']} {m['family']} {short_type(m['out'])}" if m else short_type(description)
    return f"{module}/{name}" if module else name


def target_names(targets: list[dict]) -> dict[str, str]:
    """A readable, distinct name per target key: ``kind:device``, then the CPU's id and widest
    vector ISA (machines of one model name), the thread count and the compiler where those tell
    targets apart, then an ordinal."""
    def base(t, level):
        p = t["provenance"]
        name = t["kind"] + (f":{p['device']}" if p.get("device") else "")
        if level >= 1 and p.get("cpu_id"):
            isa = (p.get("hardware") or {}).get("isa") or []
            name += f" ({p['cpu_id']}{', ' + isa[0] if isa else ''})"
        if level >= 2 and "threads" in p:
            name += f", {p['threads']} threads"
        if level >= 3 and p.get("compiler_version"):
            name += f", {p['compiler_version'].split(' (')[0]}"
        return name
    names: dict[str, str] = {}
    for level in range(4):
        names = {t["key"]: base(t, level) for t in targets}
        if len(set(names.values())) == len(names):
            return names
    seen: dict[str, int] = {}
    for k, v in names.items():
        seen[v] = seen.get(v, 0) + 1
        names[k] = f"{v} #{seen[v]}" if seen[v] > 1 else v
    return names


class Report:
    """Views of one database; each method returns a DataFrame."""

    def __init__(self, db: Database):
        self.db = db
        self._targets = target_names(db.targets())
        modules = db.workload_modules()
        self._names = {w["key"]: kernel_name(w["description"], (modules.get(w["key"]) or [None])[0])
                       for w in db.workloads()}

    def task_name(self, workload: str) -> str:
        return self._names.get(workload, workload)

    def target_name(self, target: str) -> str:
        return self._targets.get(target, target)

    def view(self, name: str) -> pd.DataFrame:
        """The view ``name`` (a key of ``VIEWS``)."""
        if name not in VIEWS:
            raise ConfigError(f"unknown report view '{name}'; use one of {', '.join(VIEWS)}", "view")
        return getattr(self, name)()

    def trials(self) -> pd.DataFrame:
        """One row per trial, in the order they finished."""
        rows = []
        wl = {w["key"]: w for w in self.db.workloads()}
        for t in self.db.history():
            rows.append({"id": t.id, "task": self.task_name(t.workload), "workload": t.workload,
                         "family": wl[t.workload]["family"], "description": wl[t.workload]["description"],
                         "target": self.target_name(t.target), "target_key": t.target, "tuner": t.tuner,
                         "seed": t.seed, "run": t.run, "config": json.dumps(t.config, sort_keys=True),
                         "median_us": t.median * 1e6 if t.median else None, "failure": t.failure,
                         "finished": t.finished})
        return pd.DataFrame(rows, columns=["id", "task", "workload", "family", "description", "target",
                                           "target_key", "tuner", "seed", "run", "config", "median_us", "failure",
                                           "finished"])

    def tasks(self) -> pd.DataFrame:
        """Per task and target: measured trials, invalid configs and other failures by type,
        default and best time, speed-up over the default schedule, GFLOPS, GB/s, best config."""
        rows = []
        wl = {w["key"]: w for w in self.db.workloads()}
        kinds = {t["key"]: t["kind"] for t in self.db.targets()}
        df = self.trials()
        winners = {(x["workload"], x["target"]): x for x in self.db.winners()}
        for (w, g), grp in df.groupby(["workload", "target_key"], sort=False):
            ok = grp[grp.failure.isna()]
            default = ok[ok.config == "{}"]
            best = ok.loc[ok.median_us.idxmin()] if len(ok) else None
            d_us = float(default.median_us.iloc[0]) if len(default) else None
            b_us = float(best.median_us) if best is not None else None
            best_cfg = best.config if best is not None else None
            win, ci = winners.get((w, g)), (None, None)
            if win is not None:     # re-timed finalists decide (autotune/winners.py), with intervals
                b_us, ci, best_cfg = win["median"] * 1e6, (win["lo"] * 1e6, win["hi"] * 1e6), \
                    json.dumps(win["config"], sort_keys=True)
                d_us = win["default_median"] * 1e6 if win["default_median"] else d_us
            info = wl[w]
            row = {"task": self.task_name(w), "target": self.target_name(g), "workload": w,
                   "family": info["family"], "description": info["description"],
                   "shapes": json.dumps(info["shapes"]), "target_key": g, "target_kind": kinds.get(g, ""),
                   "trials": int((grp.failure != "invalid").sum())}
            for f in FAILURES:
                row[f] = int((grp.failure == f).sum())
            row.update({"default_us": d_us, "best_us": b_us, "best_lo_us": ci[0], "best_hi_us": ci[1],
                        "speedup": (d_us / b_us) if d_us and b_us else None,
                        "gflops": info["flops"] / (b_us * 1e3) if info.get("flops") and b_us else None,
                        "gbps": info["bytes"] / (b_us * 1e3) if info.get("bytes") and b_us else None,
                        "best_config": best_cfg})
            rows.append(row)
        return pd.DataFrame(rows, columns=["task", "target", "workload", "family", "description", "shapes",
                                           "target_key", "target_kind", "trials", *FAILURES, "default_us", "best_us",
                                           "best_lo_us", "best_hi_us", "speedup", "gflops", "gbps", "best_config"])

    def fusion(self) -> pd.DataFrame:
        """Every measured fusion plan (autotune/plans.py) of every segment: the decisions it
        flips from the default fusion ('default' for none), its median time as a trial, and its
        speed-up over the default plan's trial. Trials of one segment are taken minutes apart
        while other candidates build, so those speed-ups carry the machine's drift; the finalists
        re-timed interleaved with the default (noise-aware winners) also get ``confirmed_us`` and
        ``confirmed_speedup``, and ``winner`` marks the plan the segment compiles with."""
        df = self.trials()
        df = df[(df.family == "fusion") & df.failure.isna()]
        rows = []
        for (w, g), grp in df.groupby(["workload", "target_key"], sort=False):
            base = grp[grp.config == "{}"].median_us
            won = self.db.winners(workload=w, target=g)
            final = {config_key(f["config"]): f["median"] for f in won[0]["finalists"]} if won else {}
            pick = config_key(won[0]["config"]) if won else None
            for _, t in grp.iterrows():
                cfg = json.loads(t.config)
                key = config_key(cfg)
                flips = " ".join(f"{k}={v}" for k, v in cfg.items()) or "default"
                conf = final.get(key)
                rows.append({"task": t.task, "target": t.target, "workload": w, "target_key": g, "plan": flips,
                             "median_us": t.median_us,
                             "speedup": float(base.iloc[0]) / t.median_us if len(base) else None,
                             "confirmed_us": conf * 1e6 if conf else None,
                             "confirmed_speedup": final["{}"] / conf if conf and final.get("{}") else None,
                             "winner": key == pick})
        return pd.DataFrame(rows, columns=["task", "target", "workload", "target_key", "plan", "median_us",
                                           "speedup", "confirmed_us", "confirmed_speedup", "winner"])

    def schedules(self, workload: str | None = None, target: str | None = None, k: int = 5) -> pd.DataFrame:
        """The top-k configs of each task side by side with their times (one column per knob)."""
        rows = []
        for w in self.db.workloads():
            if workload and not w["key"].startswith(workload):
                continue
            for g in self.db.targets():
                if target and g["key"] != target:
                    continue
                for rank, t in enumerate(self.db.top_k(w["key"], g["key"], k), 1):
                    rows.append({"task": self.task_name(w["key"]), "target": self.target_name(g["key"]),
                                 "workload": w["key"], "description": w["description"], "target_key": g["key"],
                                 "rank": rank, "median_us": t.median * 1e6, "min_us": min(t.times) * 1e6,
                                 "max_us": max(t.times) * 1e6, **{f"knob.{n}": v for n, v in t.config.items()}})
        return pd.DataFrame(rows, columns=None if rows else ["task", "target", "rank", "median_us"])

    def tuners(self, within: float = 0.05) -> pd.DataFrame:
        """Tuners compared per task: measured trials, invalid configs, other failures, best, and
        the measured trial at which each came within ``within`` of the task's best over all tuners."""
        df = self.trials()
        rows = []
        for (w, g), grp in df.groupby(["workload", "target_key"], sort=False):
            overall = grp.median_us.min()
            for tuner, tg in grp.groupby("tuner", sort=False):
                measured = tg[tg.failure != "invalid"]
                ok = measured.median_us.fillna(float("inf")).reset_index(drop=True)
                bsf = ok.cummin()
                hit = bsf[bsf <= overall * (1 + within)]
                rows.append({"task": self.task_name(w), "target": self.target_name(g), "tuner": tuner,
                             "workload": w, "target_key": g, "trials": len(measured),
                             "invalid": int((tg.failure == "invalid").sum()),
                             "failures": int(measured.failure.notna().sum()),
                             "best_us": float(ok.min()) if len(ok) else None,
                             "trials_to_within": int(hit.index[0]) + 1 if len(hit) else None})
        df = pd.DataFrame(rows, columns=["task", "target", "tuner", "workload", "target_key", "trials", "invalid",
                                         "failures", "best_us", "trials_to_within"])
        return df.astype({"trials_to_within": "Int64"})

    def targets(self) -> pd.DataFrame:
        """Best time per task on each target (one column per target)."""
        t = self.tasks()
        if t.empty:
            return pd.DataFrame(columns=["task", "workload"])
        return t.pivot_table(index=["task", "workload"], columns="target", values="best_us",
                             sort=False).reset_index().rename_axis(columns=None)

    def convergence(self) -> pd.DataFrame:
        """Best-so-far time after each measured trial for each (task, target, tuner); configs that
        broke a template rule are not trials (they were never measured)."""
        df = self.trials()
        df = df[df.failure != "invalid"]
        parts = []
        for (w, g, tu), grp in df.groupby(["workload", "target_key", "tuner"], sort=False):
            grp = grp.sort_values("id").reset_index(drop=True)
            parts.append(pd.DataFrame({"task": self.task_name(w), "target": self.target_name(g), "tuner": tu,
                                       "workload": w, "target_key": g, "trial": grp.index + 1,
                                       "median_us": grp.median_us,
                                       "best_so_far_us": grp.median_us.fillna(float("inf")).cummin()}))
        if not parts:
            return pd.DataFrame(columns=["task", "target", "tuner", "workload", "target_key", "trial", "median_us",
                                         "best_so_far_us"])
        return pd.concat(parts, ignore_index=True)

    def table(self, name: str) -> pd.DataFrame:
        """View ``name`` cut to the columns a terminal shows (``write(..., "table")``)."""
        df = self.view(name)
        one_target = df.empty or "target" not in df or df["target"].nunique() <= 1
        drop = ["workload", "description", "shapes", "target_key", "target_kind", "run", "seed", "family",
                "finished", "gflops", "gbps", "best_config", "best_lo_us", "best_hi_us",
                *(["target"] if one_target else [])]
        if name == "tasks" and not df.empty:
            ci = [f"{lo:.0f}-{hi:.0f}" if pd.notna(lo) else "" for lo, hi in zip(df.best_lo_us, df.best_hi_us)]
            df = df.assign(**{"95% CI us": ci})     # the confirmed winner's interval
            failed = df[list(FAILURES[1:])].sum(axis=1)
            df = df.drop(columns=list(FAILURES[1:]))
            df.insert(df.columns.get_loc("invalid") + 1, "failed", failed)
        if name == "schedules" and not df.empty:
            knobs = [c for c in df.columns if c.startswith("knob.")]
            cfg = df[knobs].apply(lambda r: " ".join(f"{k[5:]}={_knob(v)}" for k, v in r.items() if pd.notna(v)),
                                  axis=1)
            df = df.drop(columns=knobs).assign(config=cfg)
        if name == "trials" and not df.empty:
            df = df.assign(config=df.config.str.replace(r'[{}"]', "", regex=True))
        return df.drop(columns=[c for c in drop if c in df.columns])

    def plot(self, name: str, path: str) -> None:
        """Plot view ``name`` to ``path`` (the ``plot`` extra: matplotlib)."""
        from .plots import plot_view
        plot_view(self, name, path)

    def plot_convergence(self, path: str) -> None:
        self.plot("convergence", path)


def write(df: pd.DataFrame, fmt: str, path: str | None, width: int = 100) -> str:
    """Render a DataFrame as ``table`` (at most ``width`` columns), ``csv``, ``md`` or ``html``;
    write it when ``path``."""
    if fmt == "csv":
        text = df.to_csv(index=False)
    elif fmt == "md":
        text = df.to_markdown(index=False) if _has_tabulate() else _md(df)
    elif fmt == "html":
        text = df.to_html(index=False)
    elif fmt == "table":
        text = text_table(df, width)
    else:
        raise ConfigError(f"unknown report format '{fmt}'; use table, csv, md or html", "format")
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


def _knob(v):
    """A knob value as the tuner wrote it (pandas makes int columns with gaps float)."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _cell(v) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def text_table(df: pd.DataFrame, width: int = 100) -> str:
    """A plain-text table no wider than ``width`` where the columns allow: text columns
    (names, configs) are wrapped at spaces and separators, never cut; numbers right-aligned."""
    if df.empty:
        return "(no rows)"
    cols = list(df.columns)
    cells = [[_cell(v) for v in df[c]] for c in cols]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in cols]
    need = [max(len(str(c)), *(len(x) for x in col)) for c, col in zip(cols, cells)]
    wrap = [k for k, n in enumerate(numeric) if not n]
    widths = list(need)
    room = width - sum(need[k] for k in range(len(cols)) if k not in wrap) - (len(cols) - 1)
    if wrap and sum(need[k] for k in wrap) > room:
        # each text column gets its header (at least 6) and its longest token (names are never
        # cut), the rest of the room in proportion to what it lacks
        base = {k: min(need[k], max(len(str(cols[k])), 6, *(len(t) for x in cells[k] for t in _tokens(x))))
                for k in wrap}
        spare = max(room - sum(base.values()), 0)
        lack = {k: need[k] - base[k] for k in wrap}
        for k in wrap:
            widths[k] = base[k] + spare * lack[k] // (sum(lack.values()) or 1)
    lines = [" ".join(str(c).rjust(w) if n else str(c).ljust(w) for c, w, n in zip(cols, widths, numeric)).rstrip()]
    lines.append("-" * len(lines[0]))
    for r in range(len(df)):
        parts = [_wrap(cells[k][r], widths[k]) if k in wrap else [cells[k][r]] for k in range(len(cols))]
        for i in range(max(len(p) for p in parts)):
            row = [(p[i] if i < len(p) else "") for p in parts]
            lines.append(" ".join(x.rjust(w) if n else x.ljust(w)
                                  for x, w, n in zip(row, widths, numeric)).rstrip())
    return "\n".join(lines)


def _tokens(text: str) -> list[str]:
    """The pieces ``_wrap`` keeps whole: runs ending at a space or '/' (types such as
    ``f32[128, 1024]`` are written without spaces)."""
    return [t.rstrip() for t in re.findall(r"[^ /]+[ /]*|[ /]+", text)]


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken after spaces or '/' (continuation lines
    indented); a token longer than a line keeps a line of its own, whole."""
    if len(text) <= width:
        return [text]
    lines, cur = [], ""
    for tok in re.findall(r"[^ /]+[ /]*|[ /]+", text):
        if cur.strip() and len(cur + tok.rstrip()) > width:
            lines.append(cur.rstrip())
            cur, tok = "  ", tok.lstrip()
        cur += tok
    lines.append(cur.rstrip())
    return lines


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
