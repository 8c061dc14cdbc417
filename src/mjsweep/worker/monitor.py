"""monitor.csv's episode returns summed as SB3's Monitor sums them (RL Zoo's monitor files): each env's own
rewards added in Python floats, before the vec env stores them as float32. VecMonitor adds the float32
rewards in float32, which put its returns up to 2e-5 off RL Zoo's for the same episodes (Hopper-v5)."""

from __future__ import annotations

import time
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

RETURN_KEY = "mjsweep_episode_return"
"""The info key of an episode's last step that carries its return to the vec env's monitor."""


class EpisodeReturn(gymnasium.Wrapper):
    """Sums one env's rewards as Monitor does, and gives the episode's return (rounded to 6 decimals, as
    Monitor writes it) in the info of its last step."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.episode_return = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.episode_return = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        if terminated or truncated:
            info[RETURN_KEY] = round(self.episode_return, 6)
        return obs, reward, terminated, truncated, info


def with_episode_return(env: gymnasium.Env) -> gymnasium.Env:
    """env in an EpisodeReturn, typed as the vec envs take their envs."""
    return EpisodeReturn(env)


class EnvReturnMonitor(VecMonitor):
    """VecMonitor whose episodes (monitor.csv rows, the model's episode info) take the return each env's
    EpisodeReturn summed."""

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.episode_lengths += 1
        infos = list(infos)
        for i in np.flatnonzero(dones):
            info = dict(infos[i])
            episode = {"r": info.pop(RETURN_KEY), "l": int(self.episode_lengths[i]),
                       "t": round(time.time() - self.t_start, 6)}
            infos[i] = {**info, "episode": episode}
            self.episode_count += 1
            self.episode_lengths[i] = 0
            if self.results_writer:
                self.results_writer.write_row(episode)
        return obs, rewards, dones, infos
