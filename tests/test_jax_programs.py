"""JAX programs (bench/make_jax_programs.py, tests/data/jax_programs/) across jax.numpy, jax.nn,
jax.lax (scan, cond, while, sort, top_k, cumulative ops, gather and scatter in every mode,
rng_bit_generator), jax.random (threefry and rbg), jax.scipy.special, jnp.linalg (LAPACK custom
calls), jnp.fft, collectives over one device and jax.grad of a small CNN (pooling, transposed
convolution) and of a transformer block: each in both forms (HLO text and StableHLO) compiled
for the cpu, and the HLO form for OpenCL where a device is present (linalg, fft and rng run as
host externs there), compared with JAX's outputs under hlotune's tolerance policy; complex
outputs compare by parts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hlotune.dsl.errors import HlotuneError
from hlotune.dsl.tolerance import check

import hlotune

sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(__file__).parent / "data" / "jax_programs"
NAMES = sorted(p.name[:-4] for p in DATA.glob("*.hlo"))
FORMS = (".hlo", ".stablehlo.mlir")


def _opencl():
    try:
        import pyopencl  # noqa: F401
        from hlotune.runtime.opencl import _probe
        t = hlotune.get_target("opencl")
        return None if _probe(t.platform_index, t.device_index) else t
    except (ImportError, HlotuneError):
        return None


OPENCL = _opencl()


def run_and_compare(path: Path, npz: Path, target) -> None:
    m = hlotune.load_hlo(path)
    z = np.load(npz)
    outs = hlotune.compile(m, target=target)(*[z[f"arg{k}"] for k in range(len(m.params))])
    outs = outs if isinstance(outs, tuple) else (outs,)
    want = [z[f] for f in sorted((f for f in z.files if f.startswith("out")), key=lambda f: int(f[3:]))]
    assert len(outs) == len(want), f"{len(outs)} outputs, JAX gave {len(want)}"
    for k, (o, w) in enumerate(zip(outs, want)):
        o = np.asarray(o)
        assert o.shape == w.shape and o.dtype == w.dtype, (k, o.shape, o.dtype, w.shape, w.dtype)
        parts = [(o.real, w.real), (o.imag, w.imag)] if w.dtype.kind == "c" else [(o, w)]
        for got, ref in parts:
            c = check(got, ref)
            assert c.ok, f"out{k}: max abs {c.max_abs:g}, max rel {c.max_rel:g} (rtol {c.rtol:g}, atol {c.atol:g})"


def test_the_programs_cover_the_api():
    assert len(NAMES) >= 60
    for prefix, n in {"np_": 10, "nn_": 6, "lax_": 15, "random_": 6, "linalg_": 6, "fft_": 3, "grad_": 3,
                      "special_": 2}.items():
        assert sum(name.startswith(prefix) for name in NAMES) >= n, prefix
    for name in NAMES:
        for form in FORMS + (".npz",):
            assert (DATA / f"{name}{form}").is_file(), name + form
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 5 * 2**20


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_program_matches_jax_on_cpu(name, form):
    run_and_compare(DATA / f"{name}{form}", DATA / f"{name}.npz", "cpu")


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device that builds kernels (pyopencl, a driver)")
@pytest.mark.parametrize("name", NAMES)
def test_program_matches_jax_on_opencl(name):
    run_and_compare(DATA / f"{name}.hlo", DATA / f"{name}.npz", OPENCL)
