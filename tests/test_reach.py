"""Saying when a design cannot answer: `sweep validate` and the dry run warn when a fixed seed count or an
adaptive max cannot separate any pair of groups at the report's level, and name the seeds that can; the dry run
of adaptive seeds says at which look a separation first becomes possible. The numbers are the test's own."""

from __future__ import annotations

import math

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import TINY_LONG_XML
from mjsweep.results import brunnermunzel, reach, sequential


def test_a_fixed_count_can_separate_when_its_smallest_p_reaches_holms_first_step():
    three = reach.fixed_reach(3, 2, 0.95)
    assert three is not None and not three.can_separate and three.smallest == brunnermunzel.smallest_p(3, 3)
    assert three.smallest == pytest.approx(0.1885, abs=1e-4)  # the t guard's, above the 2/20 of the splits
    assert three.fewest == 6 and reach.fixed_reach(6, 2, 0.95).can_separate  # 0.0345 <= 0.05
    assert not reach.fixed_reach(5, 2, 0.95).can_separate  # 0.059 > 0.05
    four_groups = reach.fixed_reach(8, 4, 0.95)  # 6 pairs: 0.012 > 0.05 / 6
    assert four_groups is not None and not four_groups.can_separate and four_groups.fewest == 9
    assert reach.fixed_reach(2, 1, 0.95) is None  # one group: nothing is compared


@pytest.mark.parametrize(("least", "most", "groups"), [(2, 3, 2), (3, 10, 2), (3, 10, 4), (2, 8, 6), (4, 6, 3)])
def test_the_first_look_is_where_the_sequential_tests_boundaries_first_allow_a_crossing(least, most, groups):
    found = reach.adaptive_reach(least, most, groups, 0.95)
    assert found is not None
    sizes = tuple((n, n) for n in range(least, most + 1))
    bounds = sequential.boundaries(sizes, 0.05 / reach.pairs_of(groups), most)
    first = next((least + i for i, b in enumerate(bounds) if math.isfinite(b)), None)
    assert found.first_look == first
    if first is None:  # the max it names has a look that can
        assert reach.adaptive_reach(least, found.fewest_max, groups, 0.95).first_look is not None
        assert reach.adaptive_reach(least, found.fewest_max - 1, groups, 0.95).first_look is None


def two_walkers(tmp_path, tiny_spec, seeds) -> str:
    spec = {**tiny_spec, "variants": [*tiny_spec["variants"], {"name": "long", "xml": str(TINY_LONG_XML)}],
            "seeds": seeds}
    return str(write_spec(tmp_path, spec))


def test_validate_warns_that_5_seeds_cannot_separate_two_groups_and_names_6(tmp_path, tiny_spec):
    done = run_sweep("validate", two_walkers(tmp_path, tiny_spec, 5))
    assert done.returncode == 0, done.stderr
    assert ("warning: 5 seeds a group cannot separate the two groups at 95%: the smallest p-value 5 vs 5 seeds "
            "can give is 0.059, above the level 0.05; 6 seeds each can (seeds: 6)") in done.stderr.splitlines()
    enough = run_sweep("validate", two_walkers(tmp_path, tiny_spec, 6))
    assert enough.returncode == 0 and "cannot separate" not in enough.stderr


def test_the_dry_run_of_adaptive_seeds_says_when_a_separation_becomes_possible(tmp_path, tiny_spec):
    short = run_sweep("run", two_walkers(tmp_path, tiny_spec, {"min": 2, "max": 3}), "--dry-run")
    assert short.returncode == 0, short.stderr
    assert ("warning: adaptive seeds up to max 3 cannot separate the two groups at 95%: at no look from 2 to 3 "
            "seeds each can the smallest p-value reach the error spent by then at the level 0.05; max: 6 can"
            ) in short.stderr.splitlines()
    assert "adaptive seeds: no look up to max 3 can separate a pair (max: 6 can)" in short.stdout
    longer = run_sweep("run", two_walkers(tmp_path, tiny_spec, {"min": 3, "max": 10}), "--dry-run")
    assert "cannot separate" not in longer.stderr
    assert "adaptive seeds: a separation first becomes possible at the look with 7 seeds each (level 0.05)" \
        in longer.stdout
    assert not (tmp_path / "runs").exists()
