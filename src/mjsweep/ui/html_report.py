"""`sweep report --format html`: one self-contained report.html to share.

Everything is inside the file (the report's figures as inline SVG, the contact sheet and the figures of a
search or a population as PNG data, videos as MP4 data, the style inline), so it opens from a plain file on a
laptop with no network and no Python. Nothing here imports matplotlib: the final report of `sweep run` is
drawn in milliseconds (ui/svgplot.py).
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..results.report import failed_runs
from ..sweepdir.index import ENDED_STATES
from ..sweepdir.models import DisplayState
from . import report_sections
from .console_tables import fixed

if TYPE_CHECKING:
    from ..api.report_object import Figures
    from ..results.report import GroupRow
    from ..results.rows import ResultRow
    from ..results.sections import Section
    from ..search.ranking import TrialRow
    from ..spec.searchspace import SearchSpec
    from ..sweepdir.files import SweepDir
    from .status import SweepView

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
th { background: #f0f0f0; }
.pareto th:last-child, .pareto td:last-child { text-align: left; }
td pre { margin: 0; }
figure.code pre { white-space: pre-wrap; }
caption { text-align: left; font-weight: bold; padding: 2px 0; }
table.members td:last-child { word-break: break-all; }
figure { margin: 1.5em 0; }
img, video, figure svg { max-width: 100%; height: auto; }
.videos { display: flex; flex-wrap: wrap; gap: 1em; }
.answer { font-size: 1.15em; font-weight: 600; }
.warning { color: #a40; }
.failed { color: #b00; }
.sweep-state { padding: 4px 8px; background: #f6f6f6; border-left: 4px solid #888; }
.sweep-state.running { background: #eef6ff; border-left-color: #36c; }
"""
COLUMNS = ("variant", "grid", "runs ok", "failed", "mean", "std", "IQM", "95% CI", "mean fps", "mass",
           "bodies/joints/act")
PARETO_CAPTION = "Pareto front: the complete trials in objective space, trial numbers on the front's points"


def build(folder: SweepDir, groups: list[GroupRow], rows: list[ResultRow], warnings: list[str],
          decisions: Figures | None = None, state: SweepState | None = None,
          trials: tuple[list[TrialRow], SearchSpec] | None = None, pareto: Path | None = None,
          sections: list[Section] | None = None, answer: str | None = None, no_groups: str | None = None) -> str:
    """The whole report as one HTML document; with `decisions`, which group beats which, every pair; `state`
    says under the title whether the sweep still runs; `trials` (a search's, ranked) with `pareto` (the
    figure `sweep report` drew) show a multi-objective search's Pareto front; `sections`, what is particular to
    the sweep's kind (a search's trials and confirmations, adaptive seeds' rounds, a population's members);
    `answer`, which group leads and whether it is separated, the page's first line under its title;
    `no_groups`, the sentence in place of the groups' table where there are none (a population's segments)."""
    name = html.escape(folder.path.name)
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sweep {name}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>sweep {name}</h1>",
             *([f'<p class="answer">{html.escape(answer)}</p>'] if answer else []), *_state(state)]
    if no_groups is not None:
        parts.append(f"<p>{html.escape(no_groups)}</p>")
    else:
        parts += [f"<p>{sum(g.succeeded for g in groups)} of {len(rows)} runs succeeded; final evaluation return "
                  "over seeds, best first (IQM: interquartile mean; CI: 95% Student's t interval of the mean).</p>",
                  _table(groups)]
    parts += [f'<p class="failed">failed: {html.escape(run_id)}: {html.escape(cause)}</p>'
              for run_id, cause in failed_runs(rows)]
    parts += [f'<p class="warning">warning: {html.escape(w)}</p>' for w in warnings]
    parts += [f'<p class="warning">warning: {html.escape(p)}</p>' for r in rows for p in r.problems]
    parts += report_sections.to_html(sections or [])
    if trials is not None:
        parts += _pareto_front(*trials, pareto)
    if no_groups is None:
        parts += _figures(folder, groups, rows)
    if decisions is not None:
        parts += _decisions(decisions)
    if folder.contact_sheet.is_file():
        parts.append(_image_figure(folder.contact_sheet.read_bytes(), "the variants in their start pose"))
    videos = sorted(folder.videos.glob("*.mp4")) if folder.videos.is_dir() else []
    if videos:
        parts.append("<h2>trained policies</h2><div class=\"videos\">")
        parts += [_video(path) for path in videos]
        parts.append("</div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


@dataclass(frozen=True)
class SweepState:
    """Whether a launcher runs the sweep (it holds sweep.lock) and how far it got, when the report was built."""

    running: bool
    ended: int
    succeeded: int
    runs: int
    at: datetime

    def line(self) -> str:
        if self.running:
            return (f"sweep running: {self.ended} of {self.runs} runs ended, last updated {self.at:%H:%M:%S}; "
                    "reload for more")
        written = f"report written {self.at:%Y-%m-%d %H:%M:%S}"
        if self.succeeded == self.runs:
            return f"sweep ended: {'the run' if self.runs == 1 else f'all {self.runs} runs'} succeeded; {written}"
        return (f"sweep ended: {self.ended} of {self.runs} runs ended, {self.succeeded} succeeded (sweep run "
                f"runs the others again); {written}")


def sweep_state(view: SweepView, at: datetime | None = None) -> SweepState:
    """What `sweep status` sees now (view), as the line under the report's title."""
    ended = sum(1 for r in view.runs if r.state in ENDED_STATES)
    succeeded = sum(1 for r in view.runs if r.state == DisplayState.SUCCEEDED)
    return SweepState(view.launcher_pid is not None, ended, succeeded, len(view.runs), at or datetime.now())


def _state(state: SweepState | None) -> list[str]:
    if state is None:
        return []
    running = " running" if state.running else ""
    return [f'<p id="sweep-state" class="sweep-state{running}">{html.escape(state.line())}</p>']


def _table(groups: list[GroupRow]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for g in groups:
        m = g.model
        ci = f"[{fixed(g.ci_low)}, {fixed(g.ci_high)}]" if g.ci_low is not None else "-"
        cells = (g.variant, " ".join(f"{k}={v}" for k, v in g.grid.items()) or "-", f"{g.succeeded}/{g.runs}",
                 str(g.failed), fixed(g.mean_return), fixed(g.std_return), fixed(g.iqm_return), ci,
                 fixed(g.mean_fps, 0), fixed(m.total_mass if m else None),
                 f"{m.bodies}/{m.joints}/{m.actuators}" if m else "-")
        body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _pareto_front(rows: list[TrialRow], search: SearchSpec, figure: Path | None) -> list[str]:
    """The figure, then each front point's trial, objective values and parameters as spec keys to paste;
    nothing for one objective or before a trial is complete."""
    from ..search.ranking import best_block, front, objective_cells, objectives_text

    points = front(rows) if search.multi else []
    if not points:
        return []
    parts = ["<h2>Pareto front</h2>",
             f"<p>Trials on the front: {len(points)}, those that no other complete trial of their study beats in "
             f"every objective ({html.escape(objectives_text(search))}); each one's parameters as spec keys to "
             "paste.</p>"]
    if figure is not None:
        parts.append(_image_figure(figure.read_bytes(), PARETO_CAPTION, "svg+xml"))
    head = "".join(f"<th>{html.escape(c)}</th>"
                   for c in ("study", "trial", *(o.metric for o in search.objective), "spec keys"))
    body = []
    for row in points:
        cells = "".join(f"<td>{html.escape(c)}</td>"
                        for c in (row.record.study, str(row.record.number), *objective_cells(row, search)))
        body.append(f"<tr>{cells}<td><pre>{html.escape(best_block(row).rstrip())}</pre></td></tr>")
    parts.append(f'<table class="pareto"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')
    return parts


def _figures(folder: SweepDir, groups: list[GroupRow], rows: list[ResultRow]) -> list[str]:
    """The learning curves and final returns, as `sweep plot` draws them; none before any episode."""
    from .report_figures import sweep_figures

    return [_svg_figure(figure.document(), caption) for figure, caption in sweep_figures(folder, groups, rows)]


def _decisions(decisions: Figures) -> list[str]:
    """The figures `sweep report` drew (as report.md's SVG files), then the verdict of every pair."""
    from ..results.compare import method
    from .decision_figures import MATRIX_CAPTION, PROFILE_CAPTION

    comparisons = decisions.matrix.comparisons()
    said = f" {method(comparisons)}" if comparisons else ""
    parts = ["<h2>which group beats which</h2>",
             "<p>P(A &gt; B): the chance that a seed of A beats a seed of B (ties count half), with its "
             f"{decisions.matrix.confidence:.0%} score interval.{html.escape(said)}</p>"]
    if decisions.drawn:
        parts += [_svg_figure(decisions.matrix_svg, MATRIX_CAPTION),
                  _svg_figure(decisions.profile_svg, PROFILE_CAPTION)]
    else:
        parts.append(f"<p>No figures: {html.escape(str(decisions.why_no_figures))}.</p>")
    parts.append(f"<p>{html.escape(decisions.seeds_sentence())}</p>")
    verdicts = [f"<li>{html.escape(c.verdict())}</li>" for c in decisions.matrix.comparisons()]
    if verdicts:
        parts.append(f'<ul class="verdicts">{"".join(verdicts)}</ul>')
    return parts


def _svg_figure(svg: str, caption: str) -> str:
    """An inline <svg> (its own title and label name what it shows) under a caption."""
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _image_figure(image: bytes, caption: str, kind: str = "png") -> str:
    """An image file inside the page (kind: png, or svg+xml for a figure drawn to a file)."""
    data = base64.b64encode(image).decode("ascii")
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/{kind};base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _video(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    name = html.escape(path.stem)
    return (f'<figure><video controls muted loop src="data:video/mp4;base64,{data}"></video>'
            f"<figcaption>{name}</figcaption></figure>")
