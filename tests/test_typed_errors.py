"""Bad input gets a typed error, never a traceback of another kind: binary or missing files given
as modules, huge constants in the DSL, gather/scatter whose dimension numbers do not fit (once an
IndexError in handlers/indexing.py)."""

from __future__ import annotations

from pathlib import Path

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
