"""Which results files describe the code as it is: ``python -m bench.stale``.

Each results/NAME.env.json records the commit its benchmark ran on and whether the tree was
clean. For each, this lists that commit, the tree state, and the commits since then that
changed hlotune's code (dsl/, frontend/, schedules/, runtime/, autotune/, hlotune/, bench/):
a file with any is stale until its benchmark runs again. Exits 1 when a file is stale or was made
from a dirty tree, so it can gate a release.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .common import RESULTS, md_table

CODE = ("dsl", "frontend", "schedules", "runtime", "autotune", "hlotune", "bench")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=RESULTS.parent, check=False).stdout


def status() -> list[list]:
    """[results file, its commit, tree, code commits since] for every results file."""
    rows = []
    for env_file in sorted(RESULTS.glob("*.env.json")):
        env = json.loads(env_file.read_text())
        commit = env.get("hlotune_commit", "unknown")
        tree = env.get("tree", "not recorded")
        known = commit not in ("", "unknown") and _git("cat-file", "-t", commit).strip() == "commit"
        since = len(_git("rev-list", f"{commit}..HEAD", "--", *CODE).split()) if known else None
        rows.append([env_file.name.removesuffix(".env.json"), commit, tree,
                     "unknown commit" if since is None else since])
    return rows


def main() -> int:
    rows = status()
    print(md_table(["results", "commit", "tree", "code commits since"], rows))
    bad = [r for r in rows if r[3] != 0 or r[2] != "clean"]
    print(f"\n{len(bad)} of {len(rows)} results files are stale or not from a clean tree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
