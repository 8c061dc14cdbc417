"""Pure expansion of a spec into runs: variants x grid points x seeds, each with a stable id.

A run id is readable (variant, grid values, seed) and ends with a hash of everything that decides
what the run computes, so the same content always gets the same id and an edited XML or parameter
gets a new one.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from typing import TYPE_CHECKING, Any

from ..naming import format_value, sanitize
from ..spec.algos import ALGO_NAMES, ALGOS, OFF_POLICY_CHECKPOINT_EVERY, OFF_POLICY_CHECKPOINT_EVERY_S
from ..spec.sweepspec import SweepSpec, normalize_kwargs
from ..sweepdir.models import RunSpec, WarmSource

if TYPE_CHECKING:  # variants imports MuJoCo's edit machinery, which `sweep status` never needs
    from ..robots.variants import Variant

MAX_ID_LENGTH = 180  # well under the 255-byte file name limit, with room for temp-file suffixes


def expand(spec: SweepSpec, variants: list[Variant], warm: WarmSource | None = None) -> list[RunSpec]:
    """Every run of the sweep, in a stable order: variant, then grid point, then seed; each started from
    `warm` when given (engine/warmstart.py found it)."""
    axes = list(spec.grid.items())
    points = [dict(zip([k for k, _ in axes], combo, strict=True)) for combo in itertools.product(*[v for _, v in axes])]
    short = _short_names(list(spec.grid))
    points = _collapse(points)
    runs = []
    for variant in variants:
        for point in points:
            for seed in spec.seed_list:
                runs.append(_make_run(spec, variant, point, seed, short, warm))
    return runs


def make_run(spec: SweepSpec, variant: Variant, point: dict[str, Any], seed: int,
             warm: WarmSource | None = None) -> RunSpec:
    """One run of `variant` with the values of `point` (grid keys) set; a search's trials are made so."""
    return _make_run(spec, variant, point, seed, _short_names(list(point)), warm)


def _collapse(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each point without the grid keys of algorithms other than its own (a PPO run has no sac.tau), and
    the points this makes equal only once: `grid: {algo: [ppo, sac], sac.tau: [0.005, 0.01]}` is one PPO
    point and two SAC points."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()  # a list's `in` would make this quadratic in the grid's points
    for point in points:
        algo = point.get("algo")
        if algo is not None:
            point = {k: v for k, v in point.items() if k.split(".")[0] not in ALGO_NAMES or k.startswith(f"{algo}.")}
        key = json.dumps(point, default=repr)
        if key not in seen:
            seen.add(key)
            out.append(point)
    return out


def _make_run(spec: SweepSpec, variant: Variant, point: dict[str, Any], seed: int,
              short: dict[str, str], warm: WarmSource | None = None) -> RunSpec:
    algo = point.get("algo", spec.algo)
    hyperparams = copy.deepcopy(spec.hyperparameters(algo))
    env_kwargs = {**copy.deepcopy(spec.env_kwargs), **copy.deepcopy(variant.env_kwargs)}
    total = spec.total_timesteps_of(algo)
    normalize: Any = spec.normalize_of(algo)
    n_envs = spec.n_envs_of(algo)
    if variant.loc[:1] == ("variants",) and spec.variants[int(variant.loc[1])].normalize is not None:
        normalize = spec.variants[int(variant.loc[1])].normalize
    for key, value in point.items():
        if key == "total_timesteps":
            total = value
        elif key == "normalize":
            normalize = value
        elif key.startswith(f"{algo}."):
            _set_dotted(hyperparams, key[len(algo) + 1:], value)
        elif key.startswith("env_kwargs."):
            _set_dotted(env_kwargs, key[len("env_kwargs."):], value)
    policy = hyperparams.pop("policy", ALGOS[algo].policy)
    normalized = normalize_kwargs(normalize, hyperparams.get("gamma", 0.99))
    randomize = [edit.model_dump(exclude_none=True) for edit in variant.randomize]
    digest = content_digest(_content(
        env=spec.env, xml_sha256=variant.sha256, env_kwargs=env_kwargs, max_episode_steps=spec.max_episode_steps,
        policy=policy, seed=seed, total_timesteps=total, n_envs=n_envs, vec_env=spec.vec_env, device=spec.device,
        algo=algo, hyperparams=hyperparams, normalize=normalized, warm=warm, randomize=randomize))
    readable = "_".join([variant.name, *(f"{short[k]}={format_value(v)}" for k, v in point.items()), f"s{seed}"])
    readable = sanitize(readable)[: MAX_ID_LENGTH - 9]
    return RunSpec(
        run_id=f"{readable}_{digest[:8]}", sweep=spec.name, variant=variant.name, grid=point,
        edits=dict(variant.edit_values), seed=seed,
        env=spec.env, xml=str(variant.xml), xml_sha256=variant.sha256, env_kwargs=env_kwargs,
        max_episode_steps=spec.max_episode_steps, policy=policy, algo=algo, hyperparams=hyperparams,
        total_timesteps=total, n_envs=n_envs, vec_env=spec.vec_env, **checkpoint_interval(spec, algo),
        checkpoints_kept=spec.checkpoints_kept,
        eval_episodes=spec.eval.episodes, eval_deterministic=spec.eval.deterministic, eval_every=spec.eval.every,
        eval_info=spec.search.info_keys() if spec.search else [],
        content_hash=digest, cpus=cpus_per_run(spec, algo), device=spec.device, tensorboard=spec.tensorboard,
        normalize=normalized, wandb=spec.tracking.wandb, warm_start=warm, randomize=randomize,
        physics_eval=spec.eval.physics.as_data(list(variant.randomize)) if spec.eval.physics else None,
    )


def _content(*, env: str, xml_sha256: str, env_kwargs: dict[str, Any], max_episode_steps: int | None, policy: str,
             seed: int, total_timesteps: int, n_envs: int, vec_env: str, device: str, algo: str,
             hyperparams: dict[str, Any], normalize: dict[str, Any] | None, warm: WarmSource | None,
             randomize: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything that decides what a run computes: what its id's hash is taken of."""
    content: dict[str, Any] = {
        "env": env, "xml_sha256": xml_sha256, "env_kwargs": env_kwargs, "max_episode_steps": max_episode_steps,
        "policy": policy, "seed": seed, "total_timesteps": total_timesteps, "n_envs": n_envs, "vec_env": vec_env,
        "device": device,
    }
    # A PPO run hashes as it did before `algo` existed, so it keeps its id.
    if algo == "ppo":
        content["ppo"] = hyperparams
    else:
        content.update(algo=algo, hyperparams=hyperparams)
    if normalize is not None:
        content["normalize"] = normalize
    if warm is not None:  # a warm run is never the cold run of the same settings, nor one of another source
        content["warm_start"] = warm.identity()
    if randomize:  # a randomized run is never the nominal run of the same model, nor one of another distribution
        content["randomize"] = randomize
    return content


def content_digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=repr).encode()).hexdigest()


def content_but_total(run: RunSpec) -> dict[str, Any] | None:
    """What decides what `run` computes but its total_timesteps, rebuilt from its spec.json; None when the
    rebuilt content does not hash to the run's content_hash (a spec.json of another version's hashing), so that
    runs are only ever matched on the content their ids were made of."""
    content = _content(env=run.env, xml_sha256=run.xml_sha256, env_kwargs=run.env_kwargs,
                       max_episode_steps=run.max_episode_steps, policy=run.policy, seed=run.seed,
                       total_timesteps=run.total_timesteps, n_envs=run.n_envs, vec_env=run.vec_env,
                       device=run.device, algo=run.algo, hyperparams=run.hyperparams, normalize=run.normalize,
                       warm=run.warm_start, randomize=run.randomize)
    if content_digest(content) != run.content_hash:
        return None
    del content["total_timesteps"]
    return content


def checkpoint_interval(spec: SweepSpec, algo: str) -> dict[str, Any]:
    """checkpoint_every and checkpoint_every_s as the spec sets them, else the algorithm's defaults."""
    off_policy = ALGOS[algo].off_policy
    given = spec.model_fields_set
    return {
        "checkpoint_every": spec.checkpoint_every if "checkpoint_every" in given or not off_policy
        else OFF_POLICY_CHECKPOINT_EVERY,
        "checkpoint_every_s": spec.checkpoint_every_s if "checkpoint_every_s" in given or not off_policy
        else OFF_POLICY_CHECKPOINT_EVERY_S,
    }


def cpus_per_run(spec: SweepSpec, algo: str) -> int:
    """The spec's cpus_per_run, else what a run of `algo` uses: one slot per process, each on one thread
    (a DummyVecEnv steps its n_envs environments in turn in the run's one process)."""
    return spec.cpus_per_run or (spec.n_envs_of(algo) if spec.vec_env == "subproc" else 1)


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[last] = value


def _short_names(keys: list[str]) -> dict[str, str]:
    """Last dotted segment of each grid key, or the whole key where two would clash."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last, strict=True)}
