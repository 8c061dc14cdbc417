"""Checkpoints by timesteps or by time, whichever comes first: the trigger, the spec key, a real run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers.commands import run_dirs, run_sweep, write_spec
from mjsweep.worker.checkpoints import checkpoint_due


def test_a_checkpoint_is_due_at_whichever_comes_first():
    assert not checkpoint_due(2_048, 10.0, every_steps=50_000, every_s=300.0)
    assert checkpoint_due(50_000, 10.0, every_steps=50_000, every_s=300.0)  # the timesteps
    assert checkpoint_due(2_048, 300.0, every_steps=50_000, every_s=300.0)  # the time: short runs get one too
    assert checkpoint_due(0, 301.5, every_steps=50_000, every_s=300.0)
    assert not checkpoint_due(16_384, 10_000.0, every_steps=50_000, every_s=None)  # by timesteps only


def test_a_spec_json_written_before_the_key_checkpoints_every_five_minutes():
    from helpers.fake_sweep import run_spec
    from mjsweep.sweepdir.models import RunSpec

    old = run_spec("v", 0).model_dump(mode="json")
    del old["checkpoint_every_s"]
    assert RunSpec.model_validate(old).checkpoint_every_s == 300.0


def _train(tmp_path: Path, tiny_spec: dict, name: str, every_s: float | None) -> Path:
    spec = {**tiny_spec, "name": name, "checkpoint_every": 1_000_000, "checkpoint_every_s": every_s}
    proc = run_sweep("run", str(write_spec(tmp_path, spec, f"{name}.yaml")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / name)
    return run_dir


@pytest.mark.slow
def test_a_run_shorter_than_checkpoint_every_checkpoints_by_time_and_computes_the_same(tmp_path, tiny_spec):
    """checkpoint_every (1,000,000) is far beyond the run (512 steps); a tiny time interval still gives it
    resume points, and saving them changes nothing the run computes."""
    from stable_baselines3 import PPO

    timed = _train(tmp_path, tiny_spec, "timed", every_s=1e-3)
    untimed = _train(tmp_path, tiny_spec, "untimed", every_s=None)
    assert timed.name == untimed.name  # the interval is no part of the run id
    checkpoint = json.loads((timed / "checkpoints" / "checkpoint.json").read_text())
    assert 0 < checkpoint["timesteps"] <= 512 and (timed / "checkpoints" / checkpoint["model_file"]).exists()
    assert not (untimed / "checkpoints").exists()

    results = [json.loads((d / "result.json").read_text()) for d in (timed, untimed)]
    assert results[0]["eval_mean_return"] == results[1]["eval_mean_return"]
    returns = [[row["ep_rew_mean"] for row in csv.DictReader((d / "progress.csv").open())] for d in (timed, untimed)]
    assert returns[0] == returns[1]
    params = [PPO.load(str(d / "model.zip"), device="cpu").policy.state_dict() for d in (timed, untimed)]
    assert params[0].keys() == params[1].keys()
    for key in params[0]:
        assert params[0][key].equal(params[1][key]), key


@pytest.mark.parametrize("value, message", [(0, "greater than 0"), ("soon", "valid number")])
def test_the_interval_must_be_a_positive_number(tmp_path, tiny_spec, value, message):
    proc = run_sweep("validate", str(write_spec(tmp_path, {**tiny_spec, "checkpoint_every_s": value})))
    assert proc.returncode == 2 and "checkpoint_every_s" in proc.stderr and message in proc.stderr
