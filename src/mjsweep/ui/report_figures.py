"""The learning curves and final returns as SVG (ui/svgplot.py), from the curves ui/curves.py reads: report.html's
figures and the files `sweep plot` writes, drawn without matplotlib so that the report a sweep ends with costs
milliseconds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import svgplot
from .curves import NothingToPlotError, SweepCurves, sweep_curves

if TYPE_CHECKING:
    from ..results.report import GroupRow
    from ..results.rows import ResultRow
    from ..sweepdir.files import SweepDir

CURVES_CAPTION = "learning curves: mean over seeds, 95% t interval"
FINAL_CAPTION = "final evaluation return per run"


def sweep_figures(folder: SweepDir, groups: list[GroupRow], rows: list[ResultRow]) -> list[tuple[svgplot.Svg, str]]:
    """The learning curves and the final returns, each with its caption; none before any run logged an
    episode, the curves alone before any run succeeded."""
    try:
        curves = sweep_curves(folder, rows)
    except NothingToPlotError:
        return []
    colors = {g: svgplot.color(i, len(curves.bands)) for i, g in enumerate(curves.bands)}
    figures = [(curves_svg(curves, colors, folder.path.name), CURVES_CAPTION)]
    final = final_svg(groups, rows, colors, folder.path.name)
    return figures + ([(final, FINAL_CAPTION)] if final is not None else [])


def curves_svg(curves: SweepCurves, colors: dict[str, str], title: str) -> svgplot.Svg:
    """Each group's mean over seeds against timesteps (a path of its points), its 95% band shaded."""
    bands = curves.bands.values()
    x = svgplot.Scale.numeric([t for b in bands for t in b.timesteps], pad=0.02)
    y = svgplot.Scale.numeric([v for b in bands for part in (b.mean, b.low, b.high) for v in part])
    legend = [(f"{group} (n={b.seeds})", colors[group]) for group, b in curves.bands.items()]
    axes = svgplot.chart(CURVES_CAPTION, [f"{title}: learning curves, mean over seeds, 95% t interval"], x, y,
                         "timesteps", curves.ylabel, legend=legend, ids="curves")
    for group, b in curves.bands.items():  # every band first, so that no band hides another group's line
        axes.band(b.timesteps, b.low, b.high, colors[group], group)
    for group, b in curves.bands.items():
        axes.line(b.timesteps, b.mean, colors[group], group)
    return axes.svg


def final_svg(groups: list[GroupRow], rows: list[ResultRow], colors: dict[str, str],
              title: str) -> svgplot.Svg | None:
    """Each seed's final evaluation return as a dot, the group's mean as a diamond with its 95% interval;
    the best group on top. None when no group has a final return."""
    shown = sorted((g for g in groups if g.mean_return is not None),
                   key=lambda g: (-(g.mean_return or 0.0), g.group))
    if not shown:
        return None
    seeds: dict[str, list[float]] = {g.group: [] for g in shown}
    for r in rows:  # one pass over the runs, however many groups
        if r.group in seeds and r.final_return is not None:
            seeds[r.group].append(r.final_return)
    values = [v for g in shown for v in (*seeds[g.group], g.mean_return, g.ci_low, g.ci_high) if v is not None]
    bottom_up = shown[::-1]
    y = svgplot.Scale.categories([f"{g.group} (n={g.succeeded})" for g in bottom_up])
    axes = svgplot.chart(FINAL_CAPTION, [f"{title}: final returns"], svgplot.Scale.numeric(values), y,
                         "final eval return (dots: seeds; diamond and bar: mean, 95% t interval)", "",
                         size=(svgplot.PLOT_SIZE[0], 24.0 + 34.0 * len(shown)), grid="x", ids="final")
    for at, g in enumerate(bottom_up):
        hue = colors.get(g.group, "#000000")
        for value in seeds[g.group]:
            axes.svg.circle(axes.x(value), axes.y(at - 0.2), 3.5, hue, opacity=0.6, css="seed", group=g.group)
        if g.ci_low is not None and g.ci_high is not None:  # none from one seed: its mean alone
            axes.interval(g.ci_low, g.ci_high, at, hue)
        if g.mean_return is not None:
            axes.diamond(g.mean_return, at, hue, g.group)
    return axes.svg
