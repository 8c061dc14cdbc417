"""SAC, TD3 and A2C through `sweep run` on the tiny walker: real SB3, real processes, real signals."""

from __future__ import annotations

import csv
import json
import os
import signal
from pathlib import Path

import pytest
import yaml

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from helpers.models import TINY_SPEC

WAIT = 240.0  # a bound on hanging, never on speed
OFF_POLICY = {"learning_starts": 100, "batch_size": 32, "buffer_size": 5000, "policy_kwargs": {"net_arch": [16]}}


@pytest.fixture(scope="module")
def algo_sweep(tmp_path_factory) -> Path:
    """One sweep of SAC, TD3 and A2C on the tiny walker, normalized, with periodic evaluations, trained
    once for the tests below."""
    folder = tmp_path_factory.mktemp("algos")
    data = yaml.safe_load(yaml.safe_dump(TINY_SPEC))
    data.update({
        "total_timesteps": 1200, "grid": {"algo": ["sac", "td3", "a2c"]}, "ppo": {},
        # an update every 4 steps: tiny budgets, the same code paths
        "sac": {**OFF_POLICY, "train_freq": 4},
        "td3": {**OFF_POLICY, "noise_type": "normal", "noise_std": 0.1, "train_freq": [1, "episode"],
                "gradient_steps": 25},
        "a2c": {"n_steps": 16}, "normalize": True, "eval": {"episodes": 1, "every": 500}, "checkpoint_every": 500,
    })
    spec = write_spec(folder, data)
    done = run_sweep("run", str(spec), "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "runs" / "tiny"


def test_sac_td3_and_a2c_train_evaluate_and_report_by_algorithm(algo_sweep, tmp_path):
    sweep_dir = algo_sweep
    algos = {}
    for run_dir in run_dirs(sweep_dir):
        result = json.loads((run_dir / "result.json").read_text())
        algo = algos[result["algo"]] = result["algo"]
        assert result["timesteps"] == 1200 and result["torch_threads"] == 1 and result["fps"] > 0
        assert result["rollout_s"] > 0 and result["train_s"] > 0
        assert result["evaluations"] == 2 and (run_dir / "best_model.zip").exists()
        assert (run_dir / "model.zip").exists() and (run_dir / "vecnormalize.pkl").exists()
        progress = list(csv.DictReader((run_dir / "progress.csv").open()))
        steps = [int(r["timesteps"]) for r in progress]
        assert steps[-1] == 1200 and steps == sorted(steps)
        assert all(float(r["fps"]) > 0 for r in progress)
        # a row once an iteration ends 1000 timesteps after the last row (A2C's: 16 steps), the rest in the last
        assert steps == ([1008, 1200] if algo == "a2c" else [1000, 1200])
        if algo == "a2c":
            assert result["replay_buffer_size"] is None and not list((run_dir / "checkpoints").glob("replay_*"))
        else:
            assert result["replay_buffer_size"] == 1200
            assert result["checkpoint_bytes"] >= result["replay_buffer_bytes"] > 0
    assert sorted(algos) == ["a2c", "sac", "td3"]
    report = run_sweep("report", str(sweep_dir), "--format", "csv")
    assert report.returncode == 0, report.stderr
    rows = list(csv.DictReader(report.stdout.splitlines()))
    assert sorted(r["grid"] for r in rows) == ["algo=a2c", "algo=sac", "algo=td3"]
    assert all(r["runs"] == "1" and r["mean_return"] for r in rows)
    plotted = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.svg"))
    assert plotted.returncode == 0, plotted.stderr
    assert (tmp_path / "curves.svg").stat().st_size > 0 and (tmp_path / "curves_final.svg").stat().st_size > 0


@pytest.mark.slow
def test_cross_evaluation_loads_each_runs_own_algorithm(algo_sweep):
    done = run_sweep("evaluate", str(algo_sweep), "--cross", "--episodes", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(csv.DictReader((algo_sweep / "cross" / "matrix.csv").open()))
    assert sorted(r["train"] for r in rows) == ["walker algo=a2c", "walker algo=sac", "walker algo=td3"]
    assert all(r["mean"] and not r["skipped"] for r in rows)


@pytest.mark.slow
def test_a_stopped_sac_run_resumes_with_its_replay_buffer(tmp_path, tiny_spec):
    from stable_baselines3.common.save_util import load_from_pkl

    tiny_spec.update({"total_timesteps": 4000, "algo": "sac", "ppo": {}, "sac": OFF_POLICY,
                      "checkpoint_every": 300})
    spec = write_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec, "--grace", "60")
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()],
                         what="a checkpoint", timeout=WAIT)
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
    checkpoint = json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())
    buffer = load_from_pkl(run_dir / "checkpoints" / checkpoint["replay_buffer_file"])
    assert checkpoint["replay_buffer_file"] == f"replay_buffer_{checkpoint['timesteps']}.pkl"
    # one env, a buffer larger than the run: every timestep is a transition in it
    assert buffer.size() == checkpoint["replay_buffer_size"] == checkpoint["timesteps"] > 0
    assert not (run_dir / "result.json").exists()

    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["resumed_from"] == checkpoint["timesteps"]
    assert result["replay_buffer_resumed"] == buffer.size()
    assert result["timesteps"] == 4000 and result["replay_buffer_size"] == 4000
    log = (run_dir / "log.txt").read_text()
    assert f"replay buffer of {buffer.size()} transitions loaded" in log
    progress = list(csv.DictReader((run_dir / "progress.csv").open()))
    steps = [int(r["timesteps"]) for r in progress]
    assert steps == sorted(set(steps)) and steps[-1] == 4000
    assert [int(r["iteration"]) for r in progress] == list(range(1, len(progress) + 1))
