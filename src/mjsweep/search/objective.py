"""A trial's objectives: each seed's values from its run files, the IQM over the seeds that succeeded.

The rule for failed seeds: a trial ends when every seed has ended; each objective's value is the IQM over the
seeds that succeeded with a value for every objective, if at least one did; with none it fails. `seeds_ok`
records how many counted. The robot's metrics (mass, actuators, total_gear) are the same for every seed. The
cost metrics (cpu_seconds, cpu_hours, env_steps) are summed over those seeds instead: what the trial cost.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from ..results.stats import iqm, iqm_t_interval, mean_over_span
from ..robots.variants import compile_model, design_metrics
from ..spec.searchspace import COST_METRICS, INFO_PREFIX, MODEL_METRICS, info_key
from ..sweepdir.csvfiles import read_evaluations
from ..sweepdir.files import RunDir, read_model, read_or_none
from ..sweepdir.models import RunResult, RunSpec, succeeded


def run_value(run_dir: RunDir, metric: str) -> float | None:
    """One seed's value: its final evaluation (eval_iqm), its best periodic evaluation (best_iqm), the mean
    evaluation over training (auc_iqm), an info key's mean over its final evaluation (info:<key>), its cost
    (cost_value) or its robot's metric; None unless the run succeeded."""
    status, result = read_or_none(run_dir.read_status), read_or_none(run_dir.read_result)
    if not succeeded(status, result) or result is None:
        return None
    if metric in MODEL_METRICS:
        return _robot_metric(run_dir, metric)
    if metric in COST_METRICS:
        return cost_value(result, metric)
    if metric.startswith(INFO_PREFIX):
        return (result.eval_info or {}).get(info_key(metric))
    if metric == "best_iqm":
        return result.best_eval_mean_return if result.best_eval_mean_return is not None else result.eval_mean_return
    if metric == "auc_iqm":
        points = read_evaluations(run_dir.evaluations_csv)
        return mean_over_span([e.timesteps for e in points], [e.mean_return for e in points])
    return result.eval_mean_return


def run_values(run_dir: RunDir, metrics: list[str]) -> list[float] | None:
    """The seed's value of every metric; None if it lacks one."""
    values = [run_value(run_dir, metric) for metric in metrics]
    return [v for v in values if v is not None] if None not in values else None


def cost_value(result: RunResult, metric: str) -> float | None:
    """A run's cost: its CPU seconds or hours (None in a result.json from before cpu_s), or its env steps."""
    if metric == "env_steps":
        return float(result.timesteps) if result.timesteps is not None else None
    if result.cpu_s is None:
        return None
    return result.cpu_s / 3600 if metric == "cpu_hours" else result.cpu_s


def trial_values(seeds: list[list[float]], metrics: list[str]) -> list[float] | None:
    """Each objective's value over the seeds (each a list of every metric's value): a cost metric's sum, any
    other's IQM; None without a seed."""
    if not seeds:
        return None
    return [math.fsum(column) if metric in COST_METRICS else iqm(list(column))
            for metric, column in zip(metrics, zip(*seeds, strict=True), strict=True)]


def _robot_metric(run_dir: RunDir, metric: str) -> float | None:
    spec = read_or_none(lambda: read_model(run_dir.spec_json, RunSpec))
    if spec is None:
        return None
    metrics = _design(spec.xml)
    return metrics[metric] if metrics is not None else None


@lru_cache(maxsize=256)
def _design(xml: str) -> dict[str, float] | None:
    """The robot's metrics, compiled once per model file (a trial's robot is its runs' variant.xml); None if
    its XML is gone or does not compile."""
    try:
        return design_metrics(compile_model(Path(xml))) if Path(xml).is_file() else None
    except ValueError:
        return None


def confidence(values: list[float], metric: str) -> tuple[float, float] | None:
    """The 95% interval of a trial's objective over its seeds: the IQM's trimmed-mean t interval (the mean's t
    interval under 4 seeds), as the objective is their IQM; None for fewer than two seeds, and for a cost
    metric, whose objective is what the seeds cost in all, not an estimate."""
    if len(values) < 2 or metric in COST_METRICS:
        return None
    return iqm_t_interval(values)


def evaluations(path: Path) -> list[tuple[int, float]]:
    """(timesteps, mean return) of each periodic evaluation written so far; a row being written is skipped."""
    return [(e.timesteps, e.mean_return) for e in read_evaluations(path)]
