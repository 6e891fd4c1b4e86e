"""Search strategies behind one ask/tell interface, and a registry by name.

``ask(n)`` proposes up to ``n`` configs not yet tried; ``tell(configs, costs)`` reports their
costs (the log of the median time; None for a failed config). The same seed
and the same measurements give the same sequence.
"""

from __future__ import annotations

import json
import math
import random
import warnings
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from ..dsl.errors import ConfigError, MissingDependencyError
from ..schedules.templates.base import Space
from .database import config_key

TUNERS: dict[str, Callable[..., Tuner]] = {}


def register(name: str):
    def deco(cls):
        TUNERS[name] = cls
        cls.name = name
        return cls
    return deco


def get_tuner(name: str, space: Space, seed: int = 0, allowed=None, **options) -> Tuner:
    """A tuner by name: ``bayes``, ``random`` or ``grid``. ``allowed`` (a list of configs)
    restricts proposals to that catalog (e.g. a recorded log replayed without a device)."""
    if name not in TUNERS:
        raise ConfigError(f"unknown tuner '{name}'; expected one of {sorted(TUNERS)}", "tuner")
    t = TUNERS[name](space, seed=seed, **options)
    if allowed is not None:
        t.allowed = {config_key(c): c for c in allowed}
    return t




class Tuner:
    """Base: keeps what was tried and the best cost."""

    name = "base"

    def __init__(self, space: Space, seed: int = 0):
        self.space = space
        self.seed = seed
        self.tried: dict[str, float] = {}
        self.best_cost = math.inf
        self.best_config: dict | None = None
        self.allowed: dict[str, dict] | None = None
        #: configs -> predicted log(time / default time) (autotune/costmodel.py), or None; the
        #: bayes tuner starts from its best predictions and fits only what it leaves unexplained
        self.prior: Callable[[list[dict]], np.ndarray] | None = None

    @property
    def exhausted(self) -> bool:
        return len(self.tried) >= (self.space.size if self.allowed is None else len(self.allowed))


    def ask(self, n: int) -> list[dict]:
        raise NotImplementedError

    def tell(self, configs: list[dict], costs: list[float | None]) -> None:
        """``costs[i]`` is log(median seconds), or None for a failed config."""
        for c, y in zip(configs, costs):
            self.tried[config_key(c)] = y if y is not None else math.nan
            if y is not None and y < self.best_cost:
                self.best_cost, self.best_config = y, c
        self._tell(configs, costs)

    def _tell(self, configs, costs) -> None:
        pass

    def penalty(self) -> float:
        ok = [v for v in self.tried.values() if not math.isnan(v)]
        return (max(ok) + 1.0) if ok else 0.0


@register("random")
class RandomTuner(Tuner):
    """Uniform sampling without replacement."""

    def __init__(self, space, seed=0):
        super().__init__(space, seed)
        self.rng = random.Random(seed)

    def ask(self, n):
        if self.allowed is not None:
            left = [c for k, c in self.allowed.items() if k not in self.tried]
            return self.rng.sample(left, min(n, len(left)))
        out, guard = [], 0
        while len(out) < n and not self.exhausted and guard < 100 * n + 1000:
            guard += 1
            c = {k.name: self.rng.choice(k.values) for k in self.space.knobs}
            if config_key(c) not in self.tried and c not in out:
                out.append(c)
        return out


@register("grid")
class GridTuner(Tuner):
    """Every point in grid order."""

    def __init__(self, space, seed=0):
        super().__init__(space, seed)
        self.it = iter(space.all_configs())

    def ask(self, n):
        out = []
        for c in self.it:
            if config_key(c) not in self.tried and (self.allowed is None or config_key(c) in self.allowed):
                out.append(c)
            if len(out) >= n:
                break
        return out


@register("bayes")
class BayesTuner(Tuner):
    """Bayesian optimization over the space's points themselves.

    Each config is a feature vector: a numeric knob is ``log2(value + 1)`` (tile sizes and
    counts matter by ratio, flags stay 0/1), a categorical knob one column per value, each
    scaled to [0, 1]; knobs with one value are left out; then the template's derived features
    (``Space.derived``: register use, edge waste, thread balance of the gemm template), which
    measured on the dot and conv spaces of bench/tuner_efficiency.py halve the trials to a good
    config. The candidates are every untried
    point (of the ``allowed`` catalog, or of the space when it has at most ``MAX_ENUMERATE``
    points; else a random sample plus the one-knob neighbours of the best configs), so a
    proposal is always a real, untried point. The first ``n_initial_points`` are a
    space-filling design (greedy max-min distance from a random start); then a surrogate
    (``base_estimator``: RF, a random forest whose spread over its trees is the uncertainty; GP,
    a Matern-5/2 kernel with one length scale per feature; ET; GBRT; or ``auto``, the default:
    RF and GP proposing in turn on raw costs, since RF reaches a good config in fewer trials on
    the replayed gemm spaces of bench/tuner_efficiency.py, full of cliffs where tiles stop
    fitting, and GP on smooth spaces, where RF can miss the optimum; GP alone on the smooth
    residuals a prior leaves) picks the candidate that maximizes ``acq_func`` (EI,
    PI, LCB, or gp_hedge, which chooses among the three by their past gains as scikit-optimize
    does). A batch is chosen one
    point at a time, each earlier pick told to the model at the best cost so far (constant
    liar). Failed configs (cost None: a template rule broken, or a failed build or run) are
    never proposed again and are not fitted as costs; a second model learns where configs
    fail (1 ran, 0 failed) and the acquisition is weighted by its probability of running
    (constrained EI, as Gardner et al.): spaces such as the gemm template's, where most large
    register tiles break the register budget, would otherwise draw rule breakers without end,
    while a penalty cost would smear over the valid optimum next to them. Failures count
    toward the initial design (at most twice its size).

    With a ``prior`` (a cost model trained across the database, autotune/costmodel.py), or
    else the template's analytic estimate (``Space.estimate``: the gemm template prices register
    tiles, threads and guarded edges; ``analytic=False`` leaves it out), the design is the
    ``n_initial_points // 2`` candidates it predicts fastest instead of the space-filling one,
    and the surrogate fits the residuals of the told costs from it, scaled by how much of the
    told costs it explains (a slope in [0, 1], fitted) plus an offset (it predicts times
    relative to an unknown default), so it is the surrogate's mean function. Its effect on the
    trials to within 5% of the best is measured by bench/tuner_efficiency.py
    (results/tuner_efficiency.md).
    """

    #: at most this many failed configs (the latest) train the failure model
    MAX_FAILED_FIT = 256

    #: spaces up to this many points are searched exhaustively by the acquisition function
    MAX_ENUMERATE = 20000
    #: random candidates per proposal in larger spaces
    N_SAMPLE = 2048
    #: trees of the RF and ET surrogates (refitted for every pick of a batch: with 100 a pick
    #: costs 0.17 s on 2 cores, with 50 about a quarter of that; both as good on the replays)
    TREES = 50

    def __init__(self, space, seed=0, base_estimator: str = "auto", acq_func: str = "EI",
                 n_initial_points: int = 10, xi: float = 0.01, kappa: float = 1.96, analytic: bool = True):
        super().__init__(space, seed)
        try:
            import sklearn  # noqa: F401  (a dependency of scikit-optimize)
            import skopt  # noqa: F401
        except ImportError as e:
            raise MissingDependencyError("scikit-optimize") from e
        if acq_func not in ("EI", "PI", "LCB", "gp_hedge"):
            raise ConfigError(f"unknown acq_func '{acq_func}'; expected EI, PI, LCB or gp_hedge", "acq_func")
        if str(base_estimator).upper() not in ("AUTO", "GP", "RF", "ET", "GBRT"):
            raise ConfigError(f"unknown base_estimator '{base_estimator}'; expected auto, GP, RF, ET or GBRT",
                              "base_estimator")
        self.estimator, self.acq_func = str(base_estimator).upper(), acq_func
        self.n_initial, self.xi, self.kappa = n_initial_points, xi, kappa
        self.rng = random.Random(seed)
        self.nprng = np.random.default_rng(seed)
        self.knobs = [k for k in space.knobs if len(k.values) > 1]
        self.X: list[np.ndarray] = []
        self.y: list[float] = []
        self.X_configs: list[dict] = []     # the configs of X
        self.Xf: list[np.ndarray] = []      # failed configs' features
        self.gains = np.zeros(3)        # gp_hedge: EI, PI, LCB
        self._hedge_picks: list[np.ndarray] | None = None
        self._all: list[dict] | None = None
        #: the template's analytic estimate (``Space.estimate``), the prior while the database
        #: gives none; memoized per config
        self.analytic = space.estimate if analytic else None
        self._guess: dict[str, float] = {}

    # ------------------------------------------------------------------ features
    def _columns(self, k) -> np.ndarray:
        """The feature columns of every value of knob ``k``, shape (values, columns)."""
        if k.numeric:
            v = np.log2(np.asarray(k.values, dtype=float) - min(min(k.values), 0) + 1.0)
            lo, hi = v.min(), v.max()
            return ((v - lo) / (hi - lo if hi > lo else 1.0))[:, None]
        return np.eye(len(k.values))

    def features(self, configs: list[dict]) -> np.ndarray:
        if not hasattr(self, "_cols"):
            self._cols = [(k.name, {v: i for i, v in enumerate(k.values)}, self._columns(k)) for k in self.knobs]
        parts = [cols[[pos[c[name]] for c in configs]] for name, pos, cols in self._cols]
        if self.space.derived is not None and configs:
            parts.append(np.asarray([self.space.derived(c) for c in configs], dtype=float))
        if not parts:
            return np.zeros((len(configs), 1))
        return np.hstack(parts)

    def _candidates(self, taken: list[dict]) -> list[dict]:
        skip = {config_key(c) for c in taken}
        if self.allowed is not None:
            return [c for key, c in self.allowed.items() if key not in self.tried and key not in skip]
        if self.space.size <= self.MAX_ENUMERATE:
            if self._all is None:
                self._all = list(self.space.all_configs())
            return [c for c in self._all if config_key(c) not in self.tried and config_key(c) not in skip]
        out = {}
        for _ in range(self.N_SAMPLE):
            c = {k.name: self.rng.choice(k.values) for k in self.space.knobs}
            out[config_key(c)] = c
        best = sorted((y, key) for key, y in self.tried.items() if not math.isnan(y))[:4]
        for _, key in best:
            base = json.loads(key)
            for k in self.knobs:
                for v in k.values:
                    c = {**base, k.name: v}
                    out[config_key(c)] = c
        return [c for key, c in out.items() if key not in self.tried and key not in skip]

    # ------------------------------------------------------------------ model
    @property
    def mean(self) -> Callable[[list[dict]], np.ndarray] | None:
        """The surrogate's mean function: the database's ``prior`` when there is one, else the
        template's analytic estimate, else None (a space-filling start and raw costs)."""
        if self.prior is not None:
            return self.prior
        return self._analytic if self.analytic is not None else None

    @staticmethod
    def _scale(told: np.ndarray, y: np.ndarray) -> float:
        """How much of the prior to trust: the slope of the told costs on its predictions
        (least squares), clipped to [0, 1]; 1 while fewer than 4 points or no spread."""
        if len(y) < 4 or np.ptp(told) < 1e-9:
            return 1.0
        t = told - told.mean()
        return float(np.clip(t @ (y - y.mean()) / (t @ t), 0.0, 1.0))

    def _analytic(self, configs: list[dict]) -> np.ndarray:
        out = np.empty(len(configs))
        for i, c in enumerate(configs):
            key = config_key(c)
            if key not in self._guess:
                self._guess[key] = self.analytic(c)
            out[i] = self._guess[key]
        return out

    def kind(self, pick: int = 0) -> str:
        """The surrogate of the ``pick``-th proposal (counting every told config): ``auto`` is
        a GP over a prior's residuals (smooth, and its uncertainty grows away from the data, so
        a wrong prior is overruled); without a prior, RF and GP in turn."""
        if self.estimator != "AUTO":
            return self.estimator
        return "GP" if self.mean is not None or pick % 2 else "RF"

    def _model(self, kind: str):
        if kind == "GP":
            from sklearn.gaussian_process import GaussianProcessRegressor
            from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
            d = self.features([self.space.default()]).shape[1]
            kern = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(np.ones(d), (5e-2, 2e1), nu=2.5) + \
                WhiteKernel(1e-2, (1e-6, 1e-1))
            return GaussianProcessRegressor(kern, normalize_y=True, n_restarts_optimizer=0,
                                            random_state=self.seed)
        from skopt.learning import (
            ExtraTreesRegressor,
            GradientBoostingQuantileRegressor,
            RandomForestRegressor,
        )
        return {"RF": lambda: RandomForestRegressor(n_estimators=self.TREES, min_samples_leaf=2, random_state=self.seed),
                "ET": lambda: ExtraTreesRegressor(n_estimators=self.TREES, min_samples_leaf=2, random_state=self.seed),
                "GBRT": lambda: GradientBoostingQuantileRegressor(random_state=self.seed)}[kind]()

    def _fit(self, X, y, like=None, kind: str | None = None):
        """A ``kind`` model (default: the first proposal's) fitted on (X, y); ``like``: a fitted
        GP whose kernel is kept (no re-optimizing)."""
        kind = kind or self.kind()
        if like is not None and kind == "GP":
            from sklearn.gaussian_process import GaussianProcessRegressor
            m = GaussianProcessRegressor(like.kernel_, normalize_y=True, optimizer=None)
        else:
            m = self._model(kind)
        # matrices of a few dozen rows: BLAS threads only contend (with the measurements, too)
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")     # length scales at their bounds
            m.fit(np.asarray(X), np.asarray(y))
        return m

    def _acquisition(self, name: str, mu, sd, best: float) -> np.ndarray:
        """Higher is better, for costs to minimize."""
        from scipy.stats import norm
        sd = np.maximum(sd, 1e-9)
        if name == "LCB":
            return -(mu - self.kappa * sd)
        z = (best - self.xi - mu) / sd
        if name == "PI":
            return norm.cdf(z)
        return (best - self.xi - mu) * norm.cdf(z) + sd * norm.pdf(z)

    def _p_runs(self, F: np.ndarray) -> np.ndarray | None:
        """Probability that each candidate runs (a GP regressor on 1 = ran, 0 = failed over
        the tried configs), or None when nothing has failed."""
        if not self.Xf:
            return None
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
        bad = self.Xf[-self.MAX_FAILED_FIT:]
        X = np.asarray(list(self.X) + list(bad))
        v = np.r_[np.ones(len(self.X)), np.zeros(len(bad))]
        kern = ConstantKernel(0.25, "fixed") * Matern(0.3, (5e-2, 2e1), nu=2.5) + WhiteKernel(1e-2, (1e-4, 1e-1))
        m = GaussianProcessRegressor(kern, normalize_y=False, random_state=self.seed)
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")
            m.fit(X, v - 0.5)
            return np.clip(m.predict(F) + 0.5, 0.0, 1.0)

    def _weighted(self, name: str, mu, sd, best: float, runs) -> np.ndarray:
        """The acquisition among the candidates more likely to run than to fail (all, when none
        is), EI and PI weighted by the probability of running."""
        a = self._acquisition(name, mu, sd, best)
        if runs is None:
            return a
        if name != "LCB":
            a = a * runs
        return np.where(runs >= 0.5, a, -1e300) if (runs >= 0.5).any() else a

    def _initial(self, cands: list[dict], n: int, taken: list[dict]) -> list[dict]:
        """Greedy max-min design: each pick is the candidate farthest from every point so far."""
        F = self.features(cands)
        seen = self.X + self.Xf + (list(self.features(taken)) if taken else [])
        out, used = [], np.zeros(len(cands), dtype=bool)
        if not seen:
            i = int(self.nprng.integers(len(cands)))
            out.append(cands[i])
            used[i] = True
            seen = [F[i]]
        dist = np.min(np.linalg.norm(F[:, None, :] - np.asarray(seen)[None, :, :], axis=2), axis=1)
        while len(out) < n and not used.all():
            d = np.where(used, -1.0, dist)
            top = np.flatnonzero(d >= d.max() - 1e-12)
            i = int(top[self.nprng.integers(len(top))])
            out.append(cands[i])
            used[i] = True
            dist = np.minimum(dist, np.linalg.norm(F - F[i], axis=1))
        return out

    def _predicted(self, cands: list[dict], n: int) -> list[dict]:
        """The ``n`` candidates the prior predicts fastest, among those more likely to run than
        to fail (when the failure model has seen failures)."""
        pred = np.asarray(self.mean(cands), dtype=float)
        runs = self._p_runs(self.features(cands)) if self.Xf else None
        if runs is not None and (runs >= 0.5).any():
            pred = np.where(runs >= 0.5, pred, np.inf)
        return [cands[int(i)] for i in np.argsort(pred, kind="stable")[:n]]

    def ask(self, n):
        if self.exhausted:
            return []
        out: list[dict] = []
        cands = self._candidates(out)
        if not cands:
            return []
        mean = self.mean
        if mean is not None and len(self.y) + len(self.Xf) < max(self.n_initial // 2, 1):
            return self._predicted(cands, n)
        if mean is None and len(self.y) < self.n_initial and len(self.y) + len(self.Xf) < 2 * self.n_initial:
            return self._initial(cands, n, out)
        if not self.y:      # nothing has run yet: no model to fit, draw uniformly
            return [cands[int(i)] for i in self.nprng.choice(len(cands), min(n, len(cands)), replace=False)]
        F = self.features(cands)
        X, y = list(self.X), list(self.y)
        best = min(y)
        P = np.zeros(len(cands))
        if mean is not None:
            told = np.asarray(mean(self.X_configs), dtype=float)
            scale = self._scale(told, np.asarray(y))
            offset = float(np.median(np.asarray(y) - scale * told))      # the log of the default's time
            P = scale * np.asarray(mean(cands), dtype=float) + offset
            y = list(np.asarray(y) - scale * told - offset)       # what the prior leaves unexplained
        runs = self._p_runs(F)
        models: dict = {}
        alive = np.ones(len(cands), dtype=bool)
        self._hedge_picks = None
        while len(out) < n and alive.any():
            kind = self.kind(len(self.y) + len(self.Xf) + len(out))
            model = models[kind] = self._fit(X, y, like=models.get(kind), kind=kind)
            with threadpool_limits(1):
                mu, sd = model.predict(F, return_std=True)
            mu = mu + P
            name = self.acq_func
            if name == "gp_hedge":
                p = np.exp(self.gains - self.gains.max())
                picks = [int(np.argmax(np.where(alive, self._weighted(a, mu, sd, best, runs), -np.inf)))
                         for a in ("EI", "PI", "LCB")]
                if self._hedge_picks is None:
                    self._hedge_picks = [F[i] for i in picks]
                i = picks[int(self.nprng.choice(3, p=p / p.sum()))]
            else:
                i = int(np.argmax(np.where(alive, self._weighted(name, mu, sd, best, runs), -np.inf)))
            alive[i] = False
            out.append(cands[i])
            X.append(F[i])
            y.append(best - P[i])          # the constant lie
        return out

    def _tell(self, configs, costs):
        ok = [(c, y) for c, y in zip(configs, costs) if y is not None]
        bad = [c for c, y in zip(configs, costs) if y is None]
        if bad:
            self.Xf += list(self.features(bad))
        if ok:
            self.X += list(self.features([c for c, _ in ok]))
            self.X_configs += [c for c, _ in ok]
            self.y += [y for _, y in ok]
        if self._hedge_picks is not None and len(self.y) >= 2:
            m = self._fit(self.X, self.y)
            self.gains -= m.predict(np.asarray(self._hedge_picks))
            self._hedge_picks = None
