"""Mutation tests of the ops and parser paths added for JAX programs: HLO (topk,
rng-bit-generator, cholesky, triangular-solve, fft, select-and-scatter, batch norm, collectives,
LAPACK custom calls with backend configs, stochastic-convert) and StableHLO (CHLO math and
broadcasting ops, chlo.scan's and sdy.sharding_constraint's pretty forms, sdy.mesh, ragged_dot,
custom calls with ``tensor<2xindex>`` layouts, rng_bit_generator, fft) texts, and every JAX
program of tests/data/jax_programs, with one token changed (hypothesis): the text lowers and
its graph evaluates with the numpy reference, or a located HloParseError/UnsupportedOpError is
raised, never anything else."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
from hlotune.dsl.errors import HloParseError, UnsupportedOpError
from hlotune.frontend.read import parse_module_text
from hlotune.frontend.lower import lower_module
from hlotune.dsl.reference import evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from _checks import mutate_token, random_array

PROGRAMS = Path(__file__).parent / "data" / "jax_programs"

HLO_TEXT = """HloModule new_ops
sel {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,6] parameter(0)
  s = u64[2] parameter(1)
  k = (f32[4,2], s32[4,2]) topk(x), k=2, largest=true
  g = (u64[2], u32[3,5]) rng-bit-generator(s), algorithm=rng_three_fry
  sq = f32[4,4] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  i4 = f32[4,4] iota(), iota_dimension=0
  spd = f32[4,4] add(sq, i4)
  c = f32[4,4] cholesky(spd), lower=true
  t = f32[4,6] triangular-solve(c, x), left_side=true, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE
  z = f32[] constant(0)
  src = f32[2,3] slice(x), slice={[0:2], [0:3]}
  p = f32[4,6] select-and-scatter(x, src, z), window={size=2x2 stride=2x2}, select=sel, scatter=add
  ar = f32[4,6] all-reduce(p), replica_groups={{0}}, to_apply=add
  sc1 = f32[1,6] slice(x), slice={[0:1], [0:6]}
  sc = f32[6] reshape(sc1)
  one = f32[6] broadcast(z), dimensions={}
  bn = (f32[4,6], f32[6], f32[6]) batch-norm-training(x, sc, one), epsilon=0.001, feature_index=1
  lu = (f32[4,4], s32[4], s32[]) custom-call(spd), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  ROOT r = (f32[4,6], (f32[4,2], s32[4,2]), (u64[2], u32[3,5]), f32[4,6], (f32[4,6], f32[6], f32[6]), (f32[4,4], s32[4], s32[])) tuple(t, k, g, ar, bn, lu)
}
"""

MLIR_TEXT = """module @new_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]>
  func.func public @main(%x: tensor<4x6xf32>, %s: tensor<2xui64>, %g: tensor<2xi64>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x2xf32>, tensor<3x5xui32>, tensor<2x2xf32>) {
    %0 = chlo.erfc %x : tensor<4x6xf32> -> tensor<4x6xf32>
    %1 = chlo.lgamma %0 : tensor<4x6xf32> -> tensor<4x6xf32>
    %2 = chlo.next_after %1, %x : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{"x"}, {}]> : tensor<4x6xf32>
    %c = stablehlo.constant dense<0.0> : tensor<6xf32>
    %4:2 = chlo.scan(%x) inits(%c) dimension=0 {
    ^bb0(%a: tensor<6xf32>, %b: tensor<6xf32>):
      %5 = stablehlo.add %a, %b : tensor<6xf32>
      stablehlo.return %5, %5 : tensor<6xf32>, tensor<6xf32>
    } : (tensor<4x6xf32>, tensor<6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>)
    %w = stablehlo.slice %x [0:2, 0:2] : (tensor<4x6xf32>) -> tensor<2x2xf32>
    %w3 = stablehlo.reshape %x : (tensor<4x6xf32>) -> tensor<2x6x2xf32>
    %6 = "chlo.ragged_dot"(%x, %w3, %g) {ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>} : (tensor<4x6xf32>, tensor<2x6x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
    %7 = chlo.broadcast_add %3, %c : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    %8:2 = stablehlo.custom_call @lapack_spotrf_ffi(%w) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
    %ns, %v = stablehlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
    return %7, %4#0, %1, %6, %v, %8#0 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x2xf32>, tensor<3x5xui32>, tensor<2x2xf32>
  }
}
"""

_HLO_TOKEN = r"%?[A-Za-z_][\w.-]*|\d+|[^\s\w]"
_MLIR_TOKEN = r"%[\w#]+|[A-Za-z_][\w.-]*|\d+|[^\s\w]"
_HLO_SWAPS = ["topk", "rng-bit-generator", "cholesky", "triangular-solve", "fft", "select-and-scatter",
              "all-reduce", "batch-norm-inference", "custom-call", "true", "false", "TRANSPOSE", "u64", "s32"]
_MLIR_SWAPS = ["chlo.erfc", "chlo.lgamma", "chlo.scan", "chlo.ragged_dot", "chlo.broadcast_add",
               "sdy.sharding_constraint", "stablehlo.rng_bit_generator", "stablehlo.custom_call", "index",
               "inits", "dimension", "ui64", "i64", "f32", "PHILOX", "THREE_FRY"]
_PROGRAMS = sorted(PROGRAMS.glob("*.hlo")) + sorted(PROGRAMS.glob("*.stablehlo.mlir"))


def _lower_and_run(text: str, name: str) -> None:
    try:
        low = lower_module(parse_module_text(text, file=name))
    except HloParseError as e:
        assert e.file == name and e.line >= 1 and "internal" not in e.reason, str(e)
        return
    except UnsupportedOpError as e:
        assert e.opcode and "unsupported" in str(e), str(e)
        return
    rng = np.random.default_rng(0)
    args = {p: random_array(p.shape, p.dtype, rng) for p in low.params}
    if sum(int(np.prod(p.shape)) for p in low.params) > 4096:
        return
    with np.errstate(all="ignore"):
        evaluate(low.outputs, args)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["hlo", "mlir"]), st.data())
def test_mutated_new_op_texts_lower_and_run_or_raise_located_errors(form, data):
    text, token_re, swaps = (HLO_TEXT, _HLO_TOKEN, _HLO_SWAPS) if form == "hlo" else \
        (MLIR_TEXT, _MLIR_TOKEN, _MLIR_SWAPS)
    names = sorted(set(re.findall(r"%[\w#]+" if form == "mlir" else r"(?m)^\s+([a-z]\w*) = ", text)))
    mutated = mutate_token(text, data, token_re, swaps + names,
                           ("number", "delete", "duplicate", "replace", "truncate"))
    _lower_and_run(mutated, f"m.{form}")


def test_the_unmutated_texts_run():
    for text, name in ((HLO_TEXT, "m.hlo"), (MLIR_TEXT, "m.mlir")):
        low = lower_module(parse_module_text(text, file=name))
        rng = np.random.default_rng(1)
        outs = evaluate(low.outputs, {p: random_array(p.shape, p.dtype, rng) for p in low.params})
        assert len(outs) >= 5


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_PROGRAMS), st.data())
def test_mutated_jax_programs_lower_or_raise_located_errors(path, data):
    text = path.read_text()
    mlir = path.suffix == ".mlir"
    mutated = mutate_token(text, data, _MLIR_TOKEN if mlir else _HLO_TOKEN, _MLIR_SWAPS if mlir else _HLO_SWAPS,
                           ("number", "delete", "duplicate", "replace", "truncate"))
    try:
        lower_module(parse_module_text(mutated, file="p" + "".join(path.suffixes)))
    except HloParseError as e:
        assert e.line >= 1 and "internal" not in e.reason, str(e)
    except UnsupportedOpError as e:
        assert e.opcode and "unsupported" in str(e), str(e)
