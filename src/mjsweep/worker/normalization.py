"""Normalization statistics frozen for evaluation (the final and periodic evaluations, cross-evaluation and
videos all see the env as the trained policy saw it, and report the env's own rewards), and a training's
statistics kept as they were at an iteration's start, for a stop to rewind to."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from stable_baselines3.common.running_mean_std import RunningMeanStd
    from stable_baselines3.common.vec_env import VecEnv, VecNormalize


def frozen_normalization(venv: VecEnv, training: VecNormalize) -> VecNormalize:
    """venv normalized with a copy of `training`'s observation statistics, which it never updates, and
    its own rewards."""
    from stable_baselines3.common.vec_env import VecNormalize

    frozen = VecNormalize(venv, training=False, norm_obs=training.norm_obs, norm_reward=False,
                          clip_obs=training.clip_obs, clip_reward=training.clip_reward, gamma=training.gamma,
                          epsilon=training.epsilon)
    frozen.obs_rms = copy.deepcopy(training.obs_rms)
    frozen.ret_rms = copy.deepcopy(training.ret_rms)
    return frozen


def load_frozen(path: str, venv: VecEnv) -> VecNormalize:
    """A run's saved statistics (vecnormalize.pkl) around `venv`, frozen, with the env's own rewards."""
    from stable_baselines3.common.vec_env import VecNormalize

    normalized = VecNormalize.load(path, venv)
    normalized.training, normalized.norm_reward = False, False
    return normalized


class StatsSnapshot:
    """VecNormalize's statistics (obs_rms, ret_rms) as they were when taken: the arrays themselves, held.
    RunningMeanStd's update binds new arrays and never writes into the ones it had, so holding them is a
    snapshot at no copy (tests/test_recording_overhead.py checks it); SAC or TD3 at train_freq 1 takes one at
    every env step. obs_rms is a dict of them for Dict observations."""

    def __init__(self) -> None:
        self._obs: Any = None
        self._ret: _Held | None = None

    def take(self, normalizer: VecNormalize) -> None:
        obs = normalizer.obs_rms
        self._obs = {key: _held(rms) for key, rms in obs.items()} if isinstance(obs, dict) else _held(obs)
        self._ret = _held(normalizer.ret_rms)

    @property
    def taken(self) -> bool:
        return self._ret is not None

    def restore(self, normalizer: VecNormalize) -> None:
        """The statistics back as taken, in objects and arrays of their own."""
        assert self._ret is not None, "restore() before take()"
        obs = self._obs
        rebuilt: Any = {key: _rebuilt(held) for key, held in obs.items()} if isinstance(obs, dict) else _rebuilt(obs)
        normalizer.obs_rms = rebuilt  # a dict where it was one
        normalizer.ret_rms = _rebuilt(self._ret)


_Held = tuple[Any, Any, float]
"""A RunningMeanStd's mean, var and count."""


def _held(rms: RunningMeanStd) -> _Held:
    return rms.mean, rms.var, rms.count


def _rebuilt(held: _Held) -> RunningMeanStd:
    from stable_baselines3.common.running_mean_std import RunningMeanStd

    mean, var, count = held
    rms = RunningMeanStd(shape=np.shape(mean))
    rms.mean, rms.var, rms.count = np.copy(mean), np.copy(var), float(count)
    return rms
