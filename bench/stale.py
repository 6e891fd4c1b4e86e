"""Which results files describe the code as it is: ``python -m bench.stale``.

Each results/NAME.env.json records the commit its benchmark ran on and whether the tree was
clean. For each, this lists that commit, the tree state, and the commits since then that
changed hlotune's code (dsl/, frontend/, schedules/, runtime/, autotune/, hlotune/) or the
benchmark that wrote it (bench/NAME.py, and its stem: models_cpu_plans is bench/models_cpu.py):
a file with any is stale until its benchmark runs again. Exits 1 when a file is stale or was made
from a dirty tree, so it can gate a release.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .common import RESULTS, md_table

CODE = ("dsl", "frontend", "schedules", "runtime", "autotune", "hlotune")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=RESULTS.parent, check=False).stdout


def status() -> list[list]:
    """[results file, its commit, tree, code commits since] for every results file."""
    rows = []
    for env_file in sorted(RESULTS.glob("*.env.json")):
        env = json.loads(env_file.read_text())
        name = env_file.name.removesuffix(".env.json")
        commit = env.get("hlotune_commit", "unknown")
        tree = env.get("tree", "not recorded")
        known = commit not in ("", "unknown") and _git("cat-file", "-t", commit).strip() == "commit"
        script = [f"bench/{p}.py" for p in (name, name.split("_plans")[0], name.rsplit("_", 1)[0])
                  if (RESULTS.parent / "bench" / f"{p}.py").exists()][:1]
        since = len(_git("rev-list", f"{commit}..HEAD", "--", *CODE, *script).split()) if known else None
        rows.append([name, commit, tree,
                     "unknown commit" if since is None else since])
    return rows


BANNER = "> **Stale:**"


def mark(rows: list[list]) -> int:
    """Put (or refresh) a banner at the top of each stale results/NAME.md saying so, with its
    commit; remove it from files that are current. Returns how many are marked."""
    n = 0
    for name, commit, tree, since in rows:
        md = RESULTS / f"{name}.md"
        if not md.exists():
            continue
        lines = md.read_text().splitlines(keepends=True)
        lines = [ln for ln in lines if not ln.startswith(BANNER)]
        if since != 0 or tree != "clean":
            why = (f"{since} commit(s) changed hlotune's code since this was measured at {commit}"
                   if since != "unknown commit" else f"made at an unknown commit ({commit})")
            why += "" if tree == "clean" else f"; the tree was {tree}"
            head = lines[:1] if lines and lines[0].startswith("# ") else []
            lines = head + [f"{BANNER} {why} (`python -m bench.stale`); its figures describe that code.\n"] + \
                lines[len(head):]
            n += 1
        md.write_text("".join(lines))
    return n


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mark", action="store_true", help="write a banner into each stale results/NAME.md")
    args = ap.parse_args()
    rows = status()
    print(md_table(["results", "commit", "tree", "code commits since"], rows))
    bad = [r for r in rows if r[3] != 0 or r[2] != "clean"]
    print(f"\n{len(bad)} of {len(rows)} results files are stale or not from a clean tree")
    if args.mark:
        print(f"marked {mark(rows)} results files as stale")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
