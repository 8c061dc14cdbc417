"""The spec's `search:` section: the method, the trial budget, the objective, the space, pruning.

Pure data and checks that need nothing but the values written; sweepspec.py checks the keys themselves (a PPO
argument, an env argument, an edit_grid label) against the rest of the spec.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

KINDS = ("log_uniform", "uniform", "int", "choice")
RUN_METRICS = ("eval_iqm", "best_iqm", "auc_iqm")
"""A seed's value from its run files: the final evaluation, the best periodic one, the mean over training."""
EVAL_METRICS = ("best_iqm", "auc_iqm")
"""Those read from periodic evaluations (eval.every)."""
MODEL_METRICS = ("mass", "actuators", "total_gear")
"""The trial's robot: total mass (kg), actuator count, sum of |gear[0]| over actuators."""
COST_METRICS = ("cpu_seconds", "cpu_hours", "env_steps")
"""What a trial cost: its runs' CPU seconds (result.json's cpu_s), the same in hours, their env steps; summed
over the trial's seeds, not averaged (usually minimized, against a return)."""
INFO_PREFIX = "info:"
"""info:<key>: the env's info[key] at the end of each final-evaluation episode, averaged over episodes."""
MULTI_OBJECTIVE_METHODS = ("random", "sobol", "tpe", "nsga2")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Dimension(_Strict):
    """One searched key, written as exactly one of {log_uniform: [lo, hi]}, {uniform: [lo, hi]},
    {int: [lo, hi]} or {choice: [a, b, ...]}."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    log_uniform: tuple[float, float] | None = None
    uniform: tuple[float, float] | None = None
    integer: tuple[int, int] | None = Field(None, alias="int")
    choice: list[Any] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Dimension:
        given = [k for k in KINDS if self._given(k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(KINDS)} (got {', '.join(given) or 'none'})")
        if self.choice is not None:
            if not self.choice:
                raise ValueError("choice needs at least one value")
            return self
        low, high = self.bounds
        if not low < high:
            raise ValueError(f"{self.kind}: low must be < high (got [{low}, {high}])")
        if self.log_uniform is not None and low <= 0:
            raise ValueError(f"log_uniform: bounds must be > 0 (got [{low}, {high}])")
        return self

    def _given(self, kind: str) -> Any:
        return self.integer if kind == "int" else getattr(self, kind)

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if self._given(k) is not None)

    @property
    def bounds(self) -> tuple[float, float]:
        span = self.log_uniform or self.uniform or self.integer
        assert span is not None, "a choice has no bounds"
        return span[0], span[1]

    def value_at(self, u: float) -> Any:
        """The value at u in [0, 1): the map from the unit cube that random and Sobol sampling share."""
        if self.choice is not None:
            return self.choice[min(int(u * len(self.choice)), len(self.choice) - 1)]
        low, high = self.bounds
        if self.integer is not None:
            return min(int(low + math.floor(u * (high - low + 1))), int(high))
        if self.log_uniform is not None:
            return self.clamp(math.exp(math.log(low) + u * (math.log(high) - math.log(low))))
        return self.clamp(low + u * (high - low))

    def clamp(self, value: float) -> float:
        """A sampled float rounded to 4 significant digits (readable ids, pasteable YAML), kept in bounds."""
        low, high = self.bounds
        return min(max(float(f"{value:.4g}"), low), high)

    def numbers(self) -> list[Any]:
        """The values a check must accept: both bounds, or every choice."""
        return list(self.choice) if self.choice is not None else list(self.bounds)


class ObjectiveSpec(_Strict):
    metric: str = "eval_iqm"
    """eval_iqm: each seed's final evaluation; best_iqm: its best periodic evaluation; auc_iqm: the area
    under its periodic evaluations per timestep; info:<key>: the env's info[key] at the end of each final
    evaluation episode, averaged over them. Each time the IQM over the trial's seeds. mass, actuators,
    total_gear: the trial's robot. cpu_seconds, cpu_hours, env_steps: what the trial cost, summed over its
    seeds."""
    direction: Literal["maximize", "minimize"] = "maximize"

    @field_validator("metric")
    @classmethod
    def _known(cls, metric: str) -> str:
        if metric in RUN_METRICS + MODEL_METRICS + COST_METRICS:
            return metric
        if metric.startswith(INFO_PREFIX) and info_key(metric).isidentifier():
            return metric
        known = ", ".join(RUN_METRICS + MODEL_METRICS + COST_METRICS)
        raise ValueError(f"unknown metric {metric!r}: use {known} or "
                         f"{INFO_PREFIX}<key of the env's info>")

    @property
    def maximize(self) -> bool:
        return self.direction == "maximize"


class PruneSpec(_Strict):
    method: Literal["median", "asha"] = "median"
    """median: stop a trial whose seeds' mean evaluation is worse than the median of the trials ended before
    it at the same timestep; asha: successive halving, only the best 1/3 of the trials that reached a rung
    (after, 3 x after, 9 x after, ...) go on."""
    after: int = Field(gt=0)
    """No trial is judged before its evaluations pass this many timesteps."""
    min_trials: int = Field(1, ge=1)
    """Ended trials of the same study needed before any trial is judged."""


class ConfirmSpec(_Strict):
    """`confirm: {top: 3, seeds: 5}`: once a study's trials have ended, its `top` best trials train again on
    `seeds` fresh seeds, and the report ranks them on those (docs/search.md)."""

    top: int = Field(3, ge=1)
    seeds: int = Field(5, ge=2)


class SearchSpec(_Strict):
    method: Literal["random", "sobol", "tpe", "cmaes", "nsga2"] = "random"
    """random and sobol need numpy (sobol: scipy); tpe, cmaes, nsga2: Optuna's TPESampler, CmaEsSampler (with
    the cmaes package) and NSGAIISampler (pip install 'mjsweep[search]')."""
    trials: int = Field(ge=1)
    """Points to try, per study (one study per variant and grid point)."""
    seeds_per_trial: int = Field(1, ge=1)
    """Every trial trains seeds 0 .. seeds_per_trial-1, each its own run."""
    objective: list[ObjectiveSpec] = Field(default_factory=lambda: [ObjectiveSpec()], min_length=1)
    """One objective ({metric, direction}) or a list of them: a multi-objective search (its result is the
    Pareto front of the trials)."""
    space: dict[str, Dimension] = Field(min_length=1)
    """Dotted key -> distribution: <algo>.<kwarg> (ppo., sac., tqc., ...), env_kwargs.<kwarg>, total_timesteps,
    normalize, edits.<label>."""
    prune: PruneSpec | None = None
    seed: int = Field(0, ge=0, le=2**32 - 1)
    """The sampler's seed (numpy's range): the same spec and seed propose the same trials."""
    confirm: ConfirmSpec | None = None
    """Retrain the best trials on fresh seeds; one objective only (a ranking to confirm)."""

    @field_validator("objective", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _confirm_one_objective(self) -> SearchSpec:
        if self.confirm is not None and self.multi:
            raise ValueError(f"confirm ranks trials by one objective; this search has {len(self.objective)} "
                             "(confirm a Pareto front's points by naming them in a grid instead)")
        return self

    @property
    def maximize(self) -> bool:
        """The first objective's direction: the one pruning and a single-objective ranking go by."""
        return self.objective[0].maximize

    @property
    def metric(self) -> str:
        return self.objective[0].metric

    @property
    def multi(self) -> bool:
        return len(self.objective) > 1

    def info_keys(self) -> list[str]:
        """The env info keys the runs' final evaluations average (the info: objectives)."""
        return [info_key(o.metric) for o in self.objective if o.metric.startswith(INFO_PREFIX)]


def info_key(metric: str) -> str:
    return metric[len(INFO_PREFIX):]


def whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
