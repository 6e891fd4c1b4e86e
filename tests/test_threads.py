"""The CPU thread count: ``threads=`` in the API, ``--threads`` in the CLI and
``$HLOTUNE_THREADS``; it is part of the target's key (configs tuned with another count do not
apply) and of the generated code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlotune
from hlotune.cli import main
from hlotune.dsl.errors import TargetError
from hlotune.runtime.targets import get_target

HLO = Path(__file__).parent / "data" / "hlo"


def test_thread_count_is_in_the_key_and_the_code():
    one, two = get_target("cpu", threads=1), get_target("cpu", threads=2)
    assert (one.threads, two.threads) == (1, 2) and one.key != two.key
    m = hlotune.load_hlo(HLO / "mlp_block.hlo")
    z = np.load(HLO / "mlp_block.npz")
    ins = [z[f"arg{k}"] for k in range(len(m.params))]
    outs = {}
    for n in (1, 2):
        cm = hlotune.compile(m, threads=n)
        assert cm.target.threads == n
        outs[n] = np.asarray(cm(*ins))
        src = "\n".join(k.source for k in cm.kernels)
        assert ("omp_get_max_threads() < 2 ? omp_get_max_threads() : 2" in src) == (n == 2)
        np.testing.assert_allclose(outs[n], z["out0"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[1], outs[2], rtol=1e-5, atol=1e-6)


def test_environment_variable_and_bad_values(monkeypatch):
    monkeypatch.setenv("HLOTUNE_THREADS", "1")
    assert get_target("cpu").threads == 1
    assert get_target("cpu", threads=2).threads == 2        # the argument wins over the variable
    monkeypatch.setenv("HLOTUNE_THREADS", "two")
    with pytest.raises(TargetError, match="HLOTUNE_THREADS"):
        get_target("cpu")
    monkeypatch.delenv("HLOTUNE_THREADS")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(TargetError, match="threads"):
            hlotune.compile(HLO / "softmax.hlo", threads=bad)


def test_cli_threads(tmp_path, capsys):
    db = str(tmp_path / "t.db")
    assert main(["tune", str(HLO / "softmax.hlo"), "--trials", "2", "--db", db, "--threads", "1", "--quiet"]) == 0
    assert main(["run", str(HLO / "softmax.hlo"), "--db", db, "--threads", "1", "--inputs", str(HLO / "softmax.npz"),
                 "--check", str(HLO / "softmax.npz")]) == 0
    rep = hlotune.report(db).tasks()
    assert len(rep) >= 1
    with pytest.raises(SystemExit):
        main(["run", str(HLO / "softmax.hlo"), "--threads", "0"])
    assert "--threads" in capsys.readouterr().err
