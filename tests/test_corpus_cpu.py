"""Every corpus module, both forms, compiled for the CPU and checked against XLA's outputs;
plus the CLI's run/--check and its error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hlotune
from hlotune.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from _checks import run_module_file

DATA = Path(__file__).parent / "data" / "hlo"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
NAMES = [m["name"] for m in MANIFEST]


@pytest.mark.parametrize("form", [".hlo", ".opt.hlo"])
@pytest.mark.parametrize("name", NAMES)
def test_corpus_module_matches_xla_on_cpu(name, form):
    # tolerances: hlotune.api.tolerance per dtype (f32 rtol 1e-4, atol 1e-5 x max|ref|; ints exact)
    rows = run_module_file(DATA / f"{name}{form}", DATA / f"{name}.npz")
    assert all(r["ok"] for r in rows), rows


def test_cli_run_check_passes_and_fails(tmp_path, capsys):
    f = str(DATA / "softmax.hlo")
    npz = str(DATA / "softmax.npz")
    assert main(["run", f, "--inputs", npz, "--check", npz, "--out", str(tmp_path / "o.npz")]) == 0
    assert "check passed" in capsys.readouterr().out
    assert np.load(tmp_path / "o.npz")["out0"].shape == (128, 512)
    # a wrong reference: exit 1 and the max errors per output
    z = dict(np.load(npz))
    z["out0"] = z["out0"] + 0.1
    np.savez(tmp_path / "bad.npz", **z)
    assert main(["run", f, "--inputs", npz, "--check", str(tmp_path / "bad.npz")]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "max abs err 0.1" in out


def test_cli_random_inputs_and_errors(tmp_path, capsys):
    assert main(["run", str(DATA / "int32_arith.hlo")]) == 0
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] frobnicate(p)\n}\n")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "frobnicate" in err and ":4" in err and "Traceback" not in err
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule m\nENTRY e {\n  p = f32[2 parameter(0)\n}\n")
    assert main(["run", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.hlo:3:" in err


def test_cli_entry_point_installed():
    r = subprocess.run([sys.executable, "-m", "hlotune.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "tune" in r.stdout and "run" in r.stdout


def test_module_api_signature_and_tuple_result():
    m = hlotune.load_hlo(DATA / "reductions.hlo")
    assert m.tuple_result and len(m.outputs) == 6
    assert "float32[16, 32, 64]" in m.signature
    r = hlotune.compile(m)(*m.random_inputs())
    assert isinstance(r, tuple) and len(r) == 6
    one = hlotune.load_hlo(DATA / "matvec.hlo")
    assert not one.tuple_result
    assert isinstance(hlotune.compile(one)(*one.random_inputs()), np.ndarray)


def test_opcode_doc_page_is_current():
    from hlotune.frontend.lower import HANDLERS
    from hlotune.frontend.opcodes import supported_ops_markdown
    page = (Path(__file__).parent.parent / "docs" / "hlo_ops.md").read_text()
    assert page == supported_ops_markdown(), "regenerate: python -m hlotune.frontend.opcodes > docs/hlo_ops.md"
    for m in MANIFEST:
        for op in m["opcodes"]:
            assert op in HANDLERS or op == "parameter", (m["name"], op)
