"""Envs for tests that must fail at run time, after validation has passed."""

from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv


class FlakyCheetah(HalfCheetahEnv):
    """HalfCheetah-v5 that raises after `fail_after` steps, as a diverging simulation would."""

    def __init__(self, fail_after: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.fail_after, self.steps_taken = fail_after, 0

    def step(self, action):
        self.steps_taken += 1
        if self.fail_after is not None and self.steps_taken > self.fail_after:
            raise FloatingPointError(f"simulation diverged after {self.fail_after} steps")
        return super().step(action)
