"""A NaN or an infinity in a training is named in one line: which observation index, reward, action or
policy parameter, at which step and in which episode; the run fails once (not retried) with that line as
its error, and keeps its last checkpoint."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.vec_env import DummyVecEnv

from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.models import REPO, TINY_XML
from mjsweep.robots.envs import make_env
from mjsweep.sweepdir.files import RunDir
from mjsweep.worker.iterations import non_finite_parameter, trained_parameters
from mjsweep.worker.nonfinite import NonFiniteError, env_value_message, first_non_finite, parameter_message
from mjsweep.worker.train_envs import NamedNonFiniteCheck

ENV = "helpers.nonfinite_env:NonFiniteCheetah"


def test_the_line_names_the_value_its_source_the_step_and_the_episode():
    assert env_value_message("observation", "observation[3]", float("nan"), 1523, 7) == \
        "non-finite observation[3] = nan from the env at step 1,523 (episode 7)"
    assert env_value_message("reward", "reward", float("-inf"), 40_960, 410, env=2) == \
        "non-finite reward = -inf from the env at step 40,960 (episode 410, env 2)"
    assert env_value_message("action", "action[0]", float("inf"), 0, 1, at_reset=False) == \
        "non-finite action[0] = inf from the policy at step 0 (episode 1)"
    assert env_value_message("observation", "observation['pos'][1]", float("nan"), 4096, 13, at_reset=True) == \
        "non-finite observation['pos'][1] = nan from the env at reset, step 4,096 (episode 13)"
    assert parameter_message("policy parameter mlp_extractor.value_net.0.weight[12, 3]", float("nan"), 2048,
                             during=False) == \
        "non-finite policy parameter mlp_extractor.value_net.0.weight[12, 3] = nan after the update at step 2,048"
    assert parameter_message("parameter log_ent_coef[0]", float("inf"), 128, during=True) == \
        "non-finite parameter log_ent_coef[0] = inf during the update at step 128"
    assert "\n" not in parameter_message("w", float("nan"), 1, during=True)


def test_the_first_non_finite_entry_is_found_in_c_order():
    values = np.zeros((2, 3, 4))
    assert first_non_finite(values) is None
    values[1, 2, 0], values[1, 0, 3] = np.inf, np.nan
    assert first_non_finite(values) == ((1, 0, 3), pytest.approx(np.nan, nan_ok=True))


def test_the_parameter_check_names_the_first_bad_entry_and_ignores_a_sum_that_overflows():
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    parameters = list(net.named_parameters())
    assert non_finite_parameter(parameters) is None
    with torch.no_grad():
        net[1].weight[0, 0] = net[1].weight[0, 1] = 3e38  # finite, but their float32 sum is not
    assert non_finite_parameter(parameters) is None
    with torch.no_grad():
        net[1].bias[1] = float("-inf")
        net[1].weight[1, 2] = float("nan")
    assert non_finite_parameter(parameters) == ("1.weight[1, 2]", pytest.approx(np.nan, nan_ok=True))


def test_the_check_covers_what_the_optimizers_train_and_leaves_target_networks_out():
    env = DummyVecEnv([lambda: make_env("HalfCheetah-v5", TINY_XML, {}, 10)])
    ppo = PPO("MlpPolicy", env, n_steps=16, batch_size=16, device="cpu")
    assert [name for name, _ in trained_parameters(ppo)] == [
        f"policy parameter {name}" for name, _ in ppo.policy.named_parameters()]
    sac = SAC("MlpPolicy", env, buffer_size=100, device="cpu")
    trained = dict(trained_parameters(sac))
    assert trained["parameter log_ent_coef"] is sac.log_ent_coef
    assert any(name.startswith("policy parameter actor.") for name in trained)
    assert any(name.startswith("policy parameter critic.") for name in trained)
    assert not any("target" in name for name in trained)
    targets = {id(p) for p in sac.policy.critic_target.parameters()}
    assert not targets & {id(tensor) for tensor in trained.values()}


def _checked(*afters: int, observation_index: int | None = 3, reward: str | None = None) -> NamedNonFiniteCheck:
    """The worker's check around one NonFiniteCheetah per `after`, episodes of 10 steps."""
    kwargs = [{"after": after, "observation_index": observation_index, "reward": reward} for after in afters]
    return NamedNonFiniteCheck(DummyVecEnv([lambda kw=kw: make_env(ENV, TINY_XML, kw, 10) for kw in kwargs]))


def _step_until_raised(venv: NamedNonFiniteCheck) -> str:
    venv.reset()
    zeros = np.zeros((venv.num_envs, *venv.action_space.shape), dtype=np.float32)
    with pytest.raises(NonFiniteError) as raised:
        for _ in range(100):
            venv.step(zeros)
    return str(raised.value)


@pytest.mark.parametrize(("afters", "expected"), [
    # Two envs take steps 2k-1 and 2k of the run; episodes start 1, 2 (reset), 3, 4 (step 20), 5, 6 (step 40).
    ((1000, 25), "non-finite observation[3] = nan from the env at step 52 (episode 6, env 1)"),
    # At an episode's end the returned observation is the next episode's first; the final one is in the info.
    ((1000, 19), "non-finite final observation[3] = nan from the env at step 40 (episode 4, env 1)"),
    ((5,), "non-finite observation[3] = nan from the env at step 6 (episode 1)"),
])
def test_the_check_counts_the_runs_steps_and_episodes_over_its_envs(afters, expected):
    assert _step_until_raised(_checked(*afters)) == expected


def test_a_reward_is_named_in_the_episode_it_ends():
    assert _step_until_raised(_checked(29, observation_index=None, reward="inf")) == \
        "non-finite reward = inf from the env at step 30 (episode 3)"


def test_a_finite_value_whose_square_overflows_is_not_named():
    # The usual case is told by each array's dot product with itself; 1e38 squared overflows float32, so the
    # step is looked at VecCheckNan's way, which finds nothing.
    venv = _checked(0, observation_index=None, reward="1e38")
    venv.reset()
    zeros = np.zeros((1, *venv.action_space.shape), dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="overflow encountered in dot"):  # numpy says so, once per place
        rewards = [venv.step(zeros)[1][0] for _ in range(25)]
    assert rewards == [np.float32(1e38)] * 25 and venv.steps == 25


def test_a_non_finite_action_is_the_policys():
    venv = _checked(1000)
    venv.reset()
    action = np.zeros((1, *venv.action_space.shape), dtype=np.float32)
    action[0, 1] = np.nan
    with pytest.raises(NonFiniteError, match=re.escape("non-finite action[1] = nan from the policy at step 1 "
                                                       "(episode 1)")):
        venv.step(action)


def _failed_run(tmp_path, spec: dict, attempts: int = 1) -> tuple:
    path = os.pathsep.join(p for p in (str(REPO / "tests"), os.environ.get("PYTHONPATH")) if p)
    proc = run_sweep("run", str(write_spec(tmp_path, spec)), env={"PYTHONPATH": path})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    status = json.loads((run_dir / "status.json").read_text())
    assert (status["state"], status["failure"], status["returncode"]) == ("failed", "error", 1)
    assert status["attempts"] == attempts  # an error is not retried
    cause = status["cause"]
    assert status["error_tail"].splitlines()[-1] == cause
    assert f"error: {cause}" in proc.stdout  # the progress lines, as the live view prints them
    assert cause.startswith("exited with code 1: ")
    return run_dir, cause.removeprefix("exited with code 1: ")


@pytest.mark.parametrize(("env_kwargs", "expected"), [
    # 100-step episodes: step 651 is the 51st of episode 7.
    ({"after": 650, "observation_index": 3}, "non-finite observation[3] = nan from the env at step 651 (episode 7)"),
    pytest.param({"after": 620, "reward": "nan"}, "non-finite reward = nan from the env at step 621 (episode 7)",
                 marks=pytest.mark.slow),
])
def test_a_run_whose_env_goes_non_finite_fails_once_naming_it_and_keeps_its_checkpoint(tmp_path, tiny_spec,
                                                                                         env_kwargs, expected):
    tiny_spec.update({"env": ENV, "env_kwargs": env_kwargs, "total_timesteps": 2048, "checkpoint_every": 256})
    run_dir, error = _failed_run(tmp_path, tiny_spec)
    assert error == expected
    # The checkpoint of step 512 (after the iterations ending at 256 and 512) is kept, with the one before it
    # (checkpoints_kept: 2), and nothing after it.
    run = RunDir(run_dir)
    assert json.loads(run.checkpoint_json.read_text())["model_file"] == "model_512.zip"
    assert [p.name for p in run.checkpoint_models()] == ["model_256.zip", "model_512.zip"]
    assert not run.model_zip.exists() and not run.result_json.exists()
    monitor = run.monitor_csv.read_text().splitlines()[2:]
    assert len(monitor) == 6 and "nan" not in " ".join(monitor)  # the check sits under the monitor
    # A rerun resumes from it (episodes 1-5 kept, the 6th starts at step 513) and counts on from there.
    run_dir, error = _failed_run(tmp_path, tiny_spec, attempts=2)
    step, episode = 512 + env_kwargs["after"] + 1, 6 + env_kwargs["after"] // 100
    assert error == re.sub(r"step \d+ \(episode \d+\)", f"step {step:,} (episode {episode})", expected)


@pytest.mark.parametrize(("batch_size", "when"), [(128, "after"), (64, "during")])
def test_a_policy_broken_by_its_update_names_the_parameter_and_is_never_saved(tmp_path, tiny_spec, batch_size, when):
    """Rewards of 1e38 are finite, but their returns overflow: the first update turns the policy's
    parameters to NaN. With one minibatch the check after the update finds them; with two, torch's own
    check of the next minibatch's distribution raises first, and the worker names the parameter anyway."""
    tiny_spec.update({"env": ENV, "env_kwargs": {"reward": "1e38"}, "checkpoint_every": 128,
                      "ppo": {"n_steps": 128, "batch_size": batch_size, "n_epochs": 1}})
    run_dir, error = _failed_run(tmp_path, tiny_spec)
    assert re.fullmatch(rf"non-finite policy parameter \S+ = (nan|-?inf) {when} the update at step 128", error), error
    run = RunDir(run_dir)
    assert not run.checkpoint_json.exists() and not run.model_zip.exists()
    assert not (run.checkpoints.exists() and run.checkpoint_models())


def test_a_non_finite_action_is_named_as_the_cause_of_what_the_env_gives_back():
    """Actions are not summed at every step: a NaN action shows in the next observation, and is named then."""
    venv = _checked(1000)
    venv.reset()
    zeros = np.zeros((1, *venv.action_space.shape), dtype=np.float32)
    for _ in range(3):
        venv.step(zeros)
    nan = zeros.copy()
    nan[0, 1] = np.nan
    with pytest.raises(NonFiniteError) as raised:
        for _ in range(5):
            venv.step(nan)
    assert str(raised.value) == "non-finite action[1] = nan from the policy at step 4 (episode 1)"
