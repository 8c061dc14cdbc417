"""Statistics over seeds and `sweep report`, checked against numbers worked out by hand."""

from __future__ import annotations

import csv
import json
import math
import os
import re

import mujoco
import numpy as np
import pytest
from typer.testing import CliRunner

from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import TINY_XML
from mjsweep.results import stats
from mjsweep.results.report import aggregate
from mjsweep.results.rows import collect
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.lock import sweep_lock
from mjsweep.sweepdir.models import RunResult, RunState
from mjsweep.ui.cli import app

RETURNS_A = [10.0, 20.0, 30.0, 100.0]  # mean 40, IQM 25 (drops 10 and 100)
RETURNS_B = [1.0, 2.0, 3.0]
# 95% Student's t intervals of the mean by hand: mean +- t(n - 1) s / sqrt(n). A: mean 40, s^2 = (900 + 400 +
# 100 + 3600) / 3, t(3) = 3.18245 (tables); B: mean 2, s = 1, t(2) = 4.30265.
CI_A = (40 - 3.1824463 * math.sqrt(5000 / 3) / 2, 40 + 3.1824463 * math.sqrt(5000 / 3) / 2)
CI_B = (2 - 4.3026527 / math.sqrt(3), 2 + 4.3026527 / math.sqrt(3))


def test_iqm_drops_a_quarter_at_each_end():
    assert stats.iqm(RETURNS_A) == 25.0
    assert stats.iqm([8, 1, 2, 7, 3, 6, 4, 5]) == 4.5  # mean of 3, 4, 5, 6
    assert stats.iqm([1.0, 2.0, 9.0]) == 4.0  # under 4 values: the mean


def test_summary_matches_hand_computation():
    s = stats.summarize(RETURNS_A)
    assert (s.n, s.mean, s.iqm) == (4, 40.0, 25.0)
    assert s.std == pytest.approx(math.sqrt((30**2 + 20**2 + 10**2 + 60**2) / 3))
    assert (s.ci_low, s.ci_high) == pytest.approx(CI_A)
    assert (stats.summarize(RETURNS_B).ci_low, stats.summarize(RETURNS_B).ci_high) == pytest.approx(CI_B)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 10, 19, 60])
def test_t_quantiles_are_students(df):
    from scipy.stats import t

    for confidence in (0.9, 0.95, 0.99):
        assert stats.t_quantile(confidence, df) == pytest.approx(t.ppf(0.5 + confidence / 2, df), rel=1e-9)


def test_the_mean_interval_holds_the_mean_at_its_level_at_every_seed_count():
    # Normal returns: exactly 95% at every n. 20,000 sweeps a count, so 0.3 points of simulation error; the
    # percentile bootstrap it replaced held the mean in 50% of them at 2 seeds and 75% at 3.
    rng = np.random.default_rng(2)
    for n in (2, 3, 5, 10):
        draws = rng.normal(3.0, 2.0, size=(20_000, n))
        held = np.mean([low <= 3.0 <= high for low, high in map(stats.mean_interval, draws)])
        assert 0.94 <= held <= 0.96, (n, held)
    assert stats.mean_interval([4.0]) == (4.0, 4.0) and stats.mean_interval([4.0, 4.0]) == (4.0, 4.0)


def test_bootstrap_is_seeded_and_degenerate_for_one_value():
    values = np.random.default_rng(0).normal(size=20)
    assert stats.bootstrap_ci(values, seed=3) == stats.bootstrap_ci(values, seed=3)
    assert stats.bootstrap_ci(values, seed=3) != stats.bootstrap_ci(values, seed=4)
    assert stats.summarize([7.0]) == stats.Summary(1, 7.0, 0.0, 7.0, 7.0, 7.0)


def test_bootstrap_ci_agrees_with_the_normal_interval_for_many_seeds():
    values = np.random.default_rng(1).normal(50.0, 10.0, size=400)
    low, high = stats.bootstrap_ci(values)
    half = 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    assert low == pytest.approx(values.mean() - half, abs=0.15 * half)
    assert high == pytest.approx(values.mean() + half, abs=0.15 * half)


def test_bootstrap_per_column():
    curves = np.array([[0.0, 10.0], [2.0, 10.0], [4.0, 10.0]])
    low, high = stats.bootstrap_ci(curves)
    assert low.shape == (2,) and low[1] == high[1] == 10.0 and 0.0 <= low[0] < 2.0 < high[0] <= 4.0


def test_a_learning_curves_band_is_the_mean_interval_at_each_point():
    curves = np.array([[0.0, 10.0, 1.0], [2.0, 10.0, 5.0], [4.0, 10.0, 3.0]])
    low, high = stats.mean_band(curves)
    for column in range(3):
        assert (low[column], high[column]) == pytest.approx(stats.mean_interval(curves[:, column]))
    assert low[1] == high[1] == 10.0
    one_low, one_high = stats.mean_band(curves[:1])
    assert list(one_low) == list(one_high) == [0.0, 10.0, 1.0]


def fake_sweep(folder):
    for seed, ret in enumerate(RETURNS_A):
        make_run(folder, run_spec("a", seed, xml=str(TINY_XML)), RunState.SUCCEEDED,
                 result(ret, fps=1000.0 + 100 * seed), monitor=[(ret, 100)])
    for seed, ret in enumerate(RETURNS_B):
        make_run(folder, run_spec("b", seed, {"ppo.gamma": 0.9}), RunState.SUCCEEDED, result(ret, fps=500.0))
    make_run(folder, run_spec("b", 9, {"ppo.gamma": 0.9}), RunState.FAILED)
    make_run(folder, run_spec("c", 0), RunState.FAILED)


def test_aggregate_over_seeds(tmp_path):
    fake_sweep(tmp_path)
    groups = aggregate(collect(tmp_path))
    assert [g.variant for g in groups] == ["a", "b", "c"]  # best mean first, no result last
    a, b, c = groups
    assert (a.runs, a.succeeded, a.failed, a.mean_return, a.iqm_return) == (4, 4, 0, 40.0, 25.0)
    assert a.mean_fps == pytest.approx(1150.0)
    assert (a.ci_low, a.ci_high) == pytest.approx(CI_A)
    assert (b.runs, b.succeeded, b.failed, b.mean_return, b.std_return) == (4, 3, 1, 2.0, 1.0)
    assert (b.iqm_return, b.ci_low, b.ci_high) == pytest.approx((2.0, *CI_B))
    assert b.grid == {"ppo.gamma": 0.9}
    assert (c.succeeded, c.failed, c.mean_return, c.ci_low) == (0, 1, None, None)


def test_cli_report_formats_and_files(tmp_path):
    fake_sweep(tmp_path)
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["report", str(tmp_path), "--format", "json"]).stdout)
    a = data["groups"][0]
    assert a["variant"] == "a" and a["mean_return"] == 40.0 and a["iqm_return"] == 25.0
    model = mujoco.MjModel.from_xml_path(str(TINY_XML))
    assert a["model"]["total_mass"] == pytest.approx(mujoco.mj_getTotalmass(model))
    assert (a["model"]["bodies"], a["model"]["joints"], a["model"]["actuators"]) == (
        model.nbody - 1, model.njnt, model.nu)
    assert data["groups"][1]["model"] is None  # its XML does not exist

    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert [r["variant"] for r in rows] == ["a", "b", "c"]
    assert float(rows[0]["std_return"]) == pytest.approx(40.82483, rel=1e-5)
    assert (float(rows[0]["ci95_low"]), float(rows[0]["ci95_high"])) == pytest.approx(CI_A, rel=1e-5)
    assert float(rows[0]["mean_fps"]) == (1000 + 1100 + 1200 + 1300) / 4
    assert rows[1]["grid"] == "ppo.gamma=0.9" and rows[1]["failed"] == "1"
    md = (tmp_path / "report.md").read_text()
    assert md.count("\n| ") == 4 and "| a | - | 4 | 4 | 0 | 40 | 40.8248 | 25 |" in md
    assert "95% CI: Student's t interval of the mean; IQM 95% CI: trimmed-mean t interval" in md

    assert runner.invoke(app, ["report", str(tmp_path), "-f", "csv"]).stdout == (tmp_path / "report.csv").read_text()
    table = runner.invoke(app, ["report", str(tmp_path)]).stdout
    a_row = next(ln for ln in table.splitlines() if "│ a " in ln)
    assert [c.strip() for c in a_row.split("│")[3:9]] == ["4/4", "0", "40.00", "40.82", "25.00", "[-24.96, 104.96]"]



def test_a_group_of_one_seed_shows_no_interval_in_any_format(tmp_path):
    make_run(tmp_path, run_spec("solo", 0), RunState.SUCCEEDED, result(7.0))
    for seed, ret in enumerate(RETURNS_B):
        make_run(tmp_path, run_spec("b", seed), RunState.SUCCEEDED, result(ret))
    [solo] = [g for g in aggregate(collect(tmp_path)) if g.variant == "solo"]
    assert (solo.mean_return, solo.ci_low, solo.ci_high, solo.iqm_ci_low, solo.iqm_ci_high) == (7.0, None, None,
                                                                                                 None, None)
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["report", str(tmp_path), "--format", "json"]).stdout)
    [shown] = [g for g in data["groups"] if g["variant"] == "solo"]
    assert shown["ci_low"] is shown["ci_high"] is shown["iqm_ci_low"] is None
    rows = {r["variant"]: r for r in csv.DictReader((tmp_path / "report.csv").open())}
    assert rows["solo"]["ci95_low"] == rows["solo"]["ci95_high"] == "" and rows["b"]["ci95_low"] != ""
    md = (tmp_path / "report.md").read_text()
    assert "[7" not in md and "| solo | - | 1 | 1 | 0 | 7 | 0 | 7 | - | - |" in md
    table = runner.invoke(app, ["report", str(tmp_path)], env={"COLUMNS": "250"}).stdout
    solo_row = next(ln for ln in table.splitlines() if "│ solo " in ln)
    assert "[7.00, 7.00]" not in solo_row and [c.strip() for c in solo_row.split("│")][8] == "-"
    assert runner.invoke(app, ["report", str(tmp_path), "--format", "html"]).exit_code == 0
    page = (tmp_path / "report.html").read_text()
    assert "<td>solo</td>" in page and "[7.00, 7.00]" not in page

# A run of 4,096 steps: 8 s of rollout + update, 11 s of evaluation, 0.2 s of saving.
TIMED = {"timesteps": 4096, "rollout_s": 5.0, "train_s": 3.0}
NEW_RESULT = result(1.0, fps=512.0, **TIMED, training_s=8.0, eval_s=11.0, save_s=0.2, startup_s=2.5)
OLD_RESULT = result(1.0, fps=212.9, **TIMED)
"""Written before training_s existed: its fps divided by a wall time that held saving and evaluation."""


def test_fps_counts_training_alone_in_results_of_every_version():
    def training_fps(data: dict) -> float | None:
        return RunResult.from_file(data).training_fps

    assert training_fps(NEW_RESULT) == 512.0
    assert training_fps(OLD_RESULT) == 512.0  # recomputed from rollout + update
    assert training_fps(result(1.0, fps=300.0)) == 300.0  # no timings at all: the fps it has
    assert training_fps({"eval_mean_return": 1.0}) is None


def test_report_means_training_fps_and_eval_seconds(tmp_path):
    make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED, NEW_RESULT)
    make_run(tmp_path, run_spec("a", 1), RunState.SUCCEEDED, OLD_RESULT)
    (group,) = aggregate(collect(tmp_path))
    assert group.mean_fps == 512.0 and group.mean_eval_s == 11.0  # the old run has no eval_s
    CliRunner().invoke(app, ["report", str(tmp_path)])
    (row,) = csv.DictReader((tmp_path / "report.csv").open())
    assert (row["mean_fps"], row["mean_eval_s"]) == ("512", "11")


def test_report_gives_what_checkpoints_cost(tmp_path):
    make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED,
             result(1.0, checkpoint_save_s=1.5, checkpoint_bytes=3 * 2**20))
    make_run(tmp_path, run_spec("a", 1), RunState.SUCCEEDED,
             result(2.0, checkpoint_save_s=2.5, checkpoint_bytes=5 * 2**20))
    make_run(tmp_path, run_spec("b", 0), RunState.SUCCEEDED, OLD_RESULT)  # written before these figures
    groups = {g.variant: g for g in aggregate(collect(tmp_path))}
    assert (groups["a"].mean_checkpoint_s, groups["a"].mean_checkpoint_mb) == (2.0, 4.0)
    assert (groups["b"].mean_checkpoint_s, groups["b"].mean_checkpoint_mb) == (None, None)
    CliRunner().invoke(app, ["report", str(tmp_path)])
    rows = {row["variant"]: row for row in csv.DictReader((tmp_path / "report.csv").open())}
    assert (rows["a"]["mean_checkpoint_s"], rows["a"]["mean_checkpoint_mb"]) == ("2", "4")
    assert rows["b"]["mean_checkpoint_mb"] == ""


def test_report_sums_what_each_group_cost(tmp_path):
    make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED, result(1.0, timesteps=300, cpu_s=1.25))
    make_run(tmp_path, run_spec("a", 1), RunState.SUCCEEDED, result(2.0, timesteps=500, cpu_s=2.5))
    make_run(tmp_path, run_spec("b", 0), RunState.SUCCEEDED, OLD_RESULT)  # written before cpu_s
    groups = {g.variant: g for g in aggregate(collect(tmp_path))}
    assert (groups["a"].cpu_s, groups["a"].env_steps) == (3.75, 800)
    assert (groups["b"].cpu_s, groups["b"].env_steps) == (None, OLD_RESULT["timesteps"])
    out = CliRunner().invoke(app, ["report", str(tmp_path), "-f", "json"]).stdout
    by_variant = {g["variant"]: g for g in json.loads(out)["groups"]}
    assert (by_variant["a"]["cpu_s"], by_variant["a"]["env_steps"]) == (3.75, 800)
    rows = {row["variant"]: row for row in csv.DictReader((tmp_path / "report.csv").open())}
    assert (rows["a"]["cpu_s"], rows["a"]["env_steps"], rows["b"]["cpu_s"]) == ("3.75", "800", "")


def test_report_warns_about_contention(tmp_path):
    make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED, result(1.0, torch_threads=8))
    make_run(tmp_path, run_spec("a", 1), RunState.SUCCEEDED, result(1.0))
    out = CliRunner().invoke(app, ["report", str(tmp_path), "-f", "json"]).stdout
    assert json.loads(out)["warnings"] == ["a_s0: torch used 8 threads (expected 1)"]
    assert "torch used 8 threads" in (tmp_path / "report.md").read_text()


def test_report_rejects_an_unknown_format(tmp_path):
    fake_sweep(tmp_path)
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--format", "xls"])
    assert res.exit_code == 2 and "error: --format 'xls'" in res.stderr


def test_rank_by_best_evaluation_and_the_area_under_the_evaluation_curve(tmp_path):
    from mjsweep.results.report import aggregate, eval_aucs, to_csv
    from mjsweep.results.rows import collect
    from mjsweep.sweepdir.files import SweepDir

    for seed in (0, 1):
        make_run(tmp_path, run_spec("a", seed), RunState.SUCCEEDED,
                 result(10.0, best_eval_mean_return=12.0, best_eval_timesteps=200))
        run = make_run(tmp_path, run_spec("b", seed), RunState.SUCCEEDED,
                       result(8.0, best_eval_mean_return=20.0 + seed, best_eval_timesteps=100))
        run.evaluations_csv.write_text("timesteps,mean_return,std_return,returns,lengths,wall_s\n"
                                       f"0,0.0,0,0.0,5,1\n100,{20.0 + seed},0,{20.0 + seed},5,2\n"
                                       "200,8.0,0,8.0,5,3\n")
    rows = collect(tmp_path)
    aucs = eval_aucs(SweepDir(tmp_path), rows)
    assert sorted(aucs.values()) == pytest.approx([12.0, 12.5])  # (10 + 14) / 2 and (10.5 + 14.5) / 2
    assert [g.variant for g in aggregate(rows, aucs=aucs)] == ["a", "b"]
    by_best = aggregate(rows, aucs=aucs, rank="best")
    assert [g.variant for g in by_best] == ["b", "a"]
    assert by_best[0].mean_best_return == 20.5 and by_best[0].mean_eval_auc == pytest.approx(12.25)
    assert by_best[1].mean_eval_auc is None
    assert to_csv(by_best).splitlines()[0].endswith(",mean_best_return,mean_eval_auc,mean_checkpoint_s,"
                                                     "mean_checkpoint_mb,cpu_s,env_steps")


def html_state(text: str) -> str:
    """The line under report.html's title."""
    match = re.search(r'<p id="sweep-state"[^>]*>([^<]*)</p>', text)
    assert match, "no state line"
    return match.group(1)


def test_report_html_says_whether_the_sweep_runs(tmp_path):
    sweep = tmp_path / "fake"
    make_run(sweep, run_spec("walker", 0), RunState.SUCCEEDED, result=result(4.0))
    make_run(sweep, run_spec("walker", 1), RunState.RUNNING, pid=os.getpid())
    make_run(sweep, run_spec("walker", 2))
    with sweep_lock(SweepDir(sweep)):  # as a launcher holds it while it runs the sweep
        proc = CliRunner().invoke(app, ["report", str(sweep), "--format", "html"])
        assert proc.exit_code == 0, proc.output
        running = html_state((sweep / "report.html").read_text())
    assert re.fullmatch(r"sweep running: 1 of 3 runs ended, last updated \d\d:\d\d:\d\d; reload for more", running)
    assert CliRunner().invoke(app, ["report", str(sweep), "--format", "html"]).exit_code == 0
    ended = html_state((sweep / "report.html").read_text())
    assert re.fullmatch(r"sweep ended: 1 of 3 runs ended, 1 succeeded \(sweep run runs the others again\); "
                        r"report written [\d-]+ [\d:]+", ended)
