"""The exact rank test and Holm's step-down, against hand-worked cases, full enumeration and scipy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mjsweep.results.ranktest import exact_p, holm, seeds_to_reach, smallest_p, u_statistic


def enumerated_p(a: list[float], b: list[float]) -> float:
    """The definition: every split of the pooled returns into len(a) and len(b), |U - mn/2| at least the one
    seen."""
    pooled, m, n = a + b, len(a), len(b)
    seen = abs(u_statistic(a, b) - m * n / 2)
    splits = list(itertools.combinations(range(m + n), m))
    extreme = 0
    for chosen in splits:
        x = [pooled[i] for i in chosen]
        y = [pooled[i] for i in range(m + n) if i not in chosen]
        extreme += abs(u_statistic(x, y) - m * n / 2) >= seen - 1e-9
    return extreme / len(splits)


def test_hand_worked_three_against_three():
    # U of A over B for 3 vs 3 takes 0..9 with counts 1, 1, 2, 3, 3, 3, 3, 2, 1, 1 over the 20 splits.
    assert exact_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)  # U = 0: U in {0, 9}
    assert exact_p([1, 2, 4], [3, 5, 6]) == pytest.approx(4 / 20)  # U = 1: U in {0, 1, 8, 9}
    assert exact_p([1, 3, 5], [2, 4, 6]) == pytest.approx(14 / 20)  # U = 3: all but U in {4, 5}
    assert exact_p([1, 4, 5], [2, 3, 6]) == pytest.approx(1.0)  # U = 4: as central as U gets


def test_hand_worked_four_against_four():
    # 4 vs 4: U takes 0..16 with counts 1, 1, 2, 3, 5, 5, 7, 7, 8, 7, 7, 5, 5, 3, 2, 1, 1 over 70 splits.
    assert exact_p([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)
    assert exact_p([1, 2, 3, 5], [4, 6, 7, 8]) == pytest.approx(4 / 70)
    assert exact_p([1, 2, 4, 5], [3, 6, 7, 8]) == pytest.approx(8 / 70)  # U = 2: {0, 1, 2, 14, 15, 16}


def test_ties_count_half_and_the_p_value_is_the_enumerated_one():
    cases = [([1.0, 1.0, 2.0], [1.0, 3.0, 3.0]), ([0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0]),
             ([5.0, 5.0], [5.0, 5.0, 5.0]), ([2.0, 2.0, 7.0, 1.0, 2.0], [2.0, 3.0, 1.0, 1.0])]
    for a, b in cases:
        assert exact_p(a, b) == pytest.approx(enumerated_p(a, b))
    assert u_statistic([1.0, 2.0], [1.0, 0.0]) == 3.5


def test_random_samples_match_the_enumeration_and_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for m, n in [(2, 3), (3, 3), (4, 6), (5, 5), (7, 3)]:
        for rounded in (False, True):
            a, b = rng.normal(size=m), rng.normal(size=n)
            if rounded:
                a, b = np.round(a), np.round(b)
            assert exact_p(a, b) == pytest.approx(enumerated_p(list(a), list(b)))
            reference = stats.permutation_test(
                (a, b), lambda x, y: abs(u_statistic(x, y) - len(x) * len(y) / 2), permutation_type="independent",
                n_resamples=np.inf, alternative="greater", vectorized=False)
            assert exact_p(a, b) == pytest.approx(reference.pvalue)


def test_the_smallest_p_and_the_seeds_that_reach_a_level():
    assert smallest_p(3, 3) == pytest.approx(0.1) and smallest_p(2, 2) == pytest.approx(1 / 3)
    assert smallest_p(1, 1) == 1.0 and smallest_p(5, 5) == pytest.approx(2 / 252)
    assert seeds_to_reach(0.05) == 4 and seeds_to_reach(0.05 / 6) == 5 and seeds_to_reach(0.05 / 15) == 6
    assert seeds_to_reach(0.2) == 3 and seeds_to_reach(1.0) == 1
    assert 2 / math.comb(8, 4) <= 0.05 < 2 / math.comb(6, 3)


def test_holm_adjusts_step_down_and_keeps_the_order():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.2]) == [0.2] and holm([]) == []
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_many_seeds_are_sampled_deterministically_and_agree_with_the_normal_approximation():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=60), rng.normal(size=60) + 0.4
    p = exact_p(a, b)
    assert p == exact_p(a, b)  # the same returns, the same draws
    assert p == pytest.approx(stats.mannwhitneyu(a, b).pvalue, abs=0.01)
