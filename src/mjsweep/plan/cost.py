"""What a sweep will cost before it starts: its env steps, and its wall time on this machine from speeds
measured here. Pure: runs, runs at once and measurements in, a Cost out (plan/speeds.py reads the
measurements of earlier runs; `sweep bench`'s record comes from engine/profile.py).

A run is priced, in this order of preference, from
1. earlier runs of its own variant in this sweep folder (same n_envs and algorithm): their median training fps
   and their median seconds besides training (start-up, saving, final and periodic evaluations);
2. earlier runs of the sweep's other variants with the same n_envs and algorithm: the median of theirs;
3. `sweep bench` of the same env and algorithm at the same n_envs: its aggregate env steps/s over the runs it
   ran at once, which already counts their start-up and evaluation;
and not at all otherwise: then the wall time is unknown, never guessed.

Every figure is a per-run speed at the concurrency it was measured at, which may not be the sweep's.
The wall time is the runs in start order on `workers` CPU slots (a run takes `cpus` of them), each
starting as soon as enough slots are free: retries, failures and the launcher's own time are not counted.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from statistics import median

from ..sweepdir.models import RunSpec
from .order import FpsKey, fps_key


@dataclass(frozen=True)
class Speed:
    fps: float
    """Env steps per second of one run's training (rollout + update)."""
    overhead_s: float = 0.0
    """Seconds a run spends besides its training steps: start-up, saving, evaluations."""


@dataclass(frozen=True)
class EarlierRuns:
    """What the runs of this sweep folder that succeeded measured."""

    speeds: Mapping[FpsKey, Speed]
    at_once: int | None = None
    """The most of them that ran at the same time: their speed is at about that concurrency."""
    hosts: tuple[str, ...] = ()
    """The machines they ran on, as result.json names them."""


@dataclass(frozen=True)
class BenchSpeed:
    """What `sweep bench` kept for this machine: one env and algorithm, at one concurrency."""

    env: str
    algo: str
    n_envs: int
    fps: float
    """Env steps/s per run: the bench's aggregate over its runs at once, start-up and evaluation included."""
    at_once: int
    measured_at: str


@dataclass(frozen=True)
class Measurements:
    earlier: EarlierRuns | None = None
    bench: BenchSpeed | None = None


class Source(str, Enum):
    OWN = "own"
    """Earlier runs of the run's own variant."""
    OTHERS = "others"
    """Earlier runs of the sweep's other variants (same n_envs and algorithm)."""
    BENCH = "bench"


@dataclass(frozen=True)
class Cost:
    runs: int
    env_steps: int
    """Env steps still to train: each run's total_timesteps less what its checkpoint already holds."""
    workers: int
    wall_s: float | None
    """Expected seconds from the first start to the last end; None when some run has no speed."""
    sources: Mapping[Source, int] = field(default_factory=dict)
    """How many runs each source priced."""
    unpriced: tuple[str, ...] = ()
    """The variants of the runs nothing priced."""
    unpriced_kinds: tuple[tuple[str, str, int], ...] = ()
    """(env, algo, n_envs) of the runs nothing priced: what a `sweep bench` would have to measure."""
    fps_low: float | None = None
    fps_high: float | None = None
    """The lowest and highest per-run env steps/s used."""
    overhead_s: float = 0.0
    """The largest per-run overhead added (0: none was measured, or it is in the fps, as a bench's is)."""
    measurements: Measurements = Measurements()


def estimate(runs: Sequence[RunSpec], workers: int, measurements: Measurements,
             done_steps: Mapping[str, int] | None = None) -> Cost:
    """The cost of `runs`, in the order they would start, on `workers` slots. done_steps: run id -> the env
    steps a run to resume already trained (its checkpoint)."""
    done_steps = done_steps or {}
    steps = [max(0, run.total_timesteps - done_steps.get(run.run_id, 0)) for run in runs]
    priced = [price(run, measurements) for run in runs]
    sources: dict[Source, int] = {}
    for p in priced:
        if p is not None:
            sources[p[1]] = sources.get(p[1], 0) + 1
    missing = [run for run, p in zip(runs, priced, strict=True) if p is None]
    unpriced = tuple(dict.fromkeys(run.variant for run in missing))
    kinds = tuple(dict.fromkeys((run.env, run.algo, run.n_envs) for run in missing))
    used = [p[0] for p in priced if p is not None]
    wall_s = None
    if not unpriced:
        durations = [n / p[0].fps + p[0].overhead_s for n, p in zip(steps, priced, strict=True) if p is not None]
        wall_s = queue_wall_s(durations, [run.cpus for run in runs], workers)
    return Cost(len(runs), sum(steps), workers, wall_s, sources, unpriced, kinds,
                min((s.fps for s in used), default=None), max((s.fps for s in used), default=None),
                max((s.overhead_s for s in used), default=0.0), measurements)


def total(parts: Sequence[Cost], workers: int, measurements: Measurements) -> Cost:
    """The cost of `parts` run one after another, each starting when the one before has ended (PBT's
    generations): their runs, steps and wall times added."""
    sources: dict[Source, int] = {}
    for part in parts:
        for source, count in part.sources.items():
            sources[source] = sources.get(source, 0) + count
    walls = [part.wall_s for part in parts]
    lows = [part.fps_low for part in parts if part.fps_low is not None]
    highs = [part.fps_high for part in parts if part.fps_high is not None]
    return Cost(sum(p.runs for p in parts), sum(p.env_steps for p in parts), workers,
                None if any(w is None for w in walls) else sum(w for w in walls if w is not None), sources,
                tuple(dict.fromkeys(v for p in parts for v in p.unpriced)),
                tuple(dict.fromkeys(k for p in parts for k in p.unpriced_kinds)),
                min(lows, default=None), max(highs, default=None), max((p.overhead_s for p in parts), default=0.0),
                measurements)


def price(run: RunSpec, measurements: Measurements) -> tuple[Speed, Source] | None:
    """The speed a run is expected to train at, and where it comes from; None when nothing measured one."""
    earlier = measurements.earlier
    if earlier is not None:
        own = earlier.speeds.get(fps_key(run))
        if own is not None:
            return own, Source.OWN
        alike = [s for (_, n_envs, algo), s in earlier.speeds.items() if (n_envs, algo) == (run.n_envs, run.algo)]
        if alike:
            return Speed(median(s.fps for s in alike), median(s.overhead_s for s in alike)), Source.OTHERS
    bench = measurements.bench
    if bench is not None and bench_matches(bench, run):
        return Speed(bench.fps), Source.BENCH
    return None


def bench_matches(bench: BenchSpeed, run: RunSpec) -> bool:
    return (bench.env, bench.algo, bench.n_envs) == (run.env, run.algo, run.n_envs) and bench.fps > 0


def queue_wall_s(durations: Sequence[float], cpus: Sequence[int], workers: int) -> float:
    """Seconds until the last run ends when each run, in the given order, starts as soon as `cpus` of the
    `workers` slots are free (a run wider than all of them takes them all)."""
    slots = [0.0] * max(1, workers)
    end = 0.0
    for duration, width in zip(durations, cpus, strict=True):
        taken = [heapq.heappop(slots) for _ in range(min(max(1, width), len(slots)))]
        start = taken[-1]  # the run waits for the last of the slots it needs
        for _ in taken:
            heapq.heappush(slots, start + duration)
        end = max(end, start + duration)
    return end
