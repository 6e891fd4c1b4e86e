"""Search strategies behind one ask/tell interface, and a registry by name.

``ask(n)`` proposes up to ``n`` configs not yet tried; ``tell(configs, costs)`` reports their
costs (the log of the median time; failures get a penalty above the worst seen). The same seed
and the same measurements give the same sequence.
"""

from __future__ import annotations

import json
import math
import random
import warnings
from collections.abc import Callable

from ..dsl.errors import ConfigError, MissingDependencyError
from ..schedules.templates.base import Space

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
        t.allowed = {_ck(c): c for c in allowed}
    return t


def _ck(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


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

    @property
    def exhausted(self) -> bool:
        return len(self.tried) >= (self.space.size if self.allowed is None else len(self.allowed))

    def _project(self, c: dict, taken: list) -> dict | None:
        """``c`` itself when allowed and untried, else the nearest allowed untried config
        (L1 distance over knob value positions)."""
        if self.allowed is None:
            return c
        if _ck(c) in self.allowed and _ck(c) not in self.tried and c not in taken:
            return c
        pos = [k.values.index(c[k.name]) for k in self.space.knobs]
        best, best_d = None, math.inf
        for key, a in self.allowed.items():
            if key in self.tried or a in taken:
                continue
            d = sum(abs(k.values.index(a[k.name]) - p) for k, p in zip(self.space.knobs, pos))
            if d < best_d:
                best, best_d = a, d
        return best

    def ask(self, n: int) -> list[dict]:
        raise NotImplementedError

    def tell(self, configs: list[dict], costs: list[float | None]) -> None:
        """``costs[i]`` is log(median seconds), or None for a failed config."""
        for c, y in zip(configs, costs):
            self.tried[_ck(c)] = y if y is not None else math.nan
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
            if _ck(c) not in self.tried and c not in out:
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
            if _ck(c) not in self.tried and (self.allowed is None or _ck(c) in self.allowed):
                out.append(c)
            if len(out) >= n:
                break
        return out


@register("bayes")
class BayesTuner(Tuner):
    """Bayesian optimization with scikit-optimize's ``Optimizer``.

    Numeric knobs become ordinal integer dimensions (index into their values), others
    categorical. ``base_estimator``: GP (default), RF, ET or GBRT; ``acq_func``: gp_hedge
    (default), EI, PI or LCB; batches use the constant-liar strategy (``cl_min``).
    """

    def __init__(self, space, seed=0, base_estimator: str = "GP", acq_func: str = "gp_hedge",
                 n_initial_points: int = 8):
        super().__init__(space, seed)
        try:
            from skopt import Optimizer
            from skopt.space import Categorical, Integer
            from skopt.space import Space as SkSpace
            from skopt.utils import cook_estimator
        except ImportError as e:
            raise MissingDependencyError("scikit-optimize") from e
        dims = []
        for k in space.knobs:
            if len(k.values) == 1:
                dims.append(Categorical([0], name=k.name))
            elif k.numeric:
                dims.append(Integer(0, len(k.values) - 1, name=k.name))
            else:
                dims.append(Categorical(list(range(len(k.values))), name=k.name))
        est = base_estimator
        if str(base_estimator).upper() == "GP":
            # one GP fit per tell and per constant lie: no optimizer restarts keeps a round cheap
            est = cook_estimator("GP", space=SkSpace(dims), random_state=seed, noise="gaussian",
                                 n_restarts_optimizer=0)
        self.opt = Optimizer(dims, base_estimator=est, acq_func=acq_func,
                             n_initial_points=min(n_initial_points, max(space.size, 1)), random_state=seed,
                             acq_optimizer="sampling", acq_optimizer_kwargs={"n_points": min(1000, 4 * space.size)})
        self.rng = random.Random(seed)

    def _encode(self, c: dict) -> list[int]:
        return [k.values.index(c[k.name]) for k in self.space.knobs]

    def _decode(self, x) -> dict:
        return {k.name: k.values[int(i)] for k, i in zip(self.space.knobs, x)}

    def ask(self, n):
        if self.exhausted:
            return []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skopt warns when it re-proposes a known point
            xs = self.opt.ask(n_points=n, strategy="cl_min") if n > 1 else [self.opt.ask()]
        out = []
        for x in xs:
            c = self._project(self._decode(x), out)
            if c is None:
                continue
            guard = 0
            while (_ck(c) in self.tried or c in out) and guard < 200:
                # the model proposed a known point: explore a random untried one instead
                c = {k.name: self.rng.choice(k.values) for k in self.space.knobs}
                guard += 1
            if _ck(c) not in self.tried and c not in out:
                out.append(c)
        return out

    def _tell(self, configs, costs):
        pen = self.penalty()
        xs = [self._encode(c) for c in configs]
        ys = [y if y is not None else pen for y in costs]
        if xs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.opt.tell(xs, ys)
