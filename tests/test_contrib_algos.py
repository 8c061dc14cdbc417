"""sb3-contrib's TQC, CrossQ, TRPO and RecurrentPPO through `sweep run` on the tiny walker: real training,
real processes and signals; RecurrentPPO's LSTM state carried through evaluations and videos; and the one
line a spec naming them gets without the package."""

from __future__ import annotations

import csv
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from helpers.models import TINY_SPEC, TINY_XML
from helpers.rendering import needs_gl

pytest.importorskip("sb3_contrib")

WAIT = 240.0  # a bound on hanging, never on speed
OFF_POLICY = {"learning_starts": 100, "batch_size": 32, "buffer_size": 5000, "policy_kwargs": {"net_arch": [16]},
              "train_freq": 4}
CONTRIB = ["tqc", "crossq", "trpo", "recurrent_ppo"]


@pytest.fixture(scope="module")
def contrib_sweep(tmp_path_factory) -> Path:
    """One sweep of the four sb3-contrib algorithms on the tiny walker, trained once for the tests below."""
    folder = tmp_path_factory.mktemp("contrib")
    data = yaml.safe_load(yaml.safe_dump(TINY_SPEC))
    data.update({
        "total_timesteps": 600, "grid": {"algo": CONTRIB}, "ppo": {},
        "tqc": {**OFF_POLICY, "top_quantiles_to_drop_per_net": 1},
        "crossq": {**OFF_POLICY, "policy_delay": 2},
        "trpo": {"n_steps": 128, "batch_size": 64},
        "recurrent_ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1,
                          "policy_kwargs": {"lstm_hidden_size": 16, "net_arch": [16]}},
        "eval": {"episodes": 2},
    })
    spec = write_spec(folder, data)
    done = run_sweep("run", str(spec), "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "runs" / "tiny"


def run_of(sweep_dir: Path, algo: str) -> Path:
    [found] = [d for d in run_dirs(sweep_dir) if json.loads((d / "spec.json").read_text())["algo"] == algo]
    return found


def test_each_contrib_algorithm_trains_to_its_result(contrib_sweep):
    for algo in CONTRIB:
        run_dir = run_of(contrib_sweep, algo)
        spec = json.loads((run_dir / "spec.json").read_text())
        result = json.loads((run_dir / "result.json").read_text())
        assert result["algo"] == algo and result["timesteps"] >= 600 and result["torch_threads"] == 1
        assert np.isfinite(result["eval_mean_return"]) and (run_dir / "model.zip").exists()
        assert spec["policy"] == ("MlpLstmPolicy" if algo == "recurrent_ppo" else "MlpPolicy")
        # the off-policy ones learn from a replay buffer of every transition, the on-policy ones from rollouts
        assert result["replay_buffer_size"] == (600 if algo in ("tqc", "crossq") else None)
        assert json.loads((run_dir / "status.json").read_text())["state"] == "succeeded"
    report = run_sweep("report", str(contrib_sweep), "--format", "csv")
    assert report.returncode == 0, report.stderr
    rows = list(csv.DictReader(report.stdout.splitlines()))
    assert sorted(r["grid"] for r in rows) == sorted(f"algo={algo}" for algo in CONTRIB)


def episode_returns(spec: dict, policy, seed: int, episodes: int, carry_state: bool) -> list[float]:
    """The policy's returns over `episodes` episodes stepped by the Actor that videos use, on an env seeded
    as the evaluation seeds its own; carry_state=False forgets the LSTM state at every step."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from mjsweep.robots.envs import make_env
    from mjsweep.worker.loaded_policy import Actor

    env = DummyVecEnv([lambda: make_env(spec["env"], Path(spec["xml"]), spec["env_kwargs"],
                                        spec["max_episode_steps"])])
    env.seed(seed)
    obs, actor, returns, total = env.reset(), Actor(policy), [], 0.0
    try:
        while len(returns) < episodes:
            if not carry_state:
                actor.state, actor.episode_start = None, np.ones(1, dtype=bool)
            obs, rewards, dones, _ = env.step(actor.act(obs))
            actor.stepped(dones)
            total += float(rewards[0])
            if dones[0]:
                returns.append(total)
                total = 0.0
    finally:
        env.close()
    return returns


@pytest.mark.slow
def test_recurrent_ppo_carries_its_lstm_state_through_evaluation_and_cross_evaluation(contrib_sweep):
    from mjsweep.worker.loaded_policy import load_policy

    done = run_sweep("evaluate", str(contrib_sweep), "--cross", "--episodes", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(csv.DictReader((contrib_sweep / "cross" / "matrix.csv").open()))
    assert sorted(r["train"] for r in rows) == sorted(f"walker algo={algo}" for algo in CONTRIB)
    assert all(r["mean"] and not r["skipped"] for r in rows)

    run_dir = run_of(contrib_sweep, "recurrent_ppo")
    spec = json.loads((run_dir / "spec.json").read_text())
    policy = load_policy("recurrent_ppo", str(run_dir / "model.zip"))
    [cross] = [json.loads(p.read_text()) for p in (contrib_sweep / "cross" / run_dir.name).glob("*.json")]
    final = json.loads((run_dir / "result.json").read_text())["eval_mean_return"]
    # the seeds the final evaluation and cross-evaluation give their envs
    for seed, returns in ((spec["seed"] + 1_000_003, [final]), (spec["seed"] + 2_000_003, cross["returns"])):
        carried = episode_returns(spec, policy, seed, 2, carry_state=True)
        forgotten = episode_returns(spec, policy, seed, 2, carry_state=False)
        if len(returns) == 1:  # result.json keeps the mean
            carried, forgotten = [float(np.mean(carried))], [float(np.mean(forgotten))]
        # Monitor rounds an episode's return to 6 decimals
        assert returns == pytest.approx(carried, abs=1e-5)
        assert returns != pytest.approx(forgotten, abs=1e-5), "the state made no difference: the test shows nothing"


@pytest.mark.slow
@needs_gl
def test_a_video_of_a_recurrent_policy_is_drawn(contrib_sweep):
    import imageio.v2 as imageio

    done = run_sweep("video", str(contrib_sweep), "--seconds", "0.5")
    assert done.returncode == 0, done.stderr
    video = contrib_sweep / "videos" / "walker_algo=recurrent_ppo.mp4"
    assert str(video) in done.stdout.split()
    reader = imageio.get_reader(video)
    frames = list(reader.iter_data())
    reader.close()
    assert len(frames) == 10 and frames[0].std() > 10  # 20 frames a simulated second, not blank


@pytest.mark.slow
def test_a_stopped_tqc_run_resumes_with_its_replay_buffer(tmp_path, tiny_spec):
    from stable_baselines3.common.save_util import load_from_pkl

    tiny_spec.update({"total_timesteps": 1200, "algo": "tqc", "ppo": {}, "tqc": OFF_POLICY, "checkpoint_every": 300})
    spec = write_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec, "--grace", "60")
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()],
                         what="a checkpoint", timeout=WAIT)
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
    checkpoint = json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())
    buffer = load_from_pkl(run_dir / "checkpoints" / checkpoint["replay_buffer_file"])
    assert buffer.size() == checkpoint["replay_buffer_size"] == checkpoint["timesteps"] > 0
    assert not (run_dir / "result.json").exists()

    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["algo"] == "tqc" and result["resumed_from"] == checkpoint["timesteps"]
    assert result["replay_buffer_resumed"] == buffer.size()
    assert result["timesteps"] == 1200 and result["replay_buffer_size"] == 1200
    assert f"replay buffer of {buffer.size()} transitions loaded" in (run_dir / "log.txt").read_text()


HEAD = f"""\
name: tiny
env: HalfCheetah-v5
max_episode_steps: 100
variants:
  - {{name: walker, xml: {TINY_XML}}}
total_timesteps: 256
runs_dir: runs
"""


def hide_contrib(tmp_path: Path) -> dict[str, str]:
    """An environment whose Pythons cannot import sb3_contrib, as where the extra is not installed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['sb3_contrib'] = None\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize(("text", "line", "key"), [
    ("algo: tqc\n", 8, "algo"),
    ("grid:\n  algo: [ppo, recurrent_ppo]\n", 9, "grid.algo"),
])
def test_without_sb3_contrib_a_spec_naming_its_algorithms_is_one_line_and_exit_2(tmp_path, text, line, key):
    path = tmp_path / "spec.yaml"
    path.write_text(HEAD + text)
    name, hidden = "tqc" if "tqc" in text else "recurrent_ppo", hide_contrib(tmp_path)
    for command in ("validate", "run"):
        done = run_sweep(command, str(path), env=hidden)
        assert done.returncode == 2
        assert done.stderr.strip() == f'error: {path}:{line}: {key}: {name} needs sb3-contrib ' \
            '(pip install "mjsweep[contrib]")'
    assert not (tmp_path / "runs").exists()
