"""The statistics the report gives, with rliable's definitions (Agarwal et al. 2021): checked on cases worked
by hand, and against rliable itself where it imports (it does not beside pandas 3: its `arch` fails)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mjsweep.results.stats import (
    clopper_pearson,
    improvement_interval,
    iqm,
    iqm_interval,
    performance_profile,
    probability_of_improvement,
)


def test_the_iqm_drops_a_quarter_of_the_runs_at_each_end():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == 4.5  # 3..6: the 1 and the 100 (and 2, 7) are cut
    assert iqm([[1, 10], [2, 20], [3, 30], [4, 40]]) == np.mean([3, 4, 10, 20])  # runs x tasks, flattened


def test_the_iqm_interval_holds_the_iqm_and_one_value_has_no_spread():
    values = [1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0, 7.0]
    low, high = iqm_interval(values)
    assert low <= iqm(values) <= high < 100.0  # one broken seed cannot carry the interval away
    assert iqm_interval([5.0]) == (5.0, 5.0)
    assert iqm_interval(values) == iqm_interval(values)  # seeded: the same every time


def test_the_probability_of_improvement_counts_wins_and_half_the_ties():
    # 3 beats 1 and 2, ties 3; 4 and 5 beat all three: (2 + 0.5 + 3 + 3) / 9
    assert probability_of_improvement([3, 4, 5], [1, 2, 3]) == pytest.approx(8.5 / 9)
    assert probability_of_improvement([1, 2, 3], [3, 4, 5]) == pytest.approx(0.5 / 9)
    assert probability_of_improvement([7, 7], [7, 7]) == 0.5
    # two tasks: the mean of each task's probability
    assert probability_of_improvement([[2, 0], [3, 0]], [[1, 1], [1, 1]]) == pytest.approx((1.0 + 0.0) / 2)


def test_the_improvement_interval_is_narrow_when_groups_are_far_apart_and_wide_when_they_overlap():
    rng = np.random.default_rng(0)
    far = improvement_interval(rng.normal(10, 1, 5), rng.normal(0, 1, 5))
    assert far == (1.0, 1.0)
    same = rng.normal(0, 1, 5), rng.normal(0, 1, 5)
    low, high = improvement_interval(*same)
    assert low < 0.5 < high and high - low > 0.3


def test_the_performance_profile_is_the_fraction_of_runs_strictly_above_each_threshold():
    fractions, lows, highs = performance_profile([1, 2, 3, 4], [0, 2, 4])
    assert fractions.tolist() == [1.0, 0.5, 0.0]  # 2 is not above 2; nothing is above 4
    assert (lows <= fractions).all() and (fractions <= highs).all()
    # Clopper-Pearson at 4 of 4, 2 of 4 and 0 of 4: never a point, as the bootstrap's [1, 1] and [0, 0] were.
    assert (lows[0], highs[0]) == pytest.approx((0.025 ** 0.25, 1.0))
    assert (lows[1], highs[1]) == pytest.approx((0.0676, 0.9324), abs=1e-4)
    assert (lows[2], highs[2]) == pytest.approx((0.0, 1 - 0.025 ** 0.25))


def test_clopper_pearson_is_scipys_beta_quantiles():
    beta = pytest.importorskip("scipy.stats").beta
    # 700 of 2000: C(2000, 700) is past a float's range, so the binomial tail is summed in logs.
    for hits, n in [(0, 3), (3, 3), (1, 4), (2, 5), (7, 20), (19, 20), (700, 2000)]:
        low = 0.0 if hits == 0 else beta.ppf(0.025, hits, n - hits + 1)
        high = 1.0 if hits == n else beta.ppf(0.975, hits + 1, n - hits)
        assert clopper_pearson(hits, n) == pytest.approx((low, high), abs=1e-10)


def test_clopper_pearson_holds_every_true_fraction_at_its_level():
    # Counted exactly, not simulated: for each true p the chance that the interval of the hits holds p.
    for n in range(1, 26):
        bounds = [clopper_pearson(k, n) for k in range(n + 1)]
        for p in np.linspace(0.0, 1.0, 401):
            held = sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k)
                       for k, (low, high) in enumerate(bounds) if low <= p <= high)
            assert held >= 0.95 - 1e-9, (n, p, held)


RLIABLE_CASES = {
    "x": [[12.0, 0.3], [15.5, 0.9], [9.0, 0.2], [14.0, 0.7], [20.0, 0.8], [11.0, 0.1]],
    "y": [[10.0, 0.4], [13.0, 0.5], [8.5, 0.2], [12.0, 0.6], [9.5, 0.35], [16.0, 0.3]],
}


def test_the_numbers_are_rliables_on_the_same_arrays():
    pytest.importorskip("rliable", reason="rliable does not import here (its arch fails with pandas 3)")
    from rliable import library as rly
    from rliable import metrics

    x, y = (np.array(RLIABLE_CASES[k]) for k in "xy")
    assert iqm(x) == pytest.approx(metrics.aggregate_iqm(x))
    assert probability_of_improvement(x, y) == pytest.approx(metrics.probability_of_improvement(x, y))
    taus = np.linspace(0.0, 20.0, 9)
    ours, _, _ = performance_profile(x, taus)
    theirs, _ = rly.create_performance_profile({"x": x}, taus, reps=20_000)
    assert ours == pytest.approx(theirs["x"])  # the band is Clopper-Pearson's now, not rliable's bootstrap
    # Intervals from other random draws agree to within bootstrap noise.
    _, cis = rly.get_interval_estimates({"x": x}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=20_000)
    assert iqm_interval(x) == pytest.approx((cis["x"][0][0], cis["x"][1][0]), rel=0.05)
    _, poi_cis = rly.get_interval_estimates({"x,y": (x, y)}, lambda a, b: np.array([
        metrics.probability_of_improvement(a, b)]), reps=20_000)
    assert improvement_interval(x, y) == pytest.approx((poi_cis["x,y"][0][0], poi_cis["x,y"][1][0]), abs=0.03)
