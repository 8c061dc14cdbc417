"""How often the 95% intervals the reports show hold what they estimate, simulated.

Returns are mjsweep's bench/decisions.py's normal, heavy-tailed and bimodal ones (the same units as `sweep bench
--stats`), drawn `sweeps` times at each seed count; the share of simulated sweeps whose interval holds the true
value is its coverage. Each table sets the interval the reports use beside the percentile bootstrap they used
before; `python -m benchmarks.coverage --table NAME` (from a checkout's root) prints the table in docs/statistics.md:
- `improvement`: P(A > B) between two groups, A's returns shifted by `effect` times the returns' spread, the
  true P from 2,000,000 pairs of draws; Newcombe's score interval (results/effectsize.py) against the
  stratified bootstrap (rliable's), about two minutes on 2 cores;
- `mean`: a group's mean return; Student's t interval (stats.mean_interval) against the bootstrap of the mean;
- `iqm`: a group's interquartile mean; Tukey and McLaughlin's trimmed-mean t interval (stats.iqm_t_interval)
  against rliable's stratified bootstrap (stats.iqm_interval);
- `gap`: the optimism gap of a confirmed search trial, where the tuned and the fresh seeds train one
  configuration (the true gap 0); Yuen's interval of a difference of IQMs (stats.iqm_difference_interval)
  against a bootstrap that resamples each side apart.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from mjsweep.bench.decisions import DISTRIBUTIONS, FAILING, draw, scale
from mjsweep.results import effectsize, stats

SEEDS = (2, 3, 4, 5, 6, 8, 10, 15, 20)
EFFECTS = (0.0, 0.5, 1.0, 2.0)
BOOTSTRAP_RESAMPLES = 1000
CHUNK = 25
"""Sweeps bootstrapped at once: resamples x seeds x seeds comparisons each."""


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@lru_cache(maxsize=64)
def true_p(distribution: str, effect: float) -> float:
    """P(A > B) for A's returns shifted by `effect` spreads, from 2,000,000 independent pairs."""
    rng = _rng("truth", distribution, effect)
    a = draw(distribution, rng, (2_000_000,)) + effect * scale(distribution)
    return float((a > draw(distribution, rng, (2_000_000,))).mean())


def _sweeps(distribution: str, effect: float, seeds: int, sweeps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng(seed, distribution, effect, seeds)
    a = draw(distribution, rng, (sweeps, seeds)) + effect * scale(distribution)
    return a, draw(distribution, rng, (sweeps, seeds))


def _estimates(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(A > B) of each row of seeds (the last axis), as the reports count it."""
    rows = a.shape[:-1]
    return stats.improvements(a.reshape(-1, a.shape[-1], 1), b.reshape(-1, b.shape[-1], 1)).reshape(rows)


def score_coverage(distribution: str, effect: float, seeds: int, sweeps: int = 4000, seed: int = 0) -> float:
    """The share of simulated sweeps whose score interval holds the true P."""
    a, b = _sweeps(distribution, effect, seeds, sweeps, seed)
    low, high = effectsize.score_bounds(_estimates(a, b), seeds, seeds)
    truth = true_p(distribution, effect)
    return float(((low <= truth) & (truth <= high)).mean())


def bootstrap_coverage(distribution: str, effect: float, seeds: int, sweeps: int = 1000, seed: int = 0) -> float:
    """The same for the stratified percentile bootstrap (BOOTSTRAP_RESAMPLES resamples of each side)."""
    a, b = _sweeps(distribution, effect, seeds, sweeps, seed)
    rng, truth, held = _rng("bootstrap", seed), true_p(distribution, effect), 0
    rows = np.arange(CHUNK)[:, None, None]
    for start in range(0, sweeps, CHUNK):
        x, y = a[start:start + CHUNK], b[start:start + CHUNK]
        picks = (len(x), BOOTSTRAP_RESAMPLES, seeds)
        p = _estimates(x[rows[:len(x)], rng.integers(0, seeds, picks)], y[rows[:len(y)], rng.integers(0, seeds, picks)])
        low, high = np.percentile(p, [2.5, 97.5], axis=1)
        held += int(((low <= truth) & (truth <= high)).sum())
    return held / sweeps


def _share_holding(intervals: Iterable[tuple[Any, Any]], truth: float) -> float:
    """The share of the (low, high) intervals that hold `truth`."""
    lows, highs = np.array(list(intervals), dtype=float).T
    return float(((lows <= truth) & (truth <= highs)).mean())


TRUE_MEAN = {"normal": 0.0, "heavy": 0.0, "bimodal": FAILING * -4.0}
"""Each distribution's mean: Student's t with 2 degrees of freedom has one (0), though not a variance."""


def mean_coverage(distribution: str, seeds: int, sweeps: int = 4000, seed: int = 0, bootstrap: bool = False
                  ) -> float:
    """The share of simulated groups whose mean interval (t, or the bootstrap's) holds the true mean."""
    values = draw(distribution, _rng(seed, "mean", distribution, seeds), (sweeps, seeds))
    interval = (lambda v: stats.bootstrap_ci(v, resamples=BOOTSTRAP_RESAMPLES)) if bootstrap else stats.mean_interval
    return _share_holding(map(interval, values), TRUE_MEAN[distribution])


@lru_cache(maxsize=8)
def true_iqm(distribution: str) -> float:
    """The distribution's interquartile mean (its mean between the quartiles), from 2,000,000 draws."""
    values = np.sort(draw(distribution, _rng("truth iqm", distribution), (2_000_000,)))
    return float(values[500_000:1_500_000].mean())


def iqm_coverage(distribution: str, seeds: int, sweeps: int = 4000, seed: int = 0, bootstrap: bool = False
                 ) -> float:
    """The share of simulated groups whose IQM interval (Tukey-McLaughlin's t, or rliable's bootstrap) holds
    the distribution's interquartile mean."""
    values = draw(distribution, _rng(seed, "iqm", distribution, seeds), (sweeps, seeds))
    interval = (lambda v: stats.iqm_interval(v, resamples=BOOTSTRAP_RESAMPLES)) if bootstrap else stats.iqm_t_interval
    return _share_holding(map(interval, values), true_iqm(distribution))


def gap_coverage(distribution: str, tuned: int, fresh: int, sweeps: int = 4000, seed: int = 0,
                 bootstrap: bool = False) -> float:
    """The share of simulated confirmations (`tuned` seeds against `fresh` ones of one configuration) whose
    interval of IQM(tuned) - IQM(fresh) holds 0."""
    rng = _rng(seed, "gap", distribution, tuned, fresh)
    a, b = draw(distribution, rng, (sweeps, tuned)), draw(distribution, rng, (sweeps, fresh))
    if not bootstrap:
        return _share_holding((stats.iqm_difference_interval(x, y) or (-np.inf, np.inf)
                               for x, y in zip(a, b, strict=True)), 0.0)
    boot = _rng("bootstrap", seed)
    held = 0
    for x, y in zip(a, b, strict=True):
        draws = stats.trimmed_iqm(x[boot.integers(0, tuned, (BOOTSTRAP_RESAMPLES, tuned))]) - \
            stats.trimmed_iqm(y[boot.integers(0, fresh, (BOOTSTRAP_RESAMPLES, fresh))])
        low, high = np.percentile(draws, [2.5, 97.5])
        held += int(low <= 0.0 <= high)
    return held / sweeps


def _row(cells: list[float]) -> str:
    return " | ".join(f"{c:.1%}" for c in cells) + " |"


def improvement_table(sweeps: int, bootstrap_sweeps: int) -> None:
    print("| returns | effect | true P(A > B) | interval | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |")
    print("|---|---|---|---|" + "---|" * len(SEEDS))
    for distribution in DISTRIBUTIONS:
        for effect in EFFECTS:
            head = f"| {distribution} | {effect:g} | {true_p(distribution, effect):.3f}"
            score = [score_coverage(distribution, effect, n, sweeps) for n in SEEDS]
            print(f"{head} | score | " + _row(score), flush=True)
            boot = [bootstrap_coverage(distribution, effect, n, bootstrap_sweeps) for n in SEEDS]
            print(f"{head} | bootstrap | " + _row(boot), flush=True)


MEAN_SEEDS = (2, 3, 5, 10)
GAP_SEEDS = ((1, 3), (1, 5), (1, 8), (2, 5), (3, 3), (3, 5), (5, 5), (5, 8))
"""(tuned, fresh) seeds: a search trial's seeds, then `confirm: {seeds: ...}`."""


def mean_table(sweeps: int, bootstrap_sweeps: int) -> None:
    print("| returns | interval | " + " | ".join(f"{n} seeds" for n in MEAN_SEEDS) + " |")
    print("|---|---|" + "---|" * len(MEAN_SEEDS))
    for distribution in DISTRIBUTIONS:
        print(f"| {distribution} | t | " + _row([mean_coverage(distribution, n, sweeps) for n in MEAN_SEEDS]))
        print(f"| {distribution} | bootstrap | " +
              _row([mean_coverage(distribution, n, bootstrap_sweeps, bootstrap=True) for n in MEAN_SEEDS]), flush=True)


IQM_SEEDS = (2, 3, 4, 5, 8, 10, 20)


def iqm_table(sweeps: int, bootstrap_sweeps: int) -> None:
    print("| returns | true IQM | interval | " + " | ".join(f"{n} seeds" for n in IQM_SEEDS) + " |")
    print("|---|---|---|" + "---|" * len(IQM_SEEDS))
    for distribution in DISTRIBUTIONS:
        head = f"| {distribution} | {true_iqm(distribution):.3f}"
        print(f"{head} | t | " + _row([iqm_coverage(distribution, n, sweeps) for n in IQM_SEEDS]))
        print(f"{head} | bootstrap | " +
              _row([iqm_coverage(distribution, n, bootstrap_sweeps, bootstrap=True) for n in IQM_SEEDS]), flush=True)


def gap_table(sweeps: int, bootstrap_sweeps: int) -> None:
    print("| returns | interval | " + " | ".join(f"{t} vs {f}" for t, f in GAP_SEEDS) + " |")
    print("|---|---|" + "---|" * len(GAP_SEEDS))
    for distribution in DISTRIBUTIONS:
        print(f"| {distribution} | Yuen | " + _row([gap_coverage(distribution, t, f, sweeps) for t, f in GAP_SEEDS]))
        print(f"| {distribution} | bootstrap | " + _row([gap_coverage(distribution, t, f, bootstrap_sweeps,
                                                                    bootstrap=True) for t, f in GAP_SEEDS]),
              flush=True)


TABLES = {"improvement": improvement_table, "mean": mean_table, "iqm": iqm_table, "gap": gap_table}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", choices=sorted(TABLES), default="improvement", help="which intervals")
    parser.add_argument("--sweeps", type=int, default=4000, help="simulated sweeps per cell, the reports' interval")
    parser.add_argument("--bootstrap-sweeps", type=int, default=1000, help="simulated sweeps per cell, bootstrap")
    args = parser.parse_args(argv)
    TABLES[args.table](args.sweeps, args.bootstrap_sweeps)


if __name__ == "__main__":
    main()
