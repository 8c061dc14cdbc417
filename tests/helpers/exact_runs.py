"""Exact resume's shared pieces: a run stopped by a SIGINT to `sweep run` and resumed, the same run never
stopped, and the check that both ended identically (episodes, evaluations, progress rows, parameters and
optimizer state); each algorithm's small settings. Used by test_exact_resume.py and test_randomize_runs.py."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
from pathlib import Path

from .commands import launcher_output, run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec

WAIT = 240.0  # a bound on hanging, never on speed
OFF_POLICY = {"learning_starts": 100, "batch_size": 32, "buffer_size": 5000, "policy_kwargs": {"net_arch": [16]}}


def episodes(run_dir: Path) -> list[tuple[str, str]]:
    """monitor.csv's (return, length) per episode; its wall-clock column is left out."""
    lines = [line for line in (run_dir / "monitor.csv").open() if not line.startswith("#")]
    return [(row["r"], row["l"]) for row in csv.DictReader(lines)]


def evaluations(run_dir: Path) -> list[tuple[str, ...]]:
    """evaluations.csv's rows but their wall-clock column."""
    rows = list(csv.DictReader((run_dir / "evaluations.csv").open()))
    return [tuple(v for k, v in row.items() if k != "wall_s") for row in rows]


def progress_rows(run_dir: Path) -> list[tuple[str, str]]:
    """progress.csv's (iteration, timesteps) per row: where its rows fall, without their timings."""
    return [(row["iteration"], row["timesteps"]) for row in csv.DictReader((run_dir / "progress.csv").open())]


def parameters(run_dir: Path) -> dict:
    from stable_baselines3.common.save_util import load_from_zip_file

    _, params, _ = load_from_zip_file(run_dir / "model.zip", device="cpu")
    return params


def assert_same_run(one: Path, other: Path) -> None:
    import torch

    assert episodes(one) == episodes(other) and len(episodes(one)) > 3
    assert evaluations(one) == evaluations(other) and evaluations(one)
    assert progress_rows(one) == progress_rows(other)  # a resumed run goes on with the row under way
    def same(a, b, where: str) -> None:
        if isinstance(a, dict):
            assert isinstance(b, dict) and a.keys() == b.keys(), where
            for key in a:
                same(a[key], b[key], f"{where}.{key}")
        elif isinstance(a, torch.Tensor):
            assert torch.equal(a, b), f"{where} differs"
        elif isinstance(a, list | tuple):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                same(x, y, f"{where}[{i}]")
        else:
            assert a == b, where

    # the policy's parameters and the optimizers' state (Adam's moments and step counts)
    same(parameters(one), parameters(other), "model")


def stopped_and_resumed(folder: Path, data: dict) -> Path:
    """The run of `data` stopped by a SIGINT to `sweep run` once it has a checkpoint, then resumed."""
    spec = write_spec(folder, data)
    sweep_dir = folder / "runs" / "tiny"
    for _ in range(3):
        launcher = start_sweep(spec, "--grace", "60")
        [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()
                                      and status_of(d).get("state") == "running"], what="a checkpoint", timeout=WAIT)
        os.kill(launcher.pid, signal.SIGINT)
        assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
        checkpoint = json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())
        if checkpoint["timesteps"] % data["max_episode_steps"]:
            break
        # The stop landed on an episode's end (about one stop in max_episode_steps): this run would not test a
        # resume mid-episode, so it starts over and is stopped again at another moment.
        shutil.rmtree(sweep_dir)
    assert checkpoint["exact_file"] == f"exact_{checkpoint['timesteps']}.npz"
    assert checkpoint["exact_file"] in checkpoint["sha256"]
    # mid-episode: the episodes are max_episode_steps long (or shorter), the checkpoint not at their end
    assert checkpoint["timesteps"] % data["max_episode_steps"] != 0
    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "resuming exactly" in (run_dir / "log.txt").read_text()
    assert json.loads((run_dir / "result.json").read_text())["resumed_from"] == checkpoint["timesteps"]
    return run_dir


def uninterrupted(folder: Path, data: dict) -> Path:
    spec = write_spec(folder, data)
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = run_dirs(folder / "runs" / "tiny")
    return run_dir


ALGOS = {
    "sac": {**OFF_POLICY, "train_freq": 4},
    # Ornstein-Uhlenbeck noise carries a state from step to step, and draws from numpy's global generator
    "td3": {**OFF_POLICY, "noise_type": "ornstein-uhlenbeck", "noise_std": 0.1, "train_freq": 4},
    "a2c": {"n_steps": 16},
    # sb3-contrib's
    "tqc": {**OFF_POLICY, "top_quantiles_to_drop_per_net": 1, "train_freq": 4},
    "crossq": {**OFF_POLICY, "policy_delay": 2, "train_freq": 4},
    "trpo": {"n_steps": 128, "batch_size": 64},
    "recurrent_ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1,
                      "policy_kwargs": {"lstm_hidden_size": 16, "net_arch": [16]}},
}
