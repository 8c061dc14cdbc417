"""A run with `<algo>: {zoo: true}` trains what RL Zoo's own trainer (`python -m rl_zoo3.train`) trains for
the same env and seed: the same episodes, with the same lengths and returns, in monitor.csv."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
import yaml

from helpers.commands import run_sweep, write_spec
from mjsweep.engine.sweep import prepare
from mjsweep.spec.zoo import zoo_hyperparameters, zoo_name
from mjsweep.sweepdir.csvfiles import read_monitor_episodes
from mjsweep.sweepdir.files import RunDir

needs_rl_zoo = pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
HOPPER_XML = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"


def rl_zoo_episodes(tmp_path: Path, algo: str, seed: int, timesteps: int, *params: str) -> list[tuple[float, float]]:
    """RL Zoo's trainer on Hopper-v5 with the entry mjsweep takes for it (Hopper-v4's: RL Zoo's own lookup
    would take its `default` entry for an id it has none for), on one torch thread as a run has."""
    _, tuned = zoo_hyperparameters(algo, "Hopper-v5")
    conf = tmp_path / "zoo.yml"
    conf.write_text(yaml.safe_dump({"Hopper-v5": tuned}))
    logs = tmp_path / "rl_zoo"
    proc = subprocess.run(
        [sys.executable, "-m", "rl_zoo3.train", "--algo", zoo_name(algo), "--env", "Hopper-v5", "--seed", str(seed),
         "-n", str(timesteps), "-conf", str(conf), "--eval-freq", "-1", "--num-threads", "1", "-f", str(logs),
         "--verbose", "0", *(("-params", *params) if params else ())],
        capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [monitor] = logs.glob(f"{zoo_name(algo)}/Hopper-v5_*/0.monitor.csv")
    return read_monitor_episodes(monitor)


def mjsweep_episodes(tmp_path: Path, algo: str, seed: int, timesteps: int, **section) -> list[tuple[float, float]]:
    data = {"name": "hop", "env": "Hopper-v5", "algo": algo, "variants": [{"name": "hopper", "xml": str(HOPPER_XML)}],
            "seeds": [seed], "total_timesteps": timesteps, algo: {"zoo": True, **section},
            "runs_dir": str(tmp_path / "runs")}
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [run] = prepare(spec, check_envs=False).runs
    return read_monitor_episodes(RunDir(tmp_path / "runs" / "hop" / run.run_id).monitor_csv)


@pytest.mark.slow
@needs_rl_zoo
def test_ppo_zoo_trains_the_episodes_rl_zoo_trains(tmp_path):
    """RL Zoo's Hopper PPO: normalization, 512-step rollouts, its policy_kwargs text; 4 updates."""
    theirs = rl_zoo_episodes(tmp_path, "ppo", 5, 2048)
    ours = mjsweep_episodes(tmp_path, "ppo", 5, 2048)
    assert len(ours) > 50 and ours == theirs


@needs_rl_zoo
@pytest.mark.slow  # 25 s on an idle 2-core machine, 48 s on a busy one
def test_sac_zoo_trains_the_episodes_rl_zoo_trains(tmp_path):
    """RL Zoo's Hopper SAC with learning_starts lowered on both sides (the spec's key over RL Zoo's, RL Zoo's
    -params), so that half the budget trains: 500 random steps, then 500 with a gradient step each."""
    theirs = rl_zoo_episodes(tmp_path, "sac", 3, 1000, "learning_starts:500")
    ours = mjsweep_episodes(tmp_path, "sac", 3, 1000, learning_starts=500)
    assert len(ours) > 30 and ours == theirs


@needs_rl_zoo
@pytest.mark.slow  # the SAC half of it is test_sac_zoo_trains_the_episodes_rl_zoo_trains
def test_a_grid_of_zoo_algorithms_trains_each_as_rl_zoo_does(tmp_path):
    """`algo: [ppo, sac]`, both zoo: true, each section with its own budget: the PPO run normalizes and the SAC
    run does not, each as RL Zoo's trainer does for its algorithm."""
    data = {"name": "hop", "env": "Hopper-v5", "grid": {"algo": ["ppo", "sac"]}, "seeds": [3],
            "variants": [{"name": "hopper", "xml": str(HOPPER_XML)}], "runs_dir": str(tmp_path / "runs"),
            "ppo": {"zoo": True, "n_timesteps": 2048},
            "sac": {"zoo": True, "n_timesteps": 1000, "learning_starts": 500}}
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ppo, sac = (read_monitor_episodes(RunDir(tmp_path / "runs" / "hop" / run.run_id).monitor_csv)
                for run in prepare(spec, check_envs=False).runs)
    (tmp_path / "ppo").mkdir()
    (tmp_path / "sac").mkdir()
    assert len(ppo) > 50 and ppo == rl_zoo_episodes(tmp_path / "ppo", "ppo", 3, 2048)
    assert len(sac) > 30 and sac == rl_zoo_episodes(tmp_path / "sac", "sac", 3, 1000, "learning_starts:500")
