"""What every backend provides. A backend is stateless: per-device state (contexts, program
caches) lives in its runtime module; the backend says how to reach it."""

from __future__ import annotations

from ...schedules.hardware import Hardware


class Runner:
    """The measurement worker's handle on one built candidate: ``run`` computes the outputs into
    the given arrays, then ``time`` measures calls on those same arrays (every repeat kept)."""

    def run(self, ins, outs) -> None:
        raise NotImplementedError

    def time(self, repeat: int, min_repeat_ms: float, number: int | None, warmup_ms: float, stop=None,
             cold=None):
        """A ``runtime.timing.TimingResult`` of the last ``run``'s arguments (``stop``: a
        ``runtime.timing.Stop`` that may end the repeats early). ``cold``: more argument sets
        (``(ins, outs)`` pairs, for backends with ``cold_inputs``) that the calls take in turn
        with the last ``run``'s, so that each call finds its inputs out of the caches."""
        raise NotImplementedError


class Backend:
    """One kind of device. Subclasses set ``kind`` (and ``aliases``) and implement the methods
    that raise NotImplementedError; the rest have defaults that fit most devices.

    Parent side: ``target`` (a spec to a Target), ``hardware`` (the target's facts as plain data
    for schedules and renderers), ``build`` (a LoweredFunc to a callable kernel), ``prepare``
    (a candidate for the measurement worker, as JSON-able fields), ``worker_plan``.
    Worker side: ``worker_build`` and ``runner``."""

    kind = ""
    aliases: tuple[str, ...] = ()
    #: whether a compiled program's calls pick their thread count from measured calls
    #: (runtime/threads.py: OpenMP host threads)
    governs_threads = False
    #: whether its runners time calls on rotating argument sets (``Runner.time``'s ``cold``):
    #: host memory that the caches hold between calls unless the calls take turns
    cold_inputs = False

    def target(self, spec: str, threads: int | None = None):
        raise NotImplementedError

    def hardware(self, target=None) -> Hardware:
        """What schedules and renderers may know of ``target`` (a generic device of this kind
        when None: used to check tuning logs whose device is not here)."""
        return Hardware(threads=getattr(target, "threads", 1) or 1)

    def build(self, fn, target):
        raise NotImplementedError

    def compile_while(self, op, target, schedule_fn, used=None, subgraph=None):
        """A kernel running while loop ``op`` whole on the device, or None (then the loop runs
        on the host, its condition and body compiled as kernels); ``used``: the outputs anyone
        reads (None: all), the others may be left unwritten. The kernel may be given an input's
        own array as the output of the same state element (``runtime.module`` donates a value
        nothing reads afterwards). ``subgraph`` (``runtime.nested.Subgraph``) compiles a
        condition or body that holds extern ops as a graph the kernel calls."""
        return

    def compile_scatter(self, op, target):
        """A kernel running scatter extern op ``op`` (``dsl.tensor.Scatter``) on the device,
        or None (then it runs on the host, in numpy)."""
        return

    def compile_lapack(self, op, target):
        """A kernel calling the LAPACK routine of extern op ``op`` (``dsl.tensor.LapackCall``)
        from compiled code, or None (then it runs on the host, through scipy)."""
        return

    def compile_conditional(self, op, target, subgraph):
        """A kernel running conditional extern op ``op`` (``dsl.tensor.Conditional``) whole, its
        branches compiled by ``subgraph``, or None (then it runs on the host)."""
        return

    def compile_sort(self, op, target):
        """A kernel running sort/topk extern op ``op`` (``dsl.tensor.SortCall``) on the device,
        or None (then it runs on the host, in numpy)."""
        return

    # ------------------------------------------------------------------ measurement
    def prepare(self, fn, target, timeout: float) -> dict:
        """Fields for the worker's requests (raise CompileError if it does not compile)."""
        raise NotImplementedError

    def worker_plan(self, fields: dict) -> list[dict]:
        """The requests for one candidate, in order: ``op`` 'build' ones run with the compile
        time limit, then one ``op`` 'run' (checked and timed)."""
        return [{"op": "run", **fields}]

    def worker_build(self, req: dict, cache: dict) -> dict:
        """Worker side of an ``op`` 'build' request: ``{"ok": True}`` or a ``compile_error``."""
        return {"ok": True}

    def runner(self, req: dict, cache: dict) -> Runner:
        """Worker side: the Runner of the candidate an ``op`` 'run' request names."""
        raise NotImplementedError

    # ------------------------------------------------------------------ listing
    def describe(self) -> list[str]:
        """Lines for ``hlotune devices``: this kind's devices and their limits (or why none)."""
        return [f"{self.kind}: (this backend lists no devices)"]


__all__ = ["Backend", "Runner"]
