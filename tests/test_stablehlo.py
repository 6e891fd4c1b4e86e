"""The StableHLO front-end (hlotune.frontend.stablehlo): the corpus and the JAX-written modules in
their StableHLO form (``jax.jit(f).lower(x).as_text()``) compile for the CPU and match XLA's /
JAX's outputs; crafted texts check the op mapping, literals, implicit captures and errors;
mutated corpus texts raise only located errors.

Tolerances: those of ``hlotune.api.tolerance`` (via ``run_module_file``), as for the HLO corpus;
crafted modules run through the numpy reference evaluator and compare exactly or within 1e-5.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError, UnsupportedOpError
from hlotune.dsl.reference import evaluate
from hlotune.frontend.lower import HANDLERS, lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.read import is_stablehlo, load_module_file, parse_module_text
from hlotune.frontend.stablehlo import parse_stablehlo
from hlotune.frontend.stablehlo_convert import hlo_opcode_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune
from hlotune.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from _checks import mutate_token, run_module_file

DATA = Path(__file__).parent / "data" / "hlo"
USER = Path(__file__).parent / "data" / "jax_user"
SUFFIX = ".stablehlo.mlir"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
CORPUS = sorted(p.name[:-len(SUFFIX)] for p in DATA.glob("*" + SUFFIX))
USER_NAMES = sorted(p.name[:-len(SUFFIX)] for p in USER.glob("*" + SUFFIX))


def module(body: str, args: str = "%arg0: tensor<4xf32>", results: str = "tensor<4xf32>",
           extra: str = "") -> str:
    """A StableHLO module whose @main has ``args`` and ``results`` and the lines ``body``."""
    return (f"module @t {{\n  func.func public @main({args}) -> {results} {{\n{body}\n  }}\n"
            f"{extra}}}\n")


def run(text: str, *args):
    """Lower StableHLO ``text`` and evaluate it with the numpy reference: a tuple of outputs."""
    low = lower_module(parse_stablehlo(text, file="t.mlir"))
    return tuple(evaluate(low.outputs, dict(zip(low.params, args))))


def instrs(mod, opcode: str):
    return [i for c in mod.computations for i in c.instructions if i.opcode == opcode]


# ----------------------------------------------------------------------------- corpus

def test_every_corpus_module_has_a_stablehlo_form():
    assert CORPUS == sorted(m["name"] for m in MANIFEST) and len(CORPUS) == 24


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_stablehlo_matches_xla_on_cpu(name):
    rows = run_module_file(DATA / f"{name}{SUFFIX}", DATA / f"{name}.npz")
    assert all(r["ok"] for r in rows), rows


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_stablehlo_signature_matches_hlo(name):
    shlo, hlo = load_module_file(DATA / f"{name}{SUFFIX}"), load_module_file(DATA / f"{name}.hlo")

    def sig(shapes):
        return [(s.element_type, s.dims) for s in shapes]

    def leaves(s):
        return [x for e in s.elements for x in leaves(e)] if s.is_tuple else [s]
    assert sig(shlo.parameter_shapes) == sig(hlo.parameter_shapes)
    assert sig(leaves(shlo.result_shape)) == sig(leaves(hlo.result_shape))
    used = {i.opcode for c in shlo.computations for i in c.instructions}
    assert used <= set(HANDLERS) | {"parameter"}


def test_every_user_module_has_a_stablehlo_form():
    hlo = sorted(p.name[:-4] for p in USER.glob("*.hlo") if not p.name.endswith(".opt.hlo"))
    assert USER_NAMES == hlo and len(USER_NAMES) >= 15


@pytest.mark.parametrize("name", USER_NAMES)
def test_user_stablehlo_matches_jax_on_cpu(name):
    rows = run_module_file(USER / f"{name}{SUFFIX}", USER / f"{name}.npz")
    assert all(r["ok"] for r in rows), rows


def test_cli_runs_and_checks_stablehlo(tmp_path, capsys):
    f, npz = str(DATA / f"softmax{SUFFIX}"), str(DATA / "softmax.npz")
    assert main(["run", f, "--inputs", npz, "--check", npz, "--out", str(tmp_path / "o.npz")]) == 0
    assert "check passed" in capsys.readouterr().out
    assert np.load(tmp_path / "o.npz")["out0"].shape == (128, 512)
    broken = tmp_path / "broken.mlir"
    broken.write_text(module("    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32\n    return %0 : tensor<4xf32>"))
    assert main(["run", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.mlir:4:" in err and "Traceback" not in err
    feed = tmp_path / "feed.mlir"
    feed.write_text(module('    %0 = "stablehlo.outfeed"(%arg0) {outfeed_config = ""} : (tensor<4xf32>) -> tensor<4xf32>\n'
                           "    return %0 : tensor<4xf32>"))
    assert main(["run", str(feed)]) == 2
    err = capsys.readouterr().err
    assert "stablehlo.outfeed" in err and "feed.mlir:3" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- front door

def test_format_is_told_from_the_text():
    shlo = (DATA / f"softmax{SUFFIX}").read_text()
    hlo = (DATA / "softmax.hlo").read_text()
    assert is_stablehlo(shlo) and is_stablehlo(shlo.encode()) and not is_stablehlo(hlo)
    assert is_stablehlo("// comment\nfunc.func @main() {\n return\n}") and is_stablehlo("x", "a.mlir")
    assert not is_stablehlo(hlo, "a.mlir")  # HloModule wins over the suffix
    assert parse_module_text(hlo, "s.hlo") == parse_hlo(hlo, "s.hlo")
    assert parse_module_text(shlo).entry == "main"
    m = hlotune.load_hlo(shlo)  # text, not a path
    assert m.name == "jit_softmax" and [p.shape for p in m.params] == [(128, 512)]
    assert load_module_file(DATA / f"fori_loop{SUFFIX}").name == "jit_fori_loop"
    with pytest.raises(HloParseError, match="cannot read"):
        load_module_file(DATA / "missing.mlir")


def test_functions_calls_and_multi_results():
    mod = load_module_file(USER / f"fori_norm{SUFFIX}")
    assert {c.name for c in mod.computations} >= {"main", "closed_call", "norm"}
    assert mod.entry_computation.is_entry and mod.entry == "main"
    call = next(i for i in instrs(mod, "call") if i.attr("to_apply") == "closed_call")
    assert call.shape.is_tuple and len(call.shape) == 2  # %1:2 = func.call ...
    gtes = [i for i in instrs(mod, "get-tuple-element") if i.operands == (call.name,)]
    assert sorted(i.attr("index") for i in gtes) == [0, 1]
    closed = mod.computation("closed_call")
    assert closed.root_instruction.opcode == "tuple" and closed.root_instruction.is_root
    (loop,) = instrs(mod, "while")
    assert mod.computation(loop.attr("condition")).params[0].shape == loop.shape
    assert loop.line == 5


def test_attributes_in_hlo_formats():
    conv = instrs(load_module_file(DATA / f"conv2d_stride2_bias_relu{SUFFIX}"), "convolution")[0]
    assert conv.attr("dim_labels") == "b01f_01io->b01f"
    w = conv.attr("window")
    assert (w["size"], w["stride"], w["pad"]) == ((3, 3), (2, 2), ((1, 1), (1, 1)))
    assert w["lhs_dilate"] == w["rhs_dilate"] == (1, 1) and w["window_reversal"] == (False, False)
    assert conv.attr("feature_group_count") == 1 and conv.attr("batch_group_count") == 1
    nchw = instrs(load_module_file(USER / f"conv_nchw_s2{SUFFIX}"), "convolution")[0]
    assert nchw.attr("dim_labels") == "bf01_oi01->bf01"
    csp = load_module_file(DATA / f"concat_slice_pad{SUFFIX}")
    assert instrs(csp, "slice")[0].attr("slice") == ((2, 30, 2), (0, 64, 3))
    assert instrs(csp, "pad")[0].attr("padding") == ((1, 2, 0), (3, -1, 1))
    assert instrs(csp, "concatenate")[0].attr("dimensions") == (1,)
    assert instrs(csp, "reverse")[0].attr("dimensions") == (0,)
    att = load_module_file(DATA / f"attention_multi_head{SUFFIX}")
    dot = instrs(att, "dot")[1]
    assert (dot.attr("lhs_batch_dims"), dot.attr("rhs_batch_dims")) == ((0, 2), (0, 1))
    assert (dot.attr("lhs_contracting_dims"), dot.attr("rhs_contracting_dims")) == ((1,), (3,))
    assert instrs(att, "transpose")[0].attr("dimensions") == (0, 3, 1, 2)
    cmp_ = instrs(load_module_file(DATA / f"causal_mask{SUFFIX}"), "compare")[0]
    assert (cmp_.attr("direction"), cmp_.attr("type")) == ("LE", "SIGNED")
    assert instrs(load_module_file(DATA / f"causal_mask{SUFFIX}"), "iota")[1].attr("iota_dimension") == 2
    ds = instrs(load_module_file(DATA / f"dynamic_slice{SUFFIX}"), "dynamic-slice")[0]
    assert ds.attr("dynamic_slice_sizes") == (16, 32)
    g = instrs(load_module_file(DATA / f"embedding_gather{SUFFIX}"), "gather")[0]
    assert (g.attr("offset_dims"), g.attr("collapsed_slice_dims"), g.attr("start_index_map"),
            g.attr("index_vector_dim"), g.attr("slice_sizes")) == ((2,), (0,), (0,), 2, (1, 64))
    rw = instrs(load_module_file(USER / f"cumsum{SUFFIX}"), "reduce-window")[0]
    assert rw.attr("window")["size"] == (50, 1) and rw.attr("window")["pad"] == ((49, 0), (0, 0))
    red = instrs(load_module_file(DATA / f"reductions{SUFFIX}"), "reduce")[2]
    assert red.attr("dimensions") == (0, 2)
    srt = instrs(load_module_file(USER / f"argsort{SUFFIX}"), "sort")[0]
    assert srt.attr("dimensions") == (1,) and srt.attr("is_stable") and len(srt.shape) == 2


def test_every_mapped_opcode_has_a_handler():
    for op, hlo in hlo_opcode_table().items():
        if "ROOT" not in hlo:
            assert hlo.split()[0] in HANDLERS, op


# ----------------------------------------------------------------------------- literals

@pytest.mark.parametrize("lit,ty,want", [
    ("dense<1.500000e+00>", "tensor<f32>", np.float32(1.5)),
    ("dense<0xFF800000>", "tensor<f32>", np.float32(-np.inf)),
    ("dense<-5.000000e-01>", "tensor<2x3xf32>", np.full((2, 3), -0.5, np.float32)),
    ("dense<[[1.0, 2.0], [3.0, 4.0]]>", "tensor<2x2xf32>", np.array([[1, 2], [3, 4]], np.float32)),
    ("dense<0xFF80>", "tensor<bf16>", np.array(-np.inf, ml_dtypes.bfloat16)),
    ("dense<[0x3F80, 0x4000]>", "tensor<2xbf16>", np.array([1, 2], ml_dtypes.bfloat16)),
    ("dense<-50>", "tensor<i32>", np.int32(-50)),
    ("dense<255>", "tensor<3xui8>", np.full(3, 255, np.uint8)),
    ("dense<[true, false, true]>", "tensor<3xi1>", np.array([True, False, True])),
    ("dense<true>", "tensor<2xi1>", np.array([True, True])),
    ('dense<"0x0000803F00000040">', "tensor<2xf32>", np.array([1, 2], np.float32)),
    ('dense<"0x010001">', "tensor<3xi1>", np.array([True, False, True])),
    ('dense<"0x07000000">', "tensor<2x2xi32>", np.full((2, 2), 7, np.int32)),
    ("dense<9.99999974E-6>", "tensor<f64>", np.float64(9.99999974e-6)),
    ("dense<[1, -2]>", "tensor<2xi64>", np.array([1, -2], np.int64)),
    ("dense<>", "tensor<0x3xf32>", np.zeros((0, 3), np.float32)),
])
def test_dense_literals(lit, ty, want):
    mod = parse_stablehlo(module(f"    %c = stablehlo.constant {lit} : {ty}\n    return %c : {ty}",
                                 args="", results=ty))
    root = mod.entry_computation.root_instruction
    if root.opcode == "broadcast":   # a splat: its one value, broadcast (never expanded)
        scalar = mod.entry_computation.by_name[root.operands[0]].literal
        assert scalar.shape == () and root.shape.dims == np.shape(want)
        got = np.broadcast_to(scalar, root.shape.dims)
    else:
        got = root.literal
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got.astype(np.float64)),
                                                        np.signbit(np.asarray(want, np.float64)))


def test_generic_form_constants_and_old_attribute_dicts():
    text = module("""    %c = "stablehlo.constant"() <{value = dense<[1, 0]> : tensor<2xi32>}> : () -> tensor<2xi32>
    %i = stablehlo.reshape %c : (tensor<2xi32>) -> tensor<1x2xi32>
    %0 = "stablehlo.gather"(%arg0, %i) {
      dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
                                            start_index_map = [0, 1], index_vector_dim = 1>,
      indices_are_sorted = false, slice_sizes = dense<[1, 2]> : tensor<2xi64>
    } : (tensor<3x4xf32>, tensor<1x2xi32>) -> tensor<1x2xf32>
    "func.return"(%0) : (tensor<1x2xf32>) -> ()""", args="%arg0: tensor<3x4xf32>",
                  results="tensor<1x2xf32>")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = run(text, x)
    np.testing.assert_array_equal(got, x[1:2, 0:2])


# ----------------------------------------------------------------------------- op forms, run

def test_while_with_captured_values():
    """The body uses %step and the cond %limit from outside: both ride in the loop state."""
    text = module("""    %limit = stablehlo.constant dense<5> : tensor<i32>
    %step = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c0, %v = %arg0) : tensor<i32>, tensor<4xf32>
    cond {
      %1 = stablehlo.compare LT, %i, %limit, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %i, %c1 : tensor<i32>
      %2 = stablehlo.broadcast_in_dim %step, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %3 = stablehlo.multiply %v, %2 : tensor<4xf32>
      stablehlo.return %1, %3 : tensor<i32>, tensor<4xf32>
    }
    return %0#1, %0#0 : tensor<4xf32>, tensor<i32>""", results="(tensor<4xf32>, tensor<i32>)")
    mod = parse_stablehlo(text)
    (loop,) = instrs(mod, "while")
    assert len(loop.shape) == 4  # i, v, then the captured limit and step
    body = mod.computation(loop.attr("body"))
    assert len(body.root_instruction.operands) == 4
    x = np.array([1, -2, 0.5, 3], np.float32)
    v, i = run(text, x)
    np.testing.assert_array_equal(v, x * 32)
    np.testing.assert_array_equal(i, 5)


def test_if_and_case_with_captures():
    text = module("""    %0 = "stablehlo.if"(%p) ({
      %1 = stablehlo.add %arg0, %y : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }, {
      stablehlo.return %y : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %2:2 = "stablehlo.case"(%k) ({
      stablehlo.return %0, %k : tensor<4xf32>, tensor<i32>
    }, {
      %3 = stablehlo.negate %0 : tensor<4xf32>
      stablehlo.return %3, %k : tensor<4xf32>, tensor<i32>
    }) : (tensor<i32>) -> (tensor<4xf32>, tensor<i32>)
    return %2#0 : tensor<4xf32>""", args="%arg0: tensor<4xf32>, %y: tensor<4xf32>, %p: tensor<i1>, %k: tensor<i32>")
    x, y = np.arange(4, dtype=np.float32), np.full(4, 10, np.float32)
    assert np.array_equal(run(text, x, y, np.bool_(True), np.int32(0))[0], x + y)
    assert np.array_equal(run(text, x, y, np.bool_(False), np.int32(1))[0], -y)
    assert np.array_equal(run(text, x, y, np.bool_(False), np.int32(7))[0], -y)  # out of range: last


def test_reduce_with_a_reducer_region_argmax():
    text = (USER / f"argmax_rows{SUFFIX}").read_text()
    z = np.load(USER / "argmax_rows.npz")
    (got,) = run(text, z["arg0"])
    np.testing.assert_array_equal(got, z["out0"])


def test_less_common_ops():
    text = module("""    %0 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<4xf32>
    %1:2 = stablehlo.optimization_barrier %0, %arg0 : tensor<4xf32>, tensor<4xf32>
    %2 = stablehlo.bitcast_convert %1#1 : (tensor<4xf32>) -> tensor<4xi32>
    %values, %indices = chlo.top_k(%arg0, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
    %3 = chlo.square %arg0 : tensor<4xf32> -> tensor<4xf32>
    %4 = "stablehlo.map"(%arg0, %3) <{dimensions = array<i64: 0>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %5 = stablehlo.subtract %b, %a : tensor<f32>
      stablehlo.return %5 : tensor<f32>
    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %6 = stablehlo.dot %arg0, %arg0, precision = [DEFAULT, DEFAULT] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    %t = stablehlo.tuple %6, %values : tuple<tensor<f32>, tensor<2xf32>>
    %7 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<f32>, tensor<2xf32>>) -> tensor<f32>
    return %1#0, %2, %values, %indices, %4, %7 : tensor<4xf32>, tensor<4xi32>, tensor<2xf32>, tensor<2xi32>, tensor<4xf32>, tensor<f32>""",
                  results="(tensor<4xf32>, tensor<4xi32>, tensor<2xf32>, tensor<2xi32>, tensor<4xf32>, tensor<f32>)")
    x = np.array([1.0001, -3, 2.5, 7], np.float32)
    rp, bits, vals, idx, mapped, dot = run(text, x)
    np.testing.assert_array_equal(rp, x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(bits, x.view(np.int32))
    np.testing.assert_array_equal(vals, [7, 2.5])
    np.testing.assert_array_equal(idx, [3, 2])
    np.testing.assert_allclose(mapped, x * x - x, rtol=1e-6)
    np.testing.assert_allclose(dot, np.dot(x, x), rtol=1e-6)


def test_generic_forms_and_rarer_ops():
    """Generic-form ops (#stablehlo.dot/conv<raw>/comparison attributes, array<...>, dense
    padding), composite, broadcast, get_dimension_size, a capture-free case, TopK custom_call."""
    text = module('''    %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]}> : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %1 = "stablehlo.compare"(%0, %0) <{comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
    %2 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 2, input_spatial_dimensions = [1], kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0], output_batch_dimension = 0, output_feature_dimension = 2, output_spatial_dimensions = [1]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1>, padding = dense<[[1, 1]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 1>, window_reversal = array<i1: false>, window_strides = array<i64: 1>}> : (tensor<1x5x2xf32>, tensor<3x2x4xf32>) -> tensor<1x5x4xf32>
    %3 = "stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %4 = "stablehlo.slice"(%a) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
    %5 = "stablehlo.broadcast_in_dim"(%4) <{broadcast_dimensions = array<i64: 1, 2>}> : (tensor<2x2xf32>) -> tensor<3x2x2xf32>
    %6 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<3xi32>
    %7 = stablehlo.composite "my.double" %6 {decomposition = @double} : (tensor<3xi32>) -> tensor<3xi32>
    %8 = stablehlo.broadcast %6, sizes = [2] : (tensor<3xi32>) -> tensor<2x3xi32>
    %9 = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>
    %10 = "stablehlo.case"(%9) ({
      %c = stablehlo.constant dense<5> : tensor<i32>
      stablehlo.return %c : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %11:2 = stablehlo.custom_call @TopK(%x) : (tensor<1x5x2xf32>) -> (tensor<1x5x1xf32>, tensor<1x5x1xi32>)
    return %0, %1, %2, %3, %5, %7, %8, %9, %10, %11#1 : tensor<2x2xf32>, tensor<2x2xi1>, tensor<1x5x4xf32>, tensor<3x2xf32>, tensor<3x2x2xf32>, tensor<3xi32>, tensor<2x3xi32>, tensor<i32>, tensor<i32>, tensor<1x5x1xi32>''',
                  args="%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %x: tensor<1x5x2xf32>, %w: tensor<3x2x4xf32>",
                  results="(tensor<2x2xf32>, tensor<2x2xi1>, tensor<1x5x4xf32>, tensor<3x2xf32>, tensor<3x2x2xf32>, "
                          "tensor<3xi32>, tensor<2x3xi32>, tensor<i32>, tensor<i32>, tensor<1x5x1xi32>)",
                  extra="""  func.func private @double(%v: tensor<3xi32>) -> tensor<3xi32> {
    %0 = stablehlo.add %v, %v : tensor<3xi32>
    return %0 : tensor<3xi32>
  }
""")
    r = np.random.default_rng(0)
    a, b, x, w = (r.standard_normal(s).astype(np.float32) for s in [(2, 3), (3, 2), (1, 5, 2), (3, 2, 4)])
    xp = np.pad(x, ((0, 0), (1, 1), (0, 0)))
    conv = np.stack([sum(xp[0, o + k] @ w[k] for k in range(3)) for o in range(5)])[None]
    want = [a @ b, (a @ b) >= (a @ b), conv, a.T, np.broadcast_to(a[:, 1:3], (3, 2, 2)), np.arange(3) * 2,
            np.broadcast_to(np.arange(3), (2, 3)), 3, 5, np.argmax(x, -1)[..., None]]
    outs = run(text, a, b, x, w)
    assert len(outs) == len(want)
    for k, (got, ref) in enumerate(zip(outs, want)):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=1e-5,
                                   atol=1e-5, err_msg=f"output {k}")


def test_broadcast_in_dim_expands_size_one_dims():
    """StableHLO broadcast_in_dim may expand a size-1 dim (HLO broadcast may not): a reshape
    drops it first, so even a materialized operand (a parameter) is read in bounds."""
    text = module("""    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x4xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [2, 0] : (tensor<3x1xf32>) -> tensor<5x2x3xf32>
    return %0, %1 : tensor<3x4xf32>, tensor<5x2x3xf32>""", args="%arg0: tensor<3x1xf32>",
                  results="(tensor<3x4xf32>, tensor<5x2x3xf32>)")
    x = np.arange(1, 4, dtype=np.float32).reshape(3, 1)
    want = (np.broadcast_to(x, (3, 4)), np.broadcast_to(x[:, 0], (5, 2, 3)))
    assert [i.attr("dimensions") for i in instrs(parse_stablehlo(text), "broadcast")] == [(0,), (2,)]
    for outs in (run(text, x), hlotune.compile(hlotune.load_hlo(text))(x)):
        for got, ref in zip(outs, want):
            np.testing.assert_array_equal(got, ref)


def test_locations_aliases_and_comments():
    text = """#loc1 = loc("x")
// a comment
module @m {
  func.func @main(%arg0: tensor<2xf32> loc("x")) -> tensor<2xf32> {
    %0 = stablehlo.abs %arg0 : tensor<2xf32> loc(#loc3)
    return %0 : tensor<2xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("jit(f)/abs"(#loc1))
"""
    np.testing.assert_array_equal(run(text, np.array([-1, 2], np.float32))[0], [1, 2])


# ----------------------------------------------------------------------------- errors

def expect_error(text: str, line: int, column: int, *words: str) -> HloParseError:
    with pytest.raises(HloParseError) as info:
        lower_module(parse_module_text(text, file="t.mlir"))
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert err.file == "t.mlir" and "internal" not in err.reason
    for w in words:
        assert w in err.reason, err.reason
    assert "^" in err.context
    return err


ADD = "    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n    return %0 : tensor<4xf32>"
BAD = {  # name: (text, line, column, words in the message); @main's body starts on line 3
    "bad character": (module(ADD).replace("tensor<4xf32>\n    return", "tensor<4xf32> ;\n    return"),
                      3, 53, ("unexpected character ';'",)),
    "undefined value": (module(ADD).replace("%arg0, %arg0", "%arg0, %nope"), 3, 31, ("undefined value %nope",)),
    "unclosed region": (module(ADD)[:-4], 5, 3, ("missing '}'",)),
    # a generic op whose quoted name is empty (found by the new-ops fuzz): a parse error, not an op ''
    "empty op name": (module(ADD).replace("stablehlo.add %arg0, %arg0 : tensor<4xf32>",
                                          '"" (%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>'),
                      3, 10, ("empty operation name",)),
    "missing type": (module(ADD).replace(" : tensor<4xf32>\n    return", "\n    return"), 4, 5,
                     ("expected ':'",)),
    "dynamic shape": (module(ADD, args="%arg0: tensor<?x4xf32>"), 2, 40, ("dynamic dimensions",)),
    "element type": (module(ADD).replace("%arg0 : tensor<4xf32>", "%arg0 : tensor<4xq9>"), 3, 46,
                     ("element type 'q9'",)),
    "literal shape": (module("    %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>\n    return %c : "
                             "tensor<3xf32>", args="", results="tensor<3xf32>"), 3, 29, ("shape [2]", "[3]")),
    "literal value": (module("    %c = stablehlo.constant dense<1.5> : tensor<i32>\n    return %c : tensor<i32>",
                             args="", results="tensor<i32>"), 3, 35, ("integer literal",)),
    "unknown callee": (module(ADD.replace("stablehlo.add %arg0, %arg0", "func.call @nowhere(%arg0)")), 3, 5,
                       ("unknown function @nowhere",)),
    "redefinition": (module(ADD.replace("%0 = stablehlo.add", "%arg0 = stablehlo.add")
                            .replace("return %0", "return %arg0")), 3, 5, ("redefinition of %arg0",)),
    "no return": (module("    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>"), 4, 3, ("does not end with a return",)),
    "two modules": (module(ADD).replace("@main", "@first") + module(ADD).replace("@main", "@second"), 7, 1,
                    ("unexpected 'module'",)),
    "two mains": (module(ADD, extra="  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                                    "    return %a : tensor<4xf32>\n  }\n"), 6, 13, ("redefinition of function @main",)),
    "compare syntax": (module(ADD).replace("stablehlo.add %arg0, %arg0", "stablehlo.compare LT, %arg0"), 3, 38,
                       ("expected ','",)),
    "result count": (module("    %0:2 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n    return %0#0 : tensor<4xf32>"),
                     3, 5, ("defines 2 result(s)",)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_parse_errors_are_located(case):
    text, line, col, words = BAD[case]
    expect_error(text, line, col, *words)


def test_bad_operands_fail_in_lowering_with_the_op_line():
    text = module("    %0 = stablehlo.add %arg0 : tensor<4xf32>\n    return %0 : tensor<4xf32>")
    with pytest.raises(HloParseError) as info:
        lower_module(parse_stablehlo(text, file="t.mlir"))
    assert (info.value.line, info.value.column) == (3, 5) and "'add'" in info.value.reason


@pytest.mark.parametrize("body,op", [
    ('%0 = "stablehlo.recv"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>', "stablehlo.recv"),
    ("%0 = stablehlo.constant dense_resource<__elided__> : tensor<4xf32>", "stablehlo.constant"),
])
def test_unsupported_ops_are_named(body, op):
    text = module(f"    {body}\n    return %0 : tensor<4xf32>")
    with pytest.raises(UnsupportedOpError) as info:
        lower_module(parse_module_text(text, file="u.mlir"))
    assert info.value.opcode == op and info.value.file == "u.mlir" and info.value.line >= 3
    assert op in str(info.value)


def test_reducer_regions_cannot_capture():
    text = module("""    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = "stablehlo.reduce"(%arg0, %c) <{dimensions = array<i64: 0>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %c : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>""", results="tensor<f32>")
    with pytest.raises(UnsupportedOpError, match="defined outside"):
        parse_stablehlo(text)


def test_non_text_input():
    with pytest.raises(HloParseError, match="not UTF-8"):
        parse_stablehlo(b"module \xff", "x.mlir")
    with pytest.raises(HloParseError, match="no func.func"):
        parse_stablehlo("module @m {\n}\n")


# ----------------------------------------------------------------------------- mutations

PROGRAMS = Path(__file__).parent / "data" / "jax_programs"
#: JAX programs holding CHLO ops, LAPACK custom calls (tensor<2xindex> layouts), rng_bit_generator,
#: fft, select_and_scatter and collectives
_NEW_OPS = ["special_gamma_family", "np_hyperbolic", "linalg_svd", "lax_rng_bit_generator", "fft_2d",
            "grad_maxpool_only", "collectives_one_device", "lax_top_k"]
_SMALL = ["softmax", "int32_arith", "concat_slice_pad", "reductions", "dynamic_slice", "embedding_gather",
          "conv2d_stride2_bias_relu", "causal_mask", "transpose_reshape", "fori_loop", "unary_math"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(_SMALL + _NEW_OPS), data=st.data())
def test_mutated_stablehlo_parses_and_lowers_or_raises_located_errors(name, data):
    """A number changed, a token deleted or duplicated, an op swapped, or the text cut short:
    the result lowers or raises HloParseError/UnsupportedOpError, never anything else."""
    text = ((DATA if name in _SMALL else PROGRAMS) / f"{name}{SUFFIX}").read_text()
    mutated = mutate_token(text, data, r"%[\w#]+|[A-Za-z_][\w.-]*|\d+|[^\s\w]",
                           ["stablehlo.add", "stablehlo.dot_general", "stablehlo.reduce", "stablehlo.transpose",
                            "stablehlo.while", "stablehlo.slice", "stablehlo.tanh", "func.call", "stablehlo.return"],
                           ("number", "delete", "duplicate", "replace", "truncate"))
    try:
        lower_module(parse_module_text(mutated, file="m.mlir"))
    except HloParseError as e:
        assert e.file == "m.mlir" and e.line >= 1 and "internal" not in e.reason, str(e)
    except UnsupportedOpError as e:
        assert e.opcode and "unsupported" in str(e)


def test_fuzzy_inputs_raise_only_parse_errors():
    for text in ["", "module", "module @m {", "func.func", "func.func @main(", "module { func.func @f() {} }",
                 "func.func @main() -> tensor<f32> {\n  return\n}", "#x = loc(", "module @m attributes {a = } {}",
                 'func.func @main() {\n  "stablehlo.return"() : () -> ()\n}', "module @m { %0 = stablehlo.add }"]:
        try:
            lower_module(parse_stablehlo(text, "f.mlir"))
        except HloParseError as e:
            assert "internal" not in e.reason, (text, str(e))
        except UnsupportedOpError:
            pass
