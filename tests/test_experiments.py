"""A group is one experiment: runs of an earlier spec in the same folder are never pooled as seeds of a group
of the current plan, and the commands say so."""

from __future__ import annotations

import json
import os

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import TINY_SPEC
from mjsweep.results import experiments
from mjsweep.results.rows import collect
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState


@pytest.mark.slow
def test_a_changed_budget_is_another_experiment_said_by_run_and_kept_apart_by_report(tmp_path):
    spec = {**TINY_SPEC, "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 32}, "max_episode_steps": 50}
    first = run_sweep("run", str(write_spec(tmp_path, spec)))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "earlier spec" not in first.stdout + first.stderr
    again = run_sweep("run", str(write_spec(tmp_path, {**spec, "total_timesteps": 384})))
    assert again.returncode == 0, again.stdout + again.stderr
    assert ("this folder holds 1 run of an earlier spec that this plan does not include (walker: total_timesteps "
            "256, now 384)") in again.stdout + again.stderr
    sweep = tmp_path / "runs" / "tiny"
    assert len([p for p in sweep.iterdir() if (p / "spec.json").exists()]) == 2

    report = json.loads(run_sweep("report", str(sweep), "--format", "json").stdout)
    [group] = report["groups"]
    assert (group["group"], group["runs"]) == ("walker", 1)
    assert any("1 run of an earlier spec left out (walker: total_timesteps 256, now 384); --all-specs shows them"
               in w for w in report["warnings"])
    table = run_sweep("report", str(sweep))
    assert "1 run of an earlier spec left out" in table.stdout + table.stderr
    every = json.loads(run_sweep("report", str(sweep), "--format", "json", "--all-specs").stdout)
    names = sorted(g["group"] for g in every["groups"])
    assert names[0] == "walker" and names[1].startswith("walker [earlier spec ") and len(names) == 2
    assert all(g["runs"] == 1 for g in every["groups"])
    plotted = run_sweep("plot", str(sweep), "-o", str(tmp_path / "curves.svg"))
    assert plotted.returncode == 0 and "1 run of an earlier spec left out" in plotted.stderr
    status = json.loads(run_sweep("status", str(sweep), "--json").stdout)
    assert status["earlier_spec_runs"] == 1 and len(status["runs"]) == 1
    assert status["runs"][0]["total_timesteps"] == 384
    assert "1 run(s) of an earlier spec not shown" in run_sweep("status", str(sweep)).stdout


def folder_of_two_specs(tmp_path, with_plan: bool):
    old = [run_spec("walker", s, total=256, run_id=f"walker_s{s}_old") for s in range(2)]
    new = [run_spec("walker", s, total=384, run_id=f"walker_s{s}_new") for s in range(2)]
    for spec, value in zip(old + new, [1.0, 2.0, 10.0, 11.0], strict=True):
        run = make_run(tmp_path, spec, RunState.SUCCEEDED, result(value))
        stamp = 1_000_000_000 if spec in old else 2_000_000_000
        os.utime(run.spec_json, ns=(stamp, stamp))
    if with_plan:  # the last plan asked for the old budget again
        (tmp_path / "plan.json").write_text(json.dumps({"schema": 2, "experiments": {"walker": old[0].experiment}}))
    return old, new


def test_a_folder_without_plan_json_takes_each_groups_newest_runs(tmp_path):
    old, new = folder_of_two_specs(tmp_path, with_plan=False)
    split = experiments.split(SweepDir(tmp_path), collect(tmp_path))
    assert sorted(r.run_id for r in split.current) == ["walker_s0_new", "walker_s1_new"]
    assert sorted(r.run_id for r in split.earlier) == ["walker_s0_old", "walker_s1_old"]
    assert split.note() == ("2 runs of an earlier spec left out (walker: total_timesteps 256, now 384); "
                            "--all-specs shows them as groups of their own")
    groups = {r.group for r in experiments.apart(split)}
    assert groups == {"walker", f"walker [earlier spec {old[0].experiment}]"}


def test_plan_json_says_which_experiment_is_current(tmp_path):
    folder_of_two_specs(tmp_path, with_plan=True)
    split = experiments.split(SweepDir(tmp_path), collect(tmp_path))
    assert sorted(r.run_id for r in split.current) == ["walker_s0_old", "walker_s1_old"]
    report = json.loads(run_sweep("report", str(tmp_path), "--format", "json").stdout)
    assert [(g["group"], g["runs"], g["mean_return"]) for g in report["groups"]] == [("walker", 2, 1.5)]


def test_the_experiment_is_everything_but_the_seed():
    base = run_spec("walker", 0)
    assert run_spec("walker", 7).experiment == base.experiment
    changed = {"xml_sha256": "1", "env_kwargs": {"ctrl_cost_weight": 0.5}, "ppo": {"learning_rate": 1e-3},
               "n_envs": 2, "normalize": {"norm_obs": True}}
    for key, value in changed.items():
        assert run_spec("walker", 0, **{key: value}).experiment != base.experiment, key
    assert run_spec("walker", 0, total=2000).experiment != base.experiment
    assert experiments.differences(run_spec("walker", 0, ppo={"learning_rate": 1e-3}, xml_sha256="1"), base) == \
        "algorithm settings differ, XML content differ"
    # What does not change what a run computes is not part of it.
    assert run_spec("walker", 0, checkpoint_every=5, eval_episodes=9, tensorboard=True).experiment == base.experiment


def test_a_grid_in_any_key_order_reports_its_runs_as_the_current_plan(tmp_path):
    """spec.json stores the grid's keys sorted; the plan's group labels must match the labels read back."""
    spec = {**TINY_SPEC, "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 32}, "max_episode_steps": 50,
            "grid": {"ppo.n_epochs": [1], "ppo.gamma": [0.9, 0.99]}}
    done = run_sweep("run", str(write_spec(tmp_path, spec)))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = tmp_path / "runs" / "tiny"
    plan = json.loads((sweep / "plan.json").read_text())
    labels = ["walker ppo.gamma=0.9 ppo.n_epochs=1", "walker ppo.gamma=0.99 ppo.n_epochs=1"]
    assert sorted(plan["experiments"]) == labels
    report = json.loads(run_sweep("report", str(sweep), "--format", "json").stdout)
    assert sorted((g["group"], g["runs"]) for g in report["groups"]) == [(label, 1) for label in labels]
    assert not any("earlier spec" in w for w in report["warnings"])


def test_an_old_plan_json_with_unsorted_group_labels_still_names_its_runs(tmp_path):
    spec = run_spec("walker", 0, total=256, run_id="walker_s0")
    make_run(tmp_path, spec, RunState.SUCCEEDED, result(1.0))
    (tmp_path / "plan.json").write_text(json.dumps({"schema": 2, "experiments": {"walker b=1 a=2": "0" * 8},
                                                    "runs": ["walker_s0"]}))
    split = experiments.split(SweepDir(tmp_path), collect(tmp_path))
    assert [r.run_id for r in split.current] == ["walker_s0"] and split.earlier == []
