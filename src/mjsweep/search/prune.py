"""Whether to stop a trial: pure decisions over the trials' periodic evaluation curves.

A trial is judged on the mean over its seeds of each seed's latest evaluation at or before a timestep, and
only once every seed has an evaluation there.

- median: at the trial's latest common timestep (>= after), it is pruned when it is worse than the median
  of the ended trials of its study at that timestep.
- asha: rungs at after, 3 x after, 9 x after, ...; at each rung a trial goes on only if it is in the best
  third (at least one) of the trials that reached that rung.
"""

from __future__ import annotations

import math
import statistics

Curve = list[tuple[int, float]]
ETA = 3


def value_at(curve: Curve, step: int) -> float | None:
    """The latest evaluation at or before `step`; None if there is none."""
    before = [value for t, value in curve if t <= step]
    return before[-1] if before else None


def trial_at(seeds: list[Curve], step: int) -> float | None:
    """The mean over seeds at `step`; None unless every seed has reached it."""
    if not seeds or any(not c or c[-1][0] < step for c in seeds):
        return None
    values = [v for c in seeds if (v := value_at(c, step)) is not None]
    return sum(values) / len(values) if len(values) == len(seeds) else None


def reached(seeds: list[Curve]) -> int:
    """The latest timestep every seed has an evaluation at (0 before that)."""
    return min((c[-1][0] for c in seeds if c), default=0) if seeds and all(seeds) else 0


def _worse(a: float, b: float, maximize: bool) -> bool:
    return a < b if maximize else a > b


def median_prunes(trial: list[Curve], ended: list[list[Curve]], after: int, maximize: bool,
                  min_trials: int) -> float | None:
    """The trial's value when the median rule stops it; None to let it go on."""
    step = reached(trial)
    if step < after:
        return None
    mine = trial_at(trial, step)
    others = [v for t in ended if (v := trial_at(t, step)) is not None]
    if mine is None or len(others) < min_trials:
        return None
    return mine if _worse(mine, statistics.median(others), maximize) else None


def rungs_below(step: int, after: int) -> list[int]:
    """The rungs at or below `step`: after * 3^k."""
    if step < after:
        return []
    top = int(math.floor(math.log(step / after, ETA) + 1e-9))
    return [after * ETA**k for k in range(top + 1)]


def asha_prunes(trial: list[Curve], others: list[list[Curve]], after: int, maximize: bool,
                min_trials: int) -> float | None:
    """The trial's value at the highest rung it reached when it is not in that rung's best third; None to
    let it go on. `others`: every other trial of the study, running or ended."""
    rungs = rungs_below(reached(trial), after)
    if not rungs:
        return None
    rung = rungs[-1]
    mine = trial_at(trial, rung)
    values = [v for t in others if (v := trial_at(t, rung)) is not None]
    if mine is None or len(values) < min_trials:
        return None
    ranked = sorted([*values, mine], reverse=maximize)
    keep = max(1, len(ranked) // ETA)
    return mine if _worse(mine, ranked[keep - 1], maximize) else None
