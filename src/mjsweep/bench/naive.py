"""The baseline: one PPO training as people write it for multiprocessing.Pool, torch left at its defaults.

Runs in a spawned Pool process; torch and stable-baselines3 are imported there, never in the bench.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NaiveJob:
    env: str
    xml: str
    env_kwargs: dict[str, Any]
    max_episode_steps: int | None
    ppo: dict[str, Any]
    steps: int
    seed: int


@dataclass(frozen=True)
class NaiveResult:
    timesteps: int
    train_s: float
    startup_s: float
    torch_threads: int
    peak_rss_mb: float


def train_default_threads(job: NaiveJob) -> NaiveResult:
    """Build the env, train, evaluate one episode (as the mjsweep worker does), report what it used."""
    import resource
    import time
    from pathlib import Path

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    from ..envs import make_env
    from ..training import process_age_s

    env = make_env(job.env, Path(job.xml), job.env_kwargs, job.max_episode_steps)
    model = PPO("MlpPolicy", env, seed=job.seed, device="cpu", verbose=0, **job.ppo)
    startup = process_age_s()
    started = time.monotonic()
    model.learn(total_timesteps=job.steps)
    train_s = time.monotonic() - started
    eval_env = Monitor(make_env(job.env, Path(job.xml), job.env_kwargs, job.max_episode_steps))
    evaluate_policy(model, eval_env, n_eval_episodes=1)
    return NaiveResult(
        timesteps=int(model.num_timesteps), train_s=train_s, startup_s=startup,
        torch_threads=torch.get_num_threads(),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
