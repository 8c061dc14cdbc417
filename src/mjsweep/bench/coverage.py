"""How often the 95% interval of P(A > B) that every comparison shows holds the true P, simulated.

Two groups of seeds, A's returns shifted by `effect` times the returns' spread (bench/decisions.py's normal,
heavy-tailed and bimodal returns, the same units as `sweep bench --stats`), drawn `sweeps` times at each seed
count; the share of sweeps whose interval holds the true P (itself from 2,000,000 pairs of draws) is its
coverage. Both intervals side by side: the score interval the reports use (results/effectsize.py) and the
stratified percentile bootstrap they used before (results/stats.py, rliable's). Run
`python -m mjsweep.bench.coverage` for the table in docs/statistics.md (about two minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import zlib

import numpy as np

from ..results import effectsize
from .decisions import DISTRIBUTIONS, draw, scale

SEEDS = (2, 3, 4, 5, 6, 8, 10, 15, 20)
EFFECTS = (0.0, 0.5, 1.0, 2.0)
BOOTSTRAP_RESAMPLES = 1000
CHUNK = 25
"""Sweeps bootstrapped at once: resamples x seeds x seeds comparisons each."""


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


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
    """P(A > B) over the last two axes' pairs, ties counting half."""
    greater = (a[..., :, None] > b[..., None, :]).mean(axis=(-2, -1))
    ties = (a[..., :, None] == b[..., None, :]).mean(axis=(-2, -1))
    return greater + 0.5 * ties


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mjsweep.bench.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=4000, help="simulated sweeps per cell, score interval")
    parser.add_argument("--bootstrap-sweeps", type=int, default=1000, help="simulated sweeps per cell, bootstrap")
    args = parser.parse_args(argv)
    print("| returns | effect | true P(A > B) | interval | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |")
    print("|---|---|---|---|" + "---|" * len(SEEDS))
    for distribution in DISTRIBUTIONS:
        for effect in EFFECTS:
            head = f"| {distribution} | {effect:g} | {true_p(distribution, effect):.3f}"
            score = [score_coverage(distribution, effect, n, args.sweeps) for n in SEEDS]
            print(f"{head} | score | " + " | ".join(f"{c:.1%}" for c in score) + " |", flush=True)
            boot = [bootstrap_coverage(distribution, effect, n, args.bootstrap_sweeps) for n in SEEDS]
            print(f"{head} | bootstrap | " + " | ".join(f"{c:.1%}" for c in boot) + " |", flush=True)


if __name__ == "__main__":
    main()
