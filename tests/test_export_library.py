"""Tuned modules out as a library (runtime/export.py): the same outputs as hlotune.compile, in a
fresh process with no compiler on PATH, from C through the header and the example, and typed
refusals (host-only ops, a folder that is no export, a CPU without the build's instructions)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hlotune.dsl.errors import ExportError
from hlotune.runtime.export import MANIFEST

import hlotune

DATA = Path(__file__).parent / "data"
# several kernels, a while loop compiled whole, scatters and constants, compiled sorts
MODULES = ["hlo/mlp_block.hlo", "jax_programs/lax_fori.hlo", "jax_programs/lax_scatter_modes.hlo",
           "jax_programs/lax_scan.stablehlo.mlir", "jax_programs/lax_sort_multi.hlo"]


@pytest.mark.parametrize("name", MODULES)
def test_export_runs_without_a_compiler_and_matches_compile(name, tmp_path):
    m = hlotune.load_hlo(DATA / name)
    out = hlotune.export_library(m, tmp_path / "lib")
    args = m.random_inputs(3)
    want = hlotune.compile(m)(*args)
    want = want if isinstance(want, tuple) else (want,)
    np.savez(tmp_path / "in.npz", *args)
    script = ("import sys, numpy as np, hlotune\n"
              "lib = hlotune.load_library(sys.argv[1])\n"
              "a = np.load(sys.argv[2]); r = lib(*[a[f'arr_{k}'] for k in range(len(a.files))])\n"
              "np.savez(sys.argv[3], *(r if isinstance(r, tuple) else (r,)))\n")
    bare = tmp_path / "bin"        # an empty PATH: no gcc, no cc (python is called by its full path)
    bare.mkdir()
    env = {**os.environ, "PATH": str(bare), "CC": "no-such-compiler"}
    subprocess.run([sys.executable, "-c", script, str(out), str(tmp_path / "in.npz"), str(tmp_path / "o.npz")],
                   env=env, check=True, timeout=120)
    got = np.load(tmp_path / "o.npz")
    assert len(got.files) == len(want)
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{k}"], np.asarray(w))


def test_the_c_example_calls_the_library(tmp_path):
    m = hlotune.load_hlo(DATA / "hlo/mlp_block.hlo")
    out = hlotune.export_library(m, tmp_path / "lib")
    subprocess.run(["gcc", "example.c", "-L.", "-lhlotune_module", "-Wl,-rpath,.", "-o", "example"], cwd=out,
                   check=True, timeout=120)
    printed = float(subprocess.run(["./example"], cwd=out, capture_output=True, text=True, check=True).stdout)
    zeros = [np.zeros(t.shape, t.dtype.np) for t in m.params]
    assert printed == pytest.approx(float(np.asarray(hlotune.compile(m)(*zeros)).reshape(-1)[0]), rel=1e-5)
    header = (out / "hlotune_module.h").read_text()
    assert "int hlotune_run(const void* const inputs[], void* const outputs[]);" in header
    assert "float32[128, 512]" in header


def test_host_only_ops_are_refused_by_name(tmp_path):
    m = hlotune.load_hlo(DATA / "jax_programs/fft_real.hlo")
    with pytest.raises(ExportError, match="fft"):
        hlotune.export_library(m, tmp_path / "lib")


def test_a_library_refuses_a_cpu_without_its_instructions_and_a_folder_that_is_no_export(tmp_path):
    out = hlotune.export_library(hlotune.load_hlo(DATA / "hlo/mlp_block.hlo"), tmp_path / "lib")
    man = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({**man, "isa": [*man["isa"], "quantum_fma"]}))
    with pytest.raises(ExportError, match="quantum_fma"):
        hlotune.load_library(out)
    with pytest.raises(ExportError, match="not an hlotune library"):
        hlotune.load_library(tmp_path)


def test_cli_exports_a_module_and_refuses_host_ops(tmp_path):
    from hlotune.cli import main
    assert main(["export", str(DATA / "hlo/mlp_block.hlo"), "--out", str(tmp_path / "lib")]) == 0
    assert (tmp_path / "lib" / "libhlotune_module.so").is_file()
    assert main(["export", str(DATA / "jax_programs/fft_real.hlo"), "--out", str(tmp_path / "x")]) == 2


@pytest.mark.skipif(shutil.which("objcopy") is None, reason="binutils' objcopy is not installed")
def test_library_calls_cost_less_than_the_python_runtime(tmp_path):
    import time
    m = hlotune.load_hlo(DATA / "jax_programs/lax_fori.hlo")
    lib = hlotune.load_library(hlotune.export_library(m, tmp_path / "lib"))
    c = hlotune.compile(m)
    args = m.random_inputs()

    def per_call(f):
        f(*args)
        best = np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(200):
                f(*args)
            best = min(best, (time.perf_counter() - t0) / 200)
        return best
    assert per_call(lib) < per_call(c)
