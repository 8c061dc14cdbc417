"""P(A > B)'s score interval (results/effectsize.py): its definition checked by an independent root finder (its
coverage of the true P, simulated by the lab, is in test_interval_coverage.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from mjsweep.results import effectsize

Z = 1.959963984540054


def newcombe_variance(theta: float, m: int, n: int) -> float:
    """Newcombe (2006) method 5: Hanley and McNeil's variance of U / mn at theta, m - 1 and n - 1 both replaced
    by (m + n) / 2 - 1."""
    k = (m + n) / 2 - 1
    q1, q2 = theta / (2 - theta), 2 * theta ** 2 / (1 + theta)
    return (theta * (1 - theta) + k * (q1 - theta ** 2) + k * (q2 - theta ** 2)) / (m * n)


def reference(estimate: float, m: int, n: int) -> tuple[float, float]:
    """The bounds: where |estimate - theta| = z * sqrt(V(theta)), on either side of the estimate."""
    def gap(theta: float) -> float:
        return abs(estimate - theta) - Z * math.sqrt(newcombe_variance(theta, m, n))
    # At an estimate of 0 or 1 the variance there is 0 too: bracket the root just inside.
    low = 0.0 if estimate == 0 else brentq(gap, 0.0, min(estimate, 1 - 1e-12), xtol=1e-14)
    high = 1.0 if estimate == 1 else brentq(gap, max(estimate, 1e-12), 1.0, xtol=1e-14)
    return low, high


@pytest.mark.parametrize(("estimate", "m", "n"), [(1.0, 3, 3), (1.0, 5, 5), (0.0, 2, 2), (0.5, 4, 4),
                                                  (0.72, 4, 7), (0.9, 20, 20), (0.35, 10, 3)])
def test_the_bounds_are_newcombes_found_by_another_root_finder(estimate, m, n):
    low, high = effectsize.score_bounds(np.array([estimate]), m, n)
    assert (low[0], high[0]) == pytest.approx(reference(estimate, m, n), abs=1e-9)
    assert low[0] <= estimate <= high[0]


def test_every_seed_above_every_other_gives_an_interval_not_a_point():
    # 3 vs 3: the rank test's p is 0.1 at best; the bootstrap said [1, 1], the score interval does not.
    low, high = effectsize.improvement_interval([10.0, 11.0, 12.0], [0.0, 1.0, 2.0])
    assert high == 1.0 and 0.50 < low < 0.51
    five_low, _ = effectsize.improvement_interval(list(range(10, 15)), list(range(5)))
    assert low < five_low < 0.7  # more seeds, a tighter interval
    assert effectsize.improvement_interval(list(range(5)), list(range(10, 15))) == pytest.approx((0.0, 1 - five_low))


def test_the_interval_widens_as_the_seeds_fall_and_holds_the_estimate():
    widths = [np.subtract(*effectsize.score_bounds(np.array([0.7]), n, n)[::-1])[0] for n in (3, 5, 10, 20)]
    assert widths == sorted(widths, reverse=True) and widths[-1] > 0
