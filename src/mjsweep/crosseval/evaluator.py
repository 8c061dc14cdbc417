"""`python -m mjsweep.crosseval.evaluator JOB.json`: one trained policy evaluated on several variants.

JOB.json: {"model", "vecnormalize", "algo", "seed", "episodes", "deterministic", "targets": [{"variant", "env",
"xml", "env_kwargs", "max_episode_steps", "result"}]}. Each target's result file (sweepdir.models.CrossResult)
is written atomically as soon as it is done.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..sweepdir.files import write_model
from ..sweepdir.models import CrossResult
from ..worker.loaded_policy import load_policy, require_run_files
from ..worker.normalization import load_frozen


def evaluate_on(policy, target: dict[str, Any], job: dict[str, Any]) -> CrossResult:
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

    from ..robots.envs import make_env

    env: VecEnv = DummyVecEnv([lambda: Monitor(make_env(target["env"], Path(target["xml"]), target["env_kwargs"],
                                                        target["max_episode_steps"]))])
    try:
        for what, trained, here in (("observation", policy.observation_space, env.observation_space),
                                    ("action", policy.action_space, env.action_space)):
            if trained.shape != here.shape:
                return CrossResult(episodes=job["episodes"],
                                   skipped=f"{what} space {here.shape} differs from the policy's {trained.shape}")
        if target.get("physics"):
            return _on_held_out(policy, target, job)
        if job.get("vecnormalize"):
            env = load_frozen(job["vecnormalize"], env)
        env.seed(job["seed"] + 2_000_003)  # apart from training's and the final evaluation's seeds
        returns, lengths = evaluate_policy(policy, env, n_eval_episodes=job["episodes"],
                                           deterministic=job["deterministic"], return_episode_rewards=True)
    finally:
        env.close()
    assert isinstance(returns, list) and isinstance(lengths, list)  # return_episode_rewards=True
    values = [float(r) for r in returns]
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return CrossResult(episodes=job["episodes"], mean=mean, std=std, returns=values, lengths=[int(n) for n in lengths])


def _on_held_out(policy, target: dict[str, Any], job: dict[str, Any]) -> CrossResult:
    """One episode on each held-out draw of the target variant's eval.physics, as its own runs were evaluated."""
    from ..robots.envs import make_env
    from ..spec.randomspec import RandomizedEdit
    from ..worker.physics_eval import one_draw

    physics = target["physics"]
    xml = Path(target["xml"])
    edits = [RandomizedEdit.model_validate(edit) for edit in physics["randomize"]]
    vecnormalize = job.get("vecnormalize")

    def make():
        return make_env(target["env"], xml, target["env_kwargs"], target["max_episode_steps"])

    def normalize(env):
        return load_frozen(vecnormalize, env) if vecnormalize else env

    outcomes = [one_draw(policy, make, xml, edits, int(physics["seed"]), index, job["deterministic"], lambda: None,
                         normalize) for index in range(physics["draws"])]
    values = [r for r, _ in outcomes]
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return CrossResult(episodes=len(values), mean=mean, std=std, returns=values, lengths=[n for _, n in outcomes],
                       physics=physics)


def _outcome(result: CrossResult) -> str:
    return f"skipped: {result.skipped}" if result.skipped else f"mean return {result.mean:.2f}"


def main(job_path: str) -> None:
    import torch

    torch.set_num_threads(1)
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    require_run_files(job["model"], job.get("vecnormalize"))
    policy = load_policy(job.get("algo", "ppo"), job["model"])
    for target in job["targets"]:
        result = evaluate_on(policy, target, job)
        path = Path(target["result"])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_model(path, result)
        print(f"cross: {Path(job['model']).parent.name} on {target['variant']}: "
              f"{_outcome(result)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
