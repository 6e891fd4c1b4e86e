"""One tuning run at a time per (database, run): an advisory ``flock`` on a lock file next to
the database (``<db>.<run id>.lock``, holding the owner's pid).

Two identical ``hlotune tune`` commands would otherwise both resume the same run, each measuring
the whole budget on the same cores (64 trials under a 32-trial run, every time disturbed by
the other). The second one now stops with ``RunLockedError`` naming the first one's pid. The
kernel releases the lock when its process dies, however it dies; the file is removed on release
(a holder re-checks after locking that the file it locked is still the one at the path).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..dsl.errors import RunLockedError

log = logging.getLogger(__name__)


def lock_path(db_path: str, run: str) -> Path:
    return Path(f"{db_path}.{run}.lock")


@contextmanager
def run_lock(db_path: str, run: str) -> Iterator[Path | None]:
    """Hold the lock of ``run`` on database ``db_path`` (nothing to lock for ``:memory:``)."""
    if db_path == ":memory:":
        yield None
        return
    path = lock_path(db_path, run)
    fd = _acquire(path, db_path, run)
    try:
        yield path
    finally:
        try:
            path.unlink()
        except OSError:
            pass
        os.close(fd)     # releases the flock


def _acquire(path: Path, db_path: str, run: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLockedError(
                f"tuning run {run} on {db_path} is already being measured by process {holder} (the same "
                "module, target, trials, tuner and seed); wait for it to finish (running this again then finds the "
                "run complete), or change --seed, --trials or --db to tune alongside it") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            log.debug("locked %s", path)
            return fd
        os.close(fd)     # the holder removed it between our open and our lock: try again


__all__ = ["lock_path", "run_lock"]
