"""Cost as a search objective: a run's CPU seconds and env steps from result.json, a trial's summed over seeds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.search.objective import run_value, run_values, trial_values
from mjsweep.spec.searchspace import ObjectiveSpec
from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.models import RunResult, RunState, Timing


def test_the_cost_metrics_are_objectives_and_a_misspelt_one_is_not():
    assert ObjectiveSpec(metric="cpu_hours", direction="minimize").metric == "cpu_hours"
    with pytest.raises(ValidationError, match="cpu_seconds, cpu_hours, env_steps"):
        ObjectiveSpec(metric="cpu_second")


def test_a_runs_cost_is_its_cpu_seconds_hours_and_env_steps(tmp_path):
    run = make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED, result(5.0, timesteps=2048, cpu_s=900.0))
    assert run_values(run, ["eval_iqm", "cpu_seconds", "cpu_hours", "env_steps"]) == [5.0, 900.0, 0.25, 2048.0]


def test_a_run_from_before_cpu_s_has_no_cpu_cost_but_its_steps(tmp_path):
    run = make_run(tmp_path, run_spec("a", 0), RunState.SUCCEEDED, result(5.0, timesteps=512))
    assert run_value(run, "cpu_seconds") is None and run_value(run, "env_steps") == 512.0
    assert run_values(run, ["eval_iqm", "cpu_seconds"]) is None  # a seed without every value does not count


def test_a_failed_run_has_no_cost_value(tmp_path):
    run = make_run(tmp_path, run_spec("a", 0), RunState.FAILED, None)
    assert run_value(RunDir(run.path), "cpu_seconds") is None


def test_a_trial_sums_its_seeds_costs_and_takes_the_iqm_of_the_rest():
    seeds = [[1.0, 10.0, 100.0], [2.0, 20.0, 100.0], [3.0, 30.0, 100.0], [100.0, 40.0, 100.0]]
    values = trial_values(seeds, ["eval_iqm", "cpu_seconds", "env_steps"])
    assert values == [2.5, 100.0, 400.0]  # IQM of the returns drops 1 and 100; costs add up
    assert trial_values([], ["cpu_seconds"]) is None


def test_files_from_before_cpu_s_still_read():
    assert Timing.model_validate({"wall_s": 3.0}).cpu_s == 0.0  # a checkpoint.json from before cpu_s
    assert RunResult.model_validate({"eval_mean_return": 1.0}).cpu_s is None
