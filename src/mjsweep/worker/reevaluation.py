"""A finished run evaluated again, without training, when the evaluation settings of its spec.json (episodes,
deterministic) are no longer those its final evaluation had: its final model (model.zip, with its normalization
statistics frozen) is evaluated as a final evaluation is (worker/evaluation.py), and result.json gets the new
evaluation, the earlier one kept in its `earlier_evaluations`. Runs evaluated differently never pool."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..sweepdir.files import RunDir, read_or_none, write_model
from ..sweepdir.models import EarlierEvaluation, RunResult, RunSpec, evaluated_as


def evaluated_otherwise(spec: RunSpec, run: RunDir) -> RunResult | None:
    """The run's result when it finished (result.json complete, model.zip there) with other evaluation settings
    than spec.json's; None when it is to train (or resume) as usual."""
    result = read_or_none(run.read_result)
    if result is None or not result.complete or not run.model_zip.is_file() or evaluated_as(spec, result):
        return None
    return result


def evaluate_again(spec: RunSpec, run: RunDir, earlier: RunResult, stop_if_requested: Callable[[], None]) -> int:
    """Evaluate the final model with spec.json's settings and rewrite result.json; 0 when done (a stop raises
    KeyboardInterrupt with result.json untouched)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from ..robots.envs import make_env
    from .evaluation import evaluate
    from .loaded_policy import load_policy
    from .normalization import load_frozen

    print(f"mjsweep.worker: evaluating the final model again with {spec.eval_episodes} episodes "
          f"(deterministic: {spec.eval_deterministic}); no training", flush=True)
    started = time.monotonic()
    model = load_policy(spec.algo, str(run.model_zip))
    normalizer = None
    if run.vecnormalize.is_file():
        venv = DummyVecEnv([lambda: make_env(spec.env, Path(spec.xml), spec.env_kwargs, spec.max_episode_steps)])
        normalizer = load_frozen(str(run.vecnormalize), venv)
    mean, std, info_means = evaluate(spec, model, stop_if_requested, normalizer)
    kept = EarlierEvaluation(eval_mean_return=earlier.eval_mean_return, eval_std_return=earlier.eval_std_return,
                             eval_episodes=earlier.eval_episodes, eval_deterministic=earlier.eval_deterministic,
                             eval_s=earlier.eval_s, eval_info=earlier.eval_info)
    write_model(run.result_json, earlier.model_copy(update={
        "eval_mean_return": mean, "eval_std_return": std, "eval_episodes": spec.eval_episodes,
        "eval_deterministic": spec.eval_deterministic, "eval_info": info_means,
        "eval_s": round(time.monotonic() - started, 3),
        "earlier_evaluations": [*earlier.earlier_evaluations, kept]}))
    print(f"mjsweep.worker: done, eval return {mean:.2f} +- {std:.2f} (was {earlier.eval_mean_return:.2f} with "
          f"{earlier.eval_episodes} episodes)", flush=True)
    return 0
