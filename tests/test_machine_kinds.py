"""Machines of one model name but other cores: the target's key tells them apart, and a
database recorded on one teaches another (warm start, cost model) without being taken as its own.
Virtual machines often name every AMD EPYC generation alike ('AMD EPYC'), AVX2-only or AVX-512."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hlotune.autotune import costmodel
from hlotune.autotune.database import Database
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tune import tune_graph, warm_start_configs
from hlotune.runtime import targets
from hlotune.runtime.backends import cpu as cpu_backend
from hlotune.runtime.targets import get_target
from hlotune.schedules.hardware import Hardware

sys.path.insert(0, str(Path(__file__).parent))
from autotune_fixtures import matmul_tanh

OTHER_ID = "GenuineTest 99 99"   # no real CPU's vendor/family/model


def test_the_key_tells_apart_cpus_of_one_model_name(monkeypatch):
    """Same model name, compiler and threads: another family/model, or another vector ISA, is
    another target; the key is stable otherwise, and the provenance says what was detected."""
    here = get_target("cpu")
    key, prov = here.key, here.provenance
    assert prov["cpu_id"] == targets.cpu_identity() and prov["hardware"] == here.hardware.as_dict()
    assert Hardware.from_dict(prov["hardware"]) == here.hardware
    assert get_target("cpu").key == key
    with monkeypatch.context() as m:
        m.setattr(targets, "cpu_identity", lambda: OTHER_ID)
        assert here.key != key and here.provenance["cpu_model"] == prov["cpu_model"]
    hw = here.hardware
    narrower = replace(hw, isa=tuple(i for i in hw.isa if not i.startswith("avx512")) + ("test-isa",))
    with monkeypatch.context() as m:
        m.setattr(cpu_backend, "detect", lambda cc, flags, threads: narrower)
        assert here.key != key
    assert here.key == key


def _dot(outs_ins, target):
    return next(t for t in extract_tasks(*outs_ins, target) if t.family == "dot")


def test_a_database_from_another_machine_teaches_but_is_not_its_own(tmp_path, monkeypatch):
    """Tuned on 'another machine' (another CPU id), a dot's records stay that machine's: here
    the same dot has no best of its own, but a sibling shape's warm start offers them."""
    db = Database(tmp_path / "db.sqlite")
    with monkeypatch.context() as m:
        m.setattr(targets, "cpu_identity", lambda: OTHER_ID)
        there = get_target("cpu")
        there_key = there.key
        tune_graph(*matmul_tanh(64, 48, 32), there, 6, db, "random", 0, progress=False, confirm_rounds=0,
                   plan_share=0.0)
    here = get_target("cpu")
    assert here.key != there_key
    same = _dot(matmul_tanh(64, 48, 32), here)
    assert db.best(same.key, here.key) is None and not db.history(same.key, here.key)
    assert sum(1 for t in db.history(same.key, there_key) if t.config and t.failure is None) >= 4
    sibling = _dot(matmul_tanh(64, 64, 32), here)
    offered = warm_start_configs(db, sibling)
    top = [sibling.template.complete(t.config, sibling.space) for t in db.top_k(same.key, there_key, 8)]
    assert offered and all(c in top for c in offered)


def test_the_cost_model_reads_each_rows_own_machine():
    """A row's target and gemm features come from the hardware its provenance records (an
    AVX2 row is read with 8 lanes of fp32, not this machine's); a row recorded before
    provenance held the hardware is read as if on the machine the model serves."""
    cpu = get_target("cpu")
    dot = _dot(matmul_tanh(96, 64, 32), cpu)
    row = costmodel.task_row(dot)
    c = {**dot.space.default(), "mr": 4, "nr": 32}
    wide = Hardware(vector_bytes=64, vector_regs=32, fma=True, l1d=48 << 10, l2=1 << 20, threads=2,
                    isa=("avx512f", "fma"))
    narrow = Hardware(vector_bytes=32, vector_regs=16, fma=True, l1d=32 << 10, l2=512 << 10, threads=2,
                      isa=("avx2", "fma"))
    model = costmodel.CostModel(costmodel.Encoder.of([c]), None, 0, 0, wide)
    f = {name: model.features(row, {"threads": 2, **({"hardware": hw.as_dict()} if hw else {})}, [c])[0]
         for name, hw in (("wide", wide), ("narrow", narrow), ("old", None))}
    assert np.array_equal(f["old"], f["wide"])
    n = costmodel.N_GEMM
    assert list(f["narrow"][-n:]) == pytest.approx(costmodel.gemm_features(row, {"threads": 2}, narrow, c))
    assert list(f["narrow"][-n:]) != pytest.approx(list(f["wide"][-n:]))
    tf = costmodel.target_features({"threads": 2}, narrow)
    assert tf == pytest.approx([2.0, np.log2(33), np.log2(1 + (32 << 10)), np.log2(1 + (512 << 10))])
    assert costmodel.target_features({"threads": 2}, None) == [2.0, -1.0, -1.0, -1.0]


def test_reports_name_machines_of_one_model_name_apart():
    """Two targets named alike (model name, threads, compiler) are told apart in reports by
    their CPU id and widest ISA; a target recorded before the id was kept keeps its plain name."""
    from hlotune.autotune.report import target_names
    prov = {"kind": "cpu", "device": "AMD EPYC", "threads": 2, "compiler_version": "gcc 12"}
    names = target_names([
        {"key": "cpu-a", "kind": "cpu", "provenance": {**prov, "cpu_id": "AuthenticAMD 25 1",
                                                       "hardware": {"isa": ["avx2", "fma"]}}},
        {"key": "cpu-b", "kind": "cpu", "provenance": {**prov, "cpu_id": "AuthenticAMD 25 17",
                                                       "hardware": {"isa": ["avx512f", "avx2"]}}}])
    assert names == {"cpu-a": "cpu:AMD EPYC (AuthenticAMD 25 1, avx2)",
                     "cpu-b": "cpu:AMD EPYC (AuthenticAMD 25 17, avx512f)"}
    old = target_names([{"key": "cpu-o", "kind": "cpu", "provenance": prov},
                        {"key": "cpu-t", "kind": "cpu", "provenance": {**prov, "threads": 4}}])
    assert old == {"cpu-o": "cpu:AMD EPYC, 2 threads", "cpu-t": "cpu:AMD EPYC, 4 threads"}


@pytest.mark.parametrize("bad", [{"vector_bytes": "abc"}, {"l1d": None}, {"isa": 5}, {"l2": [1]}, {"vector_regs": -3},
                                 {"fma": 1}, {"isa": ["avx2", 7]}])
def test_malformed_hardware_is_refused_by_the_log_and_ignored_by_the_model(tmp_path, bad):
    """A log whose target provenance holds malformed hardware is refused line by line (the
    database unchanged); a row carrying it anyway is read with the serving machine's hardware."""
    import json

    from hlotune.autotune.records import import_log
    with pytest.raises(ValueError, match="hardware field"):
        Hardware.from_dict(bad)
    wide = Hardware(vector_bytes=64, vector_regs=32, l1d=48 << 10, l2=1 << 20, threads=2)
    assert costmodel.row_hardware({"hardware": bad}, wide) is wide
    db = Database(tmp_path / "src.db")
    tune_graph(*matmul_tanh(32, 16, 8), get_target("cpu"), 2, db, "random", 0, progress=False, confirm_rounds=0,
               plan_share=0.0)
    log = tmp_path / "ok.jsonl"
    db.export_jsonl(log)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    lines[0]["target"]["provenance"]["hardware"] = {**lines[0]["target"]["provenance"]["hardware"], **bad}
    badlog = tmp_path / "bad.jsonl"
    badlog.write_text(json.dumps(lines[0]) + "\n")
    dest = Database(tmp_path / "dest.db")
    res = import_log(dest, badlog, skip_bad=False)
    assert not res.committed and "hardware" in res.skipped[0][1] and not dest.history()
