"""Faults and trust on a Dask cluster (autotune/cluster.py): a worker killed mid-run, futures
lost and resubmitted, results checked as data, TLS security options."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")

from autotune_fixtures import matmul_tanh
from hlotune.autotune.cluster import DaskMeasurer, connect, security
from hlotune.autotune.database import Database
from hlotune.autotune.measure import MeasureResult
from hlotune.autotune.task import extract_tasks
from hlotune.autotune.tune import tune_graph
from hlotune.dsl.errors import ClusterError
from hlotune.runtime.targets import get_target
from hlotune.schedules.steps import step_to_json

import hlotune
from hlotune.cli import main

CPU = get_target("cpu")
FAST = {"repeat": 2, "min_repeat_ms": 1.0, "progress": False}
OPTS = {"repeat": 2, "min_repeat_ms": 1.0}


def _cluster(**kw):
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, **kw)


def _task():
    outs, ins = matmul_tanh()
    return extract_tasks(outs, ins, CPU)[0]


def test_killing_a_worker_mid_run_loses_no_trial(tmp_path):
    """Kill one of two workers once 2 trials are in: the run still measures its whole budget,
    and every measured trial is a good one."""
    outs, ins = matmul_tanh()
    path = tmp_path / "k.db"
    Database(path)
    killed = threading.Event()
    with _cluster() as cluster, distributed.Client(cluster) as client:
        victim = min(client.run(os.getpid).values())

        def kill():
            db = Database(path)
            deadline = time.monotonic() + 120
            while len(db.history()) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(victim, signal.SIGKILL)
            killed.set()
        th = threading.Thread(target=kill, daemon=True)
        th.start()
        res = tune_graph(outs, ins, CPU, 10, Database(path), "random", seed=3, batch=4, dask=client, **FAST)
        th.join(5)
    assert killed.is_set()
    measured = [t for t in Database(path).history() if t.failure != "invalid"]
    assert sum(r.trials for r in res) == 10 == len(measured)
    assert all(t.ok for t in measured), [(t.failure, t.message[:200]) for t in measured if not t.ok]


class _Losing(DaskMeasurer):
    """Cancels the first ``lose`` submissions of every candidate (as a dying worker would)."""

    def __init__(self, *a, lose: int = 1, **kw):
        super().__init__(*a, **kw)
        self.lose, self.sent = lose, {}

    def _submit(self, config):
        fut = super()._submit(config)
        k = str(config)
        self.sent[k] = self.sent.get(k, 0) + 1
        if self.sent[k] <= self.lose:
            fut.cancel()
        return fut


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, distributed.Client(cluster) as c:
        yield c


def test_lost_candidates_are_submitted_again(client):
    m = _Losing(_task(), client, lose=2, **OPTS)        # lost twice, measured on the third try
    rs = m.measure([None, {}])
    assert [r.failure for r in rs] == [None, None] and all(len(r.times) == 2 for r in rs)
    assert m.sent == {"None": 3, "{}": 3}


def test_a_candidate_lost_too_often_is_a_runtime_error(client):
    m = _Losing(_task(), client, lose=10, retries=2, **OPTS)
    (r,) = m.measure([None])
    assert r.failure == "runtime_error" and "lost its Dask worker 3 times" in r.message
    assert r.times == [] and m.sent == {"None": 3}
    assert r.infra        # the cluster's fault: a tuning run does not record it, a later one measures it


def test_an_infrastructure_failure_is_not_recorded_and_a_rerun_measures_it(client, tmp_path, monkeypatch):
    outs, ins = matmul_tanh()
    path = tmp_path / "i.db"
    monkeypatch.setattr("hlotune.autotune.cluster.DaskMeasurer", lambda task, c, **kw: _Losing(task, c, lose=10, **kw))
    tune_graph(outs, ins, CPU, 3, Database(path), "random", seed=1, dask=client, **FAST)
    assert Database(path).history() == []          # nothing lost its worker for a reason of its own
    monkeypatch.undo()
    tune_graph(outs, ins, CPU, 3, Database(path), "random", seed=1, dask=client, **FAST)
    assert len([t for t in Database(path).history() if t.ok]) == 3


def test_losing_every_worker_stops_the_run_after_a_stated_wait(tmp_path):
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        m = DaskMeasurer(_task(), c, no_worker_s=2.0, **OPTS)
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match="every Dask worker was lost.*2 s.*run the same command again"):
            m.measure([None])
        assert time.monotonic() - t0 < 30


def _good(task, config=None):
    steps = [step_to_json(x) for x in task.schedule(config).steps]
    return MeasureResult(config or {}, steps, [1e-4, 1.2e-4], None, "", 1.0, 2.0)


@pytest.mark.parametrize("what,forge,words", [
    ("not a result", lambda r: {"times": r.times}, "not a MeasureResult"),
    ("another config", lambda r: MeasureResult({"mr": 4}, r.steps, r.times), "not the one sent"),
    ("NaN time", lambda r: MeasureResult({}, r.steps, [float("nan")]), "implausible"),
    ("negative time", lambda r: MeasureResult({}, r.steps, [-1.0]), "implausible"),
    ("huge time", lambda r: MeasureResult({}, r.steps, [1e308]), "implausible"),
    ("tiny time", lambda r: MeasureResult({}, r.steps, [1e-300]), "implausible"),
    ("bool time", lambda r: MeasureResult({}, r.steps, [True]), "not a list of numbers"),
    ("no times", lambda r: MeasureResult({}, r.steps, []), "without times"),
    ("failure with times", lambda r: MeasureResult({}, r.steps, [1e-3], "timeout"), "with times"),
    ("unknown failure", lambda r: MeasureResult({}, r.steps, [], "pwned"), "unknown failure"),
    ("other steps", lambda r: MeasureResult({}, [{"step": "Parallel", "stage": "x"}], r.times), "steps"),
])
def test_worker_results_are_checked_as_data(what, forge, words):
    task = _task()
    m = DaskMeasurer(task, client=None, **OPTS)
    good = _good(task)
    ok = m.validate(None, good)
    assert ok.failure is None and ok.times == good.times and ok.steps == good.steps and ok is not good
    bad = m.validate(None, forge(good))
    assert bad.failure == "runtime_error" and words in bad.message, (what, bad.message)
    assert bad.times == [] and bad.config == {}


# ----------------------------------------------------------------------------- security


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (needed to make test certificates)")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=hlotune-test"],
                   check=True, capture_output=True)
    return d


def test_security_specs(certs, tmp_path):
    spec = tmp_path / "sec.yaml"
    (tmp_path / "c.pem").write_bytes((certs / "cert.pem").read_bytes())
    spec.write_text("tls_ca_file: c.pem\ntls_client_cert: c.pem\n"
                    f"tls_client_key: {certs / 'key.pem'}\n")
    s = security(str(spec))          # relative names are relative to the spec file
    assert s.require_encryption and s.tls_ca_file == str(tmp_path / "c.pem")
    s2 = security(f"tls_ca_file={certs}/cert.pem,require_encryption=false")
    assert not s2.require_encryption and security(s2) is s2
    for bad, words in [("tls_ca_file=/nonexistent/ca.pem", "does not exist"), ("tls_cafile=x", "unknown option"),
                       ("tls_ca_file", "Dask security file"), ("require_encryption=maybe,tls_ca_file=" + str(certs / "cert.pem"),
                                                           "not a boolean"),
                       (str(tmp_path / "missing.yaml"), "Dask security file"), (42, "got int")]:
        with pytest.raises(ClusterError, match=words):
            security(bad)
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ClusterError, match="mapping"):
        security(str(tmp_path / "list.yaml"))


def test_tls_cluster_through_cli_and_api(certs, tmp_path, capsys):
    roles = {f"tls_{r}_{k}": str(certs / f) for r in ("scheduler", "worker", "client")
             for k, f in (("cert", "cert.pem"), ("key", "key.pem"))}
    sec = distributed.security.Security(tls_ca_file=str(certs / "cert.pem"), require_encryption=True, **roles)
    spec = tmp_path / "sec.json"
    spec.write_text(f'{{"tls_ca_file": "{certs}/cert.pem", "tls_client_cert": "{certs}/cert.pem", '
                    f'"tls_client_key": "{certs}/key.pem"}}')
    with _cluster(security=sec, protocol="tls://") as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tls://")
        with pytest.raises(ClusterError, match="speaks TLS"):
            connect(addr)
        with pytest.raises(ClusterError, match="not a tls:// address"):
            connect(addr.replace("tls://", "tcp://"), str(spec))
        db = tmp_path / "t.db"
        assert main(["tune", "tests/data/hlo/bias_relu.hlo", "--trials", "3", "--db", str(db), "--tuner", "random",
                     "-q", "--dask", addr, "--dask-security", str(spec)]) == 0
        assert "tuned" in capsys.readouterr().out
        assert len([t for t in Database(db).history() if t.ok]) >= 2
        res = hlotune.tune("tests/data/hlo/bias_relu.hlo", trials=3, db=str(tmp_path / "a.db"), tuner="random",
                           dask=addr, security=sec, **FAST)
        assert sum(r.trials for r in res) == 3
    assert main(["tune", "tests/data/hlo/bias_relu.hlo", "--trials", "2", "--db", str(tmp_path / "x.db"),
                 "--dask-security", str(spec), "-q"]) == 2
    assert "without a Dask scheduler" in capsys.readouterr().err
