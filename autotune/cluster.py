"""Measurement on a Dask cluster (the ``dask`` extra).

``DaskMeasurer`` has ``Measurer``'s interface: ``measure(configs)`` sends each candidate to a
Dask worker, which builds it and times it in its own isolated measurement process (one
``Measurer`` per task per worker process, so the inputs and the reference answer are computed
once there, and a crashing candidate still costs one trial). The client keeps the database:
results come back as ``MeasureResult`` values and are recorded where tuning runs.

A worker only measures for the target it is: when the task's target, described on the worker's
machine (CPU model, compiler version, OpenCL device and driver), has another key than on the
client, the candidate is a ``runtime_error`` naming both keys, so a database never holds times
from a machine it does not describe.

Timings are only comparable when candidates do not share a machine's cores: start one worker
per machine with one thread (``dask worker ADDRESS --nworkers 1 --nthreads 1``).
"""

from __future__ import annotations

import logging
import time

from ..dsl.errors import MissingDependencyError
from .measure import Measurer, MeasureResult
from .task import Task

log = logging.getLogger(__name__)

#: per worker process: (task key, target key, options) -> Measurer
_MEASURERS: dict = {}


def connect(address_or_client):
    """A ``distributed.Client`` for a scheduler address (``tcp://host:8786``) or a Client."""
    try:
        from distributed import Client
    except ImportError as e:
        raise MissingDependencyError("dask[distributed]", "dask") from e
    if isinstance(address_or_client, Client):
        return address_or_client
    return Client(address_or_client)


def measure_on_worker(task: Task, config: dict | None, options: dict, expected_key: str) -> MeasureResult:
    """Build and time one candidate on this worker (runs inside a Dask worker process).
    ``expected_key`` is the target key the client tunes; the task's target, described on this
    machine (CPU model, compiler version, device), must have the same key."""
    t0 = time.time()
    here = task.target.key
    if here != expected_key:
        return MeasureResult(config or {}, [], [], "runtime_error",
                             f"this worker's machine is target {here}, not {expected_key} that is being tuned; "
                             "run the workers on machines of the tuned target", t0, time.time())
    key = (task.key, here, tuple(sorted(options.items())))
    m = _MEASURERS.get(key)
    if m is None:
        m = _MEASURERS[key] = Measurer(task, **options)
    return m.measure([config])[0]


class DaskMeasurer:
    """Measures one task's candidates on the workers of ``client`` (see the module docstring)."""

    def __init__(self, task: Task, client, **options):
        self.task, self.client, self.options = task, client, options
        self._task = client.scatter(task, broadcast=True)

    def measure(self, configs: list[dict | None]) -> list[MeasureResult]:
        key = self.task.target.key
        futures = [self.client.submit(measure_on_worker, self._task, c, self.options, key, pure=False)
                   for c in configs]
        return self.client.gather(futures)

    def close(self) -> None:
        pass


__all__ = ["DaskMeasurer", "connect", "measure_on_worker"]
