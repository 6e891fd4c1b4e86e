"""Schedule steps: small frozen records naming stages and axes by name.

A schedule is a list of steps; it serializes to JSON and replays to the identical loop nest.
Each step's meaning (index invariants) is documented on the ``Schedule`` method that records it.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields

from ..dsl.errors import ScheduleError


@dataclass(frozen=True)
class Split:
    """``axis = outer * factor + inner``, ``inner in [0, factor)``."""
    stage: str
    axis: str
    factor: int


@dataclass(frozen=True)
class Reorder:
    """The given leaf axes take, in this order, the loop positions they occupied."""
    stage: str
    axes: tuple[str, ...]


@dataclass(frozen=True)
class Fuse:
    """``fused = outer * extent(inner) + inner``; outer and inner must be adjacent leaves."""
    stage: str
    outer: str
    inner: str


@dataclass(frozen=True)
class Annotate:
    """Mark a leaf loop ``parallel``, ``vectorize`` or ``unroll``."""
    stage: str
    axis: str
    kind: str


@dataclass(frozen=True)
class Bind:
    """Bind a leaf loop to a GPU thread index (``group.x``/``local.x`` or CUDA's names)."""
    stage: str
    axis: str
    thread: str


@dataclass(frozen=True)
class ComputeAt:
    """Compute ``stage`` inside loop ``axis`` of stage ``target``, only the region it reads."""
    stage: str
    target: str
    axis: str


@dataclass(frozen=True)
class ComputeInline:
    """Substitute ``stage``'s definition into its readers; it gets no buffer."""
    stage: str


@dataclass(frozen=True)
class CacheWrite:
    """Compute ``stage`` into a new stage ``<stage>.<scope>``; ``stage`` then copies from it."""
    stage: str
    scope: str


@dataclass(frozen=True)
class CacheRead:
    """Copy tensor ``stage`` (a stage or input name) into a new stage ``<stage>.<scope>`` (or
    ``<stage>.<scope>N``, N = 1, 2, ... when other stages already cache it) that the ``readers``
    stages load instead. ``split`` ``((dim, f), ...)`` first splits tensor
    dimension ``dim`` into ``(dim // f, dim % f)`` (padded with zeros to a multiple of ``f``);
    with ``layout`` (a permutation of the dimensions after splitting) the copy's dimension ``d``
    is dimension ``layout[d]``: a BLIS panel ``B[k, n] -> P[n // f, k, n % f]`` is
    ``split=((1, f),), layout=(1, 0, 2)``. With ``dtype`` (a type name) the copy holds every
    element converted to it, and the readers' conversions of ``stage`` to that type read the copy
    (every read of it must be such a conversion): a panel of f16 packed as the f32 it is
    multiplied in."""
    stage: str
    scope: str
    readers: tuple[str, ...]
    layout: tuple[int, ...] | None = None
    split: tuple[tuple[int, int], ...] = ()
    dtype: str | None = None


@dataclass(frozen=True)
class Tensorize:
    """Compute root stage ``stage`` whole with the kernel ``intrinsic`` (``gpu_gemm``: one GPU
    matrix-product kernel, schedules/gpu_gemm.py) of parameters ``params`` (``(name, value)``
    pairs). A tensorized stage takes no other step."""
    stage: str
    intrinsic: str
    params: tuple[tuple[str, int], ...] = ()


STEP_TYPES = {c.__name__: c for c in (Split, Reorder, Fuse, Annotate, Bind, ComputeAt,
                                      ComputeInline, CacheWrite, CacheRead, Tensorize)}
INTRINSICS = ("gpu_gemm",)
ANNOTATIONS = ("parallel", "vectorize", "unroll")


def step_to_json(step) -> dict:
    d = asdict(step)
    d = {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()
         if not (k in ("split", "dtype") and not v)}    # records from before these existed stay as they were
    return {"step": type(step).__name__, **d}


def step_from_json(d: dict):
    """Build a step from its JSON dict; unknown steps or fields raise ScheduleError."""
    if not isinstance(d, dict) or d.get("step") not in STEP_TYPES:
        raise ScheduleError(f"unknown schedule step {d!r}; expected one of {sorted(STEP_TYPES)}")
    cls = STEP_TYPES[d["step"]]
    names = {f.name for f in fields(cls)}
    extra = set(d) - names - {"step"}
    missing = {f.name for f in fields(cls) if f.default is MISSING} - set(d)
    if extra or missing:
        raise ScheduleError(f"step {d['step']}: unexpected fields {sorted(extra)}, missing {sorted(missing)}")
    kw = {k: _tuples(v) for k, v in d.items() if k != "step"}
    return cls(**kw)


def _tuples(v):
    """JSON lists back to (nested) tuples."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v
