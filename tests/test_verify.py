"""The HLO verifier (frontend/verify.py): every instruction's declared shape is checked against its
operands and attributes before lowering, for HLO and StableHLO text alike; a mismatch is an
HloParseError naming the instruction at its line and column. The corpus modules all pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hlotune.dsl.errors import HloParseError
from hlotune.frontend.read import load_module_file, parse_module_text
from hlotune.frontend.lower import HANDLERS, lower_module
from hlotune.frontend.parser import parse_hlo
from hlotune.frontend.verify import RULES, verify_module
from hlotune.dsl.reference import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune

DATA = Path(__file__).parent / "data"
CORPUS = sorted(p for d in ("hlo", "jax_user") for p in (DATA / d).iterdir() if p.suffix in (".hlo", ".mlir"))

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"


def hlo(body: str, params=("f32[4]",), extra: str = ADD) -> str:
    ps = "".join(f"  p{k} = {s} parameter({k})\n" for k, s in enumerate(params))
    return f"HloModule m\n{extra}ENTRY e {{\n{ps}{body}\n}}\n"


def refused(text: str, *fragments: str, file: str = "bad.hlo") -> HloParseError:
    """The verifier's error for ``text``: located at the line holding its instruction."""
    with pytest.raises(HloParseError) as info:
        parse_module_text(text, file=file)
    e = info.value
    assert e.file == file and e.line >= 1 and e.column >= 1, str(e)
    for f in fragments:
        assert f in str(e), (f, str(e))
    return e


def test_every_lowered_opcode_has_a_rule():
    assert set(HANDLERS) <= set(RULES)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_modules_verify(path):
    mod = load_module_file(path)
    assert verify_module(mod) is mod


# ----------------------------------------------------------------------------- the cases

def test_add_declared_larger_than_its_operands():
    e = refused(hlo("  ROOT a = f32[12] add(p0, p1)", ("f32[4]", "f32[4]")), "'add' instruction 'a'",
                "f32[12]", "f32[4]")
    assert (e.line, e.column) == (10, 8)


def test_while_state_declared_larger_than_its_init():
    text = ("HloModule m\ncond {\n  s = f32[1048576] parameter(0)\n  ROOT c = pred[] constant(false)\n}\n"
            "body {\n  s = f32[1048576] parameter(0)\n  ROOT n = f32[1048576] negate(s)\n}\n"
            "ENTRY e {\n  p0 = f32[4] parameter(0)\n  ROOT w = f32[1048576] while(p0), condition=cond, body=body\n}\n")
    e = refused(text, "'while' instruction 'w'", "condition 'cond'", "f32[4]")
    assert e.line == 12


def test_slice_start_after_limit():
    refused(hlo("  ROOT s = f32[0] slice(p0), slice={[3:1]}"), "slice [3:1]", "start <= limit")


def test_dynamic_slice_sizes_of_2_to_the_31():
    refused(hlo("  i = s32[] constant(0)\n  ROOT s = f32[2147483648] dynamic-slice(p0, i), "
                "dynamic_slice_sizes={2147483648}"), "slice size 2147483648", "exceeds its size 4")


def test_stablehlo_argument_type_disagrees_with_its_use():
    text = ("func.func @main(%arg0: tensor<4xf32>) -> tensor<8xf32> {\n"
            '  %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>\n'
            "  return %0 : tensor<8xf32>\n}\n")
    e = refused(text, "%arg0 has type f32[4]", "f32[8]", file="bad.mlir")
    assert (e.line, e.column) == (2, 24)


@pytest.mark.parametrize("text,fragment", [
    ("  %0 = stablehlo.add %arg0, %arg0 : tensor<1048576xf32>\n  return %0 : tensor<1048576xf32>",
     "'add' instruction"),
    ("  return %arg0 : tensor<4xf32>", "@main returns f32[4] as result 0, but its type says f32[8]"),
])
def test_stablehlo_result_types_are_checked(text, fragment):
    refused(f"func.func @main(%arg0: tensor<4xf32>) -> tensor<{'1048576' if '1048576' in text else '8'}xf32> "
            f"{{\n{text}\n}}\n", fragment, file="bad.mlir")


# ----------------------------------------------------------------------------- one rule each

C = "  i = s32[] constant(1)\n  z = f32[] constant(0)\n"
BAD = {
    "negate": ("  ROOT r = f32[5] negate(p0)", "f32[5]"),
    "compare type": ("  ROOT r = f32[4] compare(p0, p0), direction=LT", "pred[4]"),
    "binary operands": ("  ROOT r = f32[4] add(p0, p1)", "operand shapes differ", ("f32[4]", "f32[3]")),
    "binary types": ("  ROOT r = f32[4] add(p0, p1)", "operand shapes differ", ("f32[4]", "s32[4]")),
    "select pred": ("  ROOT r = f32[4] select(p1, p0, p0)", "predicate must be pred", ("f32[4]", "f32[4]")),
    "clamp": ("  ROOT r = f32[4] clamp(p1, p0, p0)", "does not fit", ("f32[4]", "f32[3]")),
    "convert dims": ("  ROOT r = s32[3] convert(p0)", "s32[4]"),
    "iota": ("  ROOT r = s32[4] iota(), iota_dimension=1", "outside [0, 1)"),
    "broadcast": ("  ROOT r = f32[3,5] broadcast(p0), dimensions={1}", "does not match"),
    "broadcast dims": ("  ROOT r = f32[4,5] broadcast(p0), dimensions={2}", "outside [0, 2)"),
    "reshape": ("  ROOT r = f32[5] reshape(p0)", "element count"),
    "transpose": ("  ROOT r = f32[3,2] transpose(p0), dimensions={0,0}", "repeats", ("f32[2,3]",)),
    "reverse": ("  ROOT r = f32[4] reverse(p0), dimensions={1}", "outside"),
    "slice limit": ("  ROOT r = f32[4] slice(p0), slice={[0:5]}", "limit <= size"),
    "slice stride": ("  ROOT r = f32[4] slice(p0), slice={[0:4:0]}", "stride 0"),
    "slice result": ("  ROOT r = f32[3] slice(p0), slice={[0:4:2]}", "f32[2]"),
    "concatenate": ("  ROOT r = f32[7] concatenate(p0, p1), dimensions={0}", "outside dimension 0",
                    ("f32[4]", "f32[3,1]")),
    "pad": ("  ROOT r = f32[1] pad(p0, z), padding=-3_-3", "negative"),
    "pad interior": ("  ROOT r = f32[4] pad(p0, z), padding=0_0_-1", "interior padding -1"),
    "dynamic-slice count": ("  ROOT r = f32[2] dynamic-slice(p0, i, i), dynamic_slice_sizes={2}", "needs 1 start"),
    "dynamic-update-slice": ("  ROOT r = f32[4] dynamic-update-slice(p0, p1, i)", "does not fit", ("f32[4]", "f32[5]")),
    "gather slice": (("  ROOT r = f32[2,5] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={}, "
                     "start_index_map={0}, index_vector_dim=1, slice_sizes={5}"), "exceeds its size 4",
                     ("f32[4]", "s32[2,1]")),
    "gather offsets": (("  ROOT r = f32[2,3] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={}, "
                       "start_index_map={0}, index_vector_dim=1, slice_sizes={2}"), "f32[2,2]",
                       ("f32[4]", "s32[2,1]")),
    "scatter window": (("  ROOT r = f32[4] scatter(p0, p1, p2), update_window_dims={1}, inserted_window_dims={}, "
                       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add"),
                       "exceeds operand dimension 0", ("f32[4]", "s32[2,1]", "f32[2,6]")),
    "dot": ("  ROOT r = f32[2,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
            "contracting dimension lhs 1 (3) and rhs 0 (5) differ", ("f32[2,3]", "f32[5,4]")),
    "convolution features": (("  ROOT r = f32[1,4,2] convolution(p0, p1), window={size=3 pad=1_1}, "
                             "dim_labels=b0f_0io->b0f"), "input features 3", ("f32[1,4,3]", "f32[3,2,2]")),
    "convolution window": (("  ROOT r = f32[1,4,2] convolution(p0, p1), window={size=2 pad=1_1}, "
                           "dim_labels=b0f_0io->b0f"), "differs from the kernel's 3", ("f32[1,4,2]", "f32[3,2,2]")),
    "convolution result": ("  ROOT r = f32[1,4,2] convolution(p0, p1), window={size=3}, dim_labels=b0f_0io->b0f",
                           "f32[1,2,2]", ("f32[1,4,2]", "f32[3,2,2]")),
    "reduce init": ("  ROOT r = f32[] reduce(p0, p0), dimensions={0}, to_apply=add", "must be a scalar"),
    "reduce result": ("  ROOT r = f32[4] reduce(p0, z), dimensions={0}, to_apply=add", "f32[]"),
    "reduce-window size": ("  ROOT r = f32[4] reduce-window(p0, z), window={size=0}, to_apply=add", "size, stride"),
    "reduce-window result": ("  ROOT r = f32[4] reduce-window(p0, z), window={size=2}, to_apply=add", "f32[3]"),
    "map": ("  ROOT r = f32[4] map(p0, p0), dimensions={0}, to_apply=mixed", "computation 'mixed' parameter 1",
            ("f32[4]",), "mixed {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = f32[] negate(a)\n}\n"),
    "tuple": ("  ROOT r = (f32[4], f32[3]) tuple(p0, p0)", "(f32[4], f32[4])"),
    "get-tuple-element": ("  t = (f32[4]) tuple(p0)\n  ROOT r = f32[4] get-tuple-element(t), index=1", "outside"),
    "call": ("  ROOT r = f32[] call(p0), to_apply=add", "takes 2 parameter(s)"),
    "conditional": (("  b = pred[] constant(true)\n  ROOT r = f32[4] conditional(b, p0, p0), "
                     "true_computation=neg, false_computation=neg"), "branch 'neg' parameter 0 is f32[3]",
                    ("f32[4]",), "neg {\n  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n}\n"),
    "sort comparator": ("  ROOT r = f32[4] sort(p0), dimensions={0}, to_apply=add", "returns f32[]"),
    "topk": ("  ROOT r = (f32[5], s32[5]) custom-call(p0), custom_call_target=\"TopK\"", "k = 5 exceeds"),
    "replica-id": ("  ROOT r = s32[] replica-id()", "not u32[]"),
    "huge shape": ("  ROOT r = f32[4,4611686018427387904] broadcast(p0), dimensions={0}", "overflows 2^62"),
    "get-dimension-size": ("  ROOT r = s32[] get-dimension-size(p0), dimensions={1}", "outside"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_rule_refuses_a_lie(case):
    body, fragment, *rest = BAD[case]
    params = rest[0] if rest else ("f32[4]",)
    extra = ADD + (rest[1] if len(rest) > 1 else "")
    e = refused(hlo(C + body, params, extra), fragment)
    assert "instruction 'r'" in str(e) or "instruction 'y'" in str(e) or "'r'" in str(e)


def test_instruction_cycles_and_recursion_are_refused():
    refused("HloModule m\nENTRY e {\n  a = f32[4] negate(b)\n  b = f32[4] negate(a)\n  ROOT c = f32[4] copy(a)\n}\n",
            "depends on itself")
    refused("HloModule m\nf {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] call(x), to_apply=f\n}\n"
            "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=f\n}\n", "recursion")


def test_lowering_verifies_a_module_parsed_without_verification():
    mod = parse_hlo(hlo("  ROOT a = f32[12] add(p0, p0)"), verify=False)
    with pytest.raises(HloParseError, match="f32\\[12\\]"):
        lower_module(mod)


# ----------------------------------------------------------------------------- properties

@settings(max_examples=60, deadline=None)
@given(dims=st.lists(st.integers(0, 6), min_size=1, max_size=3), data=st.data())
def test_slices_verify_exactly_when_declared_right(dims, data):
    """A random slice of a random shape loads and equals numpy's; the same slice declared one
    element longer in any dimension is refused at its line."""
    ranges = []
    for n in dims:
        start = data.draw(st.integers(0, n))
        limit = data.draw(st.integers(start, n))
        ranges.append((start, limit, data.draw(st.integers(1, 3))))
    out = [-(-(b - a) // s) for a, b, s in ranges]
    spec = ", ".join(f"[{a}:{b}:{s}]" for a, b, s in ranges)

    def text(shape):
        return hlo(f"  ROOT s = f32[{','.join(map(str, shape))}] slice(p0), slice={{{spec}}}",
                   (f"f32[{','.join(map(str, dims))}]",))
    m = hlotune.load_hlo(text(out))
    x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
    want = x[tuple(slice(a, b, s) for a, b, s in ranges)]
    np.testing.assert_array_equal(evaluate(list(m.outputs), [x], m.params)[0], want)
    k = data.draw(st.integers(0, len(dims) - 1))
    wrong = list(out)
    wrong[k] += 1
    e = refused(text(wrong), "'slice' instruction 's'")
    assert e.line == 9


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 6), lo=st.integers(-3, 3), hi=st.integers(-3, 3), interior=st.integers(0, 2))
def test_pads_verify_exactly_when_declared_right(n, lo, hi, interior):
    size = lo + hi + n + max(n - 1, 0) * interior
    body = f"  z = f32[] constant(0)\n  ROOT q = f32[{{}}] pad(p0, z), padding={lo}_{hi}_{interior}"
    if size < 0:
        refused(hlo(body.format(0), (f"f32[{n}]",)), "negative")
        return
    m = hlotune.load_hlo(hlo(body.format(size), (f"f32[{n}]",)))
    x = np.arange(1, n + 1, dtype=np.float32)
    dil = np.zeros(max(n + max(n - 1, 0) * interior, 0), np.float32)
    dil[::interior + 1] = x
    full = np.concatenate([np.zeros(max(lo, 0)), dil, np.zeros(max(hi, 0))])
    full = full[max(-lo, 0):len(full) - max(-hi, 0)]
    np.testing.assert_array_equal(evaluate(list(m.outputs), [x], m.params)[0], full.astype(np.float32))
    refused(hlo(body.format(size + 1), (f"f32[{n}]",)), f"f32[{size}]")


@pytest.mark.parametrize("dims, fragment", [
    ("rhs_group_dims={3}", "rhs dimension numbers"),
    ("rhs_group_dims={1}", "must differ"),
    ("rhs_group_dims={0}, lhs_batch_dims={0}", "batch dims must pair up"),
])
def test_ragged_dot_dimension_numbers_in_range(dims, fragment):
    """Found by the mutation fuzz: a group dim past the rhs's rank reached the lowering."""
    text = hlo(f"  ROOT d = f32[4,5] ragged-dot(p0, p1, p2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}, "
               f"lhs_ragged_dims={{0}}, {dims}", ("f32[4,6]", "f32[2,6,5]", "s32[2]"))
    refused(text, "'ragged-dot' instruction 'd'", fragment)
    ok = hlo("  ROOT d = f32[4,5] ragged-dot(p0, p1, p2), lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
             "lhs_ragged_dims={0}, rhs_group_dims={0}", ("f32[4,6]", "f32[2,6,5]", "s32[2]"))
    assert verify_module(parse_module_text(ok)) is not None
