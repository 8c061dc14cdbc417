"""Exact resume: a run stopped by Ctrl-C mid-episode and resumed with `sweep run` ends with the same
monitor.csv episodes, evaluations and final parameters as the same run never stopped; `sweep verify`."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec
from helpers.models import ANYMAL_XML

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


def test_a_ppo_run_stopped_mid_episode_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 2048, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL_XML.exists(), reason=f"needs ANYmal C at {ANYMAL_XML}")
def test_an_anymal_c_run_stopped_mid_episode_resumes_exactly_from_a_small_state(tmp_path, tiny_spec):
    """A real robot: its physics state mid-episode (contacts, the derived quantities its reward reads) put back
    from a file that holds no model (the compiled model's meshes alone are 252 MB)."""
    tiny_spec.update({"env": "mjsweep/Locomotion-v0", "variants": [{"name": "anymal", "xml": str(ANYMAL_XML)}],
                      "total_timesteps": 1024, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    checkpoint = json.loads((resumed / "checkpoints" / "checkpoint.json").read_text())
    assert (resumed / "checkpoints" / checkpoint["exact_file"]).stat().st_size < 1_000_000
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


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


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_a_run_of_each_algorithm_stopped_mid_episode_resumes_exactly(tmp_path, tiny_spec, algo):
    tiny_spec.update({"algo": algo, "ppo": {}, algo: ALGOS[algo], "total_timesteps": 3000, "max_episode_steps": 90,
                      "checkpoint_every": 200, "normalize": True, "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_a_run_exploring_with_gsde_resumes_exactly(tmp_path, tiny_spec, algo):
    hyperparams = {"ppo": {**tiny_spec["ppo"], "use_sde": True, "sde_sample_freq": 8},
                   "sac": {**ALGOS["sac"], "use_sde": True}}[algo]
    tiny_spec.update({"algo": algo, "ppo": {}, algo: hyperparams, "total_timesteps": 3000, "max_episode_steps": 90,
                      "checkpoint_every": 200, "normalize": True, "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
def test_a_run_of_envs_in_subprocesses_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"algo": "sac", "ppo": {}, "sac": ALGOS["sac"], "vec_env": "subproc", "n_envs": 2,
                      "total_timesteps": 3000, "max_episode_steps": 90, "checkpoint_every": 200, "normalize": True,
                      "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
def test_a_run_killed_and_retried_from_an_iterations_end_checkpoint_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 3072, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    spec = write_spec(tmp_path / "killed", tiny_spec)
    launcher = start_sweep(spec)
    sweep_dir = tmp_path / "killed" / "runs" / "tiny"
    [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()
                                  and status_of(d).get("state") == "running"], what="a checkpoint", timeout=WAIT)
    os.kill(status_of(run_dir)["pid"], signal.SIGKILL)  # no stop's checkpoint: the retry resumes from a regular one
    assert launcher.wait(timeout=WAIT) == 0, launcher_output(spec)
    assert status_of(run_dir)["attempts"] == 2 and "resuming exactly" in (run_dir / "log.txt").read_text()
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), run_dir)


def folder_contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sweep_verify_says_a_finished_run_reproduces_exactly_or_where_it_differs(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 384, "eval": {"episodes": 1, "every": 256}})
    spec = write_spec(tmp_path, tiny_spec)
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = run_dirs(sweep_dir)
    before = folder_contents(sweep_dir)
    verified = run_sweep("verify", str(sweep_dir), "--sample", "3", "--scratch", str(tmp_path / "scratch"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{run_dir.name}: exact" in verified.stdout and "1 of 1 runs reproduced exactly" in verified.stdout
    assert folder_contents(sweep_dir) == before  # nothing written into the sweep folder

    # a run whose second episode the folder does not hold as trained: named, with both returns
    lines = (run_dir / "monitor.csv").read_text().splitlines(keepends=True)
    r, rest = lines[3].split(",", 1)
    lines[3] = f"{float(r) + 1:.6f},{rest}"
    (run_dir / "monitor.csv").write_text("".join(lines))
    verified = run_sweep("verify", str(sweep_dir), run_dir.name)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert f"{run_dir.name}: differs: first at episode 2 (return {float(r) + 1:.6f} vs {r}" in verified.stdout
    assert "0 of 1 runs reproduced exactly" in verified.stdout


RETRAINING_STANDIN = """
import os, pathlib, signal, sys, time
def stop(*_):
    pathlib.Path("interrupted").write_text("1")
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
pathlib.Path("pid.tmp").write_text(str(os.getpid()))
os.replace("pid.tmp", "pid")
time.sleep(600)
"""


def test_a_ctrl_c_during_sweep_verify_interrupts_the_retraining(tmp_path):
    """The retraining leads a session of its own, so the terminal's Ctrl-C reaches only `sweep verify`: it must
    pass the stop on rather than leave the retraining to the kernel's kill once it exits."""
    run = tmp_path / "sweep" / "r0"
    run.mkdir(parents=True)
    (run / "spec.json").write_text("{}")
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mjsweep.engine import verify
        from mjsweep.sweepdir.files import RunDir
        verify.worker_command = lambda path: [sys.executable, "-c", {RETRAINING_STANDIN!r}]
        verify.verify([RunDir(Path({str(run)!r}))], Path({str(tmp_path / "scratch")!r}), print)
    """)
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid_file = tmp_path / "scratch" / "r0" / "pid"
    while not pid_file.is_file():
        assert launcher.poll() is None, launcher.communicate()
        time.sleep(0.02)
    retraining = psutil.Process(int(pid_file.read_text()))
    launcher.send_signal(signal.SIGINT)
    _, err = launcher.communicate()
    assert b"KeyboardInterrupt" in err
    assert (tmp_path / "scratch" / "r0" / "interrupted").is_file(), "the retraining was asked to stop"
    assert not retraining.is_running() or retraining.status() == psutil.STATUS_ZOMBIE
