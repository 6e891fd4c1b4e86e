"""In-place loop state (dsl.tensor.LoopState, runtime/whileloop.py): a carry the body passes
through is never copied, a carry the body updates with a dynamic-update-slice of itself is
written in place, and a loop's initial value that nothing reads afterwards becomes its output.
Checked against a numpy statement of the loop, including a body that reads the updated carry
after the update and reads the old value where it writes, and starts that XLA clamps."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.runtime.module import _ExternStep, _KernelStep
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune


def _ty(shape) -> str:
    return f"f32[{','.join(map(str, shape))}]"


def loop_text(shape, region, scale, shift, n, read_after: bool, reads_old: bool = True) -> str:
    """State (i, buf, w, acc): each step reads buf's box at corner ``scale * i + shift``
    (clamped), writes it back plus ``w`` plus i (without ``reads_old``: writes ``w`` plus i
    there, as a KV cache takes a new row), and adds the new buf's sum into acc. The entry makes
    buf's initial value by a kernel (2 * b0) and, with ``read_after``, returns that initial
    value too (so it must survive the loop)."""
    r = len(shape)
    B, U = _ty(shape), _ty(region)
    T = f"(s32[], {B}, {U}, f32[])"
    dims = ",".join(map(str, range(r)))
    starts = []
    body = []
    for d in range(r):
        body += [f"  a{d} = s32[] constant({scale[d]})", f"  b{d} = s32[] constant({shift[d]})",
                 f"  m{d} = s32[] multiply(i, a{d})", f"  s{d} = s32[] add(m{d}, b{d})"]
        starts.append(f"s{d}")
    st_ = ", ".join(starts)
    return f"""HloModule inplace

add {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}}

cond {{
  p = {T} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant({n})
  ROOT lt = pred[] compare(i, n), direction=LT
}}

body {{
  p = {T} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  buf = {B} get-tuple-element(p), index=1
  w = {U} get-tuple-element(p), index=2
  acc = f32[] get-tuple-element(p), index=3
{chr(10).join(body)}
  old = {U} dynamic-slice(buf, {st_}), dynamic_slice_sizes={{{",".join(map(str, region))}}}
  fi = f32[] convert(i)
  bi = {U} broadcast(fi), dimensions={{}}
  ow = {U} {"add(old, w)" if reads_old else "copy(w)"}
  upd = {U} add(ow, bi)
  new = {B} dynamic-update-slice(buf, upd, {st_})
  z = f32[] constant(0)
  tot = f32[] reduce(new, z), dimensions={{{dims}}}, to_apply=add
  acc1 = f32[] add(acc, tot)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = {T} tuple(i1, new, w, acc1)
}}

ENTRY main {{
  b0 = {B} parameter(0)
  w0 = {U} parameter(1)
  init = {B} add(b0, b0)
  z = s32[] constant(0)
  a = f32[] constant(0)
  t = {T} tuple(z, init, w0, a)
  wl = {T} while(t), condition=cond, body=body
  buf = {B} get-tuple-element(wl), index=1
  wf = {U} get-tuple-element(wl), index=2
  acc = f32[] get-tuple-element(wl), index=3
  ROOT r = ({B}, {U}, f32[]{", " + B if read_after else ""}) tuple(buf, wf, acc{", init" if read_after else ""})
}}
"""


def numpy_loop(b0, w0, scale, shift, n, reads_old=True):
    buf, acc = (b0 + b0).astype(np.float32), np.float32(0)
    for i in range(n):
        c = [min(max(i * a + b, 0), s - u) for a, b, s, u in zip(scale, shift, buf.shape, w0.shape)]
        box = tuple(slice(x, x + u) for x, u in zip(c, w0.shape))
        buf[box] = ((buf[box] if reads_old else 0) + w0) + np.float32(i)
        acc = np.float32(acc + buf.sum(dtype=np.float64))
    return buf, w0, acc


@st.composite
def cases(draw):
    r = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 7), min_size=r, max_size=r))
    region = [draw(st.integers(1, s)) for s in shape]
    scale = draw(st.lists(st.integers(-2, 3), min_size=r, max_size=r))
    shift = draw(st.lists(st.integers(-3, 8), min_size=r, max_size=r))
    return shape, region, scale, shift, draw(st.integers(0, 6)), draw(st.booleans()), draw(st.booleans())


def _run(shape, region, scale, shift, n, read_after, reads_old=True, seed=0):
    m = hlotune.load_hlo(loop_text(shape, region, scale, shift, n, read_after, reads_old))
    c = hlotune.compile(m, target="cpu")
    rng = np.random.default_rng(seed)
    b0 = rng.standard_normal(shape).astype(np.float32)
    w0 = rng.standard_normal(region).astype(np.float32)
    keep = b0.copy(), w0.copy()
    got = c(b0, w0)
    np.testing.assert_array_equal(b0, keep[0])          # arguments are never written
    np.testing.assert_array_equal(w0, keep[1])
    return c, got, numpy_loop(b0, w0, scale, shift, n, reads_old), b0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_dynamic_update_slice_carry_in_place_matches_numpy(case):
    _, got, want, b0 = _run(*case)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-4)
    if case[5]:                        # the loop's initial value, read after the loop, is intact
        np.testing.assert_array_equal(got[3], b0 + b0)


def test_the_loop_keeps_and_updates_in_place():
    """The compiled loop copies neither the kept carry nor the updated one per iteration, and
    the kernel-made initial value is handed over as the loop's output (no copy at all)."""
    c, got, want, _ = _run([6, 5], [2, 5], [1, 0], [0, 0], 3, False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    steps = c.graph.steps
    assert _ExternStep not in [type(s) for s in steps]
    (loop,) = [s for s in steps if isinstance(s, _KernelStep) and s.graph is None]
    assert loop.donate.get(1) == 1 and 2 not in loop.donate      # w0 is the caller's
    src = loop.kernel.source
    driver = src[src.index("int hl_while("):]
    body = driver[driver.index("for (;;)"):driver.index("\n  }\n")]
    assert "memcpy(cur1 + " in body and body.count("memcpy(") == 1     # only the region is written
    assert "cur2 = (float*)" in driver and "hl_alloc(30 " not in driver   # w kept, buf not allocated


@pytest.mark.parametrize("read_after", [False, True])
def test_no_donation_when_the_initial_value_is_read_later(read_after):
    c, got, want, b0 = _run([4, 3], [1, 3], [1, 0], [0, 0], 4, read_after)
    (loop,) = [s for s in c.graph.steps if isinstance(s, _KernelStep) and s.graph is None]
    assert (1 in loop.donate) is not read_after
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    got2 = c(b0, want[1])       # a second call starts from fresh values, not the first call's
    np.testing.assert_allclose(got2[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("reads_old", [False, True])
def test_a_region_the_body_reads_back_is_written_before_the_body(reads_old):
    """The body sums the updated carry: where it reads the old value only to make the new one,
    the region is computed by a function of its own and written before the body runs, which
    then reads the carry itself (no select per read); where the region reads the old box, it
    is written after the body, as before."""
    c, got, want, _ = _run([6, 5], [2, 5], [1, 0], [0, 0], 3, False, reads_old)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-4)
    (loop,) = [s for s in c.graph.steps if isinstance(s, _KernelStep) and s.graph is None]
    src = loop.kernel.source
    driver = src[src.index("int hl_while("):]
    body = driver[driver.index("for (;;)"):driver.index("\n  }\n")]
    first = "_pre(" in body
    assert first is not reads_old
    assert body.count("memcpy(cur1 + ") == 1
    assert (body.index("memcpy(cur1 + ") < body.index("_body(")) is first
