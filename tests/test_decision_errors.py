"""The verdicts' error rates, proven by simulation with the launcher's own decision code (bench/decisions.py).

1000 simulated sweeps per case: a rule whose family-wise false separation rate is 5% stays at or below 7.5%
with probability above 99.9%, and one at 10% exceeds it with probability above 99%, so these tests cannot
pass a rule that errs twice as often as it says. The simulations are seeded: each figure is the same every
run.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mjsweep.bench import decisions
from mjsweep.results import stats
from mjsweep.spec.sweepspec import AdaptiveSeeds

SWEEPS = 1000
CEILING = 0.075


@pytest.mark.parametrize("distribution", ["normal", "bimodal", "heavy"])
@pytest.mark.parametrize("groups,seeds", [(2, 3), (2, 5), (2, 10), (6, 3), (6, 5), (6, 20)])
def test_fixed_seeds_separate_groups_that_do_not_differ_at_most_at_the_level(distribution, groups, seeds):
    outcome = decisions.fixed(groups, seeds, decisions.sampler(distribution), 0.0, 1.0, SWEEPS, seed=groups)
    assert outcome.false_rate <= CEILING, outcome


@pytest.mark.parametrize("distribution", ["normal", "bimodal"])
def test_adaptive_seeds_hold_the_error_over_every_look(distribution):
    policy = AdaptiveSeeds(min=3, max=10)
    outcome = decisions.adaptive(2, policy, decisions.sampler(distribution), 0.0, 1.0, SWEEPS, seed=1)
    assert outcome.false_rate <= CEILING, outcome
    assert outcome.seeds_per_group > 9  # nothing differs: nearly every sweep runs to max


@pytest.mark.slow
@pytest.mark.parametrize("distribution", ["normal", "bimodal", "heavy"])
def test_adaptive_seeds_hold_the_error_over_every_look_and_every_pair_of_six_groups(distribution):
    policy = AdaptiveSeeds(min=3, max=10)
    outcome = decisions.adaptive(6, policy, decisions.sampler(distribution), 0.0, 1.0, SWEEPS, seed=2)
    assert outcome.false_rate <= CEILING, outcome


@pytest.mark.parametrize("setting", ["spread", "shape"])
def test_groups_with_p_one_half_but_different_spreads_or_shapes_keep_the_error_at_fixed_seeds(setting):
    # Nothing is better, yet the groups' returns differ (sd 3 vs 1; symmetric bimodal vs normal): the rank test's
    # null (one distribution) does not hold, the Brunner-Munzel test's (P(A > B) = 1/2) does.
    fixed = decisions.fixed(2, 10, decisions.sampler(setting), 0.0, 1.0, SWEEPS, seed=6)
    assert fixed.false_rate <= CEILING, fixed


def test_groups_with_different_spreads_keep_the_error_over_every_look():
    adaptive = decisions.adaptive(2, AdaptiveSeeds(min=3, max=10), decisions.sampler("spread"), 0.0, 1.0, SWEEPS,
                                  seed=6)
    assert adaptive.false_rate <= CEILING, adaptive


@pytest.mark.slow
def test_six_groups_with_p_one_half_but_different_spreads_keep_the_error():
    sample = decisions.sampler("spread")
    fixed = decisions.fixed(6, 10, sample, 0.0, 1.0, SWEEPS, seed=7)
    assert fixed.false_rate <= CEILING, fixed
    adaptive = decisions.adaptive(6, AdaptiveSeeds(min=3, max=10), sample, 0.0, 1.0, SWEEPS, seed=7)
    assert adaptive.false_rate <= CEILING, adaptive
    shape = decisions.fixed(6, 10, decisions.sampler("shape"), 0.0, 1.0, SWEEPS, seed=7)
    assert shape.false_rate <= CEILING, shape


def test_a_resampled_sweep_with_ties_keeps_the_error():
    # Returns resampled from a few values tie often; the rank tests count ties as half either way.
    pool = np.array([-3.2, 0.5, 0.5, 1.1, 2.0, 4.4])
    sample = decisions.sampler("resampled", pool)
    assert decisions.fixed(2, 6, sample, 0.0, 1.0, SWEEPS, seed=3).false_rate <= CEILING
    adaptive = decisions.adaptive(2, AdaptiveSeeds(min=3, max=8), sample, 0.0, 1.0, SWEEPS, seed=3)
    assert adaptive.false_rate <= CEILING, adaptive


def test_the_simulation_catches_a_rule_that_errs_too_often():
    # The rule the verdicts used to rest on, the bootstrap interval of P(A > B) leaving out 0.5, separates
    # identical groups of 3 seeds far above 5% of the time; the harness must see it.
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(400):
        a, b = rng.standard_normal(3), rng.standard_normal(3)
        low, high = stats.improvement_interval(a, b, resamples=2000)
        hits += low > 0.5 or high < 0.5
    assert hits / 400 > 0.10


def test_adaptive_seeds_find_a_real_difference_with_fewer_seeds_than_max():
    policy = AdaptiveSeeds(min=3, max=10)
    outcome = decisions.adaptive(2, policy, decisions.sampler("normal"), 3.0, 1.0, 300, seed=5)
    assert outcome.power is not None and outcome.power > 0.95
    assert outcome.seeds_per_group < 8  # the first look that can separate has 7 seeds each (tests/test_reach.py)
    fixed = decisions.fixed(2, 10, decisions.sampler("normal"), 3.0, 1.0, 300, seed=5)
    assert fixed.power is not None and fixed.power > 0.95


def test_wilson_interval_and_equal_power_reading():
    low, high = decisions.wilson(50, 1000)
    assert low == pytest.approx(0.0381, abs=1e-3) and high == pytest.approx(0.0653, abs=1e-3)
    curve = [decisions.Outcome(f"fixed {n}", 2, "normal", 1.0, 100, 0, hits, float(n))
             for n, hits in [(3, 0), (4, 40), (5, 80), (6, 95)]]
    assert decisions.equal_power_seeds(curve, 0.6) == pytest.approx(4.5)
    assert decisions.equal_power_seeds(curve, 0.99) is None


def test_the_bench_settings_report_each_design(tmp_path):
    config = decisions.StatsConfig(min_seeds=3, max_seeds=5, groups=(2,), effect=3.0, sweeps=100, power=0.8)
    [first, *_] = results = decisions.run_stats(config)
    assert [r.distribution for r in results] == list(decisions.DISTRIBUTIONS)
    assert first.null_fixed.design == "fixed 5 seeds" and first.null_adaptive.design == "adaptive 3-5 seeds"
    assert [o.seeds_per_group for o in first.alt_fixed][:2] == [3.0, 4.0]
    assert first.fixed_seeds is not None and first.adaptive_seeds is not None and first.saving is not None
    table = decisions.render(results, config)
    assert table.count("\n| 2 | ") == 3 and "false sep., fixed" in table
    # 5 vs 5 cannot reach 5% (0.059, the t guard of a complete order), 6 vs 6 can (0.035): no design saves more
    # than 1 - 6 / fixed seeds.
    assert first.fewest_seeds == 6 and first.most_saving == pytest.approx(max(0.0, 1 - 6 / first.fixed_seeds))
    assert all(r.saving <= r.most_saving for r in results if r.saving is not None and r.most_saving is not None)


def test_the_most_seeds_saved_follow_holms_first_level():
    # Six groups: Holm's first level is 0.05 / 15; a complete order of 10 vs 10 gives at best 0.0044 (its t guard),
    # 11 vs 11 0.0026.
    curve = [decisions.Outcome(f"fixed {n}", 6, "normal", 2.0, 100, 0, hits, float(n))
             for n, hits in [(11, 0), (12, 50), (13, 100)]]
    none = decisions.Outcome("fixed 10", 6, "normal", 0.0, 100, 0, 0, 10.0)
    result = decisions.SettingResult(6, "normal", none, none, curve, [], 0.9)
    assert result.fixed_seeds == pytest.approx(12.8)
    assert result.fewest_seeds == 11 and result.most_saving == pytest.approx(1 - 11 / 12.8)


def test_the_figures_do_not_depend_on_how_many_cores_simulate_them():
    # 600 sweeps are three blocks, each seeded by its own index: one process or two give the same counts.
    config = decisions.StatsConfig(min_seeds=3, max_seeds=5, groups=(2,), effect=3.0, sweeps=600, power=0.8)
    alone = decisions.run_stats(config)
    shared = decisions.run_stats(dataclasses.replace(config, jobs=2))
    assert [r.to_dict() for r in alone] == [r.to_dict() for r in shared]
    assert alone[0].null_adaptive.sweeps == 600


def test_designs_are_tried_past_four_times_max_seeds():
    # A fixed design that needs more than 4 x max seeds each still gets a figure (the cap is 6 x max).
    config = decisions.StatsConfig(min_seeds=2, max_seeds=2, groups=(2,), effect=1.5, sweeps=100, power=0.8)
    [result] = decisions.run_stats(config)[:1]
    assert result.fixed_seeds is not None and result.fixed_seeds > 4 * config.max_seeds, result.fixed_seeds
    assert result.fixed_seeds <= config.largest == 12


def test_the_spread_settings_report_each_design():
    config = decisions.StatsConfig(min_seeds=3, max_seeds=5, groups=(2,), sweeps=100)
    results = decisions.run_spreads(config)
    assert [r.setting for r in results] == list(decisions.SPREADS)
    counts = results[1]
    assert counts.fixed.design == "fixed 12 seeds" and counts.adaptive.design == "adaptive 3-5 seeds"
    # The wide groups' seeds fail now and then, and a group whose seeds all failed gets no more.
    assert counts.adaptive.seeds_per_group < results[0].adaptive.seeds_per_group
    table = decisions.render_spreads(results, config)
    assert table.count("\n| 2 | ") == 3 and "4 and 12 in the counts setting" in table
    rng = np.random.default_rng(0)
    values = decisions.draw("spread", rng, (2, 20_000))
    assert np.std(values[0]) == pytest.approx(3.0, rel=0.05) and np.std(values[1]) == pytest.approx(1.0, rel=0.05)
    shape = decisions.draw("shape", rng, (2, 20_000))
    assert np.mean(shape[0] > shape[1]) == pytest.approx(0.5, abs=0.02)  # P(A > B) = 1/2
