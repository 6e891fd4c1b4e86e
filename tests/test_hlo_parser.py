"""Tests of the HLO text parser (hlotune.frontend.parser) on the corpus and on crafted input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError, UnsupportedOpError
from hlotune.frontend.ast import TOKEN, ArrayShape, HloModule, TupleShape
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.read import load_module_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data" / "hlo"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
NAMES = [e["name"] for e in MANIFEST]
FILES = [f"{n}{suffix}" for n in NAMES for suffix in (".hlo", ".opt.hlo")]
_NP = {"float32": "f32", "float64": "f64", "int32": "s32", "int64": "s64", "bool": "pred",
       "float16": "f16", "bfloat16": "bf16", "int8": "s8", "uint8": "u8"}

_cache: dict[str, HloModule] = {}


def load(fname: str) -> HloModule:
    if fname not in _cache:
        _cache[fname] = load_module_file(DATA / fname)
    return _cache[fname]


def entry(name: str, kind: str = ".hlo"):
    return load(name + kind).entry_computation


def instr(name: str, iname: str, kind: str = ".hlo"):
    mod = load(name + kind)
    for comp in mod.computations:
        if iname in comp.by_name:
            return comp.by_name[iname]
    raise AssertionError(f"{iname} not in {name}{kind}")


def expect_error(text: str, line: int, column: int, *words: str) -> HloParseError:
    with pytest.raises(HloParseError) as info:
        parse_hlo(text, file="t.hlo")
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert err.file == "t.hlo"
    for w in words:
        assert w in err.reason, err.reason
    assert "^" in err.context and "internal" not in err.reason
    return err


# ------------------------------------------------------------------- corpus
def test_manifest_covers_corpus():
    assert len(NAMES) == 24
    assert all((DATA / f).exists() for f in FILES)


@pytest.mark.parametrize("fname", FILES)
def test_corpus_signature_matches_manifest(fname):
    mod = load(fname)
    spec = next(e for e in MANIFEST if fname.startswith(e["name"] + "."))
    params = mod.parameter_shapes
    assert len(params) == len(spec["inputs"])
    for shape, (dims, dtype) in zip(params, spec["inputs"]):
        assert isinstance(shape, ArrayShape)
        assert shape.dims == tuple(dims)
        assert shape.element_type == _NP[dtype]
        assert shape.numpy_dtype == np.dtype(dtype)
    outs = spec["outputs"]
    res = mod.result_shape
    flat = res.elements if len(outs) > 1 else (res,)
    assert res.is_tuple == (len(outs) > 1)
    assert [(s.dims, s.numpy_dtype) for s in flat] == [(tuple(d), np.dtype(t)) for d, t in outs]
    # structural sanity: parameter order, roots, every reference resolves
    assert [p.parameter_number for p in mod.entry_computation.params] == list(range(len(params)))
    for comp in mod.computations:
        assert comp.root_instruction.name == comp.root
        for ins in comp.instructions:
            assert all(op in comp.by_name for op in ins.operands)
            for key in ("to_apply", "calls", "condition", "body"):
                if key in ins.attrs:
                    assert mod.computation(ins.attrs[key]).name == ins.attrs[key]


@pytest.mark.parametrize("name", NAMES)
def test_corpus_opcodes_match_manifest(name):
    mod = load(name + ".hlo")
    ops = {i.opcode for c in mod.computations for i in c.instructions}
    spec = next(e for e in MANIFEST if e["name"] == name)
    assert ops == set(spec["opcodes"])


def test_module_header_and_blocks():
    mod = load("concat_slice_pad.opt.hlo")
    assert mod.name == "jit_concat_slice_pad"
    assert mod.attrs["is_scheduled"] is True
    assert mod.attrs["allow_spmd_sharding_propagation_to_output"] == (True,) * 4
    assert mod.attrs["entry_computation_layout"].startswith("{(f32[32,48]{1,0}, f32[32,16]{1,0})->(")
    assert mod.entry == "main.3" and mod.entry_computation.is_entry
    assert [c.name for c in mod.computations][:2] == ["fused_computation", "fused_computation.1"]
    assert mod.source_file.endswith("concat_slice_pad.opt.hlo")
    # no ENTRY keyword needed in the un-optimized form's callees; ENTRY is last here
    assert load("concat_slice_pad.hlo").entry == "main.3"


def test_conv_attrs():
    conv = instr("conv2d_stride2_bias_relu", "conv_general_dilated.1")
    assert conv.opcode == "convolution"
    assert conv.attr("dim_labels") == "b01f_01io->b01f"
    w = conv.attr("window")
    assert w["size"] == (3, 3) and w["stride"] == (2, 2)
    assert w["pad"] == ((1, 1), (1, 1))
    assert w["lhs_dilate"] == (1, 1) and w["rhs_dilate"] == (1, 1)
    assert w["window_reversal"] == (False, False)
    same = instr("conv2d_nhwc_3x3", "conv_general_dilated.1")
    assert same.attr("window")["stride"] == (1, 1)
    assert same.shape == ArrayShape("f32", (2, 32, 32, 64), (3, 2, 1, 0))
    rw = instr("fori_loop", "reduce-window.2", ".opt.hlo")
    assert dict(rw.attr("window"))["size"] == (32,) and rw.attr("to_apply") == "region_1.1"


def test_slice_and_pad_attrs():
    s = instr("concat_slice_pad", "slice.10")
    assert s.attr("slice") == ((2, 30, 2), (0, 64, 3))
    assert instr("concat_slice_pad", "slice.6").attr("slice") == ((0, 1, 1), (0, 5, 1))
    pad = instr("concat_slice_pad", "pad.1")
    assert pad.attr("padding") == ((1, 2, 0), (3, -1, 1))
    assert pad.operands == ("slice.10", "constant.1")
    assert instr("concat_slice_pad", "pad.2", ".opt.hlo").attr("padding") == ((1, 2, 0), (3, 0, 1))
    assert instr("concat_slice_pad", "concatenate.5").attr("dimensions") == (1,)


def test_constants():
    c = instr("concat_slice_pad", "constant.1")
    assert c.literal.dtype == np.float32 and c.literal.shape == () and c.literal == 0.5
    ninf = [i for c in load("softmax.hlo").computations for i in c.instructions
            if i.opcode == "constant" and math.isinf(float(i.literal))]
    assert ninf and all(float(i.literal) == -math.inf for i in ninf)
    ints = instr("fori_loop", "constant.6")
    assert ints.literal.dtype == np.int32 and int(ints.literal) == 10
    eps = [i.literal for c in load("layernorm.hlo").computations for i in c.instructions
           if i.opcode == "constant"]
    assert any(np.float32(1e-05) == v for v in eps)


def test_fusion_and_calls():
    fus = instr("concat_slice_pad", "pad_slice_fusion", ".opt.hlo")
    assert fus.opcode == "fusion"
    assert fus.attr("kind") == "kLoop" and fus.attr("calls") == "fused_computation.2"
    mod = load("concat_slice_pad.opt.hlo")
    assert mod.computation("%fused_computation.2").root_instruction.opcode == "slice"
    ynn = instr("conv2d_stride2_bias_relu", "ynn_fusion", ".opt.hlo")
    assert ynn.attr("kind") == "kCustom"
    assert json.loads(ynn.attr("backend_config"))["fusion_config"]["kind"] == "__ynn_fusion"
    md = ynn.attr("metadata")
    assert md["op_name"] == "jit(conv2d_stride2_bias_relu)/conv_general_dilated"
    assert md["stack_frame_id"] == 5
    call = instr("concat_slice_pad", "jit__pad_.1")
    assert call.opcode == "call" and call.attr("to_apply") == "_pad.1"


def test_while_gte_and_param_order():
    w = instr("fori_loop", "while.5")
    assert w.attr("condition") == "region_2.4" and w.attr("body") == "region_0.3"
    assert isinstance(w.shape, TupleShape) and w.shape[0] == ArrayShape("s32", (), None)
    assert instr("fori_loop", "while.7").attr("index") == 1
    ent = entry("fori_loop")  # parameter(1) is printed before parameter(0)
    assert [p.name for p in ent.params] == ["a.1", "v.1"]
    assert ent.instructions[1].name == "v.1"
    wb = instr("fori_loop", "while.5", ".opt.hlo")
    assert json.loads(wb.attr("backend_config"))["known_trip_count"]["n"] == "10"


def test_gather_dot_compare_iota():
    g = instr("embedding_gather", "gather.1")
    assert g.attr("offset_dims") == (2,) and g.attr("collapsed_slice_dims") == (0,)
    assert g.attr("start_index_map") == (0,) and g.attr("index_vector_dim") == 2
    assert g.attr("slice_sizes") == (1, 64)
    assert instr("embedding_gather", "gather.2", ".opt.hlo").attr("collapsed_slice_dims") == ()
    d = instr("batched_matmul", "dot_general.1")
    assert d.attr("lhs_batch_dims") == (0,) and d.attr("rhs_contracting_dims") == (1,)
    assert instr("dynamic_slice", "dynamic_slice.2").attr("dynamic_slice_sizes") == (16, 32)
    assert instr("causal_mask", "le.1").attr("direction") == "LE"
    assert instr("causal_mask", "iota.4").attr("iota_dimension") == 0
    assert instr("embedding_gather", "bitcast.3", ".opt.hlo").shape.layout == (0, 1)


def test_index_comments_in_tuples():
    res = load("int32_arith.opt.hlo").result_shape
    assert isinstance(res, TupleShape) and len(res) == 11
    root = load("int32_arith.opt.hlo").entry_computation.root_instruction
    assert len(root.operands) == 11 and root.operands[5] == "and_shift-left_fusion"


# ----------------------------------------------------------- crafted syntax
SYNTAX = r'''HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}
FileNames
1 "a.py"

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p0: f32[2,3], p1: (f32[], (s32[], pred[]))) -> f32[2,3] {
  %p0 = f32[2,3]{1,0:T(8,128)} parameter(0)
  %p1 = (f32[], (s32[], pred[])) parameter(1)
  %c = f32[2,3]{1,0} constant({ {1, 2.5, -inf}, {nan, 1e-05, 0x1p-3} })
  %b = bf16[3] constant({1.5, 3.14159, -2})
  %pr = pred[2] constant({true, false})
  %i = s32[3] constant({1, -2, 2147483647})
  %cx = c64[2] constant({(1, 2), (3.5, -1)})
  %t = (f32[], s32[2]) constant((1.5, {1, 2}))
  %z = f32[0] constant({})
  %tok = token[] after-all()
  %cc = f32[2,3]{1,0} custom-call(%p0, %c), custom_call_target="foo,{}->bar", backend_config="{\"a\": [1, 2]}", frontend_attributes={_x="1,2"}, sharding={devices=[2,1]<=[2]}, control-predecessors={%c}, my_attr=a->b
  %r = f32[2] reduce(%cc, %c), dimensions={1}, to_apply=%add, operand_precision={default,highest}, epsilon=0.001
  ROOT %o = f32[2,3]{1,0} add(%p0, /*index=1*/ %cc), metadata={op_type="dot_general" op_name="jit(f)/dot" source_file="/a/b.py" source_line=12}
}
'''


def test_crafted_syntax_forms():
    mod = parse_hlo(SYNTAX, verify=False)   # syntax only: its shapes do not agree
    e = mod.entry_computation
    by = e.by_name
    assert mod.parameter_shapes[1] == TupleShape((ArrayShape("f32", ()), TupleShape(
        (ArrayShape("s32", ()), ArrayShape("pred", ())))))
    assert by["p0"].shape.layout == (1, 0)
    lit = by["c"].literal
    assert lit.dtype == np.float32 and lit.shape == (2, 3)
    assert lit[0, 0] == 1 and lit[0, 1] == 2.5 and lit[0, 2] == -np.inf and np.isnan(lit[1, 0])
    assert lit[1, 1] == np.float32(1e-05) and lit[1, 2] == 0.125
    assert by["b"].literal.dtype == ml_dtypes.bfloat16
    assert by["b"].literal.astype(np.float32).tolist() == [1.5, 3.140625, -2.0]
    assert by["pr"].literal.dtype == np.bool_ and by["pr"].literal.tolist() == [True, False]
    assert by["i"].literal.tolist() == [1, -2, 2147483647]
    assert by["cx"].literal.tolist() == [1 + 2j, 3.5 - 1j]
    t = by["t"].literal
    assert float(t[0]) == 1.5 and t[1].dtype == np.int32 and t[1].tolist() == [1, 2]
    assert by["z"].literal.shape == (0,)
    assert by["tok"].shape == TOKEN and by["tok"].operands == ()
    cc = by["cc"]
    assert cc.attr("custom_call_target") == "foo,{}->bar"
    assert json.loads(cc.attr("backend_config")) == {"a": [1, 2]}
    assert cc.attr("frontend_attributes") == '{_x="1,2"}'
    assert cc.attr("sharding") == "{devices=[2,1]<=[2]}"
    assert cc.attr("control-predecessors") == ("c",) and cc.attr("my_attr") == "a->b"
    assert cc.attr("missing", 7) == 7
    r = by["r"]
    assert r.attr("to_apply") == "add" and r.attr("operand_precision") == ("default", "highest")
    assert r.attr("epsilon") == pytest.approx(0.001)
    o = e.root_instruction
    line = next(k for k, ln in enumerate(SYNTAX.splitlines(), 1) if "ROOT %o" in ln)
    assert o.is_root and o.operands == ("p0", "cc") and (o.line, o.column) == (line, 8)
    assert dict(o.attr("metadata")) == {"op_type": "dot_general", "op_name": "jit(f)/dot",
                                        "source_file": "/a/b.py", "source_line": 12}
    assert mod.computation("add").root == "s" and mod.computation("add").by_name["s"].operands == ("x", "y")


def test_no_entry_keyword_and_no_root():
    mod = parse_hlo("HloModule m\nf {\n a = f32[] parameter(0)\n b = f32[] negate(a)\n}\n"
                    "g {\n a = f32[2] parameter(0)\n ROOT c = f32[2] call(a), to_apply=f\n"
                    " d = f32[2] copy(a)\n}\n", verify=False)
    assert mod.entry == "g" and mod.entry_computation.is_entry
    assert mod.computation("f").root == "b"  # no ROOT: the last instruction
    assert mod.result_shape == ArrayShape("f32", (2,))
    assert mod.entry_computation.root == "c"


def test_less_common_forms(caplog):
    text = ("HloModule m\n%f (a: (f32[], s32[])) -> f32[] {\n  %a = (f32[], s32[]) parameter(0)\n"
            "  ROOT %g = f32[] get-tuple-element((f32[], s32[]) %a), index=0\n}, execution_thread=\"main\"\n"
            "ENTRY %e (p: (f32[], s32[])) -> f32[3] {\n  %p = (f32[], s32[]) parameter(0)\n"
            "  %big = f32[40,50]{1,0} constant({...})\n  %old = f32[2] constant(f32[2] {1, 2})\n"
            "  %n = f32[] constant(-nan(0x7fc00001))\n  %q = pred[] constant(true)\n"
            "  ROOT %r = f32[3] call(%p), to_apply=%f\n}\n")
    mod = parse_hlo(text.encode(), verify=False)
    by = mod.entry_computation.by_name
    assert by["big"].literal is None and by["big"].attr("literal_elided") is True
    assert "print_large_constants" in caplog.text
    assert by["old"].literal.tolist() == [1.0, 2.0] and np.isnan(by["n"].literal)
    assert by["q"].literal.dtype == np.bool_ and bool(by["q"].literal) is True
    assert mod.computation("f").root_instruction.operands == ("a",)
    expect_error(text.replace("(p: (f32[], s32[]))", "(p: (f32[], s32[]), z: f32[])"), 6, 7,
                 "declares 2 parameter(s)")
    expect_error(text.replace("f32[40,50]", "f32[?,50]"), 8, 14, "dynamic")


def test_shape_helpers():
    s = ArrayShape("bf16", (2, 3), (1, 0))
    assert s.rank == 2 and s.size == 6 and str(s) == "bf16[2,3]{1,0}" and not s.is_tuple
    assert s.numpy_dtype == ml_dtypes.bfloat16
    assert ArrayShape("pred", ()).numpy_dtype == np.bool_
    assert TupleShape((s,)).is_tuple
    with pytest.raises(UnsupportedOpError):
        _ = TOKEN.numpy_dtype


# ------------------------------------------------------------------- errors
BASE = "HloModule m\n\nENTRY main {\n  p0 = f32[4]{0} parameter(0)\n  ROOT r = f32[4]{0} negate(p0)\n}\n"


def test_error_bad_character():
    err = expect_error(BASE.replace("negate(p0)", "negate(p0) #"), 5, 33, "unexpected character")
    assert err.context.splitlines() == ["  ROOT r = f32[4]{0} negate(p0) #", " " * 32 + "^"]


def test_error_undefined_operand():
    expect_error(BASE.replace("negate(p0)", "negate(q0)"), 5, 29, "'q0'", "not defined")


def test_error_unknown_computation():
    expect_error(BASE.replace("negate(p0)", "negate(p0), to_apply=%nope"), 5, 43, "unknown computation")


def test_error_unterminated_brace():
    text = BASE.replace("parameter(0)", 'parameter(0), metadata={op_name="x"')
    expect_error(text, 4, 41, "unterminated '{'")
    expect_error(BASE.replace("negate(p0)", "negate(p0), dimensions={0"), 5, 45, "unterminated")
    expect_error(BASE.replace("negate(p0)", 'negate(p0), custom_call_target="ab'), 5, 53, "unterminated string")


def test_error_garbage_and_empty():
    expect_error("hello world", 1, 1, "HloModule")
    expect_error("", 1, 1, "HloModule")
    expect_error("HloModule m\n", 2, 1, "no computations")
    expect_error(BASE.rstrip().rstrip("}"), 6, 1, "missing '}'")


def test_error_semantic_checks():
    expect_error(BASE.replace("ROOT r", "ROOT p0"), 5, 8, "duplicate instruction")
    expect_error(BASE.replace("parameter(0)", "parameter(2)"), 4, 3, "out of range")
    expect_error(BASE + "ENTRY main {\n ROOT x = f32[] parameter(0)\n}\n", 7, 1, "ENTRY")
    expect_error(BASE.replace("negate(p0)", "negate(p0), kind=kLoop, kind=kLoop"), 5, 46, "duplicate attribute")


def test_error_shapes_and_literals():
    expect_error(BASE.replace("f32[4]{0} parameter", "f32[<=4]{0} parameter"), 4, 12, "dynamic")
    expect_error(BASE.replace("f32[4]{0} parameter", "f32[4]{1} parameter"), 4, 14, "layout")
    expect_error(BASE.replace("f32[4]{0} parameter", "f33[4]{0} parameter"), 4, 8, "shape")
    with_c = BASE.replace("parameter(0)", "parameter(0)\n  c = f32[2] constant({1,2,3})")
    expect_error(with_c, 5, 27, "more than 2")
    expect_error(BASE.replace("parameter(0)", "parameter(0)\n  c = s8[2] constant({1,300})"), 5, 25,
                 "out of range")
    expect_error(BASE.replace("parameter(0)", "parameter(0)\n  c = f32[] constant(abc)"), 5, 22,
                 "floating-point")
    expect_error(BASE.replace("negate(p0)", "slice(p0), slice={[0:x]}"), 5, 43, "slice bound")
    expect_error(BASE.replace("negate(p0)", "pad(p0, p0), padding=1_2_3_4"), 5, 43, "padding")


def test_error_deep_nesting_is_reported():
    deep = "HloModule m\nENTRY e {\n x = " + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}"
    err = expect_error(deep, 3, 71, "nested too deeply")
    assert len(err.context.splitlines()[0]) < 200  # long lines are windowed


def test_load_missing_file(tmp_path):
    with pytest.raises(HloParseError, match="cannot read"):
        load_module_file(tmp_path / "nope.hlo")


# ------------------------------------------------------------- fuzzing
_SMALL = sorted(FILES, key=lambda f: (DATA / f).stat().st_size)[:16]
#: JAX programs holding the ops added for them (topk, rng-bit-generator, LAPACK custom calls with
#: backend configs, fft, select-and-scatter, collectives with replica groups)
_NEW_OPS = ["lax_top_k", "lax_rng_bit_generator", "linalg_eigh", "fft_real", "grad_maxpool_only",
            "collectives_one_device"]
_TEXTS = [(DATA / f).read_text() for f in _SMALL] + [SYNTAX] + \
    [(DATA.parent / "jax_programs" / f"{n}.hlo").read_text() for n in _NEW_OPS]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(_TEXTS))
    n = len(text)
    op = draw(st.sampled_from(["delete", "dup", "swap", "truncate", "insert", "token"]))
    i = draw(st.integers(0, n))
    j = draw(st.integers(i, min(n, i + 40)))
    if op == "delete":
        return text[:i] + text[j:]
    if op == "dup":
        return text[:j] + text[i:j] + text[j:]
    if op == "swap":
        k = draw(st.integers(0, n))
        a, b = sorted((i, k))
        return text[:a] + text[b:b + (j - i)] + text[a + (j - i):b] + text[a:a + (j - i)] + \
            text[b + (j - i):]
    if op == "truncate":
        return text[:i]
    if op == "insert":
        junk = draw(st.text(alphabet="{}()[],=:%\"'/*<>-_x.0123456789 \nabcf@#", min_size=1,
                            max_size=6))
        return text[:i] + junk + text[i:]
    words = text.split(" ")  # delete or duplicate a whole space-separated token
    k = draw(st.integers(0, len(words) - 1))
    if draw(st.booleans()):
        return " ".join(words[:k] + words[k + 1:])
    return " ".join(words[:k + 1] + words[k:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fuzz_only_hlo_parse_errors(text):
    try:
        mod = parse_hlo(text)
    except HloParseError as e:
        assert "internal parser error" not in e.reason, e
        assert e.line >= 1 and e.column >= 1
    else:
        assert mod.entry_computation.root_instruction is not None
