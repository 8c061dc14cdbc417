"""A trial's objective: each seed's value from its run files, the IQM over the seeds that succeeded.

The rule for failed seeds: a trial ends when every seed has ended; its value is the IQM over the seeds that
succeeded, if at least one did; with none it fails. `seeds_ok` records how many counted.
"""

from __future__ import annotations

from pathlib import Path

from ..results.stats import bootstrap_ci, iqm, mean_over_span
from ..sweepdir.files import CorruptFileError, RunDir
from ..sweepdir.models import succeeded
from ..sweepdir.tables import read_evaluations


def run_value(run_dir: RunDir, metric: str) -> float | None:
    """One seed's value: its final evaluation (eval_iqm), its best periodic evaluation (best_iqm), or the
    mean evaluation over training (auc_iqm); None unless the run succeeded."""
    try:
        status, result = run_dir.read_status(), run_dir.read_result()
    except CorruptFileError:
        return None
    if not succeeded(status, result) or result is None:
        return None
    if metric == "best_iqm":
        return result.best_eval_mean_return if result.best_eval_mean_return is not None else result.eval_mean_return
    if metric == "auc_iqm":
        points = read_evaluations(run_dir.evaluations_csv)
        return mean_over_span([e.timesteps for e in points], [e.mean_return for e in points])
    return result.eval_mean_return


def trial_value(values: list[float]) -> float | None:
    return iqm(values) if values else None


def confidence(values: list[float]) -> tuple[float, float] | None:
    """The 95% bootstrap interval of the mean over seeds; None for fewer than two."""
    if len(values) < 2:
        return None
    low, high = bootstrap_ci(values)
    return float(low), float(high)


def evaluations(path: Path) -> list[tuple[int, float]]:
    """(timesteps, mean return) of each periodic evaluation written so far; a row being written is skipped."""
    return [(e.timesteps, e.mean_return) for e in read_evaluations(path)]
