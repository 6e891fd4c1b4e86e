"""Measurement on a Dask cluster (autotune/cluster.py): a local cluster of worker processes
measures every candidate, the client records them; workers of another target refuse."""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")

from autotune_fixtures import matmul_tanh  # noqa: E402

import hlotune  # noqa: E402
from hlotune.autotune.cluster import measure_on_worker  # noqa: E402
from hlotune.autotune.database import Database  # noqa: E402
from hlotune.autotune.task import extract_tasks, tuned_schedule_fn  # noqa: E402
from hlotune.autotune.tune import tune_graph  # noqa: E402
from hlotune.cli import main  # noqa: E402
from hlotune.dsl.reference import evaluate  # noqa: E402
from hlotune.runtime.module import CompiledGraph  # noqa: E402
from hlotune.runtime.targets import get_target  # noqa: E402

CPU = get_target("cpu")
FAST = {"repeat": 2, "min_repeat_ms": 1.0, "progress": False}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def test_tuning_measures_on_the_cluster_and_records_locally(cluster, tmp_path):
    outs, ins = matmul_tanh()
    db = Database(tmp_path / "d.db")
    with distributed.Client(cluster) as client:
        res = tune_graph(outs, ins, CPU, 8, db, "random", seed=1, batch=2, dask=client, **FAST)
    hist = db.history()
    measured = [t for t in hist if t.failure != "invalid"]
    assert sum(r.trials for r in res) == 8 == len(measured)
    assert all(t.ok and len(t.times) == 2 and min(t.times) > 0 for t in measured)
    # the tuned configs the workers measured compile here and give the reference answer
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(t.shape).astype(np.float32) for t in ins]
    got = CompiledGraph(outs, ins, CPU, tuned_schedule_fn(db, CPU))(*arrays)
    np.testing.assert_allclose(got, evaluate(outs, arrays)[0], rtol=1e-4, atol=1e-4)


def test_cli_tune_with_a_scheduler_address(cluster, tmp_path, capsys):
    path = tmp_path / "small.hlo"
    path.write_text("""HloModule small, entry_computation_layout={(f32[64,48]{1,0})->f32[64]{0}}

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
""")
    db = tmp_path / "c.db"
    assert main(["tune", str(path), "--trials", "4", "--db", str(db), "--tuner", "random", "-q",
                 "--dask", cluster.scheduler_address]) == 0
    assert "tuned small" in capsys.readouterr().out
    assert len([t for t in Database(db).history() if t.ok]) >= 3


def test_a_worker_of_another_target_refuses_to_measure():
    outs, ins = matmul_tanh()
    task = extract_tasks(outs, ins, CPU)[0]
    opts = {"repeat": 2, "min_repeat_ms": 1.0}
    r = measure_on_worker(task, None, opts, "cpu-000000000000")    # the client tunes another machine
    assert r.failure == "runtime_error" and CPU.key in r.message and "cpu-000000000000" in r.message
    ok = measure_on_worker(task, None, opts, CPU.key)
    assert ok.failure is None and len(ok.times) == 2


def test_dask_option_through_the_public_api(cluster, tmp_path):
    m = hlotune.load_hlo("tests/data/hlo/bias_relu.hlo")
    res = hlotune.tune(m, target="cpu", trials=3, db=str(tmp_path / "a.db"), tuner="random",
                       dask=cluster.scheduler_address, **FAST)
    assert sum(r.trials for r in res) == 3
