"""The learning curves of a sweep's groups: each run's curve (its periodic evaluations, else its training
returns from progress.csv or monitor.csv) and each group's mean over seeds with its 95% t band, as `sweep plot`
and report.html draw them (ui/report_figures.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..results import stats
from ..results.rows import ResultRow
from ..sweepdir.csvfiles import read_evaluations, read_monitor_episodes, read_progress_points
from ..sweepdir.files import RunDir, SweepDir

CURVE_POINTS = 100  # seeds' curves are interpolated onto this many common timesteps
MONITOR_WINDOW = 10  # episodes in the rolling mean when a curve comes from monitor.csv


class NothingToPlotError(InputError):
    """No run of the sweep has logged a single episode yet."""


@dataclass(frozen=True)
class Curve:
    timesteps: np.ndarray
    returns: np.ndarray
    """Mean episode return of recent episodes at each timestep."""


@dataclass(frozen=True)
class Band:
    timesteps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: int


def read_curve(run_dir: RunDir) -> Curve | None:
    """From progress.csv (SB3's rolling mean at each iteration), else from monitor.csv's episodes."""
    return _progress_curve(run_dir.progress_csv) or _monitor_curve(run_dir.monitor_csv)


def read_eval_curve(run_dir: RunDir) -> Curve | None:
    """The periodic evaluations' mean returns (evaluations.csv, eval.every), or None without any."""
    evaluations = read_evaluations(run_dir.evaluations_csv)
    if not evaluations:
        return None
    return Curve(np.array([float(e.timesteps) for e in evaluations]), np.array([e.mean_return for e in evaluations]))


def _progress_curve(path: Path) -> Curve | None:
    points = read_progress_points(path)
    return Curve(np.array([t for t, _ in points]), np.array([r for _, r in points])) if points else None


def _monitor_curve(path: Path) -> Curve | None:
    """Each episode's return, a rolling mean, against the steps of all episodes so far."""
    episodes = read_monitor_episodes(path)
    if not episodes:
        return None
    rewards = np.array([r for r, _ in episodes])
    steps = np.cumsum([length for _, length in episodes])
    window = min(MONITOR_WINDOW, len(rewards))
    cumulative = np.cumsum(np.insert(rewards, 0, 0.0))
    counts = np.minimum(np.arange(1, len(rewards) + 1), window)
    rolling = (cumulative[1:] - cumulative[np.arange(1, len(rewards) + 1) - counts]) / counts
    return Curve(steps, rolling)


def band(curves: list[Curve], points: int = CURVE_POINTS) -> Band:
    """Mean over seeds and its 95% t interval, on the timesteps every seed's curve covers."""
    start = max(float(c.timesteps[0]) for c in curves)
    end = min(float(c.timesteps[-1]) for c in curves)
    x = np.linspace(start, end, points) if end > start else np.array([end])
    ys = np.stack([np.interp(x, c.timesteps, c.returns) for c in curves])
    low, high = stats.mean_band(ys)
    return Band(x, ys.mean(axis=0), np.atleast_1d(low), np.atleast_1d(high), len(curves))


@dataclass(frozen=True)
class SweepCurves:
    """Every group's learning curve over its seeds, the groups in name order."""

    bands: dict[str, Band]
    evaluated: bool
    """True: the periodic evaluations' returns (evaluations.csv); False: training returns."""

    @property
    def ylabel(self) -> str:
        return "mean evaluation return" if self.evaluated else "mean episode return (training)"


def sweep_curves(folder: SweepDir, rows: list[ResultRow]) -> SweepCurves:
    """The curves of `rows`' runs by group; NothingToPlotError when no run has logged an episode."""
    # Evaluation curves where the sweep evaluates periodically; training returns otherwise. Each file is read
    # once: the final report.html draws these while the sweep waits.
    curves = [read_eval_curve(folder.run(row.run_id)) for row in rows]
    evaluated = any(curve is not None for curve in curves)
    if not evaluated:
        curves = [read_curve(folder.run(row.run_id)) for row in rows]
    by_group: dict[str, list[Curve]] = {}
    for row, curve in zip(rows, curves, strict=True):
        if curve is not None:
            by_group.setdefault(row.group, []).append(curve)
    if not by_group:
        raise NothingToPlotError(f"{folder.path}: no run has logged an episode yet (progress.csv / monitor.csv)")
    return SweepCurves({g: band(by_group[g]) for g in sorted(by_group)}, evaluated)
