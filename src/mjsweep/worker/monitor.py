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
    """Sums one env's rewards as Monitor does and counts its steps, and gives the episode's return (rounded
    to 6 decimals, as Monitor writes it) and length in the info of its last step: the vec env's monitor then
    does nothing at the steps where no episode ends."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.episode_return, self.episode_length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        if terminated or truncated:
            info[RETURN_KEY] = (round(self.episode_return, 6), self.episode_length)
        return obs, reward, terminated, truncated, info


def with_episode_return(env: gymnasium.Env) -> gymnasium.Env:
    """env in an EpisodeReturn, typed as the vec envs take their envs."""
    return EpisodeReturn(env)


class EnvReturnMonitor(VecMonitor):
    """VecMonitor whose episodes (monitor.csv rows, the model's episode info) take the return and length each
    env's EpisodeReturn counted."""

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        if not np.count_nonzero(dones):  # most steps: nothing to do (this runs at every env step)
            return obs, rewards, dones, infos
        infos = list(infos)
        for i in np.flatnonzero(dones):
            info = dict(infos[i])
            episode_return, length = info.pop(RETURN_KEY)
            episode = {"r": episode_return, "l": length, "t": round(time.time() - self.t_start, 6)}
            infos[i] = {**info, "episode": episode}
            self.episode_count += 1
            if self.results_writer:
                self.results_writer.write_row(episode)
        return obs, rewards, dones, infos
