"""Schedule templates: a kernel family's knobs, their valid values, and config -> steps.

A template sees one root stage (after default fusion) of a schedule. ``space(st)`` lists the
knobs with explicit values (divisors, powers of two, categories) valid for the stage's shapes;
``apply(s, st, config)`` records the steps for one configuration and raises ``ConfigError``
(a knob missing or outside its values) or ``ScheduleError`` (an invalid combination) before
anything is compiled.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ...dsl.errors import ConfigError
from ..hardware import GENERIC, Hardware
from ..schedule import Schedule, Stage


@dataclass(frozen=True)
class Knob:
    """A tunable choice: ``values`` are every allowed value, in a meaningful order."""

    name: str
    values: tuple

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)


@dataclass(frozen=True)
class Space:
    """The knobs of one task. ``derived`` (optional, from the template): config -> a tuple of
    numbers in about [0, 1] that the template derives from a config and the workload (register
    use, tile waste at the edges, balance across threads), which a cost model sees next to the
    knobs themselves; it takes no part in equality."""

    knobs: tuple[Knob, ...]
    derived: Callable[[dict], tuple] | None = field(default=None, compare=False, repr=False)
    #: config -> an analytic guess at log(time) up to a constant (the template's model of the
    #: machine, no measurement), which the bayes tuner starts from when the database has no model
    estimate: Callable[[dict], float] | None = field(default=None, compare=False, repr=False)

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise ConfigError(f"unknown knob '{name}'; knobs are {self.names}", name)

    @property
    def size(self) -> int:
        n = 1
        for k in self.knobs:
            n *= len(k.values)
        return n

    def validate(self, config: dict) -> dict:
        """Check that ``config`` sets every knob to one of its values; returns it."""
        if not isinstance(config, dict):
            raise ConfigError(f"a config must be a dict of knob values, got {type(config).__name__}")
        for name in config:
            self.knob(name)
        for k in self.knobs:
            if k.name not in config:
                raise ConfigError(f"config does not set knob '{k.name}'", k.name)
            if config[k.name] not in k.values:
                raise ConfigError(f"knob '{k.name}' = {config[k.name]!r} is not one of {list(k.values)}", k.name)
        return config

    def all_configs(self):
        """Every point of the space (grid order)."""
        for combo in itertools.product(*(k.values for k in self.knobs)):
            yield dict(zip(self.names, combo))

    def default(self) -> dict:
        return {k.name: k.values[0] for k in self.knobs}


def is_pow2(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


#: a KnobSpec field left unset
UNSET = object()


@dataclass(frozen=True)
class KnobSpec:
    """A template knob, declared once. ``domain``: a predicate that every value satisfies on any
    workload (imported logs, whose workloads may be unknown here, are checked against it);
    ``legacy``: for a knob added after configs were first recorded, the value that gives the
    schedule those configs meant (a tuning log from an older hlotune still applies);
    ``preferred``: the value a template's default config picks where the stage offers it.
    The values a stage offers come from the template's ``knobs`` (they depend on its shapes)."""

    name: str
    domain: Callable[[object], bool]
    legacy: object = UNSET
    preferred: object = UNSET


class Template:
    """Base of the templates; subclasses set ``family`` and ``specs`` (every knob, declared
    once: ``KnobSpec``) and implement ``knobs``/``steps``. ``domains``, ``legacy`` and
    ``preferred`` are read off ``specs``; ``knobs`` may offer only declared knobs."""

    family = "generic"
    specs: tuple[KnobSpec, ...] = ()
    domains: dict = {}
    legacy: dict = {}
    preferred: dict = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "specs" in cls.__dict__:
            cls.domains = {k.name: k.domain for k in cls.specs}
            cls.legacy = {k.name: k.legacy for k in cls.specs if k.legacy is not UNSET}
            cls.preferred = {k.name: k.preferred for k in cls.specs if k.preferred is not UNSET}

    def complete(self, config: dict, space: Space | None = None) -> dict:
        """``config`` with any ``legacy`` knob it lacks set to its old meaning (with ``space``:
        only the knobs that space offers; a template may offer a knob to some stages only)."""
        if not isinstance(config, dict) or not self.legacy:
            return config
        return {**{k: v for k, v in self.legacy.items() if k not in config and (space is None or k in space.names)},
                **config}

    def check_domain(self, config: dict) -> None:
        """Raise ConfigError unless every knob of ``config`` is known and in its domain."""
        if not isinstance(config, dict):
            raise ConfigError("config must be an object")
        for k, v in config.items():
            if k not in self.domains:
                raise ConfigError(f"unknown knob '{k}' for the {self.family} template; knobs are "
                                  f"{sorted(self.domains)}", k)
            if not self.domains[k](v):
                raise ConfigError(f"knob '{k}' = {v!r} is outside its domain", k)

    def space(self, st: Stage, hw: Hardware | int = 1) -> Space:
        """The knobs of stage ``st`` on machine ``hw`` (a Hardware, or a thread count for the
        generic machine)."""
        hw = as_hardware(hw)
        knobs = tuple(self.knobs(st, hw))
        undeclared = [k.name for k in knobs if k.name not in self.domains]
        if undeclared:
            raise TypeError(f"{type(self).__name__} offers knobs {undeclared} that its specs do not declare")
        derived = self.derived(st, hw)
        return Space(knobs, derived=derived, estimate=self.estimate(st, hw, derived))

    def estimate(self, st: Stage, hw: Hardware, derived) -> Callable[[dict], float] | None:
        """The space's analytic time model (see ``Space``), given its ``derived`` features;
        None: the template has none."""
        return None

    def derived(self, st: Stage, hw: Hardware) -> Callable[[dict], tuple] | None:
        """The space's derived features (see ``Space``); None: the knobs alone."""
        return None

    def knobs(self, st: Stage, hw: Hardware) -> list[Knob]:
        raise NotImplementedError

    def apply(self, s: Schedule, st: Stage, config: dict, hw: Hardware | int = 1) -> None:
        """Record the steps of ``config`` on stage ``st`` of ``s``."""
        hw = as_hardware(hw)
        space = self.space(st, hw)
        config = self.complete(config, space)
        space.validate(config)
        self.steps(s, st, config, hw)

    def steps(self, s: Schedule, st: Stage, config: dict, hw: Hardware) -> None:
        raise NotImplementedError


def as_hardware(x) -> Hardware:
    """A Hardware from a Hardware or a thread count (the generic machine with that many)."""
    if isinstance(x, Hardware):
        return x
    return replace(GENERIC, threads=int(x or 1))


def pow2_upto(n: int, lo: int = 1, hi: int | None = None) -> tuple[int, ...]:
    """Powers of two in ``[lo, min(n, hi)]`` (always at least ``(1,)`` or ``(lo,)``)."""
    out, v = [], 1
    top = n if hi is None else min(n, hi)
    while v <= top:
        if v >= lo:
            out.append(v)
        v *= 2
    return tuple(out) or (min(lo, max(n, 1)),)


def divisors(n: int, hi: int | None = None) -> tuple[int, ...]:
    return tuple(d for d in range(1, (hi or n) + 1) if n % d == 0)


def split_last_reduction(s: Schedule, axes, factor: int, unroll: bool) -> list:
    """Split the last of the reduction ``axes`` by ``factor`` (``k = ko * factor + ki``) and
    unroll ``ki`` when asked; returns the reduction loops outer to inner."""
    ks = list(axes)
    if factor > 1:
        ko, ki = s.split(ks[-1], factor)
        ks = ks[:-1] + [ko, ki]
        if unroll:
            s.unroll(ki)
    return ks


def parallel_fuse(s: Schedule, st: Stage, axes, threads: int, min_extent: int | None = None):
    """Fuse leading ``axes`` until there are ``4 * threads`` iterations; mark the loop parallel."""
    if not axes:
        return None
    ax = axes[0]
    for v in axes[1:]:
        if ax.extent >= (min_extent or 4 * threads):
            break
        ax = s.fuse(ax, v)
    if ax.extent >= 2:
        s.parallel(ax)
    return ax


__all__ = [
    "Knob",
    "Space",
    "Template",
    "as_hardware",
    "divisors",
    "is_pow2",
    "parallel_fuse",
    "pow2_upto",
    "split_last_reduction",
]
