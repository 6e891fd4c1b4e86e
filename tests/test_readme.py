"""The README's commands and Python snippets, run top to bottom as written (issue 16, part 4),
in a scratch folder that sees the repository's ``tests/`` data. A Python snippet runs on its
own unless its first line says it continues the one before; shell commands run with bash.
Commands skipped here, each for the reason in ``SKIP``: installing packages, the test suite
itself, OpenCL devices and Dask clusters (tests/test_opencl*.py and tests/test_dask*.py cover
those)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: a fragment of a command -> why the command is not run here
SKIP = {
    "pip install": "installs packages: the test runs in the environment already installed",
    "python -m pytest": "runs the test suite this test belongs to",
    "--target opencl": "needs an OpenCL device, and tuning one takes minutes (tests/test_opencl_tuning.py)",
    "--dask": "needs a Dask cluster (tests/test_dask.py starts a local one)",
}
OPENCL_SNIPPET = "needs an OpenCL device"


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of each fenced block, in order."""
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.DOTALL | re.MULTILINE)]


def commands(code: str) -> list[str]:
    """The commands of a bash block (continued lines joined; comment lines dropped)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [c.strip() for c in joined.splitlines() if c.strip() and not c.strip().startswith("#")]


def after_install(cmd: str) -> str:
    """``cmd`` without a leading ``pip install ... &&`` (the test runs in the installed environment)."""
    return re.sub(r"^pip install [^&]*&&\s*", "", cmd)


def skip_reason(cmd: str) -> str | None:
    for frag, why in SKIP.items():
        if frag in cmd:
            return why
    return None


def _opencl_device() -> bool:
    from hlotune.dsl.errors import HlotuneError
    try:
        from hlotune.runtime import opencl
        return bool(opencl.devices())
    except HlotuneError:     # no pyopencl: MissingDependencyError
        return False


def test_readme_parses_into_commands_and_snippets():
    kinds = [lang for lang, _ in blocks(README.read_text())]
    assert kinds.count("bash") >= 3 and kinds.count("python") >= 4
    text = README.read_text()
    assert "## From JAX" in text and "hlotune.jax_op" in text and "## Requirements" in text
    assert "gcc" in text and "OpenMP" in text


@pytest.mark.timeout(600)
def test_readme_runs_top_to_bottom(tmp_path, monkeypatch):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               MPLBACKEND="Agg")
    ran, skipped, namespace = [], [], None
    for k, (lang, code) in enumerate(blocks(README.read_text())):
        if lang == "bash":
            for cmd in map(after_install, commands(code)):
                why = skip_reason(cmd)
                if why:
                    skipped.append((cmd, why))
                    continue
                r = subprocess.run(["bash", "-c", cmd], check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
                                   timeout=300)
                assert r.returncode == 0, f"README command failed: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
                ran.append(cmd)
        elif lang == "python":
            first = code.lstrip().splitlines()[0]
            if OPENCL_SNIPPET in first and not _opencl_device():
                skipped.append((first, "needs an OpenCL device"))
                continue
            if not first.startswith("# continues") or namespace is None:
                namespace = {"__name__": f"readme_snippet_{k}"}
            exec(compile(code, f"README.md (block {k})", "exec"), namespace)   # noqa: S102 - the README's own code
            ran.append(first)
    assert any(c.startswith("hlotune tune") for c in ran) and any(c.startswith("hlotune run") for c in ran)
    assert (tmp_path / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "top.md").read_text().startswith("|")
    assert (tmp_path / "tuning.db").stat().st_size > 0   # the README's first command: tune into SQLite
    assert {why for _, why in skipped} <= set(SKIP.values()) | {"needs an OpenCL device"}
