"""Faults around tuning: one run at a time per database (autotune/lock.py), scratch folders of
killed runs removed at start-up, and kernel caches only loaded when private (runtime/cachedir.py)."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from autotune_fixtures import matmul_tanh
from hlotune.autotune.lock import lock_path, run_lock
from hlotune.autotune.measure import Measurer
from hlotune.autotune.task import extract_tasks
from hlotune.dsl.errors import CompileError, RunLockedError
from hlotune.runtime import cachedir
from hlotune.runtime.cpu import Library, compile_c
from hlotune.runtime.targets import get_target

import hlotune
from hlotune import dsl

HERE = Path(__file__).parent
SMALL = """HloModule small

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[64,48]{1,0} parameter(0)
  e = f32[64,48]{1,0} exponential(x)
  z = f32[] constant(0)
  ROOT r = f32[64]{0} reduce(e, z), dimensions={1}, to_apply=add
}
"""


def _env(tmp_path, **extra):
    env = dict(os.environ, PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    env.setdefault("HLOTUNE_CACHE", str(tmp_path / "cache"))
    return env


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ----------------------------------------------------------------------------- run lock

def test_run_lock_excludes_the_same_run_only(tmp_path):
    db = str(tmp_path / "t.db")
    with run_lock(db, "run1") as path:
        assert path == lock_path(db, "run1") and path.read_text() == str(os.getpid())
        with pytest.raises(RunLockedError, match=rf"process {os.getpid()}.*--seed"), run_lock(db, "run1"):
            pass
        with run_lock(db, "run2"):          # another run on the same database
            pass
    assert not lock_path(db, "run1").exists()
    with run_lock(db, "run1"):              # free again
        pass
    with run_lock(":memory:", "run1") as p, run_lock(":memory:", "run1"):
        assert p is None


def test_a_killed_holder_releases_the_lock(tmp_path):
    db = str(tmp_path / "t.db")
    code = ("import sys, time; from hlotune.autotune.lock import run_lock\n"
            "with run_lock(sys.argv[1], 'r'):\n    print('locked', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, db], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=str(p.pid)), run_lock(db, "r"):
            pass
    finally:
        p.kill()
        p.wait()
    with run_lock(db, "r"):                 # the kernel dropped the dead holder's lock
        pass


def _measured(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM trials WHERE failure IS NULL OR failure != 'invalid'").fetchone()[0]


def test_the_same_tune_command_twice_at_once(tmp_path):
    """The second of two identical 'hlotune tune' commands stops with a clear error instead of
    measuring a second budget into the first one's run."""
    hlo = tmp_path / "small.hlo"
    hlo.write_text(SMALL)
    db = tmp_path / "t.db"
    cmd = [sys.executable, "-m", "hlotune.cli", "tune", str(hlo), "--trials", "10", "--db", str(db),
           "--tuner", "random", "-q"]
    first = subprocess.Popen(cmd, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("t.db.*.lock")) and time.monotonic() < deadline:
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        second = subprocess.run(cmd, env=_env(tmp_path), capture_output=True, text=True, timeout=120, check=False)
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert second.returncode == 2 and "already being measured by process" in second.stderr, second.stderr
    assert _measured(db) == 10
    assert not list(tmp_path.glob("*.lock"))
    again = subprocess.run(cmd, env=_env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0 and _measured(db) == 10      # resumed: nothing left to measure


# ----------------------------------------------------------------------------- scratch folders

def test_stale_scratch_folders_are_removed(tmp_path):
    dead, live = _dead_pid(), os.getpid()
    made = {name: tmp_path / name for name in [
        f"hlotune_measure_{dead}_abc", f"hlotune_build_{dead}_x1", f"hlotune_cache_{dead}_q",
        f"hlotune_measure_{live}_mine", "hlotune_measure_oldstyle", "hlotune_measure_fresh", "other_dir"]}
    for p in made.values():
        p.mkdir()
        (p / "in0.npy").write_bytes(b"x")
    old = time.time() - 2 * cachedir.STALE_UNNAMED_S
    os.utime(made["hlotune_measure_oldstyle"], (old, old))
    (tmp_path / f"hlotune_measure_{dead}_file").write_text("not a folder")
    removed = {p.name for p in cachedir.clean_stale_scratch(tmp_path)}
    assert removed == {f"hlotune_measure_{dead}_abc", f"hlotune_build_{dead}_x1", f"hlotune_cache_{dead}_q",
                       "hlotune_measure_oldstyle"}
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {f"hlotune_measure_{live}_mine", "hlotune_measure_fresh", "other_dir",
                    f"hlotune_measure_{dead}_file"}


def test_a_killed_tuning_run_leaves_scratch_that_the_next_run_removes(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = _env(tmp_path, TMPDIR=str(scratch))
    p = subprocess.Popen([sys.executable, str(HERE / "autotune_fixtures.py"), str(tmp_path / "k.db"), "200", "0"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(scratch.glob(f"hlotune_measure_{p.pid}_*")) and time.monotonic() < deadline:
            assert p.poll() is None
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    leaked = list(scratch.glob(f"hlotune_measure_{p.pid}_*"))
    assert leaked and (leaked[0] / "in0.npy").exists()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    outs, ins = matmul_tanh()
    m = Measurer(extract_tasks(outs, ins, get_target("cpu"))[0], repeat=1, min_repeat_ms=1.0)
    try:
        assert not any(x.exists() for x in leaked)
        assert Path(m.dir.name).parent == scratch and f"_{os.getpid()}_" in Path(m.dir.name).name
    finally:
        m.close()


# ----------------------------------------------------------------------------- kernel cache

SRC = """#include <stdint.h>
void hl_entry(void** args) { ((float*)args[1])[0] = ((float*)args[0])[0] + %d.0f; }
double hl_bench(void** args, int64_t n) { return 0.0; }
"""


def _kernel_works(path: Path, k: int) -> bool:
    lib = Library(path)
    a, out = np.array([1.5], np.float32), np.zeros(1, np.float32)
    lib.entry(lib.pack([a, out]))
    return out[0] == 1.5 + k


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("HLOTUNE_CACHE", str(root))
    cachedir._private.cache_clear()
    yield root
    cachedir._private.cache_clear()


def test_cache_is_private_and_reused(cache):
    a = compile_c(SRC % 1)
    assert a.parent == cache / "cpu" and oct(a.stat().st_mode & 0o777) == "0o755"
    assert (cache / "cpu").stat().st_mode & 0o777 == 0o700
    assert compile_c(SRC % 1) == a and _kernel_works(a, 1)


def test_a_cached_kernel_others_can_write_is_rebuilt(cache, caplog):
    a = compile_c(SRC % 2)
    a.write_bytes(b"not a library")            # what a tamperer would leave ...
    a.chmod(0o666)                             # ... in a file the whole machine may write
    with caplog.at_level(logging.WARNING, logger="hlotune.runtime.cpu"):
        b = compile_c(SRC % 2)
    assert b == a and "writable by" in caplog.text and "rebuilding" in caplog.text
    assert a.stat().st_mode & 0o022 == 0 and _kernel_works(b, 2)


def test_a_cache_folder_others_can_write_is_not_used(cache, caplog):
    (cache / "cpu").mkdir(parents=True)
    (cache / "cpu").chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="hlotune.runtime.cachedir"):
        a = compile_c(SRC % 3)
    assert cache not in a.parents and "is writable by group and others (mode 777)" in caplog.text
    assert _kernel_works(a, 3)
    (cache / "cpu").chmod(0o700)
    cache.chmod(0o775)                         # the root too: a group member could swap 'cpu'
    cachedir._private.cache_clear()
    assert cache not in compile_c(SRC % 3).parents


@pytest.mark.skipif(os.getuid() != 0, reason="making a file of another owner needs root")
def test_files_of_another_owner_are_refused(cache):
    a = compile_c(SRC % 4)
    os.chown(a, 65534, 65534)
    assert "belongs to uid 65534" in cachedir.unsafe_file(a)
    with pytest.raises(CompileError, match="refusing to load"):
        Library(a)
    assert compile_c(SRC % 4) == a and a.stat().st_uid == 0     # rebuilt, ours again


def test_library_refuses_writable_or_linked_files(cache, tmp_path):
    a = compile_c(SRC % 5)
    a.chmod(0o646)
    with pytest.raises(CompileError, match="writable by others"):
        Library(a)
    a.chmod(0o755)
    link = tmp_path / "link.so"
    link.symlink_to(a)
    with pytest.raises(CompileError, match="not a regular file"):
        Library(link)


def test_whole_modules_still_compile_through_the_checked_cache(cache):
    A = dsl.placeholder((8,), "float32", name="A")
    B = dsl.compute((8,), lambda i: A[i] * 2.0, name="B")
    f = hlotune.build(hlotune.Schedule(B), target="cpu")
    np.testing.assert_array_equal(f(np.arange(8, dtype=np.float32)), np.arange(8, dtype=np.float32) * 2)


def test_opencl_vendor_folder_is_used_only_as_written(cache, monkeypatch, caplog):
    """The ICD files there name the driver libraries the OpenCL loader dlopens."""
    from hlotune.runtime import opencl
    if not list((Path(sys.prefix) / "etc" / "OpenCL" / "vendors").glob("*.icd")):
        pytest.skip("no pip-installed OpenCL drivers")
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    opencl._icd_vendors()
    first = Path(os.environ["OCL_ICD_VENDORS"])
    assert cache in first.parents and sorted(p.suffix for p in first.iterdir()) == [".icd"] * len(list(first.iterdir()))
    for tamper in (lambda: (first / "evil.icd").write_text("/tmp/evil.so"),
                   lambda: (first / "evil.icd").unlink() or next(first.iterdir()).chmod(0o666)):
        tamper()
        monkeypatch.delenv("OCL_ICD_VENDORS")
        with caplog.at_level(logging.WARNING, logger="hlotune.runtime.opencl"):
            opencl._icd_vendors()
        used = Path(os.environ["OCL_ICD_VENDORS"])
        assert cache not in used.parents and "using a private copy" in caplog.text
        assert sorted(p.name for p in used.iterdir()) == sorted(p.name for p in first.iterdir() if p.name != "evil.icd")
