"""Folders hlotune writes and later loads from: the compile cache and scratch folders.

Compiled kernels are loaded by name, so a cache folder or file that another user can write is
a way to run their code in this process. ``cache_dir`` hands out ``$HLOTUNE_CACHE/<kind>``
(default ``~/.cache/hlotune``) only when it and its root belong to this user (or root) and
are not writable by group or others (a sticky root such as ``/tmp`` is fine); otherwise it
logs a warning and uses a private temporary folder for the rest of the process.
``unsafe_file`` says why a cached file must not be loaded.

Scratch folders are named ``hlotune_<kind>_<pid>_*`` in the temp dir; ``clean_stale_scratch``
removes those whose process is gone (a killed tuning run cannot clean up after itself).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
import time
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

#: scratch folders without a pid in their name (older versions) count as stale after this long
STALE_UNNAMED_S = 24 * 3600
_SCRATCH = re.compile(r"^hlotune_(measure|build|cache)_(?:(\d+)_)?")


def cache_root() -> Path:
    return Path(os.environ.get("HLOTUNE_CACHE", Path.home() / ".cache" / "hlotune"))


def _owner_ok(st: os.stat_result) -> bool:
    return st.st_uid in (os.getuid(), 0)


def _writable(st: os.stat_result) -> str:
    who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002)) if st.st_mode & bit)
    return f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"


def unsafe_dir(path: Path) -> str | None:
    """Why folder ``path`` is not safe to load code from, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not _owner_ok(st):
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return _writable(st)
    return None


def unsafe_file(path: Path) -> str | None:
    """Why file ``path`` must not be loaded (not a regular file, another owner, writable by
    group or others), or None."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if not _owner_ok(st):
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return _writable(st)
    return None


def cache_dir(kind: str) -> Path:
    """The checked cache folder of ``kind`` (see the module docstring)."""
    root = cache_root()
    d = root / kind
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        return _private(kind, str(d), f"cannot be created ({e.strerror})")
    why = unsafe_dir(root)
    if why is None:
        why = unsafe_dir(d)
    else:
        d = root
    if why is None and not os.access(d, os.W_OK | os.X_OK):
        why = "is not writable by you"
    return d if why is None else _private(kind, str(d), why)


@cache
def _private(kind: str, where: str, why: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=f"hlotune_cache_{os.getpid()}_")) / kind
    d.mkdir(mode=0o700)
    log.warning("cache folder %s %s: not loading code from it; using the private folder %s for this "
                "process (fix its owner and mode, or set HLOTUNE_CACHE)", where, why, d)
    return d


def install(built: Path, dest: Path) -> Path:
    """Move file ``built`` (made in a scratch folder, possibly on another filesystem such as a
    tmpfs ``TMPDIR``) to ``dest`` atomically: copied beside ``dest`` first, then renamed, so
    concurrent builders agree and readers never see a partial file."""
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        shutil.copyfile(built, tmp)
        os.chmod(tmp, os.stat(built).st_mode & 0o755)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def scratch_dir(kind: str) -> tempfile.TemporaryDirectory:
    """A private temporary folder named for this process (``hlotune_<kind>_<pid>_*``)."""
    return tempfile.TemporaryDirectory(prefix=f"hlotune_{kind}_{os.getpid()}_")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # someone else's process
        return True
    return True


def clean_stale_scratch(tmp: str | Path | None = None) -> list[Path]:
    """Remove this user's scratch folders in ``tmp`` (the temp dir) whose process has died
    (or, named without a pid, untouched for a day). Returns the removed folders."""
    tmp = Path(tmp or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return removed
    now = time.time()
    for e in entries:
        m = _SCRATCH.match(e.name)
        if not m:
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        pid = m.group(2)
        stale = not _alive(int(pid)) if pid else now - st.st_mtime > STALE_UNNAMED_S
        if stale and pid != str(os.getpid()):
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(Path(e.path))
    if removed:
        log.info("removed %d stale scratch folder(s) of dead processes from %s", len(removed), tmp)
    return removed


__all__ = ["cache_dir", "cache_root", "clean_stale_scratch", "scratch_dir", "unsafe_dir", "unsafe_file"]
