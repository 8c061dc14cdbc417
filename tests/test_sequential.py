"""The group-sequential rank test's boundaries: consistent over prefixes, deterministic, and holding their error
on paths they were not simulated from."""

from __future__ import annotations

import math

import numpy as np

from mjsweep.results import sequential

LOOKS = tuple((n, n) for n in range(3, 11))


def test_a_looks_boundary_does_not_change_as_later_looks_are_added():
    full = sequential.boundaries(LOOKS, 0.05, 10)
    for k in range(1, len(LOOKS)):
        assert sequential.boundaries(LOOKS[:k], 0.05, 10) == full[:k]
    assert sequential.boundaries(LOOKS, 0.05, 10) == full  # cached or not, the same


def test_looks_that_cannot_reach_their_share_of_the_error_have_no_boundary():
    # 3 vs 3 seeds: the most extreme split has chance 2/20 = 0.1, above any share of 0.05.
    assert sequential.boundaries(((3, 3),), 0.05, 3) == (math.inf,)
    # 4 vs 4 with nothing more to come: the whole 0.05 is there, and 2/70 fits; D = 16 is the complete order.
    assert sequential.boundaries(((4, 4),), 0.05, 4) == (16.0,)
    assert sequential.boundaries(LOOKS, 0.05, 10)[:2] == (math.inf, math.inf)


def test_the_chance_of_any_crossing_on_fresh_paths_is_within_the_level():
    rng = np.random.default_rng(2024)
    for level in (0.05, 0.05 / 6):
        bounds = np.array(sequential.boundaries(LOOKS, level, 10))
        paths = 40_000
        a, b = rng.random((paths, 10)), rng.random((paths, 10))
        crossed = np.zeros(paths, dtype=bool)
        for k, (i, j) in enumerate(LOOKS):
            d = np.abs(2 * (a[:, :i, None] > b[:, None, :j]).sum(axis=(1, 2)) - i * j)
            crossed |= d >= bounds[k]
        # The simulation's standard error is 0.1% at 0.05: three of them above the level would fail.
        assert crossed.mean() <= level + 3 * math.sqrt(level * (1 - level) / paths), level


def test_a_path_crosses_where_its_d_reaches_the_boundary():
    far = sequential.path([list(range(10, 10 + n)) for n in range(3, 11)], [list(range(n)) for n in range(3, 11)])
    assert far.d == tuple(float(n * n) for n in range(3, 11)) and far.crossed(0.05, 10)
    same = sequential.path([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])
    assert same.d == (0.0,) and not same.crossed(0.05, 10)


def test_equal_within_a_margin_needs_the_shift_shown_inside_it():
    a = [float(s % 4) for s in range(10)]
    b = [x + 0.5 for x in a]
    bound = sequential.boundaries(LOOKS, 0.05, 10)[-1]
    assert sequential.within(a, b, 50.0, bound)
    assert not sequential.within(a, b, 0.1, bound)
    assert not sequential.within(a, b, 50.0, math.inf)
