"""Tuning on OpenCL devices: the ``devices`` listing, OpenCL templates, candidates measured in the
isolated worker (built there from the rendered source and launch specs), the OpenCL target's
provenance in the database, tuned compiles, and typed failures of broken candidates.

Runs on ``$HLOTUNE_OPENCL_DEVICE`` (default ``opencl``); skipped when pyopencl or a device that
builds kernels is missing.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hlotune.autotune.database import Database
from hlotune.autotune.measure import Measurer
from hlotune.dsl.errors import ConfigError, ScheduleError
from hlotune.dsl.reference import evaluate
from hlotune.runtime.targets import get_target
from test_opencl import DEVICE, TARGET, WHY

import hlotune
from hlotune.cli import main

needs_device = pytest.mark.skipif(TARGET is None, reason=WHY)
FAST = dict(batch=3, repeat=2, min_repeat_ms=1.0, progress=False)

DOT_HLO = """HloModule jit_small_dot, entry_computation_layout={(f32[32,24]{1,0}, f32[24,40]{1,0})->f32[32,40]{1,0}}

ENTRY main.1 {
  a.1 = f32[32,24]{1,0} parameter(0)
  b.1 = f32[24,40]{1,0} parameter(1)
  ROOT dot.1 = f32[32,40]{1,0} dot(a.1, b.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

RED_HLO = """HloModule jit_small_reduce, entry_computation_layout={(f32[64,48]{1,0})->f32[64]{0}}

region_0.1 {
  a.3 = f32[] parameter(0)
  b.4 = f32[] parameter(1)
  ROOT add.5 = f32[] add(a.3, b.4)
}

ENTRY main.2 {
  x.1 = f32[64,48]{1,0} parameter(0)
  exp.1 = f32[64,48]{1,0} exponential(x.1)
  constant.1 = f32[] constant(0)
  ROOT reduce.1 = f32[64]{0} reduce(exp.1, constant.1), dimensions={1}, to_apply=region_0.1
}
"""


@pytest.fixture
def hlo_files(tmp_path):
    dot, red = tmp_path / "small_dot.hlo", tmp_path / "small_reduce.hlo"
    dot.write_text(DOT_HLO)
    red.write_text(RED_HLO)
    return dot, red


# ----------------------------------------------------------------------------- devices

def test_devices_lists_cpu_and_opencl_devices(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cpu: ") and "threads" in out
    cpu = get_target("cpu")
    assert f"key {cpu.key}" in out and f"({cpu.provenance['cpu_id']})" in out
    assert f"vector ISA {', '.join(cpu.hardware.isa)}" in out or not cpu.hardware.isa
    if TARGET is not None:
        assert f"opencl:{TARGET.platform_index}:{TARGET.device_index}  {TARGET.device}" in out
        for word in ("driver", "compute units", "max work-group", "local mem", "fp16", "fp64",
                     "[default for 'opencl']"):
            assert word in out, word
    elif WHY.startswith("pyopencl"):
        assert "opencl: unavailable" in out


def test_devices_without_pyopencl_says_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyopencl", None)
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "cpu: " in out and "opencl: unavailable" in out and "hlotune[opencl]" in out


def test_devices_without_devices_says_so(monkeypatch, capsys):
    pytest.importorskip("pyopencl")
    from hlotune.runtime import opencl as ocl
    monkeypatch.setattr(ocl, "devices", lambda: ())
    assert main(["devices"]) == 0
    assert "no OpenCL platform or device found" in capsys.readouterr().out


# ----------------------------------------------------------------------------- templates

@needs_device
def test_opencl_templates_bind_and_reject_bad_combinations():
    from hlotune.autotune.task import extract_tasks
    m = hlotune.load_hlo(DOT_HLO)
    task, = extract_tasks(m.outputs, m.params, TARGET)
    assert task.family == "dot" and {"local_x", "local_y", "tile_x", "tile_y"} <= set(task.space.names)
    cfg = {**task.space.default(), "local_x": 4, "local_y": 8, "tile_x": 2, "tile_y": 4, "cache_write": 1}
    threads = {st.thread for st in task.schedule(cfg).steps if hasattr(st, "thread")}
    assert threads == {"group.x", "group.y", "local.x", "local.y"}
    with pytest.raises(ConfigError, match="local_x"):
        task.schedule({**cfg, "local_x": 3})
    with pytest.raises(ScheduleError, match="work-group of 512"):   # 16 x 32 work-items > 256
        task.schedule({**cfg, "local_x": 16, "local_y": 32})


@needs_device
@pytest.mark.parametrize("cfg", [
    {"layout": "stride", "local_x": 4, "local_y": 8, "tile_x": 2, "tile_y": 4, "cache_write": 0},
    {"layout": "block", "local_x": 4, "local_y": 8, "tile_x": 2, "tile_y": 4, "cache_write": 1, "local_mem": 1,
     "split_k": 8},
    {"layout": "stride", "local_x": 8, "local_y": 4, "tile_x": 4, "tile_y": 2, "cache_write": 0, "local_mem": 1,
     "split_k": 4},
    {"layout": "block", "local_x": 4, "local_y": 2, "tile_x": 2, "tile_y": 4, "cache_write": 1, "vector": 1},
    {"layout": "block", "local_x": 2, "local_y": 1, "tile_x": 4, "tile_y": 8, "cache_write": 0, "vector": 1,
     "local_mem": 1, "split_k": 8},
])
def test_opencl_dot_template_layouts_and_local_memory(cfg):
    from hlotune.autotune.task import extract_tasks
    m = hlotune.load_hlo(DOT_HLO)
    task, = extract_tasks(m.outputs, m.params, TARGET)
    s = task.schedule({**task.space.default(), **cfg})
    f = hlotune.build(s, TARGET)
    ins = task.random_inputs(0)
    np.testing.assert_allclose(f(*ins), evaluate(list(s.graph.outputs), ins)[0], rtol=1e-4, atol=1e-4)
    assert ("__local float" in f.source) == bool(cfg.get("local_mem"))
    assert (f"vstore{cfg['tile_y']}(" in f.source) == bool(cfg.get("vector"))
    with pytest.raises(ScheduleError, match="local_mem needs split_k > 1"):
        task.schedule({**task.space.default(), **cfg, "local_mem": 1, "split_k": 1})


@needs_device
@pytest.mark.parametrize("cfg", [{"local_k": 16, "per_item": 1}, {"local_k": 32, "per_item": 4, "split_k": 4,
                                                                   "unroll_k": 1}])
def test_opencl_reduction_template_tree_across_work_items(cfg):
    from hlotune.autotune.task import extract_tasks
    m = hlotune.load_hlo(RED_HLO)
    task, = extract_tasks(m.outputs, m.params, TARGET)
    assert task.family == "reduction" and "local_k" in task.space.names
    s = task.schedule({**task.space.default(), "local": 1, "order": "inner", **cfg})
    f = hlotune.build(s, TARGET)
    ins = task.random_inputs(0)
    np.testing.assert_allclose(f(*ins), evaluate(list(s.graph.outputs), ins)[0], rtol=1e-5, atol=1e-5)
    assert f.launches[0].local_size == (cfg["local_k"],) and "__local float" in f.source
    with pytest.raises(ScheduleError, match="local_k > 1 .* needs local=1"):
        task.schedule({**task.space.default(), **cfg, "local": 4})


# ----------------------------------------------------------------------------- tuning

@needs_device
def test_tune_dot_and_reduction_on_opencl_db_compile_and_report(hlo_files, tmp_path, capsys):
    dot, red = hlo_files
    db = str(tmp_path / "t.db")
    assert main(["tune", str(dot), "--target", DEVICE, "--trials", "6", "--db", db, "-q", "--tuner", "random",
                 "--batch", "3"]) == 0
    assert "tuned jit_small_dot" in capsys.readouterr().out
    res = hlotune.tune(red, target=DEVICE, trials=6, db=db, tuner="random", **FAST)
    assert [r.task.family for r in res] == ["reduction"] and res[0].trials == 6
    # both tasks ran tuned (bound) OpenCL configs that passed the check against the reference
    d = Database(db)
    hist = [t for t in d.history() if t.target == TARGET.key and t.failure != "invalid"]
    assert len(hist) == 12
    ok = [t for t in hist if t.ok and t.config]
    assert {d.workload(t.workload)["family"] for t in ok} == {"dot", "reduction"}
    # the database's target record carries the OpenCL provenance
    tg = {t["key"]: t for t in d.targets()}[TARGET.key]
    assert tg["kind"] == "opencl"
    for k in ("device", "driver_version", "opencl_version", "platform", "compute_units", "max_work_group_size"):
        assert tg["provenance"][k] == TARGET.provenance[k], k
    assert tg["provenance"]["device"] == TARGET.device
    # a tuned compile on the device uses the best configs and gives the reference answer
    for path in (dot, red):
        m = hlotune.load_hlo(path)
        cm = hlotune.compile(m, DEVICE, db=db)
        ins = m.random_inputs(3)
        np.testing.assert_allclose(cm(*ins), evaluate(m.outputs, ins)[0], rtol=1e-4, atol=1e-4)
    dm = hlotune.load_hlo(dot)
    best = d.best(next(t.workload for t in ok if d.workload(t.workload)["family"] == "dot"), TARGET.key)
    if best.config:
        assert "get_local_id" in hlotune.compile(dm, DEVICE, db=db).kernels[0].source
    # the same module tuned on the cpu too: the tasks view shows both targets
    hlotune.tune(dot, target="cpu", trials=3, db=db, tuner="random", **FAST)
    assert main(["report", "--db", db, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    dot_rows = [ln for ln in out.splitlines() if ln.startswith("dot") or ",dot," in ln]
    assert any(TARGET.key in ln for ln in dot_rows) and any("cpu-" in ln for ln in dot_rows)
    assert ",opencl," in out and ",cpu," in out
    # OpenCL configs validate against the OpenCL templates' domains on import
    log = str(tmp_path / "log.jsonl")
    assert main(["export", log, "--db", db]) == 0
    assert main(["import", log, "--db", str(tmp_path / "other.db")]) == 0
    assert "skipped 0" in capsys.readouterr().out


_CRASH = "__kernel void {name}() {{ ((__global volatile float*)0x10)[get_global_id(0) * 1000003L] = 1.0f; }}\n"


@needs_device
@pytest.mark.parametrize("fault, failure", [("crash", "runtime_error"), ("garbage", "compile_error"),
                                            ("noop", "wrong_answer")])
def test_broken_opencl_candidate_is_a_typed_failure_and_tuning_goes_on(tmp_path, monkeypatch, fault, failure):
    """A candidate whose program crashes the worker, does not build or computes nothing costs one
    trial; the run continues with the next candidates in a fresh worker."""
    original = Measurer.build
    state = {"n": 0}

    def build(self, config):
        b = original(self, config)
        if config and b.fields is not None and state["n"] == 0:   # the first tuned candidate
            state["n"] += 1
            prog = b.fields["program"]
            names = [ln["name"] for ln in prog["launches"]]
            if fault == "garbage":
                src = "__kernel void oops( { this is not OpenCL C }\n"
            else:
                body = _CRASH if fault == "crash" else "__kernel void {name}() {{ }}\n"
                src = "".join(body.format(name=n) for n in names)
            b.fields = {"program": {**prog, "source": src, "launches": [{**ln, "args": []} for ln in prog["launches"]]}}
        return b

    monkeypatch.setattr(Measurer, "build", build)
    db = Database(tmp_path / "t.db")
    m = hlotune.load_hlo(RED_HLO)
    res = hlotune.tune(m, target=DEVICE, trials=5, db=db, tuner="random", seed=2, timeout=10.0, **FAST)
    hist = db.history()
    assert len([t for t in hist if t.failure != "invalid"]) == 5 and res[0].trials == 5
    fails = [t for t in hist if t.failure and t.failure != "invalid"]
    assert [t.failure for t in fails] == [failure], [(t.failure, t.message[:200]) for t in hist]
    assert sum(1 for t in hist if t.ok and t.config) >= 1   # tuning went on after it
    if failure == "compile_error":
        assert "OpenCL build" in fails[0].message
