"""`sweep plot`: curves from progress.csv and monitor.csv, means by hand, SVG files that are not blank."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from helpers.images import SVG, not_blank
from mjsweep.sweepdir.models import RunState
from mjsweep.ui.curves import Curve, band, read_curve


def fake_sweep(folder):
    """Group a: two seeds whose curves differ by 2 everywhere; group b: one seed from monitor.csv only."""
    for seed, offset in enumerate((0.0, 2.0)):
        make_run(folder, run_spec("a", seed), RunState.SUCCEEDED, result(10.0 + offset),
                 progress=[(100, 500.0, 1.0 + offset), (200, 500.0, 3.0 + offset), (300, 500.0, 5.0 + offset)])
    make_run(folder, run_spec("b", 0), RunState.SUCCEEDED, result(4.0),
             progress=[(100, 500.0, None)], monitor=[(1.0, 50), (3.0, 50), (5.0, 100)])


def test_curves_from_progress_and_monitor(tmp_path):
    fake_sweep(tmp_path)
    a0 = read_curve(make_run(tmp_path, run_spec("a", 0)))
    assert a0.timesteps.tolist() == [100, 200, 300] and a0.returns.tolist() == [1.0, 3.0, 5.0]
    b0 = read_curve(make_run(tmp_path, run_spec("b", 0)))  # progress.csv has no returns: monitor.csv
    assert b0.timesteps.tolist() == [50, 100, 200]
    assert b0.returns.tolist() == [1.0, 2.0, 3.0]  # rolling mean over the episodes so far


def test_band_is_the_mean_over_seeds(tmp_path):
    curves = [Curve(np.array([0.0, 100.0]), np.array([0.0, 10.0])),
              Curve(np.array([0.0, 50.0, 100.0]), np.array([2.0, 7.0, 12.0]))]
    b = band(curves, points=3)
    assert b.timesteps.tolist() == [0.0, 50.0, 100.0]
    assert b.mean.tolist() == pytest.approx([1.0, 6.0, 11.0])  # (0+2)/2, (5+7)/2, (10+12)/2
    assert np.all(b.low <= b.mean) and np.all(b.mean <= b.high) and b.seeds == 2
    short = band([Curve(np.array([0.0, 100.0]), np.array([0.0, 1.0])), Curve(np.array([0.0, 40.0]),
                                                                               np.array([0.0, 1.0]))], points=5)
    assert short.timesteps[-1] == 40.0  # only where every seed has data


def test_cli_plot_writes_two_svgs(tmp_path):
    fake_sweep(tmp_path / "sweep")
    out = tmp_path / "figs" / "curves.svg"
    proc = run_sweep("plot", str(tmp_path / "sweep"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    final = tmp_path / "figs" / "curves_final.svg"
    assert f"wrote {out}" in proc.stdout and f"wrote {final}" in proc.stdout
    not_blank(out)
    not_blank(final)


def test_cli_plot_without_episodes(tmp_path):
    make_run(tmp_path, run_spec("a", 0))
    proc = run_sweep("plot", str(tmp_path), "-o", str(tmp_path / "x.svg"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "no run has logged" in proc.stderr
    bad = run_sweep("plot", str(tmp_path), "-o", str(tmp_path / "x.png"))
    assert bad.returncode == 2 and ".svg" in bad.stderr and not (tmp_path / "x.png").exists()


def test_evaluation_curves_replace_training_returns_when_the_sweep_evaluates(tmp_path):
    from mjsweep.results.rows import collect
    from mjsweep.results.stats import mean_over_span
    from mjsweep.sweepdir.files import SweepDir
    from mjsweep.ui import plot
    from mjsweep.ui.curves import read_eval_curve, sweep_curves

    fake_sweep(tmp_path)
    run = make_run(tmp_path, run_spec("a", 0))
    run.evaluations_csv.write_text("timesteps,mean_return,std_return,returns,lengths,wall_s\n"
                                   "100,2.0,0.0,2.0,50,1.0\n300,6.0,1.0,5.0 7.0,50 50,3.0\n")
    curve = read_eval_curve(run)
    assert curve.timesteps.tolist() == [100, 300] and curve.returns.tolist() == [2.0, 6.0]
    assert mean_over_span(curve.timesteps, curve.returns) == pytest.approx(4.0)  # the mean return over 100..300
    assert read_eval_curve(make_run(tmp_path, run_spec("a", 1))) is None
    drawn = sweep_curves(SweepDir(tmp_path), collect(tmp_path))
    assert drawn.ylabel == "mean evaluation return"
    assert list(drawn.bands) == ["a"] and drawn.bands["a"].mean[-1] == pytest.approx(6.0)
    plot.plot_sweep(tmp_path, collect(tmp_path), tmp_path / "curves.svg")
    labels = ["".join(t.itertext()) for t in not_blank(tmp_path / "curves.svg").iter(f"{SVG}text")]
    assert "mean evaluation return" in labels and "a (n=1)" in labels
