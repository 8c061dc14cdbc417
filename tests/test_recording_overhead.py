"""What the worker's recorder does at every iteration stays cheap: SAC at train_freq 1 starts one at every env
step. The parameter check keeps to its share of the training time but never lets a broken policy be saved;
the log sizes a stop rewinds to are read again only once a file may have grown."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from helpers.models import TINY_XML
from mjsweep.robots.envs import make_env
from mjsweep.sweepdir.files import RunDir
from mjsweep.worker import checkpoints, iterations
from mjsweep.worker.iterations import LogSizes, ParameterCheck
from mjsweep.worker.normalization import StatsSnapshot


def test_the_first_update_is_checked_then_as_often_as_the_share_allows():
    check = ParameterCheck()
    assert check.due(0.016)
    for _ in range(2):
        check.took(100e-6)  # a check of 0.1 ms against updates of 16 ms: 0.1% allows one every 7th
        assert [check.due(0.016) for _ in range(7)] == [False] * 6 + [True]


def test_a_check_after_every_long_iteration():
    check = ParameterCheck()
    check.took(100e-6)
    assert all(check.due(2.0) for _ in range(5))  # PPO's iteration of seconds: the check is 0.005% of it


class Monitor:
    episode_count = 0


def test_log_sizes_are_read_again_only_once_a_file_may_have_grown(tmp_path):
    run = RunDir(tmp_path)
    for path in (run.monitor_csv, run.progress_csv, run.evaluations_csv):
        path.write_text("a\n")
    monitor = Monitor()
    sizes = LogSizes(run, monitor)  # type: ignore[arg-type]
    assert sizes.now() == (2, 2, 2)
    for path in (run.monitor_csv, run.progress_csv, run.evaluations_csv):
        path.write_text("abc\n")
    assert sizes.now() == (2, 2, 2)  # nothing said a file grew
    monitor.episode_count = 1
    assert sizes.now() == (4, 2, 2)
    sizes.progress_written()
    assert sizes.now() == (4, 4, 2)
    sizes.evaluated()
    assert sizes.now() == (4, 4, 4)
    assert LogSizes(run).now() == (4, 4, 4)  # without a monitor: every file read each time


def test_sac_at_train_freq_1_checks_fewer_times_than_it_updates_but_before_every_checkpoint(tmp_path, monkeypatch):
    checked: list[int] = []
    saved: list[tuple[int, int]] = []
    real_check = iterations.non_finite_parameter

    def counting(parameters):
        checked.append(model.num_timesteps)
        return real_check(parameters)

    monkeypatch.setattr(iterations, "non_finite_parameter", counting)
    # Updates far cheaper than a check would make it due at every one: a share of the time, never each.
    monkeypatch.setattr(ParameterCheck, "SHARE", 1e-9)
    env = gym.wrappers.TimeLimit(make_env("HalfCheetah-v5", Path(TINY_XML), {}), 50)
    model = SAC("MlpPolicy", env, seed=0, device="cpu", learning_starts=20, train_freq=1, batch_size=8,
                buffer_size=500, policy_kwargs={"net_arch": [8]})
    (tmp_path / "run").mkdir()
    checkpointer = checkpoints.Checkpointer(RunDir(tmp_path / "run"), every=60, off_policy=True)
    save = checkpointer.save

    def saving(model_, iteration, *args, **kwargs):
        saved.append((model_.num_timesteps, checked[-1] if checked else -1))
        return save(model_, iteration, *args, **kwargs)

    checkpointer.save = saving  # type: ignore[method-assign]
    model.learn(200, callback=iterations.IterationRecorder(checkpointer, None, lambda: None, row_steps=50))
    updates = 200 - 20
    assert 1 <= len(checked) < updates / 10
    assert checked[0] == 21  # the first update is always checked
    assert saved and all(at == last_check for at, last_check in saved)  # checked just before each checkpoint
    assert checked[-1] == 200  # and at the end, before the final model is saved
    assert np.isfinite(model.policy.parameters_to_vector()).all()


class TwoPartEnv(gym.Env):
    """Random Dict observations, for VecNormalize's per-key statistics."""
    observation_space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (3,)), "b": gym.spaces.Box(-1, 1, (2,))})
    action_space = gym.spaces.Box(-1, 1, (1,))

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), float(self.np_random.normal()), False, False, {}


def _statistics(normalizer):
    obs = normalizer.obs_rms
    parts = obs.values() if isinstance(obs, dict) else [obs]
    return [(rms.mean.copy(), rms.var.copy(), rms.count) for rms in [*parts, normalizer.ret_rms]]


@pytest.mark.parametrize("make", [lambda: make_env("HalfCheetah-v5", Path(TINY_XML), {}), TwoPartEnv])
def test_the_statistics_snapshot_gives_back_what_it_took(make):
    normalizer = VecNormalize(DummyVecEnv([make]))
    normalizer.reset()
    actions = np.zeros((1, *normalizer.action_space.shape), dtype=np.float32)
    snapshot = StatsSnapshot()
    assert not snapshot.taken
    for _ in range(2):  # two iterations, each rewound to its start: the second take overwrites the first
        for _ in range(3):
            normalizer.step(actions)
        snapshot.take(normalizer)
        taken = _statistics(normalizer)
        for _ in range(5):
            normalizer.step(actions)
        assert not _equal(_statistics(normalizer), taken)  # the training moved on
        snapshot.restore(normalizer)
        assert _equal(_statistics(normalizer), taken)


def _equal(a, b):
    return all(np.array_equal(m1, m2) and np.array_equal(v1, v2) and c1 == c2
               for (m1, v1, c1), (m2, v2, c2) in zip(a, b, strict=True))
