"""Hypothesis-generated random schedules: every schedule either raises ScheduleError (a rule
violation, allowed) or builds for the CPU, matches the reference evaluator and replays from JSON
to the same loop nest.

Steps are drawn one at a time on the current leaf loops (random split factors including
non-divisors, fuses of adjacent leaves, random reorders, random vectorize/unroll/parallel).
A step that raises ScheduleError is skipped, as a tuner would; it must leave the schedule
unchanged, which the JSON replay checks (only recorded steps replay)."""

from __future__ import annotations

import numpy as np
from _checks import MATMUL_F32, as_tuple, assert_close, conv1d_chain, matmul, random_inputs, row_reduce
from hlotune.dsl.reference import evaluate
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import hlotune
from hlotune import ScheduleError

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FACTORS = st.one_of(st.sampled_from([1, 2, 3, 4, 5, 7, 8, 16, 100]), st.integers(1, 64))


def attempt(step, *args) -> bool:
    """Apply one schedule step; a ScheduleError skips it."""
    try:
        step(*args)
        return True
    except ScheduleError:
        event(f"skipped {step.__name__}")
        return False


def random_stage_steps(data, s, tensor, label):
    """Random splits, an optional fuse, a reorder and annotations on the stage of ``tensor``."""
    st_ = s.stage(tensor)
    for _ in range(data.draw(st.integers(0, 3), label=f"{label}: splits")):
        ax = data.draw(st.sampled_from(st_.leaf), label=f"{label}: split axis")
        attempt(s.split, ax, data.draw(FACTORS, label=f"{label}: factor"))
    if len(st_.leaf) > 1 and data.draw(st.booleans(), label=f"{label}: fuse?"):
        k = data.draw(st.integers(0, len(st_.leaf) - 2), label=f"{label}: fuse at")
        attempt(s.fuse, st_.leaf[k], st_.leaf[k + 1])
    if data.draw(st.booleans(), label=f"{label}: reorder?"):
        attempt(s.reorder, *data.draw(st.permutations(list(st_.leaf)), label=f"{label}: order"))
    for kind in ("vectorize", "unroll", "parallel"):
        if data.draw(st.booleans(), label=f"{label}: {kind}?"):
            ax = data.draw(st.sampled_from(st_.leaf), label=f"{label}: {kind} axis")
            attempt(getattr(s, kind), ax)


def build_and_compare(s, outputs, rtol=None, atol=None):
    """Build (ScheduleError allowed), compare with the reference, check the JSON replay."""
    try:
        text = str(s.lower())
        f = hlotune.build(s, target="cpu")
    except ScheduleError as e:
        event(f"ScheduleError at build: {str(e).split(':')[0]}")
        reject()
    event("built")
    replay = hlotune.Schedule.from_json(outputs, s.to_json())
    assert str(replay.lower()) == text, "JSON replay gives a different loop nest"
    ins = random_inputs(outputs, seed=7)
    got = as_tuple(f(*ins))
    ref = evaluate(outputs, ins)
    for t, g, r in zip(outputs, got, ref):
        assert_close(g, r, rtol, atol, err_msg=f"output {t.name}\nschedule: {s.to_json()}\n{text}")


@SETTINGS
@given(data=st.data())
def test_random_matmul_schedule(data):
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    CC = None
    if data.draw(st.booleans(), label="cache_write?"):
        CC = s.cache_write(C, "local")
        random_stage_steps(data, s, CC, "C.local")
    random_stage_steps(data, s, C, "C")
    if CC is not None:
        at = data.draw(st.sampled_from(s.stage(C).leaf), label="compute_at axis")
        attempt(s.compute_at, CC, at)
    build_and_compare(s, [C], *MATMUL_F32)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(["sum", "max"]),
       rows=st.sampled_from([30, 32]), cols=st.sampled_from([50, 64]))
def test_random_row_reduction_schedule(data, kind, rows, cols):
    R = row_reduce(kind, rows, cols)
    s = hlotune.Schedule(R)
    random_stage_steps(data, s, R, "R")
    build_and_compare(s, [R], *MATMUL_F32)


@SETTINGS
@given(data=st.data())
def test_random_producer_consumer_schedule(data):
    B, C, _rk = conv1d_chain(41, 5)
    s = hlotune.Schedule(C)
    random_stage_steps(data, s, C, "C")
    where = data.draw(st.sampled_from(["root", "inline", "at"]), label="B placement")
    if where == "inline":
        attempt(s.compute_inline, B)
    elif where == "at":
        attempt(s.compute_at, B, data.draw(st.sampled_from(s.stage(C).leaf), label="B at"))
        random_stage_steps(data, s, B, "B")
    build_and_compare(s, [C])


def test_failed_steps_leave_schedule_unchanged():
    C = matmul(48, 40, 24)
    s = hlotune.Schedule(C)
    io, _ii = s.split(C.axis[0], 7)
    before = str(s.lower())
    for bad in (lambda: s.parallel(C.op.reduce_axis[0]), lambda: s.fuse(io, C.op.reduce_axis[0]),
                lambda: s.split(C.axis[0], 2), lambda: s.compute_inline(C)):
        try:
            bad()
        except ScheduleError:
            pass
        else:
            raise AssertionError("expected a ScheduleError")
    assert str(s.lower()) == before and len(s.steps) == 1
    np.testing.assert_equal(len(hlotune.Schedule.from_json(C, s.to_json()).steps), 1)
