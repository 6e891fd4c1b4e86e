"""Bad input gets a typed error, never a traceback of another kind: binary or missing files given
as modules, huge constants in the DSL, gather/scatter whose dimension numbers do not fit (once an
IndexError in handlers/indexing.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hlotune.dsl.errors import DSLError, HloParseError

import hlotune
from hlotune import dsl

SOFTMAX = Path(__file__).parent / "data" / "hlo" / "softmax.hlo"


def test_a_binary_file_is_a_parse_error(tmp_path):
    f = tmp_path / "bin.hlo"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff" * 20)
    with pytest.raises(HloParseError, match="not UTF-8") as info:
        hlotune.load_hlo(f)
    assert info.value.file == str(f)
    with pytest.raises(HloParseError, match="not UTF-8"):
        hlotune.load_hlo(str(f))


@pytest.mark.parametrize("path", ["nonexistent.hlo", "no/such/dir/m.mlir", Path("missing.hlo")])
def test_a_missing_file_says_it_does_not_exist(path):
    with pytest.raises(HloParseError, match="does not exist") as info:
        hlotune.load_hlo(path)
    assert "HloModule" not in info.value.reason


def test_a_folder_is_not_a_module(tmp_path):
    with pytest.raises(HloParseError, match="is not a file"):
        hlotune.load_hlo(tmp_path)


def test_text_and_bytes_and_paths_all_load():
    text = SOFTMAX.read_text()
    for x in (SOFTMAX, str(SOFTMAX), text, text.encode()):
        assert hlotune.load_hlo(x).name == "jit_softmax"
    with pytest.raises(HloParseError, match="no computations"):
        hlotune.load_hlo("HloModule m")
    with pytest.raises(HloParseError, match="got int"):
        hlotune.load_hlo(5)


@pytest.mark.parametrize("value,dtype", [(float("inf"), "int32"), (float("nan"), "int64"),
                                         (10 ** 400, "float32"), (2 ** 70, "int64"), ("x", "float32")])
def test_constants_that_do_not_fit_are_dsl_errors(value, dtype):
    with pytest.raises(DSLError, match="constant"):
        dsl.const(value, dtype)


def test_gather_with_an_index_vector_of_the_wrong_size_is_refused():
    text = ("HloModule m\nENTRY e {\n  t = f32[10,4] parameter(0)\n  i = s32[3,2] parameter(1)\n"
            "  ROOT g = f32[3,4] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}\n}\n")
    with pytest.raises(HloParseError, match="index vector has 2 element") as info:
        hlotune.load_hlo(text)
    assert info.value.line == 5


# ----------------------------------------------------------------------------- internal errors

def test_a_bug_in_a_handler_is_an_internal_error_not_the_inputs_fault(monkeypatch, capsys, tmp_path):
    """An unexpected exception while lowering a verified module says it is a bug (InternalError
    with the op, its line and the original type); the CLI exits 3 without a traceback."""
    from hlotune.cli import main
    from hlotune.dsl.errors import InternalError
    from hlotune.frontend import lower
    text = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"

    def broken(ctx, instr, operands):
        raise KeyError("a handler bug")
    monkeypatch.setitem(lower.HANDLERS, "negate", broken)
    with pytest.raises(InternalError, match=r"lowering 'negate' instruction 'n' at <input>:4: KeyError") as e:
        hlotune.load_hlo(text)
    assert e.value.original == "KeyError" and e.value.line == 4
    f = tmp_path / "m.hlo"
    f.write_text(text)
    assert main(["run", str(f)]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "bug in hlotune" in err and "Traceback" not in err


def test_a_parser_bug_is_an_internal_error_with_its_line(monkeypatch):
    from hlotune.dsl.errors import InternalError
    from hlotune.frontend import parser

    def broken(self, *a, **k):
        raise IndexError("a parser bug")
    monkeypatch.setattr(parser._Parser, "instruction", broken, raising=True)
    with pytest.raises(InternalError, match="parsing HLO text.*IndexError"):
        hlotune.load_hlo("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")


def test_scratch_beyond_memory_is_a_typed_resource_error_in_the_cli(monkeypatch, capsys, tmp_path):
    """A kernel needing more scratch than the machine has (37 GiB in the reported case): a typed
    error (ResourceError, still a MemoryError), exit 2, no traceback."""
    from hlotune.cli import main
    from hlotune.dsl.errors import ResourceError
    from hlotune.runtime import build
    monkeypatch.setattr(build, "heap_bytes", lambda fn: 37 << 30)
    monkeypatch.setattr(build, "memory_bytes", lambda: 24 << 30)
    f = tmp_path / "m.hlo"
    f.write_text("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n")
    assert issubclass(ResourceError, MemoryError)
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err
    assert "37.0 GiB of scratch" in err and "Traceback" not in err, err


@pytest.mark.parametrize("op,ty", [("not", "f32"), ("popcnt", "f32"), ("atan2", "s32"), ("atan2", "u32"),
                                   ("atan2", "pred")])
def test_op_type_pairs_without_a_meaning_are_refused_at_load(op, ty):
    """XLA refuses these at once; so does hlotune, naming the op (not the C renderer, later)."""
    from hlotune.dsl.errors import UnsupportedOpError
    args = "p, p" if op == "atan2" else "p"
    text = f"HloModule m\nENTRY e {{\n  p = {ty}[4] parameter(0)\n  ROOT r = {ty}[4] {op}({args})\n}}\n"
    with pytest.raises(UnsupportedOpError, match=op):
        hlotune.load_hlo(text)


def test_unsigned_powers_follow_the_stablehlo_spec():
    """The reference interpreter's integer power: exact modulo 2^bits for unsigned exponents (XLA:CPU
    reads a top bit as negative and gives 0: documented in docs/hlo_ops.md); negative signed
    exponents give 0, or +-1 for bases +-1."""
    t = ("func.func @main(%a: tensor<5xui32>, %b: tensor<5xui32>) -> tensor<5xui32> {\n"
         "  %0 = stablehlo.power %a, %b : tensor<5xui32>\n  return %0 : tensor<5xui32>\n}\n")
    a = np.array([5, 3, 2, 7, 0], np.uint32)
    b = np.array([2**31 + 3, 2**31, 2**32 - 1, 5, 0], np.uint32)
    want = [pow(int(x), int(y), 2**32) for x, y in zip(a, b)]
    np.testing.assert_array_equal(hlotune.compile(hlotune.load_hlo(t))(a, b), want)
    s = t.replace("ui32", "i32")
    a, b = np.array([5, 1, -1, -1, 2], np.int32), np.array([-1, -7, -3, -4, 30], np.int32)
    np.testing.assert_array_equal(hlotune.compile(hlotune.load_hlo(s))(a, b), [0, 1, -1, 1, 2**30])
