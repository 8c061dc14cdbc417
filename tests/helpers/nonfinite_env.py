"""An env for tests that must go non-finite during training, after validation has passed."""

from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv


class NonFiniteCheetah(HalfCheetahEnv):
    """HalfCheetah-v5 that, from its step `after` + 1 on (counted over resets), hands back a NaN at
    `observation_index` and/or `reward` in place of its own (a string, so that a spec can say "nan" or
    "inf"; a huge finite one such as "1e38" makes the policy's update overflow instead)."""

    def __init__(self, after: int = 0, observation_index: int | None = None, reward: str | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        self.after, self.observation_index, self.reward = after, observation_index, reward
        self.steps_taken = 0

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        self.steps_taken += 1
        if self.steps_taken > self.after:
            if self.observation_index is not None:
                observation[self.observation_index] = float("nan")
            if self.reward is not None:
                reward = float(self.reward)
        return observation, reward, terminated, truncated, info
