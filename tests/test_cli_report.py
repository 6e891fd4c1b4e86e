"""The CLI and reports as a newcomer meets them (issue 16, part 3): ``--version`` from one
source, help for every option and view, npz inputs named after parameters, task names by
module/op/type never cut, trials counted alike in the tune summary and the report, progress
text naming its task, ``run``'s kernels related to ``tune``'s tasks, a default report table
within 100 columns, and a plot for every view (readable legends, distinct colours past 10
series, single-trial tasks visible, integer trial ticks)."""

from __future__ import annotations

import argparse
import re
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from hlotune.autotune.database import Database, Trial
from hlotune.autotune.report import Report, kernel_name, text_table
from hlotune.dsl.errors import KernelArgumentError
from hypothesis import given, settings
from hypothesis import strategies as st

import hlotune
from hlotune.cli import build_parser, input_keys, main

DATA = Path(__file__).parent / "data" / "hlo"
MLP = DATA / "mlp_block.hlo"
FAST = {"repeat": 1, "min_repeat_ms": 1.0}


def test_version_has_one_source(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"hlotune {version('hlotune')}" == f"hlotune {hlotune.__version__}"


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    act = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(act.choices)


def test_every_option_and_command_has_help():
    p = build_parser()
    for name, sp in {"hlotune": p, **_subparsers(p)}.items():
        for a in sp._actions:
            if isinstance(a, argparse._SubParsersAction):
                assert all(c.help for c in a._choices_actions), name
                continue
            assert a.help and a.help != argparse.SUPPRESS, (name, a.dest)


def test_report_help_explains_each_view(capsys):
    from hlotune.autotune.report import VIEWS
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = capsys.readouterr().out
    text = " ".join(out.split())
    for view, what in VIEWS.items():
        assert f"{view} {' '.join(what.split())}" in text
    assert "invalid" in text and max(len(x) for x in out.splitlines()) <= 100


def test_npz_inputs_named_after_parameters(tmp_path, capsys):
    m = hlotune.load_hlo(MLP)
    assert input_keys(m)[0] == ["arg0", "x.1", "x"]
    ins = m.random_inputs(seed=3)
    names = ["x", "w1.1", "arg2", "w2", "b2.1"]
    np.savez(tmp_path / "named.npz", **dict(zip(names, ins)))
    np.savez(tmp_path / "numbered.npz", **{f"arg{k}": a for k, a in enumerate(ins)})
    for f in ("named", "numbered"):
        assert main(["run", str(MLP), "--inputs", str(tmp_path / f"{f}.npz"), "--out", str(tmp_path / f"{f}.out.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "named.out.npz")["out0"], np.load(tmp_path / "numbered.out.npz")["out0"])
    from hlotune.cli import _load_inputs
    np.savez(tmp_path / "twice.npz", **dict(zip(names, ins)), arg0=ins[0])
    with pytest.raises(KernelArgumentError, match=r"\['arg0', 'x'\] are all parameter 0"):
        _load_inputs(m, tmp_path / "twice.npz")
    np.savez(tmp_path / "misnamed.npz", **dict(zip(["y", *names[1:]], ins)), out0=ins[0])
    with pytest.raises(KernelArgumentError, match=r"no array 'arg0' or 'x.1' or 'x' for parameter 0 \(x.1: "
                       r"float32\[128, 512\]\); the file has \['y', .*'out0'\]; parameters: arg0/x.1/x "):
        _load_inputs(m, tmp_path / "misnamed.npz")


@settings(max_examples=60, deadline=None)
@given(module=st.text("abcdefghij_.0123456789", min_size=1, max_size=90), width=st.integers(40, 120))
def test_names_wrap_at_separators_and_are_never_cut(module, width):
    import pandas as pd
    desc = "dot mul.13: (float32[128, 512], float32[512, 1024]) -> float32[128, 1024]"
    name = kernel_name(desc, module)
    assert name == f"{module}/mul.13 dot f32[128,1024]"
    lines = text_table(pd.DataFrame({"task": [name, "short"], "trials": [3, 12], "best_us": [1.5, 2000.25]}),
                       width).splitlines()
    w = lines[0].index("trials") - 1
    col = [x[:w].strip() for x in lines[2:]]
    assert "".join(c for c in col if c != "short").replace(" ", "") == name.replace(" ", "")   # nothing lost
    tokens = [t.rstrip() for t in re.findall(r"[^ /]+[ /]*", name)]
    for tok in tokens:                                  # each piece whole on one line
        assert any(tok.rstrip("/") in c for c in col), (tok, lines)
    assert all(len(x) <= len(lines[0]) for x in lines)  # columns stay aligned
    if len(lines[0]) > width:                           # too narrow only for a piece that cannot be broken
        assert w == max(len(t) for t in tokens), (width, lines)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """mlp_block tuned with 4 trials, one invalid config recorded beforehand; the CLI's output."""
    from hlotune.autotune.task import extract_tasks
    from hlotune.runtime.targets import get_target
    tmp = tmp_path_factory.mktemp("tuned")
    db_path = str(tmp / "t.db")
    m = hlotune.load_hlo(MLP)
    t = get_target("cpu")
    db = Database(db_path)
    task = extract_tasks(m.outputs, m.params, t)[0]
    task.register(db)
    db.add_trial(Trial(task.key, t.key, {"mb": 3}, [], [], failure="invalid", message="rule broken (test)"))
    db.close()
    return db_path, m


def test_tune_summary_and_report_count_trials_alike(tuned, capsys):
    db, _ = tuned
    assert main(["tune", str(MLP), "--trials", "4", "--db", db, "--tuner", "random", "-q"]) == 0
    out = capsys.readouterr().out
    assert "a budget of 4 measured trials shared among them" in " ".join(out.split())
    rows = {}
    for line in out.splitlines():
        hit = re.match(r"^(jit_mlp_block/\S+ \S+ \S+)\s+(\d+)\s+(\d+)\s+(\d+)", line)
        if hit:
            rows[hit[1]] = tuple(int(x) for x in hit.groups()[1:])
    rep = Report(Database(db, create=False)).tasks()
    assert len(rows) == 2 and set(rows) <= set(rep.task)
    for _, r in rep[rep.task.isin(rows)].iterrows():
        assert rows[r.task] == (r.trials, r.invalid, sum(r[f] for f in ("compile_error", "runtime_error",
                                                                          "wrong_answer", "timeout")))
    assert set(rows) == {"jit_mlp_block/mul.13 dot f32[128,1024]", "jit_mlp_block/add.21 dot f32[128,512]"}
    assert sum(v[1] for v in rows.values()) >= 1        # the invalid config recorded beforehand
    assert "invalid: configs that broke a template rule" in " ".join(out.split())
    assert max(len(x) for x in out.splitlines()) <= 100


def test_run_relates_its_kernels_to_tunes_tasks(tuned, capsys):
    db, _ = tuned
    assert main(["run", str(MLP), "--db", db]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("1 compiled kernel(s) (one function per segment between host ops) running 2 stage(s): 2 distinct "
            "task(s), as 'hlotune tune' counts them; 2 of them measured in") in out


def test_progress_names_the_task_it_reports(tmp_path, capsys):
    hlotune.tune(MLP, trials=4, db=str(tmp_path / "p.db"), tuner="random", progress=True, **FAST)
    err = capsys.readouterr().err
    posts = re.findall(r"(\S+ \S+ \S+): best ([\d.]+) us, default ([\d.]+) us", err)
    assert posts and {p[0] for p in posts} <= {"mul.13 dot f32[128,1024]", "add.21 dot f32[128,512]"}


def test_default_report_tables_fit_100_columns(tuned, capsys):
    db, _ = tuned
    for view in ("tasks", "schedules", "tuners", "targets", "convergence", "trials"):
        assert main(["report", "--db", db, "--view", view]) == 0
        out = capsys.readouterr().out
        assert max(len(x) for x in out.splitlines()) <= 100, (view, out)
        assert "jit_mlp_block/" in out and not re.search(r"\b[0-9a-f]{20}\b", out), (view, out)


# ---------------------------------------------------------------------------- plots
def _synthetic_db(path, n_tasks=13):
    """``n_tasks`` workloads of two modules on two targets and two tuners; task 0 has one trial."""
    db = Database(path)
    rng = np.random.default_rng(0)
    for tk, threads in (("cpu-aaaaaaaaaaaa", 2), ("cpu-bbbbbbbbbbbb", 4)):
        db.add_target(tk, "cpu", {"kind": "cpu", "device": "Test CPU", "threads": threads})
    for i in range(n_tasks):
        key = f"{i:020x}"
        db.add_workload(key, "dot", {"inputs": [[8, 8]], "outputs": [[8, i + 1]], "reduce": [8]}, ["f32"],
                        f"dot mul.{i}: (float32[8, 8], float32[8, {i + 1}]) -> float32[8, {i + 1}]", 1e6, 1e5)
        db.name_workload(key, "jit_model" if i % 2 else "jit_other")
        for tk in ("cpu-aaaaaaaaaaaa", "cpu-bbbbbbbbbbbb"):
            for tuner in ("bayes", "random"):
                n = 1 if i == 0 else 4
                for j in range(n):
                    cfg = {} if j == 0 else {"mb": int(j), "nb": int(rng.integers(1, 9))}
                    fail = "invalid" if j == 3 else None
                    times = [] if fail else [float(rng.uniform(1e-5, 1e-3))] * 2
                    db.add_trial(Trial(key, tk, cfg, [], times, failure=fail, tuner=tuner, started=i + j,
                                       finished=i + j + 0.5))
    return db


@pytest.fixture
def figures(monkeypatch):
    """The figures plots draw (saved as PNG as well)."""
    from hlotune.autotune import plots
    got = []
    save = plots._save

    def keep(plt, fig, path):
        got.append(fig)
        fig.canvas.draw()
        info = {"legend": [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()],
                "ticks": [[t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]] for ax in fig.axes],
                "lines": [(ln.get_label(), ln.get_color(), ln.get_marker(), len(ln.get_xdata())) for ax in fig.axes
                          for ln in ax.get_lines() if not ln.get_label().startswith("_")],
                "yticklabels": [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]}
        got[-1] = info
        save(plt, fig, path)
    monkeypatch.setattr(plots, "_save", keep)
    return got


@pytest.mark.parametrize("view", ["tasks", "schedules", "tuners", "targets", "convergence", "trials"])
def test_each_view_plots_with_readable_names(view, tmp_path, figures):
    pytest.importorskip("matplotlib")
    rep = Report(_synthetic_db(tmp_path / "s.db"))
    png = tmp_path / f"{view}.png"
    rep.plot(view, str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = figures[-1]
    words = " ".join(info["legend"] + info["yticklabels"])
    assert "jit_model/mul.1 dot f32[8,2]" in words or view == "targets" and "cpu:Test CPU" in words
    assert not re.search(r"[0-9a-f]{12}", words), words           # no workload or target hashes
    if view in ("tasks", "schedules", "trials", "convergence", "tuners"):
        assert "jit_other/mul.0 dot f32[8,1]" in words             # the single-trial task is there
    if view == "targets":
        assert {"cpu:Test CPU, 2 threads", "cpu:Test CPU, 4 threads"} <= set(info["legend"])


def test_convergence_series_are_distinct_visible_and_on_integer_trials(tmp_path, figures):
    pytest.importorskip("matplotlib")
    Report(_synthetic_db(tmp_path / "s.db")).plot("convergence", str(tmp_path / "c.png"))
    info = figures[-1]
    lines = info["lines"]
    assert len(lines) == 13 * 2 * 2
    looks = {(tuple(np.round(np.asarray(__import__("matplotlib").colors.to_rgba(c)), 4)), m) for _, c, m, _ in lines}
    assert len(looks) == len(lines)                                  # no two series look alike
    single = [ln for ln in lines if ln[0].startswith("jit_other/mul.0 ")]
    assert single and all(m not in ("None", "", None) and n == 1 for _, _, m, n in single)
    assert all(float(t).is_integer() for t in info["ticks"][0])
    assert all("@ cpu:Test CPU" in ln[0] and ln[0].endswith(("[bayes]", "[random]")) for ln in lines)


def test_colours_stay_distinct_past_ten():
    pytest.importorskip("matplotlib")
    from hlotune.autotune.plots import colors
    for n in (3, 10, 11, 20, 21, 60):
        c = colors(n)
        assert len({tuple(np.round(x, 4)) for x in c}) == n


def test_plot_of_an_empty_database_is_a_typed_error(tmp_path):
    from hlotune.dsl.errors import DataFileError
    with pytest.raises(DataFileError, match="no convergence to plot"):
        Report(Database(tmp_path / "e.db")).plot("convergence", str(tmp_path / "e.png"))
