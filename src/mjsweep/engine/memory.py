"""Memory admission: whether this machine has room for one more run. Pure; the scheduler samples the
available memory and the runs' peaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..spec.algos import ALGOS

DEFAULT_RUN_MEMORY_MB = 600.0
"""A run's expected peak before any run of the sweep has been measured."""
OFF_POLICY_RUN_MEMORY_MB = 1500.0
"""The same for the off-policy algorithms (SAC, TD3, TQC, CrossQ), whose replay buffers fill as they train
(about 1.3 GB for 1M Ant transitions)."""
HEADROOM = 1.25


@dataclass
class MeasuredPeaks:
    """Peak memory of ended runs by algorithm, in both measures: USS (a local run's unique pages, what one
    more run adds) and RSS (shared pages counted in every run: a forked run's template, hundreds of MiB)."""

    uss_mb: dict[str, list[float]] = field(default_factory=dict)
    rss_mb: dict[str, list[float]] = field(default_factory=dict)

    def add(self, algo: str, uss_mb: float | None, rss_mb: float | None) -> None:
        if uss_mb:
            self.uss_mb.setdefault(algo, []).append(uss_mb)
        if rss_mb:
            self.rss_mb.setdefault(algo, []).append(rss_mb)

    def for_admission(self) -> dict[str, list[float]]:
        """Each algorithm's USS peaks where any of its runs has one, else its RSS peaks (Ray, SLURM, runs
        recorded before USS was): in one maximum, RSS's shared pages would outweigh every USS."""
        return {algo: self.uss_mb.get(algo) or self.rss_mb[algo] for algo in {*self.uss_mb, *self.rss_mb}}


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
