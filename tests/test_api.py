"""The Python API on hand-written sweep folders: runs as records, the DataFrame, curves, the report and
comparisons `sweep report` shows, the best run of a group, and what `import mjsweep` leaves unimported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mjsweep
from helpers.commands import write_spec
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.results.compare import Comparison
from mjsweep.results.report import GroupRow
from mjsweep.sweepdir.files import SweepDir, write_model
from mjsweep.sweepdir.models import PlanRecord, RunState
from mjsweep.ui.cli import app

FIXTURE = Path(__file__).parent / "fixtures" / "schema2_sweep"
HEAVY = ("torch", "stable_baselines3", "matplotlib", "pandas")


@pytest.fixture
def sweep(tmp_path) -> Path:
    """Variant a (4 seeds, returns 10..40) beats b (4 seeds, 1..4); c has a failed run and one that succeeded."""
    folder = tmp_path / "fake"
    for seed in range(4):
        make_run(folder, run_spec("a", seed, grid={"lr": 0.1}), RunState.SUCCEEDED,
                 result=result(10.0 * (seed + 1), fps=500.0 + seed, wall_s=2.0),
                 progress=[(100, 500.0, -1.0), (200, 500.0, float(seed))])
        make_run(folder, run_spec("b", seed, grid={"lr": 0.1}), RunState.SUCCEEDED, result=result(float(seed + 1)))
    make_run(folder, run_spec("c", 0, grid={"lr": 0.1}), RunState.FAILED)
    make_run(folder, run_spec("c", 1, grid={"lr": 0.1}), RunState.SUCCEEDED, result=result(7.0))
    return folder


def test_load_reads_every_run_as_a_typed_record(sweep):
    loaded = mjsweep.load(sweep)
    assert isinstance(loaded, mjsweep.Sweep) and loaded.left_out is None
    assert len(loaded.runs) == 10
    run = next(r for r in loaded.runs if r.run_id == "a_lr=0.1_s2")
    assert (run.group, run.variant, run.grid, run.seed, run.state) == ("a lr=0.1", "a", {"lr": 0.1}, 2, "succeeded")
    assert (run.final_return, run.fps, run.timesteps, run.wall_s, run.algo) == (30.0, 502.0, 1000, 2.0, "ppo")
    assert run.succeeded and run.experiment == run.spec.experiment and run.path == sweep / "a_lr=0.1_s2"
    failed = next(r for r in loaded.runs if r.run_id == "c_lr=0.1_s0")
    assert (failed.state, failed.succeeded, failed.final_return) == ("failed", False, None)


def test_the_report_and_comparisons_are_those_sweep_report_shows(sweep):
    loaded = mjsweep.load(sweep)
    groups = loaded.report()
    assert all(isinstance(g, GroupRow) for g in groups)
    assert [g.group for g in groups] == loaded.groups == ["a lr=0.1", "c lr=0.1", "b lr=0.1"]
    assert groups[0].mean_return == 25.0 and groups[1].failed == 1
    shown = json.loads(CliRunner().invoke(app, ["report", str(sweep), "--format", "json", "--compare"]).stdout)
    assert [g["group"] for g in shown["groups"]] == loaded.groups
    comparisons = loaded.compare()
    assert all(isinstance(c, Comparison) for c in comparisons)
    assert [c.to_json() for c in comparisons] == shown["comparisons"]
    (pair,) = loaded.compare("a", "b")
    assert (pair.a, pair.b, pair.p) == ("a lr=0.1", "b lr=0.1", 1.0)
    with pytest.raises(mjsweep.InputError, match="no group of that name"):
        loaded.compare("a", "nobody")


def test_best_is_the_highest_final_return_of_a_group_or_variant(sweep):
    loaded = mjsweep.load(sweep)
    assert loaded.best("a").run_id == "a_lr=0.1_s3"
    assert loaded.best("b lr=0.1").run_id == "b_lr=0.1_s3"
    assert loaded.best("c").run_id == "c_lr=0.1_s1"  # the failed seed is no candidate
    assert loaded.best().run_id == "a_lr=0.1_s3"  # the report's best group
    with pytest.raises(mjsweep.InputError, match="no group of that name"):
        loaded.best("z")
    with pytest.raises(mjsweep.InputError, match="no trained model"):
        next(r for r in loaded.runs if r.state == "failed").policy()


def test_a_variant_with_several_groups_is_not_a_group(tmp_path):
    folder = tmp_path / "fake"
    for lr in (0.1, 0.2):
        make_run(folder, run_spec("a", 0, grid={"lr": lr}), RunState.SUCCEEDED, result=result(lr))
    with pytest.raises(mjsweep.InputError, match="more than one group"):
        mjsweep.load(folder).best("a")
    assert mjsweep.load(folder).best("a lr=0.2").final_return == 0.2


def test_the_dataframe_has_a_row_per_run_and_a_column_per_grid_key(sweep):
    frame = mjsweep.load(sweep).to_dataframe()
    assert len(frame) == 10
    assert {"run_id", "group", "variant", "lr", "seed", "state", "final_return", "fps", "wall_s", "training_s",
            "eval_s", "experiment"} <= set(frame.columns)
    assert frame.groupby("variant")["final_return"].mean().to_dict()["a"] == 25.0


def test_curves_are_long_form_with_evaluations_where_present(sweep):
    run_dir = SweepDir(sweep).run("a_lr=0.1_s0")
    run_dir.evaluations_csv.write_text("timesteps,mean_return,std_return,returns,lengths,wall_s\n"
                                       "100,3.5,0,3.5,10,0.1\n")
    frame = mjsweep.load(sweep).curves()
    assert list(frame.columns) == ["run_id", "group", "variant", "seed", "metric", "timesteps", "value"]
    mine = frame[frame.run_id == "a_lr=0.1_s0"]
    assert mine[["metric", "timesteps", "value"]].values.tolist() == [
        ["ep_rew_mean", 100, -1.0], ["ep_rew_mean", 200, 0.0], ["eval_mean_return", 100, 3.5]]
    assert len(frame) == 4 * 2 + 1  # b and c wrote no progress.csv


def test_without_pandas_the_error_says_how_to_install_it(sweep, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        mjsweep.load(sweep).to_dataframe()
    assert len(mjsweep.load(sweep).curve_points()) == 8


def test_earlier_specs_runs_are_left_out_unless_asked_for(sweep):
    current = mjsweep.load(sweep).runs
    write_model(SweepDir(sweep).plan_json, PlanRecord(experiments={r.group: r.experiment for r in current},
                                                      runs=[r.run_id for r in current]))
    make_run(sweep, run_spec("a", 9, grid={"lr": 0.1}, total=500), RunState.SUCCEEDED, result=result(99.0))
    loaded = mjsweep.load(sweep)
    assert "a_lr=0.1_s9" not in [r.run_id for r in loaded.runs] and "1 run of an earlier spec" in loaded.left_out
    assert loaded.best("a").final_return == 40.0
    every = mjsweep.load(sweep, all_specs=True)
    earlier = next(r for r in every.runs if r.run_id == "a_lr=0.1_s9")
    assert earlier.group.startswith("a lr=0.1 [earlier spec ") and earlier.group in every.groups


def test_a_folder_without_runs_is_an_input_error(tmp_path):
    with pytest.raises(mjsweep.InputError, match="no such sweep folder"):
        mjsweep.load(tmp_path / "missing")
    with pytest.raises(mjsweep.InputError, match="no run folders here"):
        mjsweep.load(tmp_path)


def test_validate_names_a_bad_spec_as_an_input_error(tmp_path, tiny_spec):
    spec = write_spec(tmp_path, {**tiny_spec, "seedz": 3})
    with pytest.raises(mjsweep.SpecError, match="seedz"):
        mjsweep.validate(spec)


def test_a_sweep_of_a_bad_spec_starts_nothing(tmp_path, tiny_spec):
    spec = write_spec(tmp_path, {**tiny_spec, "total_timesteps": -1})
    with pytest.raises(mjsweep.InputError, match="total_timesteps"):
        mjsweep.run(spec, runs_dir=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_import_mjsweep_and_loading_a_sweep_import_nothing_heavy():
    code = f"""
import sys
import mjsweep
heavy = {HEAVY!r}
def loaded():
    return sorted(m for m in sys.modules if m.split(".")[0] in heavy)
assert loaded() == [], loaded()
sweep = mjsweep.load({str(FIXTURE)!r})
sweep.report(), sweep.compare(), sweep.best(), sweep.curve_points()
assert len(sweep.runs) == 7
assert loaded() == [], loaded()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_api_names_are_typed_and_exported():
    assert sorted(mjsweep.__all__) == sorted(set(mjsweep.__all__))
    for name in mjsweep.__all__:
        assert getattr(mjsweep, name) is not None
    assert (Path(mjsweep.__file__).parent / "py.typed").is_file()
    with pytest.raises(AttributeError):
        mjsweep.nothing  # noqa: B018


def test_sweep_failed_names_each_failed_run_and_its_cause(sweep):
    from mjsweep.engine.scheduler import SweepOutcome
    from mjsweep.sweepdir.files import RunDir
    from mjsweep.sweepdir.models import RunStatus

    RunDir(sweep / "c_lr=0.1_s0").write_status(RunStatus(state=RunState.FAILED, cause="exited 1: ValueError: bad"))
    outcome = SweepOutcome(succeeded=["c_lr=0.1_s1"], failed=["c_lr=0.1_s0"])
    failed = mjsweep.SweepFailed(mjsweep.load(sweep), outcome)
    assert str(failed) == "sweep fake: 1 of 2 runs failed (c_lr=0.1_s0: exited 1: ValueError: bad)"
    assert failed.outcome is outcome and failed.sweep.name == "fake"


def test_a_spec_given_as_a_dict_is_checked_and_leaves_no_file(tmp_path, tiny_spec, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mjsweep.SpecError, match="seedz"):
        mjsweep.validate({**tiny_spec, "seedz": 3})
    assert list(tmp_path.iterdir()) == []


def test_with_adaptive_seeds_a_pairs_verdict_is_the_sequential_tests(sweep):
    from mjsweep.results.seeding import next_round
    from mjsweep.spec.sweepspec import AdaptiveSeeds
    from mjsweep.sweepdir.files import append_line

    returns = {"a lr=0.1": [10.0, 20.0, 30.0, 40.0], "b lr=0.1": [1.0, 2.0, 3.0, 4.0]}
    append_line(SweepDir(sweep).seeds_jsonl, next_round(1, returns, [], AdaptiveSeeds(min=4, max=4)))
    (pair,) = mjsweep.load(sweep).compare("a", "b")
    assert pair.sequential is not None and pair.sequential.startswith("sequential bounded Brunner-Munzel test, round 1")
    shown = json.loads(CliRunner().invoke(app, ["report", str(sweep), "--format", "json", "--compare", "a", "b"]
                                          ).stdout)
    assert shown["comparisons"] == [pair.to_json()]
