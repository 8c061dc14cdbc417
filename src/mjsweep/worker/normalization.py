"""Normalization statistics frozen for evaluation (the final and periodic evaluations, cross-evaluation and
videos all see the env as the trained policy saw it, and report the env's own rewards), and a training's
statistics kept as they were at an iteration's start, for a stop to rewind to."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

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
    """VecNormalize's statistics (obs_rms, ret_rms) as they were when taken, copied into objects kept from one
    take to the next: SAC or TD3 at train_freq 1 takes one at every env step, where building new
    RunningMeanStd objects would cost more than the copy. obs_rms is a dict of them for Dict observations."""

    def __init__(self) -> None:
        self._obs: Any = None
        self._ret: RunningMeanStd | None = None

    def take(self, normalizer: VecNormalize) -> None:
        if isinstance(normalizer.obs_rms, dict):
            kept = self._obs or {}
            self._obs = {key: _copied_into(kept.get(key), rms) for key, rms in normalizer.obs_rms.items()}
        else:
            self._obs = _copied_into(self._obs, normalizer.obs_rms)
        self._ret = _copied_into(self._ret, normalizer.ret_rms)

    @property
    def taken(self) -> bool:
        return self._ret is not None

    def restore(self, normalizer: VecNormalize) -> None:
        """The statistics back as taken, in objects of their own (the snapshot's are overwritten by the next
        take)."""
        assert self._ret is not None, "restore() before take()"
        obs = self._obs
        normalizer.obs_rms = {key: rms.copy() for key, rms in obs.items()} if isinstance(obs, dict) else obs.copy()
        normalizer.ret_rms = self._ret.copy()


def _copied_into(kept: RunningMeanStd | None, source: RunningMeanStd) -> RunningMeanStd:
    """source's values in `kept` (new copies of its arrays in an object kept), or a copy of source."""
    if kept is None:
        return source.copy()
    kept.mean, kept.var, kept.count = source.mean.copy(), source.var.copy(), float(source.count)
    return kept
