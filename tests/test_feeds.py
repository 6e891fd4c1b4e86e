"""infeed and outfeed as the host's queues (frontend/handlers/collective.py, hlotune/api.py):
each infeed reads the next queued value in program order, each outfeed queues its data, in HLO
and StableHLO, in the entry computation and in the computations it calls; a feed that would run
any number of times (a while body) is refused with the op and why."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError, KernelArgumentError, UnsupportedOpError

import hlotune

HLO = """HloModule f

sub {
  p = f32[4] parameter(0)
  tk = token[] parameter(1)
  i2 = (f32[4], token[]) infeed(tk)
  v = f32[4] get-tuple-element(i2), index=0
  o2 = token[] outfeed(p, tk), outfeed_shape=f32[4]
  ROOT s = f32[4] multiply(p, v)
}

ENTRY e {
  a = f32[4] parameter(0)
  t = token[] after-all()
  i = ((f32[4], s32[]), token[]) infeed(t)
  unused = (f32[2], token[]) infeed(t)
  d = (f32[4], s32[]) get-tuple-element(i), index=0
  x = f32[4] get-tuple-element(d), index=0
  n = s32[] get-tuple-element(d), index=1
  t2 = token[] get-tuple-element(i), index=1
  o = token[] outfeed((f32[4], s32[]) d, t2), outfeed_shape=(f32[4], s32[])
  c = f32[4] call(x, t2), to_apply=sub
  nf = f32[] convert(n)
  nb = f32[4] broadcast(nf), dimensions={}
  ROOT r = f32[4] add(c, nb)
}
"""

STABLEHLO = """module @feeds {
  func.func @main(%x: tensor<2x2xi64>) -> tensor<2x2xi64> {
    %token = stablehlo.after_all : !stablehlo.token
    %a:2 = "stablehlo.infeed"(%token) : (!stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token)
    %b:3 = "stablehlo.infeed"(%a#1) : (!stablehlo.token) -> (tensor<2x2xi64>, tensor<3xf32>, !stablehlo.token)
    %s = stablehlo.add %a#0, %b#0 : tensor<2x2xi64>
    %t = "stablehlo.outfeed"(%s, %b#1, %b#2) : (tensor<2x2xi64>, tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
    %r = stablehlo.multiply %x, %s : tensor<2x2xi64>
    func.return %r : tensor<2x2xi64>
  }
}
"""


@pytest.mark.parametrize("seed", [0, 1])
def test_hlo_feeds_follow_program_order_through_calls(seed):
    rng = np.random.default_rng(seed)
    a, x, w = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    n = np.int32(rng.integers(-5, 5))
    m = hlotune.load_hlo(HLO)
    assert [p.name for p in m.params] == ["a", "infeed.0.0", "infeed.0.1", "infeed.1", "infeed.2"]
    assert m.n_entry_params == 1 and m.n_entry_outputs == 1 and "infeed" in m.signature
    c = hlotune.compile(m)
    c.infeed.extend([(x, n), np.zeros(2, np.float32), w, "left for the next call"])
    r = c(a)
    np.testing.assert_allclose(r, x * w + np.float32(n), rtol=1e-6)
    assert list(c.infeed) == ["left for the next call"]       # three values read: one per infeed
    (d, got_n), p = c.outfeed.popleft(), c.outfeed.popleft()  # the entry's outfeed, then sub's
    np.testing.assert_array_equal(d, x)
    assert got_n == n and got_n.dtype == np.int32 and not c.outfeed
    np.testing.assert_array_equal(p, x)


def test_stablehlo_feeds_and_the_queue_api():
    m = hlotune.load_hlo(STABLEHLO)
    c = hlotune.compile(m)
    x = np.arange(4, dtype=np.int64).reshape(2, 2)
    with pytest.raises(KernelArgumentError, match="reads 2 value.*holds 1"):
        c.infeed.append(np.ones((2, 2), np.int64))
        c(x)
    assert len(c.infeed) == 1                                   # a failed call leaves the queue as it was
    with pytest.raises(KernelArgumentError, match="tuple of 2"):
        c.infeed.append(np.ones((2, 2), np.int64))              # the second infeed reads a pair
        c(x)
    c.infeed.pop()
    c.infeed.append((np.ones((2, 3), np.int64), np.zeros(3, np.float32)))     # the wrong shape
    with pytest.raises(KernelArgumentError, match="infeed.1.0.*shape"):
        c(x)
    assert len(c.infeed) == 2 and not c.outfeed                # refused before it ran: nothing read
    c.infeed.pop()
    c.infeed.append((np.full((2, 2), 3, np.int64), [1.5, 2.5, 3.5]))
    np.testing.assert_array_equal(c(x), x * 4)
    s, f = c.outfeed.popleft()
    np.testing.assert_array_equal(s, np.full((2, 2), 4))
    np.testing.assert_array_equal(f, np.float32([1.5, 2.5, 3.5]))
    # the infeed values may also be passed as the infeed parameters, past the queue
    ones = np.ones((2, 2), np.int64)
    np.testing.assert_array_equal(c(x, ones, ones, np.zeros(3, np.float32)), x * 2)
    assert len(c.outfeed) == 1


def test_a_module_with_feeds_tunes_like_any_other(tmp_path):
    m = hlotune.load_hlo(STABLEHLO)
    res = hlotune.tune(m, trials=2, db=str(tmp_path / "t.db"), tuner="random")
    assert res is not None
    c = hlotune.compile(m, db=str(tmp_path / "t.db"))
    c.infeed.extend([np.ones((2, 2), np.int64), (np.ones((2, 2), np.int64), np.zeros(3, np.float32))])
    np.testing.assert_array_equal(c(np.eye(2, dtype=np.int64)), 2 * np.eye(2, dtype=np.int64))


def test_a_feed_in_a_loop_body_is_refused_with_why():
    text = """HloModule w
cond {
  s = (s32[], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  t = token[] get-tuple-element(s), index=1
  f = (s32[], token[]) infeed(t)
  v = s32[] get-tuple-element(f), index=0
  n = s32[] add(i, v)
  t2 = token[] get-tuple-element(f), index=1
  ROOT r = (s32[], token[]) tuple(n, t2)
}
ENTRY e {
  z = s32[] constant(0)
  t = token[] after-all()
  s = (s32[], token[]) tuple(z, t)
  w = (s32[], token[]) while(s), condition=cond, body=body
  ROOT o = s32[] get-tuple-element(w), index=0
}
"""
    with pytest.raises(UnsupportedOpError, match="runs any number of times") as e:
        hlotune.load_hlo(text)
    assert e.value.opcode == "infeed" and e.value.line == 12


@pytest.mark.parametrize("line, why", [
    ("  i = f32[4] infeed(t)", "returns \\(data, token\\)"),
    ("  i = (f32[4], token[]) infeed(a)", "takes a token"),
])
def test_malformed_feeds_are_parse_errors(line, why):
    text = f"HloModule m\nENTRY e {{\n  a = f32[4] parameter(0)\n  t = token[] after-all()\n{line}\n  ROOT r = f32[4] add(a, a)\n}}\n"
    with pytest.raises(HloParseError, match=why) as e:
        hlotune.load_hlo(text)
    assert e.value.line == 5


def test_stablehlo_outfeed_without_a_token_is_a_parse_error():
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = "stablehlo.outfeed"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(HloParseError, match="outfeed takes tensors and a token") as e:
        hlotune.load_hlo(text)
    assert e.value.line == 2


def test_the_cli_takes_infeed_values_by_name_and_saves_the_outfeed(tmp_path, capsys):
    from hlotune.cli import main
    f = tmp_path / "feeds.mlir"
    f.write_text(STABLEHLO)
    x = np.arange(4, dtype=np.int64).reshape(2, 2)
    ins = tmp_path / "in.npz"
    np.savez(ins, x=x, **{"infeed.0.0": np.ones((2, 2), np.int64), "infeed.1.0": 2 * np.ones((2, 2), np.int64),
                          "infeed.1.1": np.float32([1, 2, 3])})
    out = tmp_path / "out.npz"
    assert main(["run", str(f), "--inputs", str(ins), "--out", str(out)]) == 0
    assert "outfeed: 1 value(s), 2 array(s)" in capsys.readouterr().out
    z = np.load(out)
    np.testing.assert_array_equal(z["out0"], x * 3)
    np.testing.assert_array_equal(z["outfeed0"], np.full((2, 2), 3))
    np.testing.assert_array_equal(z["outfeed1"], np.float32([1, 2, 3]))


def test_the_cli_saves_one_calls_outfeed_with_nested_tuples(tmp_path, capsys):
    """--out holds what the first call wrote, leaf by leaf, however many --repeat calls follow."""
    from hlotune.cli import main
    f = tmp_path / "nested.hlo"
    f.write_text("""HloModule n
ENTRY e {
  a = f32[3] parameter(0)
  b = s32[] parameter(1)
  t = token[] after-all()
  inner = (f32[3], s32[]) tuple(a, b)
  d = ((f32[3], s32[]), f32[3]) tuple(inner, a)
  o = token[] outfeed(d, t), outfeed_shape=((f32[3], s32[]), f32[3])
  ROOT r = f32[3] add(a, a)
}
""")
    ins = tmp_path / "in.npz"
    np.savez(ins, a=np.float32([1, 2, 3]), b=np.int32(7))
    out = tmp_path / "out.npz"
    assert main(["run", str(f), "--inputs", str(ins), "--out", str(out), "--repeat", "3"]) == 0
    assert "outfeed: 1 value(s), 3 array(s)" in capsys.readouterr().out
    z = np.load(out)
    assert sorted(k for k in z.files if k.startswith("outfeed")) == ["outfeed0", "outfeed1", "outfeed2"]
    np.testing.assert_array_equal(z["outfeed0"], np.float32([1, 2, 3]))
    assert z["outfeed1"] == 7 and z["outfeed1"].dtype == np.int32
    np.testing.assert_array_equal(z["outfeed2"], np.float32([1, 2, 3]))
