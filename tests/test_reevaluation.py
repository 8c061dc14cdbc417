"""Evaluation settings are part of the experiment: a finished run whose evaluation settings changed is
evaluated again from its final model, without training, its earlier evaluation kept beside it; the dry run
says so and what it costs; a report never pools runs evaluated differently."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import mjsweep
from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.sweepdir.models import RunState


def walker_folder(tmp_path: Path) -> Path:
    """walker's seeds 0 and 1 evaluated with 2 episodes; seed 2 planned later with 5 and evaluated so."""
    folder = tmp_path / "fake"
    for seed in (0, 1):
        make_run(folder, run_spec("walker", seed, eval_episodes=2), RunState.SUCCEEDED,
                 result=result(float(seed), eval_episodes=2, eval_deterministic=True))
        os.utime(folder / f"walker_s{seed}" / "spec.json", (1_000_000, 1_000_000))
    make_run(folder, run_spec("walker", 2, eval_episodes=5), RunState.SUCCEEDED,
             result=result(10.0, eval_episodes=5, eval_deterministic=True))
    return folder


def test_a_report_never_pools_runs_evaluated_differently(tmp_path):
    folder = walker_folder(tmp_path)
    report = run_sweep("report", str(folder), "--format", "json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert [(g["group"], g["runs"], g["mean_return"]) for g in data["groups"]] == [("walker", 1, 10.0)]
    assert ("2 runs evaluated otherwise than the spec now says left out (walker: evaluated with 2 episodes, "
            "deterministic; sweep run evaluates them again); --all-specs shows them as groups of their own"
            ) in data["warnings"]
    every = mjsweep.load(folder, all_specs=True)
    assert sorted((g.group, g.runs) for g in every.report()) == [
        ("walker", 1), ("walker [evaluated with 2 episodes, deterministic]", 2)]


def test_results_without_their_evaluation_settings_pool_as_before(tmp_path):
    folder = tmp_path / "old"
    for seed in range(2):
        make_run(folder, run_spec("walker", seed, eval_episodes=5), RunState.SUCCEEDED, result=result(float(seed)))
    assert [g.runs for g in mjsweep.load(folder).report()] == [2]


@pytest.mark.slow
def test_changed_evaluation_settings_evaluate_finished_runs_again_without_training(tmp_path, tiny_spec):
    tiny_spec.update(total_timesteps=256, eval={"episodes": 1})
    spec = write_spec(tmp_path, tiny_spec)
    first = run_sweep("run", str(spec), "-q")
    assert first.returncode == 0, first.stdout + first.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = run_dirs(sweep_dir)
    before = json.loads((run_dir / "result.json").read_text())
    trained = {name: (run_dir / name).read_bytes() for name in ("model.zip", "monitor.csv", "progress.csv")}

    tiny_spec.update(seeds=2, eval={"episodes": 3})
    spec = write_spec(tmp_path, tiny_spec)
    dry = run_sweep("run", str(spec), "--dry-run")
    said = " ".join(dry.stdout.split())
    assert "evaluate (evaluated with 1 episode, deterministic; again with 3 episodes, deterministic, no training)" \
        in said, dry.stdout
    assert "dry run: 1 to start, 0 to resume, 1 to evaluate again, 0 to skip" in said
    assert ("evaluate again: 1 finished run (their eval settings changed: episodes, deterministic or physics), "
            "3 episodes from their final "
            "models, no training: about") in said
    assert json.loads((run_dir / "result.json").read_text()) == before  # a dry run changes nothing

    second = run_sweep("run", str(spec), "-q")
    assert second.returncode == 0, second.stdout + second.stderr
    after = json.loads((run_dir / "result.json").read_text())
    assert (after["eval_episodes"], after["eval_deterministic"], after["timesteps"]) == (3, True, before["timesteps"])
    assert after["earlier_evaluations"] == [{
        "eval_mean_return": before["eval_mean_return"], "eval_std_return": before["eval_std_return"],
        "eval_episodes": 1, "eval_deterministic": True, "eval_s": before["eval_s"], "eval_info": None}]
    assert {name: (run_dir / name).read_bytes() for name in trained} == trained  # nothing trained again
    sweep = mjsweep.load(sweep_dir)
    assert [g.runs for g in sweep.report()] == [2] and sweep.left_out is None
    for run in sweep.runs:
        assert json.loads((run.path / "result.json").read_text())["eval_episodes"] == 3

    # The same evaluation as the first, from the saved model: the same return (same env seed, same policy).
    tiny_spec.update(eval={"episodes": 1})
    third = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "-q")
    assert third.returncode == 0, third.stdout + third.stderr
    again = json.loads((run_dir / "result.json").read_text())
    assert again["eval_mean_return"] == before["eval_mean_return"]
    assert [e["eval_episodes"] for e in again["earlier_evaluations"]] == [1, 3]
