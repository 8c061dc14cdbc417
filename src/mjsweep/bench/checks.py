"""What the worker's non-finite checks cost: VecCheckNan around the env at every env step (worker/train_envs.py)
and the policy's parameters after every update (worker/iterations.py), each timed on its own in a spawned
process (the bench process never imports torch), for the bench's env and PPO settings.

A training's own step is too noisy to show a cost this small as the difference of two trainings, so the
check is timed around a vec env that hands back one real step's values at no cost of its own, against the
same vec env unwrapped; the bench divides by the solo run's measured step time.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

from .figures import BenchConfig, CheckCost
from .naive import NaiveJob

ROUNDS = 9
"""Alternating timings of the wrapped and the bare vec env; the figure is the median difference."""


def measure_check_cost(config: BenchConfig, xml: Path) -> CheckCost:
    job = NaiveJob(config.env, str(xml), dict(config.env_kwargs), config.max_episode_steps, dict(config.ppo),
                   config.steps, 0)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(time_checks, (job,))


def time_checks(job: NaiveJob) -> CheckCost:
    """In the spawned process: the check's microseconds per env step and per update (one torch thread)."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

    from ..robots.envs import make_env
    from ..worker.iterations import non_finite_parameter, trained_parameters
    from ..worker.train_envs import NamedNonFiniteCheck

    class Replay(VecEnvWrapper):
        """Hands back one real step's values at no cost: what the check adds to it is the check alone."""

        def __init__(self, venv, values):
            super().__init__(venv)
            self.values = values

        def reset(self):
            return self.values[0]

        def step_async(self, actions):
            pass

        def step_wait(self):
            return self.values

    torch.set_num_threads(1)
    venv = DummyVecEnv([lambda: make_env(job.env, Path(job.xml), job.env_kwargs, job.max_episode_steps)])
    model = PPO("MlpPolicy", venv, seed=job.seed, device="cpu", **job.ppo)  # the policy the update check reads
    venv.reset()
    actions = np.stack([venv.action_space.sample()])
    bare = Replay(venv, venv.step(actions))
    checked = NamedNonFiniteCheck(bare)
    checked.reset()
    steps = 5_000
    differences = [_us_per_call(lambda: checked.step(actions), steps) - _us_per_call(lambda: bare.step(actions), steps)
                   for _ in range(ROUNDS)]
    trained = trained_parameters(model)
    update_us = median(_us_per_call(lambda: non_finite_parameter(trained), 200) for _ in range(ROUNDS))
    return CheckCost(step_us=round(median(differences), 2), update_us=round(update_us, 1),
                     steps_per_update=model.n_steps * venv.num_envs)


def _us_per_call(call: Callable[[], object], n: int) -> float:
    """CPU microseconds of this thread per call: on a shared machine, the time others take is not counted."""
    started = time.thread_time()
    for _ in range(n):
        call()
    return (time.thread_time() - started) / n * 1e6
