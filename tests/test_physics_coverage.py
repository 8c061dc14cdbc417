"""The held-out physics coverage simulation (benchmarks/physics_coverage.py) measures the numbers the report
shows, and holds 95% where the seeds' numbers are close to normal."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import physics_coverage
from mjsweep.results.physics_report import seed_numbers


def test_the_simulation_computes_each_seeds_numbers_as_the_report_does():
    returns = np.random.default_rng(5).normal(80.0, 15.0, (7, physics_coverage.DRAWS))
    simulated = physics_coverage.per_seed(returns)
    for seed, row in enumerate(returns):
        mean, p10, fraction = seed_numbers(list(row), physics_coverage.THRESHOLD)
        assert (simulated["mean"][seed], simulated["p10"][seed], simulated["fraction"][seed]) == \
            pytest.approx((mean, p10, fraction))


def test_the_t_interval_holds_about_95_percent_for_normal_seeds():
    held = physics_coverage.coverage("normal", seeds=5, sweeps=2000)
    assert all(0.92 <= held[metric] <= 0.98 for metric in ("mean", "p10", "fraction")), held


def test_failing_seeds_make_it_hold_less():
    held = physics_coverage.coverage("failing", seeds=5, sweeps=2000)
    assert held["mean"] < 0.9, held
