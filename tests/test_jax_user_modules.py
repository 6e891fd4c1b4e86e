"""Modules a new user wrote with JAX (``bench/make_jax_user_modules.py``: lowered with
``jax.jit(f).lower(x).compiler_ir('hlo').as_hlo_text()`` and XLA:CPU's optimized text), run by
hlotune on the CPU and compared with JAX's outputs: the front-end is general, not fitted to the
corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _checks import run_module_file

DATA = Path(__file__).parent / "data" / "jax_user"
NAMES = sorted(p.name[:-4] for p in DATA.glob("*.hlo") if not p.name.endswith(".opt.hlo"))


def test_there_are_user_modules():
    assert len(NAMES) >= 10


@pytest.mark.parametrize("form", [".hlo", ".opt.hlo"])
@pytest.mark.parametrize("name", NAMES)
def test_user_module_matches_jax(name, form):
    rows = run_module_file(DATA / f"{name}{form}", DATA / f"{name}.npz")
    assert all(r["ok"] for r in rows), rows
