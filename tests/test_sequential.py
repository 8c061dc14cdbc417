"""The group-sequential Brunner-Munzel test's boundaries: consistent over prefixes, deterministic, and holding
their error on paths they were not simulated from."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from mjsweep.results import brunnermunzel, sequential

LOOKS = tuple((n, n) for n in range(3, 11))


def test_a_looks_boundary_does_not_change_as_later_looks_are_added():
    full = sequential.boundaries(LOOKS, 0.05, 10)
    for k in range(1, len(LOOKS)):
        assert sequential.boundaries(LOOKS[:k], 0.05, 10) == full[:k]
    assert sequential.boundaries(LOOKS, 0.05, 10) == full  # cached or not, the same


def test_looks_that_cannot_reach_their_share_of_the_error_have_no_boundary():
    # 3 vs 3 seeds: the most extreme split has chance 2/20 = 0.1, above any share of 0.05.
    assert sequential.boundaries(((3, 3),), 0.05, 3) == (math.inf,)
    # 4 vs 4 with nothing more to come: the whole 0.05 is there, and 2/70 of the splits fit, but the complete
    # order's |T| = 8 / sqrt(12) = 2.31 has a t guard (3 degrees of freedom) of 0.104.
    assert sequential.boundaries(((4, 4),), 0.05, 4) == (math.inf,)
    # 6 vs 6: the smallest |T| within 0.05 is 2.08 (38 of the 924 splits at it or beyond), raised to Student's t
    # with 5 degrees of freedom at 38/924, 2.73: below the complete order's 18 / sqrt(39) = 2.88.
    (six,) = sequential.boundaries(((6, 6),), 0.05, 6)
    assert six == pytest.approx(scipy.stats.t.isf(38 / 924 / 2, 5)) and six < brunnermunzel.largest(6, 6)
    assert sequential.boundaries(LOOKS, 0.05, 10)[:2] == (math.inf, math.inf)


def test_the_chance_of_any_crossing_on_fresh_paths_is_within_the_level():
    rng = np.random.default_rng(2024)
    for level in (0.05, 0.05 / 6):
        bounds = np.array(sequential.boundaries(LOOKS, level, 10))
        paths = 40_000
        a, b = rng.random((paths, 10)), rng.random((paths, 10))
        crossed = np.zeros(paths, dtype=bool)
        for k, (i, j) in enumerate(LOOKS):
            crossed |= sequential.t_sizes(a[:, :i], b[:, :j]) >= bounds[k] - 1e-9
        # The simulation's standard error is 0.1% at 0.05: three of them above the level would fail.
        assert crossed.mean() <= level + 3 * math.sqrt(level * (1 - level) / paths), level


def test_a_path_crosses_where_its_statistic_reaches_the_boundary():
    far = sequential.path([list(range(10, 10 + n)) for n in range(3, 11)], [list(range(n)) for n in range(3, 11)])
    assert far.t == pytest.approx(tuple(brunnermunzel.largest(n, n) for n in range(3, 11))) and far.crossed(0.05, 10)
    same = sequential.path([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])
    assert same.t == (0.0,) and not same.crossed(0.05, 10)


def test_the_simulated_statistic_is_the_one_a_path_computes():
    rng = np.random.default_rng(5)
    a, b = rng.random((20, 6)), rng.random((20, 9))
    expected = [abs(sequential.path([list(x)], [list(y)]).t[0]) for x, y in zip(a, b, strict=True)]
    assert sequential.t_sizes(a, b) == pytest.approx(expected)


def test_equal_within_a_margin_needs_the_shift_shown_inside_it():
    a = [float(s % 4) for s in range(10)]
    b = [x + 0.5 for x in a]
    bound = sequential.boundaries(LOOKS, 0.05, 10)[-1]
    assert sequential.within(a, b, 50.0, bound)
    assert not sequential.within(a, b, 0.1, bound)
    assert not sequential.within(a, b, 50.0, math.inf)


def test_equal_within_holds_the_median_difference_whatever_the_spreads():
    # A narrow group against a wide one of the same centre: the median of A - B is 0, and with 20 seeds each
    # it is shown inside a margin of 4 wide spreads but not of a tenth of one.
    rng = np.random.default_rng(11)
    a, b = rng.normal(0, 1, 20), rng.normal(0, 3, 20)
    bound = sequential.boundaries(((20, 20),), 0.05, 20)[0]
    assert sequential.within(a, b, 12.0, bound)
    assert not sequential.within(a, b, 0.3, bound)
    # Shifted by far more than the margin: not equal, however the spreads compare.
    assert not sequential.within(a + 30.0, b, 12.0, bound)
