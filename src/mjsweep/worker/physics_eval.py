"""eval.physics: the final policy evaluated on held-out physics, one episode on each draw (physics_eval.json).

Draw i is robots/draws.py's held-out draw i of eval.physics's seed: a function of that seed and i alone, so
every run of every group meets the same physics, and no training env ever drew it. The env's own start
state is seeded from the same two numbers. Runs at a run's end (before result.json), or alone for a finished
run whose physics_eval.json is missing or was made with other settings (no training).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import gymnasium
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from ..robots import draws as drawlib
from ..robots.envs import make_env
from ..robots.randomized_env import RandomizedEnv, slot_name
from ..spec.randomspec import RandomizedEdit
from ..sweepdir.files import RunDir, read_or_none, write_model
from ..sweepdir.models import PhysicsEval, RunResult, RunSpec, physics_evaluated
from .normalization import frozen_normalization


def finished_without_physics(spec: RunSpec, run: RunDir) -> RunResult | None:
    """The run's result when it finished (result.json complete, model.zip there) without the held-out evaluation
    spec.json asks for; None when there is nothing to evaluate alone."""
    if physics_evaluated(spec, read_or_none(run.read_physics_eval)):
        return None
    result = read_or_none(run.read_result)
    return result if result is not None and result.complete and run.model_zip.is_file() else None


def evaluate_physics(spec: RunSpec, model: BaseAlgorithm, stop_if_requested: Callable[[], None],
                     vecnormalize: VecNormalize | None = None) -> PhysicsEval:
    """One episode of the policy on each held-out draw of spec.physics_eval; its random numbers come from a
    forked torch generator, so a run's training state is untouched."""
    settings = spec.physics_eval
    assert settings is not None
    edits = [RandomizedEdit.model_validate(edit) for edit in settings["randomize"]]
    xml = Path(spec.xml)
    started = time.monotonic()
    returns: list[float] = []
    lengths: list[int] = []
    slots = drawlib.slots(edits)
    names = [slot_name(slot, edits) for slot in slots]
    values = [dict(zip(names, drawlib.held_out(slots, int(settings["seed"]), index).values(), strict=True))
              for index in range(settings["draws"])]
    with torch.random.fork_rng(devices=[]):
        for index in range(settings["draws"]):
            episode_return, length = _one_draw(spec, model, xml, edits, int(settings["seed"]), index,
                                               stop_if_requested, vecnormalize)
            returns.append(episode_return)
            lengths.append(length)
    return PhysicsEval(settings=settings, deterministic=spec.eval_deterministic, values=values, returns=returns,
                       lengths=lengths, eval_s=round(time.monotonic() - started, 3))


def env_seed(seed: int, index: int) -> int:
    """The start-state seed of held-out draw `index`: like the draw, from eval.physics's seed and the index."""
    sequence = np.random.SeedSequence(seed, spawn_key=(drawlib.HELD_OUT, index, 1))
    return int(sequence.generate_state(1)[0])


def _one_draw(spec: RunSpec, model: BaseAlgorithm, xml: Path, edits: list[RandomizedEdit], seed: int, index: int,
              stop_if_requested: Callable[[], None], vecnormalize: VecNormalize | None) -> tuple[float, int]:
    def frozen(env: VecEnv) -> VecEnv:
        return frozen_normalization(env, vecnormalize) if vecnormalize is not None else env

    return one_draw(model, lambda: make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps), xml, edits,
                    seed, index, spec.eval_deterministic, stop_if_requested, frozen)


def one_draw(model: BaseAlgorithm, make: Callable[[], gymnasium.Env], xml: Path, edits: list[RandomizedEdit],
             seed: int, index: int, deterministic: bool, stop_if_requested: Callable[[], None],
             normalize: Callable[[VecEnv], VecEnv]) -> tuple[float, int]:
    """The return and length of one episode of `model` on held-out draw `index` of `seed`, the env made by `make`
    on `xml` and `normalize`d (frozen statistics, or as it is)."""
    def held_out_env():
        # env_index is the draw's index: held_out(slots, seed, index) is the stream's (index, episode 0) draw
        return Monitor(OneDraw(RandomizedEnv(make(), xml, edits, seed, env_index=index, stream=drawlib.HELD_OUT)))

    env = normalize(DummyVecEnv([held_out_env]))
    env.seed(env_seed(seed, index))
    try:
        returns, lengths = evaluate_policy(model, env, n_eval_episodes=1, deterministic=deterministic,
                                           return_episode_rewards=True,
                                           callback=lambda _locals, _globals: stop_if_requested())
    finally:
        env.close()
    assert isinstance(returns, list) and isinstance(lengths, list)  # return_episode_rewards=True
    return float(returns[0]), int(lengths[0])


class OneDraw(gymnasium.Wrapper):
    """A held-out env that keeps its first draw: the reset a vectorized env makes as the one episode ends would
    apply the stream's next draw (a recompile, for a structural edit) for an episode never played."""

    def __init__(self, env: RandomizedEnv):
        super().__init__(env)
        self._drawn = env

    def reset(self, **kwargs):
        if self._drawn.draws_done:
            return self._drawn.env.reset(**kwargs)
        return self._drawn.reset(**kwargs)


def write(run: RunDir, evaluation: PhysicsEval) -> None:
    write_model(run.physics_eval_json, evaluation)


def evaluate_physics_only(spec: RunSpec, run: RunDir, result: RunResult,
                          stop_if_requested: Callable[[], None]) -> int:
    """A finished run's final model (normalization frozen) on the held-out draws, without training; 0 when done."""
    from .loaded_policy import load_policy
    from .normalization import load_frozen

    assert spec.physics_eval is not None  # finished_without_physics said so
    print(f"mjsweep.worker: evaluating the final model on {spec.physics_eval['draws']} held-out draws of physics; "
          "no training", flush=True)
    model = load_policy(spec.algo, str(run.model_zip))
    normalizer = None
    if run.vecnormalize.is_file():
        venv = DummyVecEnv([lambda: make_env(spec.env, Path(spec.xml), spec.env_kwargs, spec.max_episode_steps)])
        normalizer = load_frozen(str(run.vecnormalize), venv)
    evaluation = evaluate_physics(spec, model, stop_if_requested, normalizer)
    write(run, evaluation)
    print(f"mjsweep.worker: done, mean return {np.mean(evaluation.returns):.2f} over "
          f"{len(evaluation.returns)} held-out draws (eval return {result.eval_mean_return:.2f} nominal)", flush=True)
    return 0
