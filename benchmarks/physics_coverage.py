"""How often the held-out physics section's 95% intervals hold what they estimate, simulated.

The report (results/physics_report.py) gives per seed three numbers over the held-out draws (the mean return,
the 10th percentile, the fraction of draws at the threshold) and per group the mean of each over seeds with
Student's t interval (stats.mean_interval). The draws are common to every seed, so the target is the mean over
all seeds a group could have of each number, on the draws the sweep used: here one set of `DRAWS` draws per
scenario, its true values from `POPULATION` seeds. A seed's return on draw i is its skill minus its sensitivity
times the draw's hardness, plus noise; a share of seeds can fail outright (a low skill), as a few seeds of a
brittle group do. `python -m benchmarks.physics_coverage` (from a checkout's root, seconds) prints the table in
docs/statistics.md.
"""

from __future__ import annotations

import argparse
import zlib

import numpy as np

from mjsweep.results import stats

DRAWS = 20
POPULATION = 200_000
THRESHOLD = 80.0
SEEDS = (2, 3, 5, 10)
SCENARIOS = {"normal": 0.0, "failing": 0.2}
"""The share of seeds that fail (skill 20 rather than about 100)."""


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def per_seed(returns: np.ndarray) -> dict[str, np.ndarray]:
    """(seeds, draws) returns -> each seed's three numbers, as the report computes them
    (physics_report.seed_numbers, vectorized over seeds)."""
    return {"mean": returns.mean(axis=1), "p10": np.percentile(returns, 10, axis=1),
            "fraction": (returns >= THRESHOLD).mean(axis=1)}


def returns_of(seeds: int, hardness: np.ndarray, failing: float, rng: np.random.Generator) -> np.ndarray:
    skill = np.where(rng.random(seeds) < failing, 20.0, rng.normal(100.0, 10.0, seeds))
    sensitivity = np.abs(rng.normal(1.0, 0.3, seeds))
    return skill[:, None] - 20.0 * sensitivity[:, None] * hardness[None, :] + rng.normal(0, 5.0, (seeds, len(hardness)))


def coverage(scenario: str, seeds: int, sweeps: int) -> dict[str, float]:
    """The share of `sweeps` simulated groups of `seeds` seeds whose t interval holds each number's true mean."""
    failing = SCENARIOS[scenario]
    hardness = _rng("draws", scenario).normal(0.0, 1.0, DRAWS)
    truth = {k: float(v.mean()) for k, v in per_seed(returns_of(POPULATION, hardness, failing,
                                                                _rng("truth", scenario))).items()}
    rng = _rng("sweeps", scenario, seeds)
    held = dict.fromkeys(truth, 0)
    for _ in range(sweeps):
        for metric, values in per_seed(returns_of(seeds, hardness, failing, rng)).items():
            low, high = stats.mean_interval(values)
            held[metric] += low <= truth[metric] <= high
    return {metric: count / sweeps for metric, count in held.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=4000)
    args = parser.parse_args()
    print("| seeds' returns | per-seed number | " + " | ".join(f"{n} seeds" for n in SEEDS) + " |")
    print("|---|---|" + "---|" * len(SEEDS))
    for scenario in SCENARIOS:
        cells = {n: coverage(scenario, n, args.sweeps) for n in SEEDS}
        for metric in ("mean", "p10", "fraction"):
            print(f"| {scenario} | {metric} | " + " | ".join(f"{cells[n][metric]:.1%}" for n in SEEDS) + " |")


if __name__ == "__main__":
    main()
