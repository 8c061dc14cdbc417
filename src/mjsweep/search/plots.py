"""A search's figures, as SVG (svgplot): the objective against each searched parameter and over the trials in the
order asked; for several objectives, the trials in objective space with each study's Pareto front."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from .. import svgplot
from ..spec.searchspace import SearchSpec
from ..sweepdir.files import SweepDir, write_text_atomic
from ..sweepdir.models import TrialRecord, TrialState
from .journal import replay
from .ranking import TrialRow

PANEL = (260.0, 220.0)
"""The axes' box of one panel, in pixels."""


def plot_searched(folder: SweepDir, output: Path) -> list[Path]:
    """A search's figures beside `output` (its trials; a multi-objective search's Pareto front as
    <name>_pareto.svg); none for another kind of sweep."""
    from . import ranking

    search = ranking.searched(folder)
    if search is None:
        return []
    written = plot_search(folder, search, output)
    pareto = output.with_name(f"{output.stem}_pareto.svg")
    if search.multi and plot_pareto(ranking.ranked(folder, search), search, pareto):
        written.append(pareto)
    return written


def plot_search(sweep_dir: SweepDir, search: SearchSpec, output: Path) -> list[Path]:
    """<name>_search.svg beside `output`: one panel per parameter and one over trials (the first objective's
    value); [] without a value."""
    done = [r for r in replay(sweep_dir.trials_jsonl) if r.state is TrialState.COMPLETE and r.value is not None]
    if not done:
        return []
    values = [float(r.value or 0.0) for r in done]
    y = svgplot.Scale.numeric(values)
    panels = []
    for k, (key, dim) in enumerate(search.space.items()):
        if dim.choice is not None:
            labels = [str(c) for c in dim.choice]
            x = svgplot.Scale.categories(labels)
            at = [float(labels.index(str(r.params.get(key)))) if str(r.params.get(key)) in labels else math.nan
                  for r in done]
        elif dim.kind == "log_uniform":
            x = svgplot.Scale.decades(*dim.bounds)  # the whole searched range, so that unexplored parts show
            at = [math.log10(float(r.params[key])) for r in done]
        else:
            x = svgplot.Scale.numeric([], limits=dim.bounds)
            at = [float(r.params[key]) for r in done]
        axes = svgplot.chart(f"{search.metric} against {key}", [key], x, y, key, search.metric, size=PANEL,
                             ids=f"search{k}")
        for position, value in zip(at, values, strict=True):
            if math.isfinite(position):
                axes.svg.circle(axes.x(position), axes.y(value), 4, svgplot.TAB10[0], opacity=0.8, css="trial")
        panels.append(axes.svg)
    panels.append(_over_trials(done, search, y))
    path = output.with_name(f"{output.stem}_search.svg")
    figure = svgplot.side_by_side(f"{search.metric} of each complete trial", panels, ids="search")
    write_text_atomic(path, figure.document(standalone=True))
    return [path]


def _over_trials(done: list[TrialRecord], search: SearchSpec, y: svgplot.Scale) -> svgplot.Svg:
    """Each study's trials by number, and its best so far as a line."""
    studies = list(dict.fromkeys(r.study for r in done))
    numbers = [float(r.number) for r in done]
    x = svgplot.Scale.numeric(numbers)
    if len(x.ticks) > 1 and x.ticks[1][0] - x.ticks[0][0] < 1:  # trials are whole numbers
        x = svgplot.Scale(x.low, x.high, tuple((float(n), str(n)) for n in range(math.ceil(x.low),
                                                                                    math.floor(x.high) + 1)))
    legend = [(f"{study}: best so far", svgplot.color(k, len(studies))) for k, study in enumerate(studies)]
    axes = svgplot.chart(f"{search.metric} over the trials", ["over trials"], x, y, "trial", search.metric,
                         legend=legend, size=PANEL, ids="trials")
    for k, study in enumerate(studies):
        order = sorted((r for r in done if r.study == study), key=lambda r: r.number)
        values = [float(r.value or 0.0) for r in order]
        best = [max(values[: i + 1]) if search.maximize else min(values[: i + 1]) for i in range(len(values))]
        hue = svgplot.color(k, len(studies))
        for r, value in zip(order, values, strict=True):
            axes.svg.circle(axes.x(r.number), axes.y(value), 4, hue, css="trial", group=study)
        axes.line([r.number for r in order], best, hue, study, css="best")
    return axes.svg


def plot_pareto(rows: list[TrialRow], search: SearchSpec, path: Path) -> bool:
    """The complete trials in objective space, each study's Pareto front filled, labelled with its trial numbers
    and (for two objectives) joined by a line. With more objectives, one panel per pair of objectives;
    the front is that of all objectives, so a point may look dominated in one pair. False, and nothing
    written, without a complete trial."""
    done = [r for r in rows if r.pareto_rank is not None and r.record.values is not None]
    if not done:
        return False
    studies = list(dict.fromkeys(r.record.study for r in done))
    hues = {study: svgplot.color(k, len(studies)) for k, study in enumerate(studies)}
    legend = [entry for study in studies
              for entry in ((f"{study}: Pareto front", hues[study]), (f"{study}: dominated (rings)", hues[study]))]
    pairs = list(itertools.combinations(range(len(search.objective)), 2))
    panels = []
    for k, (i, j) in enumerate(pairs):
        axes = svgplot.chart(f"{_label(search, j)} against {_label(search, i)}", ["Pareto front (trial numbers on "
                             "its points)"], svgplot.Scale.numeric([_at(r, i) for r in done]),
                             svgplot.Scale.numeric([_at(r, j) for r in done]), _label(search, i), _label(search, j),
                             legend=legend if k == len(pairs) - 1 else (), size=(320.0, 260.0), ids=f"pareto{k}")
        for study in studies:
            mine = [r for r in done if r.record.study == study]
            on = sorted((r for r in mine if r.on_front), key=lambda r: _at(r, i))
            if len(pairs) == 1 and len(on) > 1:
                axes.svg.path(svgplot.polyline(axes.points([_at(r, i) for r in on], [_at(r, j) for r in on])),
                              stroke=hues[study], opacity=0.5, css="front-line", group=study)
            for r in mine:
                x, y = axes.x(_at(r, i)), axes.y(_at(r, j))
                if r.on_front:
                    axes.svg.circle(x, y, 4.5, hues[study], css="front", group=study)
                    axes.svg.text(x + 6, y - 6, str(r.record.number), size=9, anchor="start", css="number")
                else:
                    axes.svg.circle(x, y, 4.5, "none", css="dominated", group=study, stroke=hues[study])
        panels.append(axes.svg)
    figure = svgplot.side_by_side("the complete trials in objective space, each study's Pareto front", panels,
                                  ids="pareto")
    write_text_atomic(path, figure.document(standalone=True))
    return True


def _at(row: TrialRow, k: int) -> float:
    assert row.record.values is not None
    return row.record.values[k]


def _label(search: SearchSpec, k: int) -> str:
    objective = search.objective[k]
    return f"{objective.metric} ({'higher' if objective.maximize else 'lower'} is better)"
