"""Normalization statistics frozen for evaluation: the final and periodic evaluations, cross-evaluation and
videos all see the env as the trained policy saw it, and report the env's own rewards."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
