"""Bad input to the CLI and the Python API: a clear typed error and a non-zero exit, never a
traceback, and nothing measured, created or silently changed first (issue 10, item 3)."""

from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hlotune.autotune.database import Database
from hlotune.dsl import dtypes as dt
from hlotune.dsl.errors import ConfigError, DataFileError, KernelArgumentError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlotune
from hlotune.cli import _exact_cast, main

DATA = Path(__file__).parent / "data" / "hlo"
BIAS = str(DATA / "bias_relu.hlo")
INT = str(DATA / "int32_arith.hlo")


def _fail(argv, capsys, *words) -> str:
    """Run the CLI expecting rc 2 and an error naming ``words``; returns stderr."""
    try:
        rc = main(argv)
    except SystemExit as e:            # argparse refuses a bad option value
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and "error" in err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.mark.parametrize("argv, option", [
    (["tune", BIAS, "--trials", "0"], "--trials"),
    (["tune", BIAS, "--trials", "-5"], "--trials"),
    (["tune", BIAS, "--trials", "many"], "--trials"),
    (["tune", BIAS, "--batch", "0"], "--batch"),
    (["tune", BIAS, "--timeout", "0"], "--timeout"),
    (["tune", BIAS, "--timeout", "nan"], "--timeout"),
    (["tune", BIAS, "--seed", "-1"], "--seed"),
    (["tune", BIAS, "--seed", str(2**32)], "--seed"),
    (["tune", BIAS, "--budget", "0"], "budget"),
    (["tune", BIAS, "--budget", "5x"], "budget"),
    (["tune", BIAS, "--budget", "-3m"], "budget"),
    (["tune", BIAS, "--budget", "inf"], "budget"),
    (["run", BIAS, "--rtol", "-1"], "--rtol"),
    (["run", BIAS, "--atol", "-1e-3"], "--atol"),
    (["run", BIAS, "--rtol", "inf"], "--rtol"),
    (["run", BIAS, "--repeat", "0"], "--repeat"),
    (["run", BIAS, "--repeat", "-3"], "--repeat"),
])
def test_bad_option_values_are_refused_naming_the_option(argv, option, tmp_path, capsys):
    db = tmp_path / "t.db"
    _fail(argv + (["--db", str(db)] if argv[0] == "tune" else []), capsys, option)
    assert not db.exists()


def test_unknown_tuner_fails_before_anything_is_measured(tmp_path, capsys, monkeypatch):
    from hlotune.autotune import measure

    def no_measuring(*a, **k):
        raise AssertionError("measured before checking the tuner")
    monkeypatch.setattr(measure.Measurer, "measure", no_measuring)
    db = tmp_path / "t.db"
    _fail(["tune", BIAS, "--tuner", "foo", "--db", str(db), "-q"], capsys, "unknown tuner 'foo'", "random")
    assert not db.exists()
    with pytest.raises(ConfigError, match="tuner"):
        hlotune.tune(BIAS, tuner="foo", db=str(db))
    assert not db.exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trials=st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=3)),
       seed=st.one_of(st.integers(min_value=0, max_value=2**32 - 1), st.just(None)))
def test_api_tune_refuses_non_positive_trials_before_work(tmp_path, trials, seed):
    db = tmp_path / "never.db"
    with pytest.raises(ConfigError, match="trials"):
        hlotune.tune(BIAS, trials=trials, seed=seed or 0, db=str(db))
    assert not db.exists()


@pytest.mark.parametrize("seed", [-1, 2**32, 2**70, 1.5, True])
def test_api_tune_refuses_seeds_numpy_cannot_take(tmp_path, seed):
    with pytest.raises(ConfigError, match="seed"):
        hlotune.tune(BIAS, trials=2, seed=seed, db=str(tmp_path / "t.db"))


def test_db_in_a_missing_folder_is_refused_not_created(tmp_path, capsys):
    db = tmp_path / "no" / "such" / "t.db"
    _fail(["tune", BIAS, "--trials", "2", "--db", str(db), "-q"], capsys, "does not exist", str(db.parent))
    assert not (tmp_path / "no").exists()
    log = tmp_path / "log.jsonl"
    log.write_text("")
    _fail(["import", str(log), "--db", str(db)], capsys, "does not exist")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("argv", [["report"], ["report", "--view", "trials"], ["export", "LOG"], ["run", BIAS]])
def test_missing_database_is_refused_not_created(argv, tmp_path, capsys):
    db = tmp_path / "missing.db"
    argv = [str(tmp_path / "x.jsonl") if a == "LOG" else a for a in argv]
    _fail(argv + ["--db", str(db)], capsys, "no tuning database", "hlotune tune")
    assert sorted(tmp_path.iterdir()) == []
    with pytest.raises(DataFileError, match="no tuning database"):
        hlotune.report(str(db))
    with pytest.raises(DataFileError, match="no tuning database"):
        hlotune.compile(BIAS, db=str(db))
    assert sorted(tmp_path.iterdir()) == []


def _corruptions(tmp_path) -> dict:
    """Files that are not usable tuning databases, each named by what is wrong."""
    good = tmp_path / "good.db"
    db = Database(good)
    db.add_workload("a" * 20, "elementwise", {"inputs": [], "outputs": [[4]], "reduce": []}, ["float32"], "w")
    db.close()
    out = {}
    out["random bytes"] = tmp_path / "random.db"
    out["random bytes"].write_bytes(np.random.default_rng(0).bytes(9000))
    out["truncated"] = tmp_path / "truncated.db"
    out["truncated"].write_bytes(good.read_bytes()[:1500])
    out["sqlite not tuning"] = tmp_path / "other.db"
    con = sqlite3.connect(out["sqlite not tuning"])
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    out["newer schema"] = tmp_path / "newer.db"
    shutil.copy(good, out["newer schema"])
    con = sqlite3.connect(out["newer schema"])
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    out["a folder"] = tmp_path / "folder.db"
    out["a folder"].mkdir()
    return out


def test_corrupt_databases_are_clear_errors_in_every_command(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text("")
    for why, path in _corruptions(tmp_path).items():
        before = path.read_bytes() if path.is_file() else None
        for argv in (["tune", BIAS, "--trials", "1", "-q", "--tuner", "random"], ["run", BIAS], ["report"],
                     ["export", str(tmp_path / "out.jsonl")], ["import", str(log)]):
            err = _fail(argv + ["--db", str(path)], capsys)
            assert str(path) in err or "tuning database" in err, (why, argv, err)
            if why == "newer schema":
                assert "upgrade hlotune" in err
        assert (path.read_bytes() if path.is_file() else None) == before, why   # left as it was
        with pytest.raises(DataFileError):
            Database(path)


def _npz(path, **arrays) -> str:
    np.savez(path, **arrays)
    return str(path)


def test_inputs_that_are_not_npz_archives_of_arrays(tmp_path, capsys):
    text = tmp_path / "text.npz"
    text.write_text("arg0 = 1, 2, 3\n")
    _fail(["run", BIAS, "--inputs", str(text)], capsys, "not an npz archive", "np.savez")
    obj = _npz(tmp_path / "obj.npz", arg0=np.array([object(), 1], dtype=object))
    _fail(["run", BIAS, "--inputs", obj], capsys, "arg0", "cannot be read")
    one = tmp_path / "one.npy"
    np.save(one, np.zeros(3))
    _fail(["run", BIAS, "--inputs", str(one)], capsys, "one .npy array", "np.savez")
    _fail(["run", BIAS, "--inputs", str(tmp_path / "none.npz")], capsys, "does not exist")
    _fail(["run", BIAS, "--check", str(text)], capsys, "reference", "not an npz archive")
    ref = np.load(DATA / "int32_arith.npz")
    _fail(["run", INT, "--inputs", _npz(tmp_path / "short.npz", arg0=ref["arg0"])], capsys, "no array 'arg1'")
    _fail(["run", INT, "--inputs", _npz(tmp_path / "shape.npz", arg0=ref["arg0"][:3], arg1=ref["arg1"])], capsys,
          "shape")


def test_inputs_are_refused_when_the_cast_would_change_values(tmp_path, capsys):
    ref = dict(np.load(DATA / "int32_arith.npz"))
    big = ref["arg0"].astype(np.int64)
    big[0, 0] = 2**32 + 77          # becomes 77 as int32: --check would pass on the wrong input
    p = _npz(tmp_path / "big.npz", **{**ref, "arg0": big, "out0": ref["out0"]})
    _fail(["run", INT, "--inputs", p, "--check", p], capsys, "int64", "int32", str(2**32 + 77), "becomes 77")
    nan = ref["arg0"].astype(np.float64)
    nan[1, 2] = np.nan              # was INT_MIN
    _fail(["run", INT, "--inputs", _npz(tmp_path / "nan.npz", **{**ref, "arg0": nan})], capsys, "nan", "[1, 2]")
    frac = ref["arg0"].astype(np.float64) + 0.5
    _fail(["run", INT, "--inputs", _npz(tmp_path / "frac.npz", **{**ref, "arg0": frac})], capsys, "changes values")
    x = np.load(DATA / "bias_relu.npz")
    tenth = np.full(x["arg0"].shape, 0.1)         # float64 0.1 is no float32
    _fail(["run", BIAS, "--inputs", _npz(tmp_path / "f64.npz", arg0=tenth, arg1=x["arg1"])], capsys, "float32")
    # exact casts are taken: int32 values stored as float64 still give XLA's answers
    ok = _npz(tmp_path / "exact.npz", **{**ref, "arg0": ref["arg0"].astype(np.float64),
                                         "arg1": ref["arg1"].astype(np.int64)})
    assert main(["run", INT, "--inputs", ok, "--check", str(DATA / "int32_arith.npz")]) == 0
    assert "check passed" in capsys.readouterr().out


@settings(max_examples=300, deadline=None)
@given(data=st.data(), src=st.sampled_from(["int64", "uint8", "float64", "float32", "bool"]),
       dst=st.sampled_from(["int32", "int8", "uint8", "float32", "float16", "float64", "bool"]))
def test_exact_cast_takes_exactly_the_value_preserving_casts(data, src, dst):
    from hlotune.dsl.tensor import placeholder
    from hypothesis.extra.numpy import arrays
    a = data.draw(arrays(np.dtype(src), st.integers(1, 6)))
    t = placeholder(a.shape, dt.dtype(dst), "p")
    if all(_roundtrips(v, src, dst) for v in a.tolist()):
        b = _exact_cast(a, t, "x")
        assert b.dtype == np.dtype(dst)
        assert all(_same(u, w) for u, w in zip(b.tolist(), a.tolist()))
    else:
        with pytest.raises(KernelArgumentError, match="changes values"):
            _exact_cast(a, t, "x")


def _roundtrips(v, src, dst) -> bool:
    """Whether scalar ``v`` (of dtype ``src``) survives a cast to ``dst`` and back, by
    Python arithmetic (exact rationals) rather than numpy's cast."""
    from fractions import Fraction
    kind = np.dtype(dst).kind
    if isinstance(v, float) and not math.isfinite(v):
        return kind == "f"
    if kind == "b":
        return v in (0, 1)
    if kind in "iu":
        info = np.iinfo(dst)
        return Fraction(v) == int(Fraction(v)) and info.min <= v <= info.max
    with np.errstate(all="ignore"):
        w = np.array(v, dtype=np.dtype(src)).astype(dst)
    return bool(np.isfinite(w)) and Fraction(float(w)) == Fraction(v)


def _same(u, w) -> bool:
    return u == w or (isinstance(u, float) and isinstance(w, float) and math.isnan(u) and math.isnan(w))
