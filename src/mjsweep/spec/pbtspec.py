"""The spec's `pbt:` section: population-based training (Jaderberg et al. 2017) of one population per variant
and grid point, and the checks it needs against the rest of the spec.

Only hyperparameters a running model can take without being rebuilt are explored (LIVE): the worker sets them
on the model it loads from the copied checkpoint (worker/live_hyperparams.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .algos import ALGOS, Algo, key_problem, schedule_start, value_problem
from .searchspace import Dimension

LIVE = ("learning_rate", "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "gae_lambda", "gamma", "tau")
"""Hyperparameters a loaded model takes as they are set after the load: no network, buffer or optimizer of
another shape is needed."""

ErrorAt = Callable[[tuple[str | int, ...], str], Exception]


class PbtSpec(BaseModel):
    """pbt: {population, interval, quantile, factors, resample_probability, space, seed}."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    population: int = Field(ge=1, le=256)
    """Members trained together, one run (and one process) each; member i trains with seed i. At least 2 to
    explore; a replayed schedule may take 1."""
    interval: int = Field(gt=0)
    """Env steps of one segment: members are ranked, and the worst copy the best, every `interval` steps."""
    quantile: float = Field(0.25, gt=0, le=0.5)
    """The bottom share of the population copies a member of the top share (at least one member each)."""
    factors: list[float] = Field(default_factory=lambda: [0.8, 1.25], min_length=1)
    """A copied member's hyperparameters are each multiplied by one of these, drawn at random (explore)."""
    resample_probability: float = Field(0.25, ge=0, le=1)
    """The chance that a hyperparameter is drawn afresh from `space` rather than multiplied."""
    space: dict[str, Dimension] = Field(default_factory=dict)
    """<algo>.<kwarg>: the initial draw of every member, the resampling, and the bounds a product is kept in."""
    schedule: list[dict[str, float]] | None = None
    """Instead of a space: the values of each generation, one mapping per generation, followed by every member
    without copies (`sweep report` writes the best member's schedule of a PBT sweep so, to replay it)."""
    seed: int = Field(0, ge=0)
    """Seeds every draw: the same results make the same decisions."""

    @field_validator("factors")
    @classmethod
    def _positive(cls, factors: list[float]) -> list[float]:
        if not all(f > 0 for f in factors):
            raise ValueError(f"factors must be > 0 (got {factors})")
        return factors

    @model_validator(mode="after")
    def _one_mode(self) -> PbtSpec:
        if bool(self.space) == (self.schedule is not None):
            raise ValueError("give a space to explore or a schedule to replay (one of them)")
        if self.space and self.population < 2:
            raise ValueError("a population that explores has at least 2 members")
        if self.schedule is not None and (not self.schedule or any(s.keys() != self.schedule[0].keys()
                                                                   for s in self.schedule)):
            raise ValueError("a schedule is a list of generations, each with the same keys")
        for key, dim in self.space.items():
            if dim.kind not in ("uniform", "log_uniform"):
                raise ValueError(f"space.{key}: explored hyperparameters are floats: use uniform or log_uniform")
        return self

    @property
    def keys(self) -> list[str]:
        """The explored (or replayed) keys, <algo>.<kwarg>."""
        return list(self.schedule[0]) if self.schedule else list(self.space)

    def generations(self, total_timesteps: int) -> int:
        return total_timesteps // self.interval


def check(pbt: PbtSpec, algos: list[str], hyperparams: dict[str, Any], total_timesteps: int, n_envs: int,
          grid: dict[str, Any], error: ErrorAt) -> None:
    """pbt against the rest of the spec: one algorithm, keys it has and can take live, constant values (a
    schedule restarts in every segment), a budget of whole segments."""
    if len(algos) != 1:
        raise error(("pbt",), "a population trains one algorithm: drop algo from the grid")
    algo = ALGOS[algos[0]]
    section = "space" if pbt.space else "schedule"
    for key in pbt.keys:
        at: tuple[str | int, ...] = ("pbt", section, key) if pbt.space else ("pbt", section, 0, key)
        prefix, _, name = key.partition(".")
        if prefix != algo.name or not name:
            raise error(at, f"explore {algo.name}.<kwarg>, the keyword arguments of the algorithm trained")
        if problem := key_problem(algo, name):
            raise error(at, problem)
        if name not in LIVE:
            raise error(at, f"{name} cannot change in a running model; explorable: "
                            f"{', '.join(k for k in LIVE if k in algo.kwargs)}")
        if key in grid:
            raise error(at, "this key is in the grid too: explore it or grid it, not both")
        if schedule_start(hyperparams.get(name)) is not None:
            raise error((algo.name, name), "an explored hyperparameter starts from a constant, not a schedule")
        values = pbt.space[key].numbers() if pbt.space else [s[key] for s in pbt.schedule or []]
        for value in values:
            if problem := value_problem(algo, name, value):
                raise error(at, problem)
    if pbt.schedule is not None and len(pbt.schedule) != pbt.generations(total_timesteps):
        raise error(("pbt", "schedule"), f"{len(pbt.schedule)} generations scheduled; total_timesteps / interval "
                                         f"is {pbt.generations(total_timesteps)}")
    _check_segment_ends(pbt, algo, hyperparams, total_timesteps, n_envs, error)


def _check_segment_ends(pbt: PbtSpec, algo: Algo, hyperparams: dict[str, Any], total_timesteps: int, n_envs: int,
                        error: ErrorAt) -> None:
    """Whole segments, each ending where the algorithm's training stops: at an iteration's or a rollout's end."""
    if total_timesteps % pbt.interval or total_timesteps < 2 * pbt.interval:
        raise error(("pbt", "interval"), f"total_timesteps ({total_timesteps}) must be a multiple of interval "
                                         f"({pbt.interval}), at least two segments")
    steps = hyperparams.get("n_steps", algo.defaults.get("n_steps", 1)) if algo.has_rollout else 1
    if pbt.interval % (steps * n_envs):
        raise error(("pbt", "interval"), f"interval must be a multiple of n_steps * n_envs ({steps} * {n_envs}): "
                                         "a segment ends where an iteration ends")
    if algo.off_policy:
        # SB3 collects train_freq steps per env before it checks the budget: a segment would overrun its end.
        freq = hyperparams.get("train_freq", 1)
        count, unit = (freq[0], freq[1]) if isinstance(freq, list) else (freq, "step")
        if unit == "episode":
            raise error((algo.name, "train_freq"), "pbt ends a segment at a step count: give train_freq in steps")
        if pbt.interval % (count * n_envs):
            raise error(("pbt", "interval"), f"interval must be a multiple of train_freq * n_envs ({count} * "
                                             f"{n_envs}): a segment ends where a rollout ends")
