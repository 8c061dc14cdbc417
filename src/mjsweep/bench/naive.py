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
    rollout_s: float
    train_s: float
    """Seconds in PPO updates; rollout_s + train_s is the training time its fps counts, as in the worker."""
    startup_s: float
    torch_threads: int
    peak_rss_mb: float


def train_default_threads(job: NaiveJob, monitor_csv: str | None = None) -> NaiveResult:
    """Build the env, train, evaluate one episode (as the mjsweep worker does), report what it used.
    The training env records its episodes with SB3's Monitor (into monitor_csv, if given), as every SB3
    training that keeps its returns does (`make_vec_env` wraps its envs so) and as the worker's monitor.csv
    does: without it, the trainings compared would not be the same."""
    import resource
    from pathlib import Path

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    from ..robots.envs import make_env
    from ..worker.iterations import PhaseTimer, process_age_s

    env = Monitor(make_env(job.env, Path(job.xml), job.env_kwargs, job.max_episode_steps), monitor_csv)
    model = PPO("MlpPolicy", env, seed=job.seed, device="cpu", verbose=0, **job.ppo)
    startup = process_age_s()
    timer = PhaseTimer()  # times training as the worker does, so both batches' run fps mean the same
    model.learn(total_timesteps=job.steps, callback=timer)
    eval_env = Monitor(make_env(job.env, Path(job.xml), job.env_kwargs, job.max_episode_steps))
    evaluate_policy(model, eval_env, n_eval_episodes=1)
    return NaiveResult(
        timesteps=int(model.num_timesteps), rollout_s=timer.rollout_s, train_s=timer.train_s, startup_s=startup,
        torch_threads=torch.get_num_threads(),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
