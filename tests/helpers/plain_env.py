"""An env that takes xml_file but simulates without MuJoCo: a randomized variant cannot run on it."""

from __future__ import annotations

import gymnasium
import numpy as np


class PlainEnv(gymnasium.Env):
    def __init__(self, xml_file: str):
        self.xml_file = xml_file
        self.observation_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.uniform(-1, 1, 2), {}

    def step(self, action):
        return self.np_random.uniform(-1, 1, 2), float(action[0]), False, False, {}
