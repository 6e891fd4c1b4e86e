"""Cold measurements (``TuneOptions.cold``): calls take turns over copies of a candidate's
arguments so that each finds its inputs out of the caches, as the kernels of a program whose
data outgrow the caches do."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from autotune_fixtures import matmul_tanh
from hlotune.autotune import worker
from hlotune.autotune.database import Database
from hlotune.autotune.measure import Measurer
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tune import cold_bytes, tune_graph
from hlotune.dsl.errors import ConfigError
from hlotune.runtime.targets import get_target

import hlotune
from hlotune import dsl

CPU = get_target("cpu")


def _request(m: Measurer, so: str, cold: int) -> dict:
    return {"backend": "cpu", "op": "run", "so": so, "inputs": m.inputs, "expected": m.expected,
            "out": m.out_specs, "rtol": m.rtol, "atol": m.atol, "repeat": 2, "min_repeat_ms": 5.0,
            "cold_bytes": cold}


def _cold_bytes_given(monkeypatch) -> list:
    """The ``cold_bytes`` each Measurer made from now on is given, in order."""
    given = []
    real = Measurer.__init__

    def spy(self, task, **kw):
        given.append(kw.get("cold_bytes"))
        real(self, task, **kw)
    monkeypatch.setattr(Measurer, "__init__", spy)
    return given


def test_every_argument_set_is_called_and_the_sets_span_the_bytes():
    """A matmul (48x32 @ 32x40, then tanh) timed cold over 64 KiB: the worker makes copies
    whose bytes with the originals' reach 64 KiB; after timing, every copy's output holds the
    answer (each set was called) and the timing is an ordinary result."""
    outs, ins = matmul_tanh()
    task = extract_tasks(outs, ins, CPU)[0]
    m = Measurer(task, cold_bytes=64 << 10)
    try:
        b = m.build(None)
        assert b.failure is None, b.message
        cache: dict = {}
        rep = worker.handle(_request(m, b.fields["so"], 64 << 10), cache)
        assert rep["ok"] and rep["times"], rep
        (sets,) = [v for k, v in cache.items() if k.startswith("cold:")]
        one = sum(np.load(p).nbytes for p in m.inputs) + sum(math.prod(s) * 4 for s, _ in m.out_specs)
        assert len(sets) == -(-(64 << 10) // one) - 1 and (len(sets) + 1) * one >= 64 << 10
        want = [np.load(p) for p in m.expected]
        for set_ins, set_outs in sets:
            assert all(a is not b for a, b in zip(set_ins, (np.load(p) for p in m.inputs)))
            for got, w in zip(set_outs, want):
                np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)
    finally:
        m.close()


def test_the_sets_are_capped_and_kept_per_task():
    ins = [np.ones(16, np.float32)]
    outs = [np.zeros(16, np.float32)]
    cache: dict = {}
    req = {"inputs": ["a.npy"], "cold_bytes": 1 << 30}
    sets = worker._cold_sets(ins, outs, req, cache)
    assert len(sets) == worker.MAX_COLD_SETS - 1
    assert worker._cold_sets(ins, outs, req, cache) is sets
    worker._cold_sets(ins, outs, {"inputs": ["b.npy"], "cold_bytes": 1 << 10}, cache)
    assert [k for k in cache if k.startswith("cold:")] == ["cold:1024:b.npy"]


def test_auto_goes_cold_when_the_inputs_fill_half_of_the_last_level_cache():
    llc = CPU.hardware.l3 or CPU.hardware.l2
    small = [dsl.placeholder((16, 16), "float32", name="s")]
    n = llc // 2 // 4 + 1024           # just over half of the cache in f32
    big = [dsl.placeholder((n,), "float32", name="b")]
    assert cold_bytes(small, CPU, "auto") == 0
    assert cold_bytes(big, CPU, "auto") == 2 * llc
    assert cold_bytes(small, CPU, True) == 2 * llc and cold_bytes(big, CPU, False) == 0
    with pytest.raises(ConfigError) as e:
        cold_bytes(small, CPU, "yes")
    assert e.value.knob == "cold"


def test_a_cold_tuning_run_records_checked_trials(tmp_path, monkeypatch):
    """tune_graph with cold=True hands every measurer the cold bytes and its trials are timed
    and recorded as any; the API refuses a bad value before anything runs."""
    made = _cold_bytes_given(monkeypatch)
    outs, ins = matmul_tanh()
    db = Database(tmp_path / "c.db")
    res = tune_graph(outs, ins, CPU, 4, db, "random", seed=0, batch=2, repeat=2, min_repeat_ms=1.0,
                     progress=False, cold=True, confirm_rounds=0)
    llc = CPU.hardware.l3 or CPU.hardware.l2
    assert made and set(made) == {2 * llc}
    assert sum(r.trials for r in res) == 4 and all(r.best_time and r.best_time > 0 for r in res)
    with pytest.raises(ConfigError) as e:
        hlotune.tune(Path(__file__).parent / "data" / "hlo" / "mlp_block.hlo", trials=2, db=str(tmp_path / "x.db"), cold="sometimes")
    assert e.value.knob == "cold"


def test_the_cli_takes_caches_and_refuses_other_values(tmp_path, capsys, monkeypatch):
    """``hlotune tune --caches cold`` tunes with cold measurements; another value is refused
    by name with exit 2 and no database made."""
    from hlotune.cli import main
    seen = _cold_bytes_given(monkeypatch)
    hlo = str(Path(__file__).parent / "data" / "hlo" / "bias_relu.hlo")
    db = tmp_path / "t.db"
    assert main(["tune", hlo, "--trials", "2", "--db", str(db), "--caches", "cold", "--quiet"]) == 0
    llc = CPU.hardware.l3 or CPU.hardware.l2
    assert seen and set(seen) == {2 * llc} and Database(db).workloads()
    bad = tmp_path / "u.db"
    with pytest.raises(SystemExit) as e:
        main(["tune", hlo, "--trials", "2", "--db", str(bad), "--caches", "warm"])
    assert e.value.code == 2 and "--caches" in capsys.readouterr().err and not bad.exists()
