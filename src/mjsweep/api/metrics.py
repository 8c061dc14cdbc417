"""A run's value of a metric by name, for `Sweep.best(metric=...)`: its result.json's figures (final_return,
best_return, cpu_s, fps, ...), any search objective's metric (eval_iqm, best_iqm, auc_iqm, info:<key>,
cpu_seconds, mass, ...: search/objective.py's one seed's value), or "objective", the sweep's own search
objective with its direction."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..sweepdir.files import SweepDir

RESULT_METRICS = ("final_return", "best_return", "cpu_s", "fps", "wall_s", "training_s", "eval_s", "timesteps")
"""A Run's fields of that name."""
OBJECTIVE = "objective"


def reader(folder: SweepDir, metric: str) -> tuple[Callable[[Any], float | None], bool | None]:
    """How to read `metric` off a Run, and its direction where the sweep sets one (the search objective's:
    True to maximize); InputError naming the metrics there are for one that is not."""
    from ..spec.searchspace import COST_METRICS, INFO_PREFIX, MODEL_METRICS, RUN_METRICS

    if metric in RESULT_METRICS:
        return (lambda r: getattr(r, metric)), None
    maximize = None
    if metric == OBJECTIVE:
        from ..search.ranking import search_of

        search = search_of(folder, "metric 'objective': not a search, so no objective")
        metric, maximize = search.metric, search.maximize
    if metric in RUN_METRICS + MODEL_METRICS + COST_METRICS or metric.startswith(INFO_PREFIX):
        from ..search.objective import run_value

        searched = metric
        return (lambda r: run_value(folder.run(r.run_id), searched) if r.succeeded else None), maximize
    known = ", ".join([*RESULT_METRICS, OBJECTIVE, *RUN_METRICS, *MODEL_METRICS, *COST_METRICS])
    raise InputError(f"metric {metric!r}: expected one of {known} or {INFO_PREFIX}<key of the env's info>")
