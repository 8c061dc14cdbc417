"""Memory admission: whether this machine has room for one more run. Pure; the scheduler samples the
available memory and the runs' peaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..spec.algos import ALGOS

DEFAULT_RUN_MEMORY_MB = 600.0
"""A run's expected peak before any run of the sweep has been measured."""
OFF_POLICY_RUN_MEMORY_MB = 1500.0
"""The same for SAC and TD3, whose replay buffers fill as they train (about 1.3 GB for 1M Ant transitions)."""
HEADROOM = 1.25


def run_memory_mb(peaks_mb: Mapping[str, Iterable[float]], algo: str = "ppo") -> float:
    """What one more run of `algo` is expected to need, with headroom: the largest peak measured for that
    algorithm in the sweep; before any, the larger of its default and every other algorithm's peaks."""
    own = list(peaks_mb.get(algo, ()))
    if own:
        return max(own) * HEADROOM
    default = OFF_POLICY_RUN_MEMORY_MB if ALGOS[algo].off_policy else DEFAULT_RUN_MEMORY_MB
    return max([default, *(peak for peaks in peaks_mb.values() for peak in peaks)]) * HEADROOM


def memory_admits(available_mb: float, needed_mb: float, running: int) -> bool:
    """With nothing running a run always starts: waiting for memory would never end."""
    return running == 0 or available_mb >= needed_mb
