"""The trimmed-mean t intervals: Yuen's interval of a difference of IQMs, which the optimism gap of a confirmed
search shows (checked against scipy's trimmed t-test, worked by hand where a side has one seed), and Tukey and
McLaughlin's interval of one group's IQM, which the report table shows (each one's coverage, simulated by the lab,
is in test_interval_coverage.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mjsweep.results import stats


@pytest.mark.parametrize(("n_a", "n_b"), [(2, 2), (3, 5), (4, 7), (5, 8), (9, 6), (12, 3)])
def test_the_interval_is_scipys_trimmed_welch_t_with_its_df_rounded_down(n_a, n_b):
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(n_a * 100 + n_b)
    a, b = rng.normal(1.0, 2.0, n_a), rng.normal(0.0, 1.0, n_b)
    test = scipy_stats.ttest_ind(a, b, equal_var=False, trim=0.25)
    difference = float(scipy_stats.trim_mean(a, 0.25) - scipy_stats.trim_mean(b, 0.25))
    half = scipy_stats.t.ppf(0.975, math.floor(test.df)) * difference / test.statistic
    low, high = stats.iqm_difference_interval(a, b)
    assert (low, high) == pytest.approx((difference - half, difference + half), rel=1e-6)
    assert stats.iqm(a) - stats.iqm(b) == pytest.approx(difference)


def test_a_side_of_one_seed_borrows_the_other_sides_spread():
    # 1 seed against 4: the 4's IQM drops one seed at each end (4.5), their winsorized values 4, 4, 5, 5 give
    # s_w^2 = 1/3, d = 3 * (1/3) / (2 * 1) = 0.5; their sample variance (3, 4, 5, 6) is 5/3; t(3) = 3.182446.
    low, high = stats.iqm_difference_interval([9.0], [3.0, 4.0, 5.0, 6.0])
    half = 3.182446 * math.sqrt(5 / 3 + 0.5)
    assert (low, high) == pytest.approx((4.5 - half, 4.5 + half), abs=1e-5)
    swapped = stats.iqm_difference_interval([3.0, 4.0, 5.0, 6.0], [9.0])
    assert swapped == pytest.approx((-4.5 - half, -4.5 + half), abs=1e-5)
    assert stats.iqm_difference_interval([1.0], [2.0]) is None
    assert stats.iqm_difference_interval([], [1.0, 2.0]) is None


def test_the_iqm_interval_is_the_trimmed_mean_t_worked_by_hand():
    # 8 seeds: the IQM drops 2 at each end (3..6: 4.5); winsorized 3, 3, 3, 4, 5, 6, 6, 6 have s_w^2 = 14/7,
    # so d = 7 * 2 / (4 * 3) = 7/6 with h = 4 kept seeds, and t(3) = 3.182446.
    low, high = stats.iqm_t_interval([1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0, 7.0])
    half = 3.182446 * math.sqrt(7 / 6)
    assert (low, high) == pytest.approx((4.5 - half, 4.5 + half), abs=1e-5)
    # Under 4 seeds nothing is trimmed: the mean's t interval.
    assert stats.iqm_t_interval([1.0, 2.0, 6.0]) == pytest.approx(stats.mean_interval([1.0, 2.0, 6.0]))
    assert stats.iqm_t_interval([5.0]) == (5.0, 5.0)
