"""`sweep bench --stats`: the launcher's own decision code run on simulated sweeps whose answer is known.

A simulated sweep has 2 or 6 groups whose final returns are drawn from one distribution; under the null
nothing differs, under the alternative the first group's returns are shifted up by `effect` times the
distribution's scale. In the SPREADS settings no group is better (P(A > B) = 1/2 for every pair) but the groups
differ in spread, seed count or shape. Each sweep is decided as `sweep report --compare` decides fixed seeds
(results/compare.py: the Brunner-Munzel test, Holm over every pair) and as adaptive seeds decide round by round
(results/seeding.py's next_round, fed the seeds it grants). Counted over the sweeps: the family-wise false
separation rate (any pair of groups that do not differ called separated) with its 95% Wilson interval, the
power (the shifted group separated from every other), and the seeds each group trained.

A design's sweeps are simulated in blocks of BLOCK, each from a generator seeded by (seed, block), and the
blocks run on every usable core: the figures are the same however many cores there are.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..results import brunnermunzel
from ..results.compare import separations
from ..results.seeding import next_round
from ..spec.sweepspec import AdaptiveSeeds

DISTRIBUTIONS = ("normal", "heavy", "bimodal")
"""normal: N(0, 1); heavy: Student's t with 2 degrees of freedom (infinite variance); bimodal: 70% of seeds
learn (N(0, 1)) and 30% fail to (N(-4, 0.5)), as RL seeds do."""
FAILING = 0.3
SPREADS = ("spread", "counts", "shape")
"""Null settings where every pair has P(A > B) = 1/2 but the groups differ, alternating between two kinds (the
first group of the first kind): spread: normal with sd 3 and with sd 1; counts: the same, the wide groups with a
third of the seeds (4 against 12 at fixed seeds; at adaptive seeds each of their seeds fails with chance
WIDE_FAILING, as a run that crashes); shape: symmetric bimodal (half N(-2, 0.5), half N(2, 0.5): seeds that fail
or learn) and N(0, 1)."""
WIDE_FAILING = 0.5
COUNTS = (4, 12)
"""The seeds each of the wide and of the narrow groups at fixed seeds, in the counts setting."""


def _alternating(distribution: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """groups x seeds of a SPREADS setting: even rows the first kind, odd rows the second."""
    first = np.arange(shape[0])[:, None] % 2 == 0
    if distribution == "shape":
        sides = np.where(rng.random(shape) < 0.5, -2.0, 2.0)
        return np.where(first, rng.normal(sides, 0.5), rng.standard_normal(shape))
    return np.where(first, 3.0, 1.0) * rng.standard_normal(shape)


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
    if distribution in SPREADS and len(shape) == 2:
        return _alternating(distribution, rng, shape)
    raise ValueError(f"no distribution {distribution!r}")


def scale(distribution: str, pool: np.ndarray | None = None) -> float:
    """What an effect of 1 shifts by: the returns' interquartile range over 1.349 (the standard deviation of a
    normal distribution, and a finite spread for heavy tails and for seeds that fail)."""
    values = pool if distribution == "resampled" and pool is not None else \
        draw(distribution, np.random.default_rng(0), (200_000,))
    low, high = np.percentile(values, [25, 75])
    return float(high - low) / 1.349 or 1.0


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


@dataclass(frozen=True)
class Sampler:
    """Draws of one named distribution (or resampled from `pool`); a value, so that it travels to workers."""

    distribution: str
    pool: tuple[float, ...] | None = None

    def __call__(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return draw(self.distribution, rng, shape, None if self.pool is None else np.asarray(self.pool))


def sampler(distribution: str, pool: np.ndarray | None = None) -> Sampler:
    return Sampler(distribution, None if pool is None else tuple(float(v) for v in pool))


BLOCK = 250
"""Simulated sweeps per block: the unit of seeding and of work handed to a core."""


def _blocks(sweeps: int, seed: int) -> list[tuple[int, np.random.Generator]]:
    """(sweeps, generator) of each block of a design's sweeps."""
    return [(min(BLOCK, sweeps - start), np.random.default_rng([seed, start // BLOCK]))
            for start in range(0, sweeps, BLOCK)]


def _mapped(executor: Executor | None, function: Callable[..., tuple[int, int, float]],
            calls: Iterable[tuple[Any, ...]]) -> tuple[int, int, float]:
    """function over the calls (on the executor's processes when given), the three counts summed."""
    results: Iterator[tuple[int, int, float]] = (executor.map(function, *zip(*calls, strict=True))
                                                 if executor is not None else (function(*c) for c in calls))
    false_hits = power_hits = 0
    spent = 0.0
    for false, power, seeds in results:
        false_hits += false
        power_hits += power
        spent += seeds
    return false_hits, power_hits, spent


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
          confidence: float = 0.95, label: str = "", executor: Executor | None = None) -> Outcome:
    """Every group trains `seeds` seeds; the report's test decides."""
    calls = [(groups, seeds, sample, effect * unit, n, rng, confidence) for n, rng in _blocks(sweeps, seed)]
    false_hits, power_hits, _ = _mapped(executor, _fixed_block, calls)
    return Outcome(f"fixed {seeds} seeds", groups, label, effect, sweeps, false_hits, power_hits, float(seeds))


def _fixed_block(groups: int, seeds: int, sample: Sampler, shift: float, sweeps: int, rng: np.random.Generator,
                 confidence: float) -> tuple[int, int, float]:
    names = [f"g{i}" for i in range(groups)]
    false_hits = power_hits = 0
    # The counts setting: the wide groups (even) keep a third of the seeds.
    kept = [seeds // 3 if sample.distribution == "counts" and i % 2 == 0 else seeds for i in range(groups)]
    for _ in range(sweeps):
        values = _returns(sample, rng, groups, seeds, shift)
        separated = separations({n: list(v[:k]) for n, v, k in zip(names, values, kept, strict=True)}, confidence)
        false, power = _false_and_power(separated, names, shift != 0)
        false_hits += false
        power_hits += power
    return false_hits, power_hits, 0.0


def adaptive(groups: int, policy: AdaptiveSeeds, sample: Sampler, effect: float, unit: float, sweeps: int,
             seed: int = 0, label: str = "", executor: Executor | None = None) -> Outcome:
    """Every group trains `min` seeds, then the seeds adaptive seeds grant, round by round."""
    calls = [(groups, policy, sample, effect * unit, n, rng) for n, rng in _blocks(sweeps, seed)]
    false_hits, power_hits, spent = _mapped(executor, _adaptive_block, calls)
    return Outcome(f"adaptive {policy.min}-{policy.max} seeds", groups, label, effect, sweeps, false_hits,
                   power_hits, spent / (sweeps * groups))


def _adaptive_block(groups: int, policy: AdaptiveSeeds, sample: Sampler, shift: float, sweeps: int,
                    rng: np.random.Generator) -> tuple[int, int, float]:
    names = [f"g{i}" for i in range(groups)]
    false_hits = power_hits = 0
    spent = 0.0
    for _ in range(sweeps):
        values = _returns(sample, rng, groups, policy.max, shift)
        got: np.ndarray = values.astype(object)
        if sample.distribution == "counts":  # the wide groups' seeds fail now and then, as crashed runs
            got[(rng.random(values.shape) < WIDE_FAILING) & (np.arange(groups)[:, None] % 2 == 0)] = None
        seeds = dict.fromkeys(names, policy.min)
        history: list[dict[str, int]] = []
        number = 1
        while True:
            returns: dict[str, list[float | None]] = {n: list(got[i, :seeds[n]]) for i, n in enumerate(names)}
            decision = next_round(number, returns, history, policy)
            if decision.done:
                break
            history.append(decision.seeds())
            seeds = decision.granted()
            number += 1
        separated = {frozenset((p.a, p.b)) for p in decision.pairs if p.separated}
        false, power = _false_and_power(separated, names, shift != 0)
        false_hits += false
        power_hits += power
        spent += sum(seeds.values())
    return false_hits, power_hits, spent


def equal_power_seeds(curve: list[Outcome], power: float) -> float | None:
    """The seeds each a fixed design needs for `power`, read off fixed designs at increasing seed counts
    (linear between two counts); None when the largest does not reach it."""
    return seeds_for_power([(o.seeds_per_group, o.power or 0.0) for o in curve], power)


def seeds_for_power(points: list[tuple[float, float]], power: float) -> float | None:
    """The seeds each for `power`, read off (seeds each, power) points at increasing seed counts, however their
    power was found (linear between two counts); None when the last does not reach it."""
    for (n0, p0), (n1, p1) in zip(points, points[1:], strict=False):
        if p0 >= power:
            return n0
        if p1 >= power:
            return n0 + (n1 - n0) * (power - p0) / (p1 - p0)
    return points[-1][0] if points and points[-1][1] >= power else None


@dataclass(frozen=True)
class StatsConfig:
    min_seeds: int = 3
    max_seeds: int = 10
    groups: tuple[int, ...] = (2, 6)
    effect: float = 2.0
    """The first group's shift in the alternative, in units of the distribution's scale."""
    power: float = 0.9
    """The power at which fixed and adaptive seeds are compared."""
    sweeps: int = 1000
    confidence: float = 0.95
    pool: tuple[float, ...] | None = None
    """Final returns of a finished sweep to resample from, beside the named distributions."""
    seed: int = 0
    jobs: int = 1
    """Processes that simulate blocks at once (the figures do not depend on it)."""

    @property
    def largest(self) -> int:
        """The most seeds each a fixed design or an adaptive max is tried at: a design that spends its error
        early needs a larger max for the same power."""
        return 6 * self.max_seeds


@dataclass(frozen=True)
class SettingResult:
    groups: int
    distribution: str
    null_fixed: Outcome
    """Fixed seeds at `max_seeds` each, nothing differing."""
    null_adaptive: Outcome
    """Adaptive seeds from `min_seeds` to `max_seeds`, nothing differing."""
    alt_fixed: list[Outcome]
    """Fixed designs at min, min + 1, ... seeds under the alternative, up to the first past the target power."""
    alt_adaptive: list[Outcome]
    """Adaptive designs at increasing max under the alternative, up to the first past the target power."""
    power: float
    confidence: float = 0.95

    @property
    def fixed_seeds(self) -> float | None:
        """The seeds each the fixed design needs for the target power (linear between seed counts)."""
        return equal_power_seeds(self.alt_fixed, self.power)

    @property
    def adaptive_seeds(self) -> float | None:
        """The mean seeds each adaptive seeds spend at the target power (linear between two maxima)."""
        points = [(o.power or 0.0, o.seeds_per_group) for o in self.alt_adaptive]
        for (p0, s0), (p1, s1) in zip(points, points[1:], strict=False):
            if p1 >= self.power > p0:
                return s0 + (s1 - s0) * (self.power - p0) / (p1 - p0)
        return points[0][1] if points and points[0][0] >= self.power else None

    @property
    def saving(self) -> float | None:
        """The share of seeds adaptive seeds save against the fixed design of equal power and error."""
        fixed_n, adaptive_n = self.fixed_seeds, self.adaptive_seeds
        return None if fixed_n is None or adaptive_n is None else 1.0 - adaptive_n / fixed_n

    @property
    def fewest_seeds(self) -> int:
        """The fewest seeds each at which the test can separate a pair at the first level of Holm's
        step-down (1 - confidence over every pair): every split of so few seeds is likelier than that."""
        pairs = self.groups * (self.groups - 1) // 2
        return brunnermunzel.seeds_to_reach((1.0 - self.confidence) / pairs)

    @property
    def most_saving(self) -> float | None:
        """The largest share adaptive seeds could save here, whatever their spending and max. Every group in play
        gains a seed each round, so a sweep that separates the shifted group ends with every group at
        `fewest_seeds` or more, and one that does not runs on to a max that is no smaller."""
        fixed_n = self.fixed_seeds
        return None if fixed_n is None else max(0.0, 1.0 - self.fewest_seeds / fixed_n)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": self.groups, "distribution": self.distribution, "null_fixed": self.null_fixed.to_dict(),
                "null_adaptive": self.null_adaptive.to_dict(), "alt_fixed": [o.to_dict() for o in self.alt_fixed],
                "alt_adaptive": [o.to_dict() for o in self.alt_adaptive], "power": self.power,
                "fixed_seeds": self.fixed_seeds, "adaptive_seeds": self.adaptive_seeds, "saving": self.saving,
                "fewest_seeds": self.fewest_seeds, "most_saving": self.most_saving}


def run_stats(config: StatsConfig, on_step: Callable[[str], None] = lambda line: None) -> list[SettingResult]:
    """Every setting: each group count x each distribution (and the pool, when given)."""
    pool = np.asarray(config.pool, dtype=float) if config.pool else None
    names = [*DISTRIBUTIONS, *(["resampled"] if pool is not None else [])]
    with _executor(config.jobs) as executor:
        return [_setting(config, groups, name, pool, on_step, executor) for groups in config.groups
                for name in names]


@contextmanager
def _executor(jobs: int) -> Iterator[Executor | None]:
    """Worker processes for the blocks, forked (each keeps its own cache of boundaries); none for one job."""
    if jobs <= 1:
        yield None
        return
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as executor:
        yield executor


def _setting(config: StatsConfig, groups: int, name: str, pool: np.ndarray | None,
             on_step: Callable[[str], None], executor: Executor | None = None) -> SettingResult:
    sample, unit = sampler(name, pool), scale(name, pool)
    on_step(f"{groups} groups, {name} returns: {config.sweeps} simulated sweeps per design")

    def run_fixed(seeds: int, effect: float) -> Outcome:
        return fixed(groups, seeds, sample, effect, unit, config.sweeps, config.seed, config.confidence, name,
                     executor)

    def run_adaptive(top: int, effect: float) -> Outcome:
        policy = AdaptiveSeeds(min=config.min_seeds, max=top, confidence=config.confidence)
        return adaptive(groups, policy, sample, effect, unit, config.sweeps, config.seed, name, executor)

    curve = [run_fixed(config.min_seeds, config.effect)]
    while (curve[-1].power or 0.0) < config.power and curve[-1].seeds_per_group < config.largest:
        curve.append(run_fixed(int(curve[-1].seeds_per_group) + 1, config.effect))
    needed = equal_power_seeds(curve, config.power)
    designs: list[Outcome] = []
    top = max(config.min_seeds + 1, math.floor(needed or 0))
    while needed is not None and (not designs or (designs[-1].power or 0.0) < config.power) \
            and top <= config.largest:
        designs.append(run_adaptive(top, config.effect))
        top += 1
    return SettingResult(groups, name, run_fixed(config.max_seeds, 0.0), run_adaptive(config.max_seeds, 0.0),
                         curve, designs, config.power, config.confidence)


def render(results: list[SettingResult], config: StatsConfig) -> str:
    """The Markdown table BENCHMARKS.md shows."""
    alpha = 1 - config.confidence
    lines = [f"Nothing differing: the family-wise false separation rate with its 95% interval, fixed "
             f"{config.max_seeds} seeds each ({brunnermunzel.NAME} test, Holm) and adaptive {config.min_seeds} to "
             f"{config.max_seeds} (group-sequential {brunnermunzel.NAME} test, Holm), error {alpha:.0%}. The first "
             f"group shifted by {config.effect:g} x scale: the seeds each for {config.power:.0%} power (that group "
             f"separated from every other), fixed against adaptive (min {config.min_seeds}, the max that reaches it). "
             f"At most: the most any spending or max could save, every group at least at the fewest seeds that can "
             f"separate a pair at Holm's first level. {config.sweeps} simulated sweeps per design.", "",
             "| groups | returns | false sep., fixed | false sep., adaptive | fixed seeds | adaptive seeds (max) "
             "| seeds saved | at most |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        fixed_n, adaptive_n = r.fixed_seeds, r.adaptive_seeds
        top = f" (max {r.alt_adaptive[-1].design.split()[-2].split('-')[-1]})" if r.alt_adaptive else ""
        lines.append(
            f"| {r.groups} | {r.distribution} | {_rate(r.null_fixed)} | {_rate(r.null_adaptive)} "
            f"| {f'over {config.largest}' if fixed_n is None else f'{fixed_n:.2f}'} "
            f"| {'-' if adaptive_n is None else f'{adaptive_n:.2f}'}{top} "
            f"| {_share(r.saving)} | {_share(r.most_saving)} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SpreadResult:
    """A SPREADS setting: nothing is better, so every separation is false."""

    groups: int
    setting: str
    fixed: Outcome
    adaptive: Outcome

    def to_dict(self) -> dict[str, Any]:
        return {"groups": self.groups, "setting": self.setting, "fixed": self.fixed.to_dict(),
                "adaptive": self.adaptive.to_dict()}


def run_spreads(config: StatsConfig, on_step: Callable[[str], None] = lambda line: None) -> list[SpreadResult]:
    """Every SPREADS setting at each group count: fixed seeds (max_seeds each; COUNTS in the counts setting)
    and adaptive seeds from min_seeds to max_seeds."""
    policy = AdaptiveSeeds(min=config.min_seeds, max=config.max_seeds, confidence=config.confidence)
    out = []
    with _executor(config.jobs) as executor:
        for groups in config.groups:
            for name in SPREADS:
                on_step(f"{groups} groups, {name}: {config.sweeps} simulated sweeps per design")
                sample = sampler(name)
                seeds = COUNTS[1] if name == "counts" else config.max_seeds
                out.append(SpreadResult(
                    groups, name,
                    fixed(groups, seeds, sample, 0.0, 1.0, config.sweeps, config.seed, config.confidence, name,
                          executor),
                    adaptive(groups, policy, sample, 0.0, 1.0, config.sweeps, config.seed, name, executor)))
    return out


SPREAD_WORDS = {"spread": "normal, sd 3 vs sd 1", "counts": "normal, sd 3 vs sd 1, the wide with fewer seeds",
                "shape": "symmetric bimodal vs normal"}


def render_spreads(results: list[SpreadResult], config: StatsConfig) -> str:
    """The Markdown table of the SPREADS settings."""
    wide, narrow = COUNTS
    lines = [f"Groups with P(A > B) = 1/2 but different spreads, seed counts or shapes, alternating between two "
             f"kinds: the family-wise false separation rate with its 95% interval, fixed {config.max_seeds} seeds "
             f"each ({wide} and {narrow} in the counts setting) and adaptive {config.min_seeds} to "
             f"{config.max_seeds} (the wide groups' seeds failing with chance {WIDE_FAILING:g} in the counts "
             f"setting). {config.sweeps} simulated sweeps per design.", "",
             "| groups | returns | false sep., fixed | false sep., adaptive | adaptive seeds |",
             "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.groups} | {SPREAD_WORDS[r.setting]} | {_rate(r.fixed)} | {_rate(r.adaptive)} "
                     f"| {r.adaptive.seeds_per_group:.2f} |")
    return "\n".join(lines) + "\n"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _rate(outcome: Outcome) -> str:
    low, high = outcome.false_interval
    return f"{outcome.false_rate:.1%} [{low:.1%}, {high:.1%}]"
