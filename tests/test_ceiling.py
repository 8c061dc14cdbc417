"""The ideal group-sequential yardstick of `sweep bench --stats` (bench/ceiling.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mjsweep.bench import ceiling


@pytest.mark.parametrize("family", ["Hwang-Shih-DeCani 0", "Pocock type", "power 3"])
def test_the_boundaries_spend_the_error_on_fresh_null_paths(family):
    rng = np.random.default_rng(1)
    bounds = ceiling.boundaries(ceiling.z_paths(rng, 100_000, 12, 0.0), 3, 12, 0.05, ceiling.FAMILIES[family])
    fresh = ceiling.z_paths(np.random.default_rng(2), 100_000, 12, 0.0)
    rate = (fresh[:, 2:12] >= bounds).any(axis=1).mean()
    se = (0.05 * 0.95 / 100_000) ** 0.5
    assert 0.05 - 4 * se < rate < 0.05 + 4 * se


def test_one_look_is_the_fixed_design():
    # A design whose only look is at the fixed seeds has the fixed design's power and spends its seeds.
    rng = np.random.default_rng(3)
    null, alt = ceiling.z_paths(rng, 100_000, 8, 0.0), ceiling.z_paths(rng, 50_000, 8, 2.0 ** 0.5 * 3.2415 / 8 ** 0.5)
    power, seeds = ceiling.design(null, alt, 8, 8, 0.05, ceiling.FAMILIES["Pocock type"])
    assert power == pytest.approx(0.9, abs=0.01) and seeds == 8


def test_the_ceiling_grows_with_the_fixed_seeds_toward_a_third():
    few, many = ceiling.ceiling(4.3, paths=40_000), ceiling.ceiling(16.8, paths=40_000)
    assert 0.1 < few.saving < many.saving < 0.42
    assert many.saving > 0.3 and few.max_seeds >= 4 and many.spending in ceiling.FAMILIES
