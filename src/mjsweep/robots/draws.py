"""Draws of a variant's randomized edits: the i-th draw of an env's stream from the run's seed alone.

A draw is a pure function of (seed, stream, env index, episode): no generator state is carried from one
draw to the next, so the exact state of an env's draws is its episode count, and any draw (a held-out
one included) can be made again without the ones before it. Streams keep draws disjoint: training's
draws are TRAIN; an evaluation on held-out physics takes another stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.editspec import EditSpec
from ..spec.randomspec import Distribution, RandomizedEdit, distributions

TRAIN = 0
"""The stream training's envs draw from."""
HELD_OUT = 1
"""A stream no training draws from: physics to judge a policy on."""

LABEL_PREFIX = "_draw"


@dataclass(frozen=True)
class Slot:
    """One drawn number: where it goes (an edit's value or factor, or one entry of a list value)."""

    edit: int
    key: str
    index: int | None
    distribution: Distribution
    per_env: bool

    @property
    def label(self) -> str:
        return _label(self.edit, self.key, self.index)


def _label(edit: int, key: str, index: int | None) -> str:
    """The placeholder name of a drawn number: _draw0_factor, _draw2_value_1."""
    return f"{LABEL_PREFIX}{edit}_{key}" + ("" if index is None else f"_{index}")


def slots(edits: list[RandomizedEdit]) -> list[Slot]:
    """Every number the edits draw, in the order they are listed."""
    return [Slot(j, key, index, dist, edit.per == "env")
            for j, edit in enumerate(edits) for (key, index), dist in distributions(edit).items()]


def template(edits: list[RandomizedEdit]) -> list[EditSpec]:
    """The edits with each distribution replaced by its slot's placeholder, for robots/edits.generate."""
    out = []
    for j, edit in enumerate(edits):
        update: dict[str, Any] = {}
        for key in ("value", "factor"):
            raw = getattr(edit.args, key, None)
            if isinstance(raw, dict):
                update[key] = "${" + _label(j, key, None) + "}"
            elif isinstance(raw, list):
                update[key] = ["${" + _label(j, key, i) + "}" if isinstance(v, dict) else v for i, v in enumerate(raw)]
        args = edit.args.model_copy(update=update)
        out.append(EditSpec.model_validate({edit.op: args.model_dump(exclude_none=True)}))
    return out


def draw(all_slots: list[Slot], seed: int, stream: int, env_index: int, episode: int) -> dict[str, float]:
    """The values of episode `episode` of env `env_index` (a per-env slot draws as at episode 0)."""
    return {slot.label: sample(slot.distribution, np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        seed, spawn_key=(stream, env_index, k, 0 if slot.per_env else episode)))))
        for k, slot in enumerate(all_slots)}


def held_out(all_slots: list[Slot], seed: int, index: int) -> dict[str, float]:
    """The index-th held-out draw of an evaluation's seed: every slot drawn afresh (a per-env one too), from the
    HELD_OUT stream, which no training env draws from."""
    return draw(all_slots, seed, HELD_OUT, env_index=index, episode=0)


def sample(dist: Distribution, rng: np.random.Generator) -> float:
    """One number from dist."""
    if dist.kind == "uniform":
        low, high = dist.params
        return float(rng.uniform(low, high))
    if dist.kind == "log_uniform":
        low, high = dist.params
        return float(math.exp(rng.uniform(math.log(low), math.log(high))))
    if dist.kind == "choice":
        return float(dist.params[int(rng.integers(len(dist.params)))])
    mean, std, low, high = dist.params
    while True:  # the spec refuses bounds that hold less than 1% of the mass, so this ends quickly
        value = float(rng.normal(mean, std))
        if low <= value <= high:
            return value


def extremes(all_slots: list[Slot]) -> list[dict[str, float]]:
    """Every slot at its smallest value, then every slot at its largest: what the spec checks apply."""
    return [{s.label: _extreme(s.distribution, side) for s in all_slots} for side in (0, 1)]


def _extreme(dist: Distribution, side: int) -> float:
    bound = dist.support[side]
    if math.isfinite(bound):
        return bound
    mean, std = dist.params[:2]  # a normal without that bound: four standard deviations out
    return mean + (4 * std if side else -4 * std)
