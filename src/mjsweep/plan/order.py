"""The order in which a sweep's runs start: a pure function of the runs and what earlier runs measured.

breadth (the default): every variant and grid point gets its first seed before any gets its second, so a
report taken halfway through compares every variant. Within each such round, the runs expected to take
longest start first (the longest-processing-time rule), so the last runs to end are short ones and the
sweep ends soonest. A run's expected cost is its total_timesteps over the env steps per second that
finished runs of its variant (at its n_envs, with its algorithm) measured; without a measurement, its
total_timesteps alone.

variant: the order of the spec (variant, then grid point, then seed), as before breadth became the default.

Retries are not ordered here: the scheduler puts a run to retry at the back of its queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from statistics import median

from ..sweepdir.files import SweepDir, read_or_none
from ..sweepdir.models import RunSpec

FpsKey = tuple[str, int, str]
"""(variant, n_envs, algo): runs that step the same model as many envs at once with the same algorithm run
at about the same fps (SAC's updates make it several times slower than PPO)."""


class Order(str, Enum):
    BREADTH = "breadth"
    VARIANT = "variant"


def start_order(runs: list[RunSpec], order: Order = Order.BREADTH,
                fps: Mapping[FpsKey, float] | None = None) -> list[RunSpec]:
    """The runs in the order they should start. Ties keep the given order, so the result is stable."""
    if order is Order.VARIANT:
        return list(runs)
    fps = fps or {}
    rounds = _seed_rounds(runs)
    costs = expected_costs(runs, fps)
    ranked = sorted(range(len(runs)), key=lambda i: (rounds[i], -costs[i], i))
    return [runs[i] for i in ranked]


def expected_costs(runs: list[RunSpec], fps: Mapping[FpsKey, float]) -> list[float]:
    """Each run's expected seconds of training, or, where no run of the sweep has a measured fps, a figure
    in proportion to them (its total_timesteps). A run whose variant has no measurement yet is priced at
    the median fps of those that have one."""
    known = [v for v in fps.values() if v and v > 0]
    fallback = median(known) if known else 1.0
    return [run.total_timesteps / (fps.get(fps_key(run)) or fallback) for run in runs]


def fps_key(run: RunSpec) -> FpsKey:
    return run.variant, run.n_envs, run.algo


def _seed_rounds(runs: list[RunSpec]) -> list[int]:
    """For each run, how many runs of its group (variant and grid point) come before it: its round."""
    seen: dict[str, int] = {}
    rounds = []
    for run in runs:
        rounds.append(seen.get(run.group, 0))
        seen[run.group] = rounds[-1] + 1
    return rounds


def measured_fps(sweep_dir: SweepDir, runs: Iterable[RunSpec]) -> dict[FpsKey, float]:
    """The median training fps of each (variant, n_envs, algo) among the given runs that have a complete
    result.json in sweep_dir; unreadable files are left out."""
    samples: dict[FpsKey, list[float]] = {}
    for run in runs:
        result = read_or_none(sweep_dir.run(run.run_id).read_result)
        if result is not None and result.complete and result.training_fps:
            samples.setdefault(fps_key(run), []).append(result.training_fps)
    return {key: median(values) for key, values in samples.items()}
