"""More steps for finished runs: a run planned with a larger total_timesteps than a run that finished with
otherwise the same content continues from that run's last checkpoint instead of from 0, where its training does
not depend on its total. The finished run stays as it is. Pure: runs and what their folders hold in, a decision
out (engine/sweep.py reads the folders and seeds the new run's folder).

SB3 reads the total in one place only, the progress that schedules are called with (1 - timesteps / total):
a constant learning rate or clip range ignores it, so training to 4,096 steps is the first 4,096 steps of
training to 8,192, and a resume from a checkpoint puts everything back exactly (worker/exact.py). RL Zoo's
`lin_` schedules decay over the total: such a run starts over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..spec.algos import SCHEDULE
from ..sweepdir.models import RunSpec
from .runs import content_but_total, content_digest


@dataclass(frozen=True)
class Finished:
    """A run of the sweep folder that succeeded, and its newest checkpoint's timesteps or why it cannot be
    continued (sweepdir/lineage.py `continuable`)."""

    run: RunSpec
    checkpoint: int | str


@dataclass(frozen=True)
class Extension:
    """Where a planned run continues: the finished run's id and its checkpoint's timesteps."""

    source: str
    timesteps: int


def shorter_key(run: RunSpec) -> str | None:
    """Runs that differ only by total_timesteps share this key; None for a spec.json whose content cannot be
    rebuilt (it is never matched)."""
    content = content_but_total(run)
    return None if content is None else content_digest(content)


def total_dependence(run: RunSpec) -> str | None:
    """Why the run's training depends on its total_timesteps (a schedule that decays over it), or None."""
    for key, value in sorted(run.hyperparams.items()):
        if isinstance(value, str) and SCHEDULE.match(value):
            return f"its {run.algo}.{key} {value!r} decays over total_timesteps"
    return None


def by_key(finished: Iterable[Finished]) -> dict[str, list[Finished]]:
    """The finished runs by shorter_key (those that have none left out)."""
    out: dict[str, list[Finished]] = {}
    for item in finished:
        key = shorter_key(item.run)
        if key is not None:
            out.setdefault(key, []).append(item)
    return out


def extension_of(run: RunSpec, finished: dict[str, list[Finished]]) -> Extension | str | None:
    """Where `run` continues from: the finished run of the same content with fewer steps whose checkpoint is
    furthest along; a line saying why it starts over although there is such a run; None when there is none."""
    key = shorter_key(run)
    shorter = [f for f in finished.get(key, []) if f.run.total_timesteps < run.total_timesteps] if key else []
    if not shorter:
        return None
    longest = max(shorter, key=lambda f: f.run.total_timesteps)
    named = f"the finished {longest.run.total_timesteps:,}-step run {longest.run.run_id}"
    why = total_dependence(run)
    if why is not None:
        return f"starts over: {why}, so {named} is not its beginning"
    usable = [f for f in shorter if isinstance(f.checkpoint, int) and f.checkpoint < run.total_timesteps]
    if not usable:
        return f"starts over: {named} cannot be continued ({longest.checkpoint})" \
            if isinstance(longest.checkpoint, str) else f"starts over: {named} checkpointed past this total"
    best = max(usable, key=lambda f: (int(f.checkpoint), f.run.total_timesteps))
    return Extension(best.run.run_id, int(best.checkpoint))
