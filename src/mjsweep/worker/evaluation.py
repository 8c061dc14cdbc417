"""Evaluations of the policy being trained: the final one (result.json) and the periodic ones (eval.every:
evaluations.csv and the best model), on a separately seeded env with frozen normalization statistics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from ..plan.runs import RunSpec
from ..robots.envs import make_env
from ..sweepdir.csvfiles import EvaluationRow, csv_header, csv_line, read_evaluations
from ..sweepdir.models import CheckpointRecord
from .checkpoints import Checkpointer
from .normalization import frozen_normalization


def evaluate(spec: RunSpec, model: BaseAlgorithm, stop_if_requested: Callable[[], None],
             vecnormalize: VecNormalize | None = None) -> tuple[float, float, dict[str, float] | None]:
    """Mean and std of the return over eval_episodes fresh episodes of a separately seeded env, and the mean
    over them of each info key spec.eval_info names (None when it names none); stop_if_requested is called at
    every step. A normalized run's policy sees observations normalized with its training statistics, frozen;
    the returns are the env's own."""
    infos = EpisodeInfos(spec.eval_info)
    returns, _ = evaluate_episodes(spec, model, stop_if_requested, vecnormalize, infos)
    return float(np.mean(returns)), float(np.std(returns)), infos.means() if spec.eval_info else None


class EpisodeInfos:
    """The info of each episode's last step, for the keys asked; nothing is kept when none is asked."""

    def __init__(self, keys: list[str]):
        self.keys = keys
        self.values: dict[str, list[float]] = {key: [] for key in keys}
        self.episodes = 0

    def step(self, locals_: dict) -> None:
        if self.keys and locals_["done"]:
            self.episodes += 1
            for key in self.keys:
                if key in locals_["info"]:
                    self.values[key].append(float(locals_["info"][key]))

    def means(self) -> dict[str, float]:
        """Each key's mean over episodes; a key some episode's info lacked is left out."""
        return {key: float(np.mean(v)) for key, v in self.values.items() if v and len(v) == self.episodes}


def evaluate_episodes(spec: RunSpec, model: BaseAlgorithm, stop_if_requested: Callable[[], None],
                      vecnormalize: VecNormalize | None = None,
                      infos: EpisodeInfos | None = None) -> tuple[list[float], list[int]]:
    """Each episode's return and length, as `evaluate` runs them; `infos` sees every step."""
    def each_step(locals_: dict, _globals: dict) -> None:
        stop_if_requested()
        if infos is not None:
            infos.step(locals_)

    env: VecEnv = DummyVecEnv([lambda: Monitor(make_env(spec.env, Path(spec.xml), spec.env_kwargs,
                                                        spec.max_episode_steps))])
    if vecnormalize is not None:
        env = frozen_normalization(env, vecnormalize)
    env.seed(spec.seed + 1_000_003)
    try:
        returns, lengths = evaluate_policy(model, env, n_eval_episodes=spec.eval_episodes,
                                           deterministic=spec.eval_deterministic, return_episode_rewards=True,
                                           callback=each_step)
    finally:
        env.close()
    assert isinstance(returns, list) and isinstance(lengths, list)  # return_episode_rewards=True
    return [float(r) for r in returns], [int(n) for n in lengths]


class PeriodicEvaluator:
    """eval.every: an evaluation each time training passes a multiple of `every` timesteps, a row of
    evaluations.csv for each, and best_model.zip (with best_vecnormalize.pkl) for the best so far.

    An evaluation draws its random numbers from a forked torch generator and steps its own env, so the
    training goes on exactly as it would without it. It does not stop on a stop request (the next
    rollout step does), so the row and the model it describes always belong together.
    """

    def __init__(self, spec: RunSpec, checkpointer: Checkpointer, resume: CheckpointRecord | None,
                 on_evaluation: Callable[[int, float, float], None] | None = None):
        assert spec.eval_every is not None
        self.spec, self.checkpointer, self.every = spec, checkpointer, spec.eval_every
        run = self.run = checkpointer.run
        self.on_evaluation = on_evaluation
        """Also given (timesteps, mean, std) of each evaluation once its row is written (tracking)."""
        self.rows = 0
        self.best: tuple[float, int] | None = None
        """(mean return, timesteps) of the best evaluation so far."""
        path = run.evaluations_csv
        if resume is None or not path.exists():
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(csv_header(EvaluationRow))
            return
        for evaluation in read_evaluations(path):  # already truncated to the checkpoint's rows
            self._count(evaluation.mean_return, evaluation.timesteps)

    def due(self, previous_timesteps: int, timesteps: int) -> bool:
        """Whether the iteration from previous_timesteps to timesteps passed a multiple of `every`."""
        return timesteps // self.every > previous_timesteps // self.every

    def _count(self, mean: float, timesteps: int) -> bool:
        self.rows += 1
        if self.best is None or mean > self.best[0]:
            self.best = (mean, timesteps)
            return True
        return False

    def evaluate(self, model: BaseAlgorithm, wall_s: float) -> None:
        normalizer = model.get_vec_normalize_env()
        with torch.random.fork_rng(devices=[]):
            returns, lengths = evaluate_episodes(self.spec, model, lambda: None, normalizer)
        mean, std = float(np.mean(returns)), float(np.std(returns))
        timesteps = int(model.num_timesteps)
        line = csv_line(EvaluationRow(timesteps, mean, std, tuple(returns), tuple(lengths), wall_s))
        with open(self.run.evaluations_csv, "a", encoding="utf-8") as fh:
            fh.write(line)  # one write of a whole line; a torn one lies past the checkpoint's size
        if self.on_evaluation:
            self.on_evaluation(timesteps, mean, std)
        if self._count(mean, timesteps):
            self.checkpointer.best.save(model, normalizer, timesteps, mean, keep=self.checkpointer.kept_best())
