"""Memory admission: the estimate of one more run's need, and when a run may start."""

from __future__ import annotations

from mjsweep.engine.memory import DEFAULT_RUN_MEMORY_MB, OFF_POLICY_RUN_MEMORY_MB, memory_admits, run_memory_mb


def test_a_run_needs_the_largest_peak_seen_with_a_quarter_more():
    assert run_memory_mb({}) == DEFAULT_RUN_MEMORY_MB * 1.25 == 750.0
    assert run_memory_mb({"ppo": [100.0, 400.0, 200.0]}) == 500.0
    assert run_memory_mb({"ppo": [100.0]}) == 125.0  # measured runs replace the default, even when smaller


def test_each_algorithm_learns_its_own_peak_and_an_unmeasured_one_takes_the_larger_guess():
    peaks = {"ppo": [300.0, 320.0], "sac": [2000.0]}
    assert run_memory_mb(peaks, "ppo") == 400.0  # SAC's replay buffer does not hold PPO runs back
    assert run_memory_mb(peaks, "sac") == 2500.0
    # TD3 not measured yet: its default, or any algorithm's larger peak (SAC's buffer is TD3's size too)
    assert run_memory_mb(peaks, "td3") == 2500.0
    assert run_memory_mb({"ppo": [300.0]}, "td3") == OFF_POLICY_RUN_MEMORY_MB * 1.25
    assert run_memory_mb({"sac": [2000.0]}, "a2c") == 2500.0  # unmeasured: never below what was seen


def test_a_run_starts_when_memory_suffices_or_nothing_runs():
    assert memory_admits(available_mb=750.0, needed_mb=750.0, running=3)
    assert not memory_admits(available_mb=749.0, needed_mb=750.0, running=1)
    assert memory_admits(available_mb=10.0, needed_mb=750.0, running=0)  # waiting would never end
