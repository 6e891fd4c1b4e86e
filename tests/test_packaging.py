"""pyproject.toml installs every package folder: a non-editable install (a wheel) holds only the
packages listed, so a subpackage left out imports in a checkout and fails for users."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"hlotune": "hlotune", "dsl": "hlotune.dsl", "frontend": "hlotune.frontend",
           "schedules": "hlotune.schedules", "runtime": "hlotune.runtime", "autotune": "hlotune.autotune"}


def _package_folders() -> dict[str, str]:
    """package name -> folder, for every folder under the six top folders holding __init__.py."""
    out = {}
    for top, pkg in FOLDERS.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            name = ".".join([pkg, *rel.parts]) if rel.parts else pkg
            out[name] = init.parent.relative_to(ROOT).as_posix()
    return out


def test_every_package_folder_is_installed():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = _package_folders()
    assert len(found) >= 10
    assert set(found) == set(cfg["packages"]), "pyproject.toml [tool.setuptools] packages"
    for name, folder in found.items():
        assert cfg["package-dir"].get(name) == folder, name
