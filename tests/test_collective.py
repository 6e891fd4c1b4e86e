"""Collectives on one device (frontend/handlers/collective.py): all-reduce, all-gather,
reduce-scatter, all-to-all, collective-broadcast and collective-permute (and their async halves)
with their one-device meaning, in HLO and StableHLO as jax.shard_map prints them; several
devices, send/recv refused with the op, its line and why (feeds: tests/test_feeds.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hlotune.dsl.errors import UnsupportedOpError
from hlotune.dsl.reference import evaluate
from hlotune.frontend.lower import lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.stablehlo import parse_stablehlo

import hlotune

#: jax.jit(shard_map(psum, all_gather, psum_scatter, ppermute, all_to_all)) over a 1-device mesh
SHARD_MAP_HLO = """HloModule jit_g, entry_computation_layout={(f32[4,3]{1,0})->(f32[4,3]{1,0}, f32[1,4,3]{2,1,0}, f32[4,3]{1,0}, f32[4,3]{1,0}, f32[4,3]{1,0})}
region_0.1 {
  psum_invariant.2 = f32[] parameter(0)
  psum_invariant.3 = f32[] parameter(1)
  ROOT add.1 = f32[] add(psum_invariant.2, psum_invariant.3)
}
region_1.2 {
  reduce_scatter.2 = f32[] parameter(0)
  reduce_scatter.3 = f32[] parameter(1)
  ROOT add.3 = f32[] add(reduce_scatter.2, reduce_scatter.3)
}
ENTRY main.3 {
  a.1 = f32[4,3]{1,0} parameter(0)
  psum_invariant.5 = f32[4,3]{1,0} all-reduce(a.1), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=region_0.1
  all_gather.2 = f32[1,4,3]{2,1,0} reshape(a.1)
  all_gather.3 = f32[1,4,3]{2,1,0} all-gather(all_gather.2), channel_id=1, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
  reduce_scatter.5 = f32[4,3]{1,0} reduce-scatter(a.1), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, dimensions={0}, to_apply=region_1.2
  ppermute.1 = f32[4,3]{1,0} collective-permute(a.1), channel_id=1, source_target_pairs={{0,0}}
  a2a = f32[4,3]{1,0} all-to-all(a.1), replica_groups={{0}}, dimensions={0}
  ROOT tuple.1 = (f32[4,3]{1,0}, f32[1,4,3]{2,1,0}, f32[4,3]{1,0}, f32[4,3]{1,0}, f32[4,3]{1,0}) tuple(psum_invariant.5, all_gather.3, reduce_scatter.5, ppermute.1, a2a)
}
"""

SHARD_MAP_MLIR = """module @jit_g attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<1x4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %5 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %5 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    %2 = "stablehlo.all_gather"(%1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %3 = "stablehlo.reduce_scatter"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %5 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %5 : tensor<f32>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<0> : tensor<1x2xi64>}> : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %6 = "stablehlo.all_to_all"(%arg0) <{split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 1 : i64, replica_groups = dense<0> : tensor<1x1xi64>}> : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0, %2, %3, %4, %6 : tensor<4x3xf32>, tensor<1x4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}
"""

X = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5


@pytest.mark.parametrize("text", [SHARD_MAP_HLO, SHARD_MAP_MLIR], ids=["hlo", "stablehlo"])
def test_collectives_over_one_device_are_the_identity(text):
    outs = hlotune.compile(hlotune.load_hlo(text), target="cpu")(X)
    assert len(outs) == 5
    for o in outs:
        np.testing.assert_array_equal(np.asarray(o).reshape(4, 3), X)


def _permute(pairs: str) -> str:
    return ("HloModule p\nENTRY e {\n  x = f32[4,3] parameter(0)\n"
            f"  ROOT p = f32[4,3] collective-permute(x), source_target_pairs={pairs}\n}}\n")


def test_collective_permute_with_no_source_gives_zeros():
    low = lower_module(parse_hlo(_permute("{}")))
    (out,) = evaluate(low.outputs, dict(zip(low.params, [X])))
    np.testing.assert_array_equal(out, np.zeros_like(X))


def test_async_all_reduce_halves():
    text = """HloModule a
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,3] parameter(0)
  s = f32[4,3] all-reduce-start(p), replica_groups={}, to_apply=add
  ROOT d = f32[4,3] all-reduce-done(s)
}
"""
    low = lower_module(parse_hlo(text))
    np.testing.assert_array_equal(evaluate(low.outputs, [X])[0], X)


@pytest.mark.parametrize("text, line, why", [
    (SHARD_MAP_HLO.replace("replica_groups={{0}}, use_global_device_ids=true, to_apply=region_0.1",
                           "replica_groups={{0,1}}, to_apply=region_0.1"), 14, "names devices other than 0"),
    (SHARD_MAP_HLO.replace("HloModule jit_g,", "HloModule jit_g, replica_count=2,"), 14, "replica_count=2"),
    (_permute("{{0,1},{1,0}}"), 4, "names devices other than 0"),
    (("HloModule s\nENTRY e {\n  t = token[] after-all()\n  s = (f32[4], u32[], token[]) send(t, t), "
      "channel_id=1\n  ROOT d = token[] send-done(s), channel_id=1\n}\n"), 4, "point-to-point"),
    (("HloModule r\nENTRY e {\n  t = token[] after-all()\n  r = (f32[4], u32[], token[]) recv(t), channel_id=1\n"
      "  ROOT d = (f32[4], token[]) recv-done(r), channel_id=1\n}\n"), 4, "point-to-point transfer from"),
])
def test_refusals_name_the_op_its_line_and_why(text, line, why):
    with pytest.raises(UnsupportedOpError, match=why) as e:
        lower_module(parse_hlo(text, verify=False))
    assert e.value.line == line


def test_stablehlo_send_is_refused_with_its_reason():
    text = """func.func @main(%x: tensor<4xf32>, %t: !stablehlo.token) -> !stablehlo.token {
      %0 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
      return %0 : !stablehlo.token
    }"""
    with pytest.raises(UnsupportedOpError, match="stablehlo.send.*another device") as e:
        parse_stablehlo(text)
    assert e.value.line == 2


def test_tokens_lower_to_nothing():
    text = """func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
      %t0 = stablehlo.after_all : !stablehlo.token
      %t1 = stablehlo.create_token : !stablehlo.token
      %t = stablehlo.after_all %t0, %t1 : !stablehlo.token
      %y = stablehlo.add %x, %x : tensor<3xf32>
      return %y : tensor<3xf32>
    }"""
    low = lower_module(parse_stablehlo(text))
    np.testing.assert_array_equal(evaluate(low.outputs, [X[0]])[0], 2 * X[0])
