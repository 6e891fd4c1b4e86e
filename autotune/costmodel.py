"""A cost model across the tuning database: what every measured workload of a kernel family
taught about its knobs, as the prior of a new workload's search.

One row per successful trial of the family on targets of the same kind (other machines of that
kind included). Features (``Encoder``):
- the workload's: log2 of its arithmetic ops and bytes, of the output's last three extents, of
  the reduction's size and longest axis, and its widest element in bytes;
- the target's: its threads, and its vector width, L1 and L2 (from the provenance's hardware:
  rows recorded on another machine of the kind are read with that machine's, so a database
  recorded elsewhere teaches what differs there);
- the config's, by knob name: a number as log2(1 + v) and, beside it, its log2 ratio to the
  output's last two extents (tiles against the shape they cut, so shapes transfer); a flag as
  0/1; a category as its rank among the values seen; a knob the config lacks as -1;
- for a config of the gemm template (dots, convolutions), what it means on the workload
  (``schedules.templates.gemm.GemmFeatures``: register use, edge waste, thread balance,
  intensity, the B panel against L1), the features the bayes tuner's own surrogate sees, and
  the template's analytic estimate of its time (``GemmFeatures.estimate``), with the vector
  width, registers and L1 of the machine the row was measured on (rows whose provenance predates
  recording the hardware are read as if on the machine the model serves).
The label is log(median / the same workload's default median on the same target): the model
predicts a config's time relative to the workload's default schedule, which is what transfers
between shapes of a family. Extra trees (scikit-learn): they fit a few thousand rows in tens of
milliseconds, need no feature scaling, and give a spread across trees; chosen over gradient
boosting and a GP by leave-one-workload-out replay on recorded databases
(``python -m hlotune.autotune.costmodel DB``, see ``replay``).
"""

from __future__ import annotations

import argparse
import logging
import math
import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..dsl.dtypes import dtype
from ..dsl.errors import DSLError, HlotuneError
from ..runtime.targets import get_target
from ..schedules.hardware import Hardware
from ..schedules.templates.gemm import GemmFeatures
from .database import Database, config_key

log = logging.getLogger(__name__)

#: a model is fitted only from at least this many rows of at least ``MIN_WORKLOADS`` workloads
MIN_ROWS = 24
MIN_WORKLOADS = 1


def _log2(x: float) -> float:
    return math.log2(1.0 + max(float(x), 0.0))


def _itemsize(name: str) -> int:
    try:
        return dtype(name).itemsize
    except (DSLError, KeyError, ValueError, TypeError):
        return 4


def workload_features(w: dict) -> list[float]:
    """The workload's features: ``w`` is a database workload row (``shapes``, ``dtypes``,
    ``flops``, ``bytes``)."""
    shapes = w.get("shapes") or {}
    outs = shapes.get("outputs") or [[]]
    last = ([1, 1, 1] + list(outs[0] or []))[-3:]
    red = [int(r) for r in shapes.get("reduce") or []]
    return [_log2(w.get("flops") or 0), _log2(w.get("bytes") or 0), *(_log2(d) for d in last),
            _log2(math.prod(red) if red else 1), _log2(max(red, default=1)),
            float(max((_itemsize(d) for d in w.get("dtypes") or []), default=4))]


def row_hardware(provenance: dict, fallback: Hardware | None) -> Hardware | None:
    """The hardware a row was measured on (its provenance's), else ``fallback``."""
    hw = provenance.get("hardware")
    if isinstance(hw, dict):
        try:
            return Hardware.from_dict(hw)
        except ValueError:
            pass
    return fallback


def target_features(provenance: dict, hw: Hardware | None) -> list[float]:
    """The target's features: its threads (provenance) and ``hw``'s vector width, L1 and L2
    (-1s without ``hw``)."""
    threads = [float(provenance.get("threads") or 1)]
    if hw is None:
        return threads + [-1.0] * 3
    return threads + [_log2(hw.vector_bytes), _log2(hw.l1d), _log2(hw.l2)]


@dataclass
class Encoder:
    """Config features by knob name (see the module docstring): ``knobs`` in a fixed order,
    ``ranks[name]``: a category's rank."""

    knobs: tuple[str, ...]
    ranks: dict

    @classmethod
    def of(cls, configs) -> Encoder:
        names, cats = set(), {}
        for c in configs:
            for k, v in c.items():
                names.add(k)
                if isinstance(v, str):
                    cats.setdefault(k, set()).add(v)
        return cls(tuple(sorted(names)), {k: {v: i for i, v in enumerate(sorted(vs))} for k, vs in cats.items()})

    def row(self, c: dict, extents: tuple[int, int]) -> list[float]:
        out: list[float] = []
        for k in self.knobs:
            v = c.get(k)
            if isinstance(v, bool):
                out += [float(v), 0.0, 0.0]
            elif isinstance(v, (int, float)):
                lv = math.copysign(_log2(abs(v)), v)
                out += [lv, lv - _log2(extents[0]), lv - _log2(extents[1])]
            elif isinstance(v, str):
                out += [float(self.ranks.get(k, {}).get(v, -1)), 0.0, 0.0]
            else:
                out += [-1.0, 0.0, 0.0]
        return out


#: the knobs GemmFeatures and its estimate read
GEMM_KNOBS = ("mr", "nr", "mb", "nb", "order", "parallel", "pack_a", "pack_b")
#: how many numbers GemmFeatures gives, and its analytic estimate after them
N_GEMM = 8


def gemm_features(w: dict, provenance: dict, hw: Hardware | None, c: dict) -> list[float]:
    """What gemm config ``c`` means on workload ``w`` (``GemmFeatures``) on a machine with
    ``hw``'s vectors, registers and L1 and ``provenance``'s threads; -1s for a config of another
    template, or without ``hw``."""
    if hw is None or any(k not in c for k in GEMM_KNOBS):
        return [-1.0] * N_GEMM
    shapes = w.get("shapes") or {}
    out = list((shapes.get("outputs") or [[]])[0] or [1])
    red = [int(r) for r in shapes.get("reduce") or []] or [1]
    item = max((_itemsize(d) for d in w.get("dtypes") or []), default=4)
    f = GemmFeatures(int(out[-2]) if len(out) >= 2 else 1, int(out[-1]), tuple(int(v) for v in out[:-2]),
                     max(hw.lanes(item), 1), hw.vector_regs, int(provenance.get("threads") or 1), max(red), item, hw.l1d,
                     l2=hw.l2)
    try:
        # the estimate is log(time) over the ideal's, 1 / threads of the work at the full rate
        return [float(v) for v in f(c)] + [f.estimate(c) + math.log(f.threads)]
    except (TypeError, ValueError, ZeroDivisionError):   # a recorded config outside the knobs' domains
        return [-1.0] * N_GEMM


def _extents(w: dict) -> tuple[int, int]:
    outs = (w.get("shapes") or {}).get("outputs") or [[]]
    last = ([1, 1] + list(outs[0] or []))[-2:]
    return int(last[0]), int(last[1])


class CostModel:
    """Predicts log(time / default time) of configs on a workload (see the module docstring)."""

    def __init__(self, encoder: Encoder, model, rows: int, workloads: int, hw: Hardware | None = None):
        self.encoder, self.model, self.rows, self.workloads, self.hw = encoder, model, rows, workloads, hw

    def features(self, w: dict, provenance: dict, configs: list[dict]) -> np.ndarray:
        hw = row_hardware(provenance, self.hw) if self.hw is not None else None
        base = workload_features(w) + target_features(provenance, hw)
        ext = _extents(w)
        return np.asarray([base + self.encoder.row(c, ext) + gemm_features(w, provenance, hw, c)
                           for c in configs], dtype=float)

    def predict(self, w: dict, provenance: dict, configs: list[dict]) -> np.ndarray:
        """Predicted log(time / default time) of each config on workload ``w``."""
        if not configs:
            return np.zeros(0)
        with threadpool_limits(1):
            return self.model.predict(self.features(w, provenance, configs))


def training_rows(db: Database, family: str, kind: str, exclude: str | None = None):
    """(workload row, target provenance, config, label) of every successful trial of ``family``
    on targets of ``kind`` whose workload has a measured default on that target (its first);
    ``exclude``: a workload key left out."""
    meds = db.family_medians(family, kind)
    ref: dict[tuple, float] = {}
    for w, g, c, m in meds:
        if not c:
            ref.setdefault((w, g), m)
    works = {w["key"]: w for w in db.workloads() if w["family"] == family}
    provs = {t["key"]: t["provenance"] for t in db.targets() if t["kind"] == kind}
    return [(works[w], provs[g], c, math.log(m / ref[w, g])) for w, g, c, m in meds
            if c and (w, g) in ref and w != exclude and w in works and g in provs]


def _estimator(kind: str, seed: int):
    from sklearn.ensemble import ExtraTreesRegressor, GradientBoostingRegressor
    if kind == "GBRT":
        return GradientBoostingRegressor(n_estimators=150, max_depth=4, learning_rate=0.08, subsample=0.8,
                                         random_state=seed)
    if kind == "GP":
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
        return GaussianProcessRegressor(ConstantKernel() * Matern(nu=2.5) + WhiteKernel(), normalize_y=True)
    return ExtraTreesRegressor(n_estimators=60, min_samples_leaf=2, max_features=0.6, random_state=seed)


def fit(rows, kind: str = "ET", seed: int = 0, hw: Hardware | None = None) -> CostModel | None:
    """A model on ``training_rows`` for a machine with ``hw`` (None: no gemm features); None
    when there are too few rows (``MIN_ROWS``, ``MIN_WORKLOADS``)."""
    keys = {r[0]["key"] for r in rows}
    if len(rows) < MIN_ROWS or len(keys) < MIN_WORKLOADS:
        return None
    enc = Encoder.of([r[2] for r in rows])
    m = CostModel(enc, _estimator(kind, seed), len(rows), len(keys), hw)
    X = np.vstack([m.features(w, p, [c]) for w, p, c, _ in rows])
    y = np.asarray([r[3] for r in rows])
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        m.model.fit(X, y)
    return m


def for_task(db: Database, task, kind: str = "ET", rows=None) -> CostModel | None:
    """The model for ``task``'s family and target kind from every workload in ``db`` (the
    task's own trials included: they are data too; ``rows``: those ``training_rows`` if already
    read); None when the database is too thin."""
    return fit(training_rows(db, task.family, task.target.kind) if rows is None else rows, kind, seed=0,
               hw=task.hardware)


def task_row(task) -> dict:
    """``task`` as a database workload row (what ``CostModel.predict`` takes)."""
    return {"key": task.key, "family": task.family, "shapes": task.shapes, "dtypes": task.dtypes,
            "flops": task.flops, "bytes": task.bytes}


class Prior:
    """``model``'s predictions for one task's configs, as a tuner's ``prior``: configs ->
    predicted log(time / default time), each config encoded and predicted once."""

    def __init__(self, model: CostModel, task):
        self.model, self.row, self.provenance = model, task_row(task), task.target.provenance
        self.cache: dict[str, float] = {}

    def __call__(self, configs: list[dict]) -> np.ndarray:
        keys = [config_key(c) for c in configs]
        new = {k: c for k, c in zip(keys, configs) if k not in self.cache}
        if new:
            pred = self.model.predict(self.row, self.provenance, list(new.values()))
            self.cache.update(zip(new, (float(v) for v in pred)))
        return np.asarray([self.cache[k] for k in keys])


def _spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def replay(db: Database, family: str, kind: str = "cpu", models=("ET", "GBRT", "GP"),
           hw: Hardware | None = None) -> dict:
    """Leave-one-workload-out: for each workload of ``family``, fit on the others (for a machine
    with ``hw``) and rank its measured configs; returns per model the median Spearman
    correlation of predicted and measured times and the median ratio of the predicted-best
    config's time to the workload's best (1.0: the model's first pick is the best)."""
    rows = training_rows(db, family, kind)
    out = {}
    for name in models:
        rho, regret = [], []
        for key in sorted({r[0]["key"] for r in rows}):
            mine = [r for r in rows if r[0]["key"] == key]
            m = fit([r for r in rows if r[0]["key"] != key], name, hw=hw)
            if m is None or len(mine) < 4:
                continue
            pred = np.concatenate([m.predict(w, p, [c]) for w, p, c, _ in mine])
            y = np.asarray([r[3] for r in mine])
            rho.append(_spearman(pred, y))
            regret.append(float(np.exp(y[int(np.argmin(pred))] - y.min())))
        out[name] = {"workloads": len(rho), "spearman": float(np.median(rho)) if rho else None,
                     "first_pick_vs_best": float(np.median(regret)) if regret else None}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="Replay the database cost model leave-one-workload-out.")
    p.add_argument("db")
    p.add_argument("--family", default="dot")
    p.add_argument("--kind", default="cpu")
    p.add_argument("--models", default="ET,GBRT,GP", help="comma-separated: ET, GBRT, GP")
    p.add_argument("--no-gemm-features", action="store_true",
                   help="leave out what gemm configs mean on their workload (to compare)")
    a = p.parse_args(argv)
    models = tuple(a.models.split(","))
    bad = [m for m in models if m not in ("ET", "GBRT", "GP")]
    if bad:
        p.error(f"--models: unknown model {bad[0]!r}; expected ET, GBRT or GP")
    try:
        db = Database(a.db, create=False)
        hw = None if a.no_gemm_features else get_target(a.kind).hardware
    except HlotuneError as e:       # not a tuning database, or a kind with no device here: said, exit 1
        p.exit(1, f"{p.prog}: error: {e}\n")
    for name, r in replay(db, a.family, a.kind, models, hw=hw).items():
        print(name, r)


if __name__ == "__main__":
    main()
