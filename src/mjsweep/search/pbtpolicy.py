"""PBT's decisions, pure: the members' first hyperparameters, and after each generation who copies whom
(exploit: truncation selection on the segments' scores) and how the copies' values change (explore).

Every draw comes from a generator seeded with (pbt.seed, population, generation): the same scores make the
same decisions, in a resumed launcher as in the first, whatever order the segments ended in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..spec.pbtspec import PbtSpec


@dataclass(frozen=True)
class Decision:
    """What one member trains with in the next generation."""

    member: int
    hyperparams: dict[str, float]
    copied_from: int | None = None
    """The member whose checkpoint it copies; None: it continues from its own."""
    explored: dict[str, str] = field(default_factory=dict)


def initial(pbt: PbtSpec, population: int) -> list[dict[str, float]]:
    """Each member's first values, drawn from the space."""
    if pbt.schedule is not None:
        return [dict(pbt.schedule[0]) for _ in range(pbt.population)]
    out = []
    for member in range(pbt.population):
        u = np.random.default_rng([pbt.seed, population, 0, member]).random(len(pbt.space))
        out.append({key: dim.value_at(float(x)) for (key, dim), x in zip(pbt.space.items(), u, strict=True)})
    return out


def ranked(scores: list[float | None]) -> list[int]:
    """Members best first; a member without a score (its segment failed) last; ties to the lower number."""
    return sorted(range(len(scores)), key=lambda m: (scores[m] is None, -(scores[m] or 0.0), m))


def next_generation(pbt: PbtSpec, population: int, generation: int, current: list[dict[str, float]],
                    scores: list[float | None]) -> list[Decision]:
    """The decisions for `generation` from the one before: `current` values and `scores` (None: failed).
    The bottom quantile (and every member without a score, which has no checkpoint to go on from) copies a
    member of the top quantile drawn at random, then perturbs or resamples each explored value."""
    if pbt.schedule is not None:  # a replay: every member takes the generation's values, nobody copies
        return [Decision(member, dict(pbt.schedule[generation])) for member in range(len(current))]
    rng = np.random.default_rng([pbt.seed, population, generation])
    order = ranked(scores)
    cut = max(1, math.floor(len(order) * pbt.quantile))
    top = [m for m in order[:cut] if scores[m] is not None]
    losers = set(order[-cut:]) | {m for m, s in enumerate(scores) if s is None}
    out = []
    for member in range(len(current)):
        if member not in losers or not top or member in top:
            out.append(Decision(member, dict(current[member])))
            continue
        donor = top[int(rng.integers(len(top)))]
        values, how = explore(pbt, current[donor], rng)
        out.append(Decision(member, values, donor, how))
    return out


def explore(pbt: PbtSpec, values: dict[str, float], rng: np.random.Generator) -> tuple[dict[str, float],
                                                                                      dict[str, str]]:
    """Each value resampled from the space with resample_probability, else times a factor drawn from
    `factors`, kept within the space's bounds (and rounded as the space rounds)."""
    new, how = {}, {}
    for key, dim in pbt.space.items():
        if rng.random() < pbt.resample_probability:
            new[key], how[key] = dim.value_at(float(rng.random())), "resampled"
        else:
            factor = pbt.factors[int(rng.integers(len(pbt.factors)))]
            new[key], how[key] = dim.clamp(values[key] * factor), f"x{factor:g}"
    return new, how
