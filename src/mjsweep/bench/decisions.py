"""`sweep bench --stats`: the launcher's own decision code run on simulated sweeps whose answer is known.

A simulated sweep has 2 or 6 groups whose final returns are drawn from one distribution; under the null
nothing differs, under the alternative the first group's returns are shifted up by `effect` times the
distribution's scale. Each sweep is decided as `sweep report --compare` decides fixed seeds
(results/compare.py: the exact rank test, Holm over every pair) and as adaptive seeds decide round by round
(results/seeding.py's next_round, fed the seeds it grants). Counted over the sweeps: the family-wise false
separation rate (any pair of groups that do not differ called separated) with its 95% Wilson interval, the
power (the shifted group separated from every other), and the seeds each group trained.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..results.compare import separations
from ..results.seeding import next_round
from ..spec.sweepspec import AdaptiveSeeds

DISTRIBUTIONS = ("normal", "heavy", "bimodal")
"""normal: N(0, 1); heavy: Student's t with 2 degrees of freedom (infinite variance); bimodal: 70% of seeds
learn (N(0, 1)) and 30% fail to (N(-4, 0.5)), as RL seeds do."""
FAILING = 0.3


def draw(distribution: str, rng: np.random.Generator, shape: tuple[int, ...],
         pool: np.ndarray | None = None) -> np.ndarray:
    """Returns of one group's seeds: `shape` draws from the named distribution (or resampled from `pool`)."""
    if distribution == "normal":
        return rng.standard_normal(shape)
    if distribution == "heavy":
        return rng.standard_t(2, shape)
    if distribution == "bimodal":
        fails = rng.random(shape) < FAILING
        return np.where(fails, rng.normal(-4.0, 0.5, shape), rng.standard_normal(shape))
    if distribution == "resampled" and pool is not None:
        return rng.choice(pool, size=shape, replace=True)
    raise ValueError(f"no distribution {distribution!r}")


def scale(distribution: str, pool: np.ndarray | None = None) -> float:
    """What an effect of 1 shifts by: the spread of a seed that learns (the pool's std when resampled)."""
    if distribution == "resampled" and pool is not None:
        return float(np.std(pool, ddof=1)) or 1.0
    return 1.0


@dataclass(frozen=True)
class Outcome:
    design: str
    groups: int
    distribution: str
    effect: float
    sweeps: int
    false_separations: int
    power_hits: int
    seeds_per_group: float

    @property
    def false_rate(self) -> float:
        return self.false_separations / self.sweeps

    @property
    def false_interval(self) -> tuple[float, float]:
        return wilson(self.false_separations, self.sweeps)

    @property
    def power(self) -> float | None:
        return self.power_hits / self.sweeps if self.effect else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "false_rate": self.false_rate, "false_interval": list(self.false_interval),
                "power": self.power}


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


Sampler = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def sampler(distribution: str, pool: np.ndarray | None = None) -> Sampler:
    return lambda rng, shape: draw(distribution, rng, shape, pool)


def _returns(sample: Sampler, rng: np.random.Generator, groups: int, seeds: int, shift: float) -> np.ndarray:
    """groups x seeds returns; the first group shifted."""
    values = sample(rng, (groups, seeds))
    values[0] += shift
    return values


def _false_and_power(separated: set[frozenset[str]], names: list[str], shifted: bool) -> tuple[bool, bool]:
    """Whether a pair of groups that do not differ was separated, and whether the shifted one (the first)
    was separated from every other."""
    true_pairs = {frozenset((names[0], other)) for other in names[1:]} if shifted else set()
    false = any(pair not in true_pairs for pair in separated)
    power = shifted and true_pairs <= separated
    return false, power


def fixed(groups: int, seeds: int, sample: Sampler, effect: float, unit: float, sweeps: int, seed: int = 0,
          confidence: float = 0.95, label: str = "") -> Outcome:
    """Every group trains `seeds` seeds; the report's test decides."""
    rng = np.random.default_rng(seed)
    names = [f"g{i}" for i in range(groups)]
    false_hits = power_hits = 0
    for _ in range(sweeps):
        values = _returns(sample, rng, groups, seeds, effect * unit)
        separated = separations({n: list(v) for n, v in zip(names, values, strict=True)}, confidence)
        false, power = _false_and_power(separated, names, effect != 0)
        false_hits += false
        power_hits += power
    return Outcome(f"fixed {seeds} seeds", groups, label, effect, sweeps, false_hits, power_hits, float(seeds))


def adaptive(groups: int, policy: AdaptiveSeeds, sample: Sampler, effect: float, unit: float, sweeps: int,
             seed: int = 0, label: str = "") -> Outcome:
    """Every group trains `min` seeds, then the seeds adaptive seeds grant, round by round."""
    rng = np.random.default_rng(seed)
    names = [f"g{i}" for i in range(groups)]
    false_hits = power_hits = 0
    spent = 0
    for _ in range(sweeps):
        values = _returns(sample, rng, groups, policy.max, effect * unit)
        seeds = dict.fromkeys(names, policy.min)
        history: list[dict[str, int]] = []
        number = 1
        while True:
            returns: dict[str, list[float | None]] = {n: list(values[i, :seeds[n]]) for i, n in enumerate(names)}
            decision = next_round(number, returns, history, policy)
            if decision.done:
                break
            history.append(decision.seeds())
            seeds = decision.granted()
            number += 1
        separated = {frozenset((p.a, p.b)) for p in decision.pairs if p.separated}
        false, power = _false_and_power(separated, names, effect != 0)
        false_hits += false
        power_hits += power
        spent += sum(seeds.values())
    return Outcome(f"adaptive {policy.min}-{policy.max} seeds", groups, label, effect, sweeps, false_hits,
                   power_hits, spent / (sweeps * groups))


def equal_power_seeds(curve: list[Outcome], power: float) -> float | None:
    """The seeds each a fixed design needs for `power`, read off fixed designs at increasing seed counts
    (linear between two counts); None when the largest does not reach it."""
    points = [(o.seeds_per_group, o.power or 0.0) for o in curve]
    for (n0, p0), (n1, p1) in zip(points, points[1:], strict=False):
        if p0 >= power:
            return n0
        if p1 >= power:
            return n0 + (n1 - n0) * (power - p0) / (p1 - p0)
    return points[-1][0] if points and points[-1][1] >= power else None
