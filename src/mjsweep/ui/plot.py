"""`sweep plot`: learning curves (mean over seeds with a 95% band) and final returns per variant x grid point,
as PNG. The curves are read here for report.html's SVG figures too (ui/report_figures.py).

Imports matplotlib (Agg backend, no display needed) only when drawing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..results import stats
from ..results.report import aggregate
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


def plot_sweep(sweep_dir: Path, rows: list[ResultRow], output: Path) -> list[Path]:
    """Write the learning curves to `output` and the final returns to <stem>_final.png; both paths."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # names and grid values are user text: drawn, never parsed as math
    folder = SweepDir(sweep_dir)
    curves = sweep_curves(folder, rows)
    output.parent.mkdir(parents=True, exist_ok=True)
    groups = list(curves.bands)
    colors = {g: _color(i, len(groups)) for i, g in enumerate(groups)}
    _curves_figure(curves.bands, colors, folder.path.name, output, curves.ylabel)
    written = [output]
    final = output.with_name(f"{output.stem}_final.png")
    if _final_figure(rows, colors, folder.path.name, final):
        written.append(final)
    return written


def _color(i: int, n: int):
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return cmap(i % cmap.N)


def _curves_figure(bands: dict[str, Band], colors: dict, title: str, output: Path,
                   ylabel: str = "mean episode return (training)") -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for group, b in bands.items():
        label = f"{group} (n={b.seeds})"
        ax.plot(b.timesteps, b.mean, color=colors[group], label=label, linewidth=2,
                marker="o" if len(b.mean) == 1 else None)  # a lone point would be invisible as a line
        ax.fill_between(b.timesteps, b.low, b.high, color=colors[group], alpha=0.2, linewidth=0)
    ax.set(xlabel="timesteps", ylabel=ylabel,
           title=f"{title}: learning curves, mean over seeds, 95% t interval")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.savefig(output, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _final_figure(rows: list[ResultRow], colors: dict, title: str, output: Path) -> bool:
    """Each seed's final eval return as a dot, the mean with its 95% CI as a bar; best group on top."""
    import matplotlib.pyplot as plt

    groups = [g for g in aggregate(rows) if g.mean_return is not None]
    if not groups:
        return False
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.6 * len(groups)))
    for y, g in enumerate(reversed(groups)):
        color = colors.get(g.group, "black")
        seeds = [r.final_return for r in rows if r.group == g.group and r.final_return is not None]
        ax.scatter(seeds, [y - 0.2] * len(seeds), color=color, alpha=0.6, s=25, zorder=2)
        if g.mean_return is None:
            continue  # no succeeded run: its seeds' dots are all it has
        # one seed has no interval: its mean alone
        bar = [[g.mean_return - g.ci_low], [g.ci_high - g.mean_return]] if g.ci_low is not None and \
            g.ci_high is not None else None
        ax.errorbar([g.mean_return], [y], xerr=bar, fmt="D", color=color, capsize=5, markersize=7, zorder=3)
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_yticks(range(len(groups)), [f"{g.group} (n={g.succeeded})" for g in reversed(groups)])
    ax.set(xlabel="final eval return (dots: seeds; diamond and bar: mean, 95% t interval)",
           title=f"{title}: final returns")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(output, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True
