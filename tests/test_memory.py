"""Memory admission: the estimate of one more run's need, and when a run may start."""

from __future__ import annotations

from mjsweep.memory import DEFAULT_RUN_MEMORY_MB, memory_admits, run_memory_mb


def test_a_run_needs_the_largest_peak_seen_with_a_quarter_more():
    assert run_memory_mb([]) == DEFAULT_RUN_MEMORY_MB * 1.25 == 750.0
    assert run_memory_mb([100.0, 400.0, 200.0]) == 500.0
    assert run_memory_mb([100.0]) == 125.0  # measured runs replace the default, even when smaller


def test_a_run_starts_when_memory_suffices_or_nothing_runs():
    assert memory_admits(available_mb=750.0, needed_mb=750.0, running=3)
    assert not memory_admits(available_mb=749.0, needed_mb=750.0, running=1)
    assert memory_admits(available_mb=10.0, needed_mb=750.0, running=0)  # waiting would never end
