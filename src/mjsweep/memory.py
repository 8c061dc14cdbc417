"""Memory admission: whether this machine has room for one more run. Pure; the scheduler samples the
available memory and the runs' peaks."""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_RUN_MEMORY_MB = 600.0
"""A run's expected peak before any run of the sweep has been measured."""
HEADROOM = 1.25


def run_memory_mb(peaks_mb: Iterable[float]) -> float:
    """What one more run is expected to need: the largest peak measured in the sweep, with headroom."""
    return max(peaks_mb, default=DEFAULT_RUN_MEMORY_MB) * HEADROOM


def memory_admits(available_mb: float, needed_mb: float, running: int) -> bool:
    """With nothing running a run always starts: waiting for memory would never end."""
    return running == 0 or available_mb >= needed_mb
