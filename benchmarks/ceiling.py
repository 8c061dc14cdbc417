"""How many seeds an ideal group-sequential design could save: the yardstick for `sweep bench --stats`.

Two groups of normal returns with a known spread, compared by a z-test looked at after every seed from `min`
to `max` each, its error spent over the looks by one of the usual spending families (Hwang-Shih-DeCani,
power, Pocock type). Nothing is lost to ranks or to few seeds' coarse p-values, so no design of this kind on
real returns saves more. For a fixed design that needs `fixed_seeds` each for the power asked, the effect is
set so that it has exactly that power; every family and every max is tried, and the least expected seeds at
that power is the ceiling. Run `python -m benchmarks.ceiling 4.31 7.18 11.2` from a checkout's root for the
ceilings at those fixed seed counts (docs/statistics.md shows them).

With `--spread estimated` the spread is not known: both designs use the two-sample t statistic, the spread
estimated from the seeds at hand, still on normal returns (the test a parametric design would use, and the
best one there). The effect is the one above; the fixed design is the t-test's at that effect (the seeds each
it needs for the power, linear between seed counts), and the saving is against it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from mjsweep.bench.decisions import seeds_for_power
from mjsweep.results import sequential, stats

Spending = Callable[[float], float]
"""The share of the error spent by information fraction t (0 to 1)."""


def _hwang_shih_decani(gamma: float) -> Spending:
    return lambda t: (1 - math.exp(-gamma * t)) / (1 - math.exp(-gamma)) if gamma else t


def _power(rho: float) -> Spending:
    return lambda t: t ** rho


FAMILIES: dict[str, Spending] = {
    **{f"Hwang-Shih-DeCani {g:g}": _hwang_shih_decani(g) for g in (-4, -2, 0, 1, 2, 4)},
    **{f"power {r:g}": _power(r) for r in (0.5, 0.75, 1.5, 2, 3)},
    "Pocock type": lambda t: sequential.spent(1.0, t),  # what adaptive seeds spend
}


@dataclass(frozen=True)
class Ceiling:
    fixed_seeds: float
    expected_seeds: float
    """The least expected seeds each at the power asked, over every family and max."""
    spending: str
    max_seeds: int

    @property
    def saving(self) -> float:
        return 1.0 - self.expected_seeds / self.fixed_seeds


def z_paths(rng: np.random.Generator, paths: int, seeds: int, drift: float) -> np.ndarray:
    """paths x seeds: |Z| after each seed of two groups' unit-variance returns whose means differ by `drift`."""
    steps = rng.standard_normal((paths, seeds)) * math.sqrt(2.0) + drift
    n = np.arange(1, seeds + 1)
    return np.abs(np.cumsum(steps, axis=1) / np.sqrt(2.0 * n))


def t_paths(rng: np.random.Generator, paths: int, seeds: int, drift: float) -> np.ndarray:
    """paths x seeds: |t| after each seed of two groups of unit-variance normal returns whose means differ by
    `drift`, the pooled spread estimated from the seeds so far (0 at one seed, where it has none)."""
    a = rng.standard_normal((paths, seeds)) + drift
    b = rng.standard_normal((paths, seeds))
    n = np.arange(1, seeds + 1)
    out = np.zeros((paths, seeds))
    mean_a, mean_b = np.cumsum(a, axis=1) / n, np.cumsum(b, axis=1) / n
    squares = np.cumsum(a * a, axis=1) + np.cumsum(b * b, axis=1) - n * (mean_a ** 2 + mean_b ** 2)
    more = n > 1
    pooled = squares[:, more] / (2 * n[more] - 2)
    out[:, more] = np.abs(mean_a - mean_b)[:, more] / np.sqrt(pooled * 2 / n[more])
    return out


def fixed_t_seeds(alt: np.ndarray, alpha: float, power: float) -> float | None:
    """The seeds each a fixed two-sample t-test needs for `power` on the alternative's t paths (linear between
    seed counts, as the bench reads its fixed designs); None if the paths are too short."""
    points = [(float(n), float((alt[:, n - 1] >= stats.t_quantile(1 - alpha, 2 * n - 2)).mean()))
              for n in range(2, alt.shape[1] + 1)]
    return seeds_for_power(points, power)


def boundaries(null: np.ndarray, first: int, top: int, alpha: float, spending: Spending) -> np.ndarray:
    """The |Z| each look from `first` to `top` seeds must reach, so that null paths cross no more often than
    the error spent by then (each look spends what the earlier ones left)."""
    alive = np.ones(len(null), dtype=bool)
    crossed = 0
    out = np.full(top - first + 1, np.inf)
    for k, n in enumerate(range(first, top + 1)):
        allowed = int(alpha * spending(n / top) * len(null)) - crossed
        column = null[alive, n - 1]
        if allowed < 1 or not len(column):
            continue
        out[k] = np.partition(column, len(column) - allowed)[len(column) - allowed] if allowed < len(column) \
            else -np.inf
        newly = alive & (null[:, n - 1] >= out[k])
        crossed += int(newly.sum())
        alive &= ~newly
    return out


def design(null: np.ndarray, alt: np.ndarray, first: int, top: int, alpha: float,
           spending: Spending) -> tuple[float, float]:
    """(power, expected seeds each) of the design from `first` to `top` seeds, on the alternative's paths."""
    bounds = boundaries(null, first, top, alpha, spending)
    looks = alt[:, first - 1:top] >= bounds
    stopped = looks.any(axis=1)
    seeds = np.where(stopped, first + looks.argmax(axis=1), top)
    return float(stopped.mean()), float(seeds.mean())


def ceiling(fixed_seeds: float, first: int = 3, alpha: float = 0.05, power: float = 0.9,
            paths: int = 100_000, seed: int = 0, spread_known: bool = True) -> Ceiling:
    """The least expected seeds each of any family and max at `power`, against a fixed design needing
    `fixed_seeds` each (linear between two maxima, as the bench reads its designs). With the spread not known,
    both designs use the t statistic at the same effect, and the fixed design is the t-test's."""
    normal = NormalDist()
    drift = (normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)) * math.sqrt(2.0 / fixed_seeds)
    largest = max(first + 1, math.ceil(4 * fixed_seeds))
    rng = np.random.default_rng(seed)
    if spread_known:
        null, alt = z_paths(rng, paths, largest, 0.0), z_paths(rng, paths // 2, largest, drift)
    else:
        null, alt = t_paths(rng, paths, largest, 0.0), t_paths(rng, paths // 2, largest, drift)
        t_fixed = fixed_t_seeds(alt, alpha, power)
        if t_fixed is None:
            raise ValueError(f"no fixed t design up to {largest} seeds each reaches power {power}")
        fixed_seeds = t_fixed
    best: Ceiling | None = None
    for name, spending in FAMILIES.items():
        below: tuple[float, float] | None = None
        for top in range(max(first, math.floor(fixed_seeds)), largest + 1):
            reached, seeds = design(null, alt, first, top, alpha, spending)
            if reached >= power:
                if below is not None:
                    seeds = below[1] + (seeds - below[1]) * (power - below[0]) / (reached - below[0])
                if best is None or seeds < best.expected_seeds:
                    best = Ceiling(fixed_seeds, seeds, name, top)
                break
            below = (reached, seeds)
    if best is None:
        raise ValueError(f"no design up to {largest} seeds each reaches power {power}")
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ceiling", description=__doc__.split("\n\n")[0])
    parser.add_argument("fixed_seeds", nargs="+", type=float, help="seeds each the fixed design needs")
    parser.add_argument("--min", type=int, default=3, help="the seeds each of the first look")
    parser.add_argument("--spread", choices=["known", "estimated"], default="known",
                        help="z-test with the spread known, or t-test with it estimated from the seeds")
    args = parser.parse_args(argv)
    known = args.spread == "known"
    print(f"| z-test's fixed seeds | {'fixed seeds' if known else 't-test fixed seeds'} | ideal adaptive seeds | "
          "seeds saved | spending | max |")
    print("|---|---|---|---|---|---|")
    for n in args.fixed_seeds:
        c = ceiling(n, first=args.min, spread_known=known)
        print(f"| {n:g} | {c.fixed_seeds:.2f} | {c.expected_seeds:.2f} | {c.saving:.0%} | {c.spending} | "
              f"{c.max_seeds} |", flush=True)


if __name__ == "__main__":
    main()
