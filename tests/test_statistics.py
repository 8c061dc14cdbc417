"""The statistics the report gives, with rliable's definitions (Agarwal et al. 2021): checked on cases worked
by hand, and against rliable itself where it imports (it does not beside pandas 3: its `arch` fails)."""

from __future__ import annotations

import numpy as np
import pytest

from mjsweep.results.stats import (
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
    assert lows[0] == highs[0] == 1.0 and lows[2] == highs[2] == 0.0


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
    ours, lows, highs = performance_profile(x, taus)
    theirs, theirs_ci = rly.create_performance_profile({"x": x}, taus, reps=20_000)
    assert ours == pytest.approx(theirs["x"])
    # Intervals from other random draws agree to within bootstrap noise.
    assert lows == pytest.approx(theirs_ci["x"][0], abs=0.06) and highs == pytest.approx(theirs_ci["x"][1], abs=0.06)
    _, cis = rly.get_interval_estimates({"x": x}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=20_000)
    assert iqm_interval(x) == pytest.approx((cis["x"][0][0], cis["x"][1][0]), rel=0.05)
    _, poi_cis = rly.get_interval_estimates({"x,y": (x, y)}, lambda a, b: np.array([
        metrics.probability_of_improvement(a, b)]), reps=20_000)
    assert improvement_interval(x, y) == pytest.approx((poi_cis["x,y"][0][0], poi_cis["x,y"][1][0]), abs=0.03)
